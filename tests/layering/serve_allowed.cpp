// Control: what tools/serve may include compiles with its include folders.
#include "ember.h"
#include "tools/serve/http_request.h"
#include "tools/serve/openai_api.h"

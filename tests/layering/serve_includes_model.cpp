// Planted: tools/serve includes nothing of the runtime but ember.h (issue
// 40; the files still in EMBER_TOOLS_NOT_YET_CLIENTS are the exceptions,
// compiled with the whole tree). Must fail with "model/stop_strings.h" not
// found.
#include "tools/serve/openai_api.h"
#include "model/stop_strings.h"

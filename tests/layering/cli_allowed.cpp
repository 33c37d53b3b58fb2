// Control: what tools/ember may include compiles with the tool's include
// folders (ember.h, its own headers), so the planted failures below fail for
// their include alone.
#include "ember.h"
#include "tools/ember/args.h"
#include "tools/ember/convert_steps.h"
#include "tools/ember/model_cache.h"

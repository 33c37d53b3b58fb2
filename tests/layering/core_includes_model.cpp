// Planted: core includes nothing of ember's but ember.h and core itself.
// Must fail with "model/model.h" not found (tests/layering/CMakeLists.txt).
#include "core/status.h"
#include "model/model.h"

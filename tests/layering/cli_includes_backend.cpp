// Planted: tools/ember asks the C API about backends
// (ember_backend_get_info), never the backend interface. Must fail with
// "backends/backend.h" not found.
#include "tools/ember/args.h"
#include "backends/backend.h"

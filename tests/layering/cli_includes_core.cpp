// Planted: tools/ember never sees the runtime's core either (its Status,
// dtypes, layouts). Must fail with "core/status.h" not found.
#include "tools/ember/args.h"
#include "core/status.h"

// Planted: backends see core, platforms and ember.h, never runtime/memory.
// Must fail with "memory/plan.h" not found.
#include "backends/backend.h"
#include "memory/plan.h"

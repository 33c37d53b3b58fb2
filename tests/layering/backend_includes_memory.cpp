// Planted: backends see core, the interface (backend/), platforms and
// ember.h, never runtime/memory.
// Must fail with "memory/plan.h" not found.
#include "backend/backend.h"
#include "memory/plan.h"

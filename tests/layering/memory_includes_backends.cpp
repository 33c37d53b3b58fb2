// Planted: runtime/memory sees the backend interface, never a backend.
// Must fail with "backends/cpu/cpu_backend.h" not found.
#include "memory/plan.h"
#include "backends/cpu/cpu_backend.h"

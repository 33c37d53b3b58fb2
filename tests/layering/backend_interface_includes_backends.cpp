// Planted: the interface names no backend (the registry table in backends/
// does). Must fail with "backends/cpu/cpu_backend.h" not found.
#include "backend/backend.h"
#include "backends/cpu/cpu_backend.h"

// Control: what a backend may include compiles with the backends' folders.
#include "backend/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "core/arena_layout.h"
#include "ember.h"
#include "platforms/linux/cpu_features.h"

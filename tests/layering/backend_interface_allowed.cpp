// Control: the backend interface (runtime/backend) compiles with its own
// layer's include folders: core, itself and ember.h.
#include "backend/backend.h"
#include "backend/backend_options.h"
#include "core/graph.h"
#include "ember.h"

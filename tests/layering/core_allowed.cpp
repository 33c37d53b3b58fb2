// Control: what core may include compiles with core's include folders (so
// the planted failures fail for the include alone).
#include "core/arena_layout.h"
#include "core/graph.h"
#include "core/status.h"
#include "ember.h"

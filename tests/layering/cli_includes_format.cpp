// Planted: tools/ember is a client of ember.h (issue 40) and never sees the
// runtime's file format. Must fail with "format/model_file.h" not found.
#include "tools/ember/args.h"
#include "format/model_file.h"

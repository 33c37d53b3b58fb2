// Planted: backends never see runtime/format. Must fail with
// "format/model_file.h" not found.
#include "backends/backend.h"
#include "format/model_file.h"

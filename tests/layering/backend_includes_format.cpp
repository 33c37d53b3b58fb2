// Planted: backends never see runtime/format. Must fail with
// "format/model_file.h" not found.
#include "backend/backend.h"
#include "format/model_file.h"

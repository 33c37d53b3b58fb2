// Planted: the library never includes tools/ (the GGUF reader is
// conversion-only). Must fail with "tools/convert/gguf.h" not found.
#include "format/model_file.h"
#include "tools/convert/gguf.h"

// Planted: the tokenizer sits below format. Must fail with
// "format/model_file.h" not found.
#include "tokenizer/tokenizer.h"
#include "format/model_file.h"

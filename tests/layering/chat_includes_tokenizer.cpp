// Planted: runtime/chat sees core only (the template language needs no
// vocabulary). Must fail with "tokenizer/tokenizer.h" not found.
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

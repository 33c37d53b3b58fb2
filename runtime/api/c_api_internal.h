// Shared by the C API's implementation files.
#pragma once

#include "core/status.h"
#include "ember.h"
#include "tokenizer/vocab.h"

namespace ember {

class Model;

// Records status's message as this thread's last error; returns its code.
ember_status set_last_error(const Status& status);
void clear_last_error();
const char* g_last_error_ptr();
// The vocabulary of an open model (its special pieces and chat template),
// for the C API's files that do not see ember_model's definition.
const Vocab& model_vocab(const ember_model* m);
// The model family (core/hparams.h ModelArch, as its integer), for the same files.
int model_arch(const ember_model* m);
// The built-in chat template for `m`'s family and vocabulary (api/c_api_chat.cpp;
// scans the vocabulary, so ember_model_open calls it once), and that choice
// as recorded on the handle.
const char* default_chat_template(const ember_model* m);
const char* model_default_chat_template(const ember_model* m);
// The model behind a handle, for the same files (api/c_api_inspect.cpp).
const Model& model_of(const ember_model* m);

}  // namespace ember

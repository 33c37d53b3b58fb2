// Shared by the C API's implementation files.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "ember.h"
#include "engine/generator.h"
#include "grammar/matcher.h"
#include "model/model.h"
#include "model/session.h"
#include "sampling/sampler.h"
#include "tokenizer/vocab.h"

// The handles behind ember.h's opaque types.
struct ember_model {
  std::unique_ptr<ember::Model> model;
  // The built-in chat template for a file without one (ember::
  // default_chat_template), chosen once at open: it scans the vocabulary.
  const char* default_chat_template = nullptr;
};

struct ember_session {
  ember_model* owner = nullptr;
  std::unique_ptr<ember::Session> session;
  // ember_generate's generator over sequence 0, made on its first call and
  // kept (its buffers are reused); the stats of the last call.
  std::unique_ptr<ember::Generator> generator;
  ember::SequenceStats last_stats;
};

struct ember_grammar {
  std::shared_ptr<ember::CompiledGrammar> grammar;  // generations using it hold references too
};

struct ember_sampler {
  ember::Sampler sampler;
};

struct ember_threadpool {
  std::shared_ptr<ember::ThreadPool> pool;  // sessions on it hold references too
};

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

inline ember_status fail(ember_status code, const char* fmt, const char* arg = "") {
  return set_last_error(Status::error(code, fmt, arg));
}
inline ember_status done(const Status& s) { return set_last_error(s); }
inline bool struct_ok(size_t got, size_t want) { return got >= sizeof(size_t) && got <= want; }

// Copies a caller's options struct over the defaults, honouring struct_size
// (an older, shorter struct keeps the newer fields' defaults).
template <typename T>
bool read_options(const T* given, T* out, const char* type_name) {
  if (!given) return true;
  if (!struct_ok(given->struct_size, sizeof(T))) {
    set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s.struct_size = %zu: set it to sizeof(%s) = %zu",
                                 type_name, given->struct_size, type_name, sizeof(T)));
    return false;
  }
  std::memcpy(out, given, given->struct_size);
  return true;
}

// Copies `ids` out under the buffer rules of ember_tokenize: *out_count is
// the count; a capacity below it is EMBER_ERR_BUFFER_TOO_SMALL ("capacity =
// N tokens but `what` needs M") with nothing written.
inline ember_status tokens_out(const std::vector<int32_t>& ids, int32_t* tokens, size_t capacity, size_t* out_count,
                               const char* what) {
  *out_count = ids.size();
  if (ids.size() > capacity) {
    return set_last_error(Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "capacity = %zu tokens but %s needs %zu", capacity,
                                        what, ids.size()));
  }
  if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t));
  return EMBER_OK;
}

}  // namespace ember

// Every status-returning entry point starts here: a success leaves "" as the
// last error, whatever an earlier call on this thread left there.
#define EMBER_API_ENTRY() ::ember::clear_last_error()

// The C API over Model, Session, Tokenizer and Sampler. Every entry point
// checks its arguments, converts failures into ember_status plus the
// thread-local last error, and never lets anything escape the C boundary.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/session.h"
#include "platforms/linux/mapped_file.h"
#include "sampling/sampler.h"

struct ember_model {
  std::unique_ptr<ember::Model> model;
  // The built-in chat template for a file without one (ember::
  // default_chat_template), chosen once at open: it scans the vocabulary.
  const char* default_chat_template = nullptr;
};

const ember::Vocab& ember::model_vocab(const ember_model* m) { return m->model->tokenizer().vocab(); }
int ember::model_arch(const ember_model* m) { return static_cast<int>(m->model->hparams().arch); }
const char* ember::model_default_chat_template(const ember_model* m) { return m->default_chat_template; }
const ember::Model& ember::model_of(const ember_model* m) { return *m->model; }

int ember_token_is_eog(const ember_model* model, int32_t token) {
  return model && model->model->tokenizer().is_eog(token) ? 1 : 0;
}

struct ember_session {
  ember_model* owner = nullptr;
  std::unique_ptr<ember::Session> session;
  std::string piece;  // the current piece for the token callback (reserved once)
  ember::GenerateStats last_stats;  // of the last ember_generate call
  ember::StopStrings stops;         // ember_generate's stop strings (buffers reused)
};

struct ember_sampler {
  ember::Sampler sampler;
};

struct ember_threadpool {
  std::shared_ptr<ember::ThreadPool> pool;  // sessions on it hold references too
};

namespace ember {
namespace {

ember_status fail(ember_status code, const char* fmt, const char* arg = "") {
  return set_last_error(Status::error(code, fmt, arg));
}

ember_status done(const Status& s) { return set_last_error(s); }

bool struct_ok(size_t got, size_t want) { return got >= sizeof(size_t) && got <= want; }

// Every status-returning entry point starts here: a success leaves "" as the
// last error, whatever an earlier call on this thread left there.
#define EMBER_API_ENTRY() ::ember::clear_last_error()

}  // namespace

SamplerParams sampler_params(const ember_generate_options& o) {
  SamplerParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.min_p = o.min_p;
  sp.repeat_penalty = o.repeat_penalty;
  sp.repeat_last_n = o.repeat_last_n;
  sp.seed = o.seed;
  return sp;
}

// The one place ember_backend_kind becomes the internal request: a kind, or
// none for auto. False for a value that is not an ember_backend_kind.
bool backend_from_c(int32_t kind, std::optional<BackendKind>* out) {
  switch (kind) {
    case EMBER_BACKEND_AUTO: *out = std::nullopt; return true;
    case EMBER_BACKEND_CPU: *out = BackendKind::Cpu; return true;
    case EMBER_BACKEND_VULKAN: *out = BackendKind::Vulkan; return true;
    default: return false;
  }
}

bool session_options(const ember_session_options& o, SessionOptions* so) {
  auto kv = [](int32_t v, const char* field, KvType* out) {
    if (v < EMBER_KV_F32 || v > EMBER_KV_Q8_0) {
      set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s = %d is not an ember_kv_type", field, v));
      return false;
    }
    *out = static_cast<KvType>(v);
    return true;
  };
  if (!kv(o.kv_type_k, "kv_type_k", &so->kv_type_k) || !kv(o.kv_type_v, "kv_type_v", &so->kv_type_v)) return false;
  if (!backend_from_c(o.backend, &so->backend)) {
    set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "backend = %d is not an ember_backend_kind", o.backend));
    return false;
  }
  so->context_length = o.context_length;
  so->max_batch = o.max_batch;
  so->n_seqs = o.n_seqs;
  so->sliding_window_full = o.sliding_window_full != 0;
  so->n_threads = o.n_threads;
  so->arena = o.arena;
  so->arena_size = o.arena_size;
  so->max_bytes = o.max_bytes;
  if (o.thread_pool) so->thread_pool = o.thread_pool->pool;
  // NULL: the default folder; "": no cache on disk.
  so->vulkan_pipeline_cache = !(o.vulkan_pipeline_cache_dir && o.vulkan_pipeline_cache_dir[0] == '\0');
  if (o.vulkan_pipeline_cache_dir) {
    constexpr size_t kMaxPath = 4096;
    const size_t len = strnlen(o.vulkan_pipeline_cache_dir, kMaxPath + 1);
    if (len > kMaxPath) {
      set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan_pipeline_cache_dir is longer than %zu bytes",
                                   kMaxPath));
      return false;
    }
    so->vulkan_pipeline_cache_dir.assign(o.vulkan_pipeline_cache_dir, len);
  }
  if (so->arena && so->arena_size == 0) {
    set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "arena is set but arena_size is 0"));
    return false;
  }
  return true;
}

namespace {

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

}  // namespace
}  // namespace ember

using ember::done;
using ember::fail;

extern "C" {

void ember_model_options_default(ember_model_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->integrity_policy = EMBER_INTEGRITY_NONE;
  o->guard_mapping = 1;
}

ember_status ember_model_open(const char* path, const ember_model_options* options, ember_model** out_model) {
  EMBER_API_ENTRY();
  if (!out_model) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_model is NULL");
  *out_model = nullptr;
  if (!path) return fail(EMBER_ERR_INVALID_ARGUMENT, "path is NULL");
  ember_model_options o;
  ember_model_options_default(&o);
  if (!ember::read_options(options, &o, "ember_model_options")) return EMBER_ERR_INVALID_ARGUMENT;
  // The integrity policy. Fail closed: a key without the signature policy, or
  // the policy without a key, is a caller mistake, not "check less".
  if (o.integrity_policy < EMBER_INTEGRITY_NONE || o.integrity_policy > EMBER_INTEGRITY_SIGNATURE) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                     "integrity_policy = %d is not an ember_integrity_policy (0, 1, 2)",
                                     o.integrity_policy));
  }
  ember::Model::Options mo;
  // Each policy includes the one before it (docs/decisions.md, "Trust").
  mo.verify_digest = o.integrity_policy >= EMBER_INTEGRITY_DIGEST;
  mo.verify_signature = o.integrity_policy == EMBER_INTEGRITY_SIGNATURE;
  mo.guard_mapping = o.guard_mapping != 0;
  if (o.public_key_pem) {
    constexpr size_t kMaxPem = 1 << 16;
    const size_t len = o.public_key_pem_len ? o.public_key_pem_len : strnlen(o.public_key_pem, kMaxPem + 1);
    if (len == 0 || len > kMaxPem) {
      return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                       "public_key_pem is %zu bytes: a P-256 PEM key is about 180", len));
    }
    if (!mo.verify_signature) {
      return fail(EMBER_ERR_INVALID_ARGUMENT,
                  "public_key_pem is set but integrity_policy is not EMBER_INTEGRITY_SIGNATURE (the key would check "
                  "nothing)");
    }
    mo.public_key_pem.assign(o.public_key_pem, len);
  } else if (mo.verify_signature) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "integrity_policy is EMBER_INTEGRITY_SIGNATURE but public_key_pem is NULL");
  }
  auto model = ember::Model::open(path, mo);
  if (!model.is_ok()) return done(model.status());
  *out_model = new (std::nothrow) ember_model{std::move(model).value()};
  if (!*out_model) return fail(EMBER_ERR_NO_MEMORY, "cannot allocate the model handle");
  (*out_model)->default_chat_template = ember::default_chat_template(*out_model);
  return EMBER_OK;
}

void ember_model_free(ember_model* model) { delete model; }

ember_status ember_model_get_info(const ember_model* model, ember_model_info* info) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!info) return fail(EMBER_ERR_INVALID_ARGUMENT, "info is NULL");
  if (!ember::struct_ok(info->struct_size, sizeof *info)) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "ember_model_info.struct_size is wrong: set it to sizeof");
  }
  const ember::HParams& hp = model->model->hparams();
  ember_model_info full;
  full.struct_size = info->struct_size;
  full.vocab_size = static_cast<int32_t>(hp.vocab_size);
  full.dim = static_cast<int32_t>(hp.dim);
  full.hidden_dim = static_cast<int32_t>(hp.hidden_dim);
  full.n_layers = static_cast<int32_t>(hp.n_layers);
  full.n_heads = static_cast<int32_t>(hp.n_heads);
  full.n_kv_heads = static_cast<int32_t>(hp.n_kv_heads);
  full.max_context = static_cast<int32_t>(hp.max_seq_len);
  full.bos_id = model->model->tokenizer().vocab().bos_id;
  full.eos_id = model->model->tokenizer().vocab().eos_id;
  full.n_parameters = model->model->parameter_count();
  full.add_bos = model->model->tokenizer().vocab().add_bos && full.bos_id >= 0 ? 1 : 0;
  std::memcpy(info, &full, info->struct_size);
  return EMBER_OK;
}

ember_status ember_tokenize(const ember_model* model, const char* text, size_t text_len, int flags,
                            int32_t* tokens, size_t capacity, size_t* out_count) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!out_count) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  if (!text && text_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "text is NULL but text_len > 0");
  if (!tokens && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL but capacity > 0");
  if (flags & ~(EMBER_TOKENIZE_ADD_BOS | EMBER_TOKENIZE_PARSE_SPECIAL)) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                     "flags = %d: only EMBER_TOKENIZE_ADD_BOS (1) and EMBER_TOKENIZE_PARSE_SPECIAL (2)",
                                     flags));
  }
  ember::EncodeOptions eo;
  eo.add_bos = (flags & EMBER_TOKENIZE_ADD_BOS) != 0;
  eo.parse_special = (flags & EMBER_TOKENIZE_PARSE_SPECIAL) != 0;
  std::vector<int32_t> ids;
  ember::Status s = model->model->tokenizer().encode(std::string_view(text ? text : "", text_len), eo, &ids);
  if (!s.is_ok()) return done(s);
  *out_count = ids.size();
  if (ids.size() > capacity) {
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "capacity = %zu tokens but the text needs %zu",
                                     capacity, ids.size()));
  }
  if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t));
  return EMBER_OK;
}

ember_status ember_detokenize(const ember_model* model, const int32_t* tokens, size_t count, char* text,
                              size_t capacity, size_t* out_len) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!out_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_len is NULL");
  *out_len = 0;
  if (!tokens && count) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL but count > 0");
  if (!text && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "text is NULL but capacity > 0");
  std::string out;
  const ember::Tokenizer& tok = model->model->tokenizer();
  for (size_t i = 0; i < count; ++i) {
    ember::Status s = tok.decode_token(i ? tokens[i - 1] : -1, tokens[i], &out);
    if (!s.is_ok()) return done(s.with_context("tokens[" + std::to_string(i) + "]"));
  }
  *out_len = out.size();
  if (out.size() > capacity) {
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "capacity = %zu bytes but the text needs %zu",
                                     capacity, out.size()));
  }
  if (!out.empty()) std::memcpy(text, out.data(), out.size());
  return EMBER_OK;
}

ember_status ember_token_to_piece(const ember_model* model, int32_t prev, int32_t token, char* piece,
                                  size_t capacity, size_t* out_len) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!out_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_len is NULL");
  *out_len = 0;
  if (!piece && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "piece is NULL but capacity > 0");
  std::string out;
  ember::Status s = model->model->tokenizer().decode_token(prev, token, &out);
  if (!s.is_ok()) return done(s);
  *out_len = out.size();
  if (out.size() > capacity) {
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "capacity = %zu bytes but the piece needs %zu",
                                     capacity, out.size()));
  }
  if (!out.empty()) std::memcpy(piece, out.data(), out.size());
  return EMBER_OK;
}

void ember_session_options_default(ember_session_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->context_length = 0;
  o->max_batch = 512;
  o->n_threads = 0;
  o->kv_type_k = EMBER_KV_F32;
  o->kv_type_v = EMBER_KV_F32;
  o->backend = EMBER_BACKEND_CPU;
  o->n_seqs = 1;
}

ember_status ember_session_create(ember_model* model, const ember_session_options* options,
                                  ember_session** out_session) {
  EMBER_API_ENTRY();
  if (!out_session) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = nullptr;
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  ember_session_options o;
  ember_session_options_default(&o);
  if (!ember::read_options(options, &o, "ember_session_options")) return EMBER_ERR_INVALID_ARGUMENT;
  ember::SessionOptions so;
  if (!ember::session_options(o, &so)) return EMBER_ERR_INVALID_ARGUMENT;
  auto session = ember::Session::create(*model->model, so);
  if (!session.is_ok()) return done(session.status());
  auto* handle = new (std::nothrow) ember_session();
  if (!handle) return fail(EMBER_ERR_NO_MEMORY, "cannot allocate the session handle");
  handle->owner = model;
  handle->session = std::move(session).value();
  handle->piece.reserve(256);  // once here, so that generation never grows it
  *out_session = handle;
  return EMBER_OK;
}

void ember_session_free(ember_session* session) { delete session; }

ember_status ember_threadpool_create(int32_t n_threads, ember_threadpool** out_pool) {
  EMBER_API_ENTRY();
  if (!out_pool) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_pool is NULL");
  *out_pool = nullptr;
  auto pool = ember::create_thread_pool(n_threads);
  if (!pool.is_ok()) return done(pool.status());
  auto* handle = new (std::nothrow) ember_threadpool();
  if (!handle) return fail(EMBER_ERR_NO_MEMORY, "cannot allocate the thread pool handle");
  handle->pool = std::move(pool).value();
  *out_pool = handle;
  return EMBER_OK;
}

void ember_threadpool_free(ember_threadpool* pool) { delete pool; }

ember_status ember_session_prefill(ember_session* session, const int32_t* tokens, size_t count, float* logits) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!tokens) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL");
  if (count == 0) return fail(EMBER_ERR_INVALID_ARGUMENT, "count is 0");
  ember::Status s = session->session->prefill(tokens, count, logits);
  if (!s.is_ok()) return done(s);
  return EMBER_OK;
}

ember_status ember_session_decode(ember_session* session, int32_t token, float* logits) {
  return ember_session_prefill(session, &token, 1, logits);
}

int32_t ember_session_position(const ember_session* session) {
  return session ? session->session->position() : 0;
}

const char* ember_session_backend(const ember_session* session) {
  return session ? session->session->backend_description().c_str() : "";
}

ember_status ember_session_reset(ember_session* session) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  session->session->reset();
  return EMBER_OK;
}

ember_status ember_session_tokens(const ember_session* session, int32_t* tokens, size_t capacity,
                                  size_t* out_count) {
  EMBER_API_ENTRY();
  if (!out_count) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  const size_t n = static_cast<size_t>(session->session->position());
  if (capacity < n || (n && !tokens)) {
    *out_count = n;
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "the session holds %zu tokens, capacity is %zu", n,
                                     tokens ? capacity : 0));
  }
  if (n) std::memcpy(tokens, session->session->history(), n * sizeof(int32_t));
  *out_count = n;
  return EMBER_OK;
}

ember_status ember_session_save_buffer(const ember_session* session, void* buffer, size_t capacity,
                                       size_t* out_size) {
  EMBER_API_ENTRY();
  if (!out_size) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_size is NULL");
  *out_size = 0;
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  auto total = session->session->state_bytes();
  if (!total.is_ok()) return done(total.status());
  if (total.value() > SIZE_MAX) return fail(EMBER_ERR_NO_MEMORY, "the saved state does not fit in memory");
  if (!buffer || capacity < total.value()) {
    *out_size = static_cast<size_t>(total.value());
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "the saved state needs %zu bytes, capacity is %zu",
                                     *out_size, buffer ? capacity : 0));
  }
  ember::Status s = session->session->save_state(static_cast<uint8_t*>(buffer), capacity);
  if (!s.is_ok()) return done(s);
  *out_size = static_cast<size_t>(total.value());
  return EMBER_OK;
}

ember_status ember_session_save(const ember_session* session, const char* path) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!path) return fail(EMBER_ERR_INVALID_ARGUMENT, "path is NULL");
  auto total = session->session->state_bytes();
  if (!total.is_ok()) return done(total.status());
  std::vector<uint8_t> bytes;
  if (total.value() > SIZE_MAX) return fail(EMBER_ERR_NO_MEMORY, "the saved state does not fit in memory");
  bytes.resize(static_cast<size_t>(total.value()));  // std::bad_alloc is fatal under -fno-exceptions
  ember::Status s = session->session->save_state(bytes.data(), bytes.size());
  if (s.is_ok()) s = ember::write_file_atomic(path, bytes.data(), bytes.size());
  return done(s);
}

ember_status ember_session_load_buffer(ember_session* session, const void* buffer, size_t size) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!buffer) return fail(EMBER_ERR_INVALID_ARGUMENT, "buffer is NULL");
  return done(session->session->load_state(static_cast<const uint8_t*>(buffer), size));
}

ember_status ember_session_load(ember_session* session, const char* path) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!path) return fail(EMBER_ERR_INVALID_ARGUMENT, "path is NULL");
  auto bytes = ember::read_file(path);
  if (!bytes.is_ok()) return done(bytes.status());
  const std::string& b = bytes.value();
  return done(session->session->load_state(reinterpret_cast<const uint8_t*>(b.data()), b.size())
                  .with_context(std::string("'") + path + "'"));
}

void ember_generate_options_default(ember_generate_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_new_tokens = 128;
  o->temperature = 0.0f;
  o->top_k = 0;
  o->top_p = 1.0f;
  o->min_p = 0.0f;
  o->repeat_penalty = 1.0f;
  o->repeat_last_n = 64;
  o->seed = 0;
  o->add_bos = -1;
}

ember_status ember_generate(ember_session* session, const char* prompt, const ember_generate_options* options,
                            ember_token_callback callback, void* user_data) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  session->last_stats = ember::GenerateStats();
  ember_generate_options o;
  ember_generate_options_default(&o);
  if (!ember::read_options(options, &o, "ember_generate_options")) return EMBER_ERR_INVALID_ARGUMENT;
  if (o.prompt_tokens && prompt) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "both prompt and prompt_tokens are set: pass one (prompt NULL for ids)");
  }
  if (!o.prompt_tokens && o.n_prompt_tokens) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "prompt_tokens is NULL but n_prompt_tokens = %zu",
                                     o.n_prompt_tokens));
  }
  if (o.prompt_tokens && !o.n_prompt_tokens) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "prompt_tokens is set but n_prompt_tokens is 0: nothing to run");
  }
  if (!prompt && !o.prompt_tokens) return fail(EMBER_ERR_INVALID_ARGUMENT, "prompt is NULL (and no prompt_tokens)");
  if (o.max_new_tokens < 0) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_new_tokens = %d: must be >= 0", o.max_new_tokens));
  }
  if (!o.stop_strings && o.n_stop_strings) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop_strings is NULL but n_stop_strings = %zu",
                                     o.n_stop_strings));
  }
  if (o.n_stop_strings > EMBER_MAX_STOP_STRINGS) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_stop_strings = %zu: at most %d",
                                     o.n_stop_strings, EMBER_MAX_STOP_STRINGS));
  }
  std::vector<std::string> stops;
  for (size_t i = 0; i < o.n_stop_strings; ++i) {
    const char* stop = o.stop_strings[i];
    if (!stop) return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop_strings[%zu] is NULL", i));
    const size_t len = strnlen(stop, EMBER_MAX_STOP_STRING_BYTES + 1);
    if (len == 0 || len > EMBER_MAX_STOP_STRING_BYTES) {
      return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop_strings[%zu] is %s: must be 1..%d bytes", i,
                                       len ? "too long" : "empty", EMBER_MAX_STOP_STRING_BYTES));
    }
    stops.emplace_back(stop, len);
  }
  const ember::Model& model = *session->owner->model;
  auto sampler = ember::Sampler::create(ember::sampler_params(o), static_cast<int32_t>(model.hparams().vocab_size));
  if (!sampler.is_ok()) return done(sampler.status());

  std::vector<int32_t> ids;
  ember::Status s;
  if (o.prompt_tokens) {
    // Checked here, before anything runs, so the message names the caller's
    // field and the session is untouched.
    const int64_t vocab = static_cast<int64_t>(model.hparams().vocab_size);
    for (size_t i = 0; i < o.n_prompt_tokens; ++i) {
      if (o.prompt_tokens[i] < 0 || o.prompt_tokens[i] >= vocab) {
        return done(ember::Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE,
                                         "prompt_tokens[%zu] = %d is outside the vocabulary (0..%lld)", i,
                                         o.prompt_tokens[i], static_cast<long long>(vocab - 1)));
      }
    }
    ids.assign(o.prompt_tokens, o.prompt_tokens + o.n_prompt_tokens);
  } else {
    const ember::Vocab& vocab = model.tokenizer().vocab();
    const bool add_bos = o.add_bos < 0 ? vocab.add_bos && vocab.bos_id >= 0 : o.add_bos != 0;
    s = model.tokenizer().encode(prompt, add_bos, &ids);
    if (!s.is_ok()) return done(s);
  }
  if (ids.empty()) return fail(EMBER_ERR_INVALID_ARGUMENT, "the prompt is empty and add_bos is off: nothing to run");
  struct Sink {
    ember_token_callback callback;
    void* user_data;
    static bool call(void* self, int32_t token, const std::string& piece) {
      const Sink* k = static_cast<const Sink*>(self);
      return k->callback && k->callback(k->user_data, token, piece.data(), piece.size()) != 0;
    }
  } sink{callback, user_data};
  ember::GenerateParams gp;
  gp.max_new_tokens = o.max_new_tokens;
  gp.context_shift = o.context_shift != 0;
  gp.prompt_logits = o.prompt_logits;
  session->stops.set(std::move(stops));
  gp.stop_strings = &session->stops;
  s = ember::generate(*session->session, *sampler, ids.data(), ids.size(), gp, &Sink::call, &sink, &session->piece,
                      &session->last_stats);
  if (!s.is_ok()) {
    session->last_stats.stop = ember::StopReason::None;
    return done(s);
  }
  return EMBER_OK;
}

ember_status ember_generate_last_stats(const ember_session* session, ember_generate_stats* stats) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!stats) return fail(EMBER_ERR_INVALID_ARGUMENT, "stats is NULL");
  if (!ember::struct_ok(stats->struct_size, sizeof *stats)) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "ember_generate_stats.struct_size is wrong: set it to sizeof");
  }
  const ember::GenerateStats& g = session->last_stats;
  ember_generate_stats full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = stats->struct_size;
  full.prompt_tokens = g.prompt_tokens;
  full.generated_tokens = g.generated_tokens;
  full.prefill_ms = g.prefill_ms;
  full.first_token_ms = g.first_token_ms;
  full.decode_ms = g.decode_ms;
  full.stop_reason = static_cast<int32_t>(g.stop);
  full.position = session->session->position();
  full.sampled_tokens = g.sampled_tokens;
  full.last_token = g.last_token;
  std::memcpy(stats, &full, stats->struct_size);
  return EMBER_OK;
}

ember_status ember_sampler_create(const ember_model* model, const ember_generate_options* options,
                                  ember_sampler** out_sampler) {
  EMBER_API_ENTRY();
  if (!out_sampler) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_sampler is NULL");
  *out_sampler = nullptr;
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  ember_generate_options o;
  ember_generate_options_default(&o);
  if (!ember::read_options(options, &o, "ember_generate_options")) return EMBER_ERR_INVALID_ARGUMENT;
  auto sampler = ember::Sampler::create(ember::sampler_params(o),
                                        static_cast<int32_t>(model->model->hparams().vocab_size));
  if (!sampler.is_ok()) return done(sampler.status());
  *out_sampler = new (std::nothrow) ember_sampler{std::move(sampler).value()};
  if (!*out_sampler) return fail(EMBER_ERR_NO_MEMORY, "cannot allocate the sampler handle");
  return EMBER_OK;
}

void ember_sampler_free(ember_sampler* sampler) { delete sampler; }

ember_status ember_sampler_sample(ember_sampler* sampler, float* logits, const int32_t* history,
                                  size_t history_len, int32_t* out_token) {
  EMBER_API_ENTRY();
  if (!sampler) return fail(EMBER_ERR_INVALID_ARGUMENT, "sampler is NULL");
  if (!logits) return fail(EMBER_ERR_INVALID_ARGUMENT, "logits is NULL");
  if (!out_token) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_token is NULL");
  if (!history && history_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "history is NULL but history_len > 0");
  *out_token = sampler->sampler.sample(logits, history, history_len);
  return EMBER_OK;
}

}  // extern "C"

extern "C" {

ember_status ember_plan(const ember_model* model, const ember_session_options* options, ember_memory_plan* plan) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!plan) return fail(EMBER_ERR_INVALID_ARGUMENT, "plan is NULL");
  if (!ember::struct_ok(plan->struct_size, sizeof *plan)) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "ember_memory_plan.struct_size is wrong: set it to sizeof");
  }
  ember_session_options o;
  ember_session_options_default(&o);
  if (!ember::read_options(options, &o, "ember_session_options")) return EMBER_ERR_INVALID_ARGUMENT;
  ember::SessionOptions so;
  if (!ember::session_options(o, &so)) return EMBER_ERR_INVALID_ARGUMENT;
  auto p = ember::Session::plan(*model->model, so);
  if (!p.is_ok()) return done(p.status());
  ember_memory_plan full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = plan->struct_size;
  full.weights_mapped_bytes = p->memory.weights_mapped_bytes;
  full.weights_resident_bytes = p->memory.weights_resident_bytes;
  full.kv_bytes = p->memory.kv_bytes;
  full.activations_bytes = p->memory.activations_bytes;
  full.scratch_bytes = p->memory.scratch_bytes;
  full.runtime_bytes = p->runtime_bytes;
  full.arena_bytes = p->arena_bytes;
  full.private_bytes = p->private_bytes;
  full.device_bytes = p->device_bytes;
  full.estimate_weights_bytes = p->estimate_weights_bytes;
  full.estimate_kv_bytes = p->estimate_kv_bytes;
  full.context_length = p->context;
  full.max_batch = p->max_batch;
  full.n_seqs = p->n_seqs;
  std::memcpy(plan, &full, plan->struct_size);
  return EMBER_OK;
}

ember_status ember_session_remove(ember_session* session, int32_t start, int32_t end) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  return done(session->session->remove(start, end));
}

ember_status ember_session_decode_batch(ember_session* session, const ember_batch_item* items, size_t n_items) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!items) return fail(EMBER_ERR_INVALID_ARGUMENT, "items is NULL");
  ember::Session& s = *session->session;
  if (n_items == 0 || n_items > static_cast<size_t>(s.n_seqs())) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_items = %zu: must be in 1..%d (the session's n_seqs)",
                                     n_items, s.n_seqs()));
  }
  // At most n_seqs items: converted on the stack, no allocation.
  ember::Session::BatchItem conv[ember::kMaxSessionSeqs];
  for (size_t i = 0; i < n_items; ++i) {
    if (items[i].n_tokens > static_cast<size_t>(INT32_MAX)) {
      return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "items[%zu].n_tokens = %zu is too large", i,
                                       items[i].n_tokens));
    }
    conv[i].seq = items[i].seq;
    conv[i].tokens = items[i].tokens;
    conv[i].n_tokens = static_cast<int32_t>(items[i].n_tokens);
    conv[i].logits = items[i].logits;
  }
  return done(s.decode_batch(conv, n_items));
}

int32_t ember_session_n_seqs(const ember_session* session) { return session ? session->session->n_seqs() : 0; }

int32_t ember_session_seq_position(const ember_session* session, int32_t seq) {
  if (!session || seq < 0 || seq >= session->session->n_seqs()) return -1;
  return session->session->seq_position(seq);
}

ember_status ember_session_seq_tokens(const ember_session* session, int32_t seq, int32_t* tokens, size_t capacity,
                                      size_t* out_count) {
  EMBER_API_ENTRY();
  if (!out_count) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  const ember::Session& s = *session->session;
  if (seq < 0 || seq >= s.n_seqs()) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "seq = %d: sequences are 0..%d", seq, s.n_seqs() - 1));
  }
  const size_t n = static_cast<size_t>(s.seq_position(seq));
  if (capacity < n || (n && !tokens)) {
    *out_count = n;
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "sequence %d holds %zu tokens, capacity is %zu", seq,
                                     n, tokens ? capacity : 0));
  }
  if (n) std::memcpy(tokens, s.seq_history(seq), n * sizeof(int32_t));
  *out_count = n;
  return EMBER_OK;
}

ember_status ember_session_seq_remove(ember_session* session, int32_t seq, int32_t start, int32_t end) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  return done(session->session->remove_seq(seq, start, end));
}

ember_status ember_session_seq_copy(ember_session* session, int32_t src, int32_t dst, int32_t n_tokens) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  return done(session->session->copy_seq(src, dst, n_tokens));
}

}  // extern "C"

// The C API over Model, Session, Tokenizer and Sampler. Every entry point
// checks its arguments, converts failures into ember_status plus the
// thread-local last error, and never lets anything escape the C boundary.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "platforms/linux/mapped_file.h"

const ember::Vocab& ember::model_vocab(const ember_model* m) { return m->model->tokenizer().vocab(); }
int ember::model_arch(const ember_model* m) { return static_cast<int>(m->model->hparams().arch); }
const char* ember::model_default_chat_template(const ember_model* m) { return m->default_chat_template; }
const ember::Model& ember::model_of(const ember_model* m) { return *m->model; }

int ember_token_is_eog(const ember_model* model, int32_t token) {
  return model && model->model->tokenizer().is_eog(token) ? 1 : 0;
}

namespace ember {

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
  so->max_draft = o.max_draft;
  so->sliding_window_full = o.sliding_window_full != 0;
  so->embeddings = o.embeddings != 0;
  so->backend_options.cpu.n_threads = o.n_threads;
  so->arena = o.arena;
  so->arena_size = o.arena_size;
  so->max_bytes = o.max_bytes;
  if (o.thread_pool) so->backend_options.cpu.thread_pool = o.thread_pool->pool;
  // NULL: the default folder; "": no cache on disk.
  VulkanOptions& vulkan = so->backend_options.vulkan;
  vulkan.pipeline_cache = !(o.vulkan_pipeline_cache_dir && o.vulkan_pipeline_cache_dir[0] == '\0');
  if (o.vulkan_pipeline_cache_dir) {
    constexpr size_t kMaxPath = 4096;
    const size_t len = strnlen(o.vulkan_pipeline_cache_dir, kMaxPath + 1);
    if (len > kMaxPath) {
      set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan_pipeline_cache_dir is longer than %zu bytes",
                                   kMaxPath));
      return false;
    }
    vulkan.pipeline_cache_dir.assign(o.vulkan_pipeline_cache_dir, len);
  }
  if (so->arena && so->arena_size == 0) {
    set_last_error(Status::error(EMBER_ERR_INVALID_ARGUMENT, "arena is set but arena_size is 0"));
    return false;
  }
  return true;
}

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
  full.encoder = ember::model_arch_is_encoder(model->model->hparams().arch) ? 1 : 0;
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
  return ember::tokens_out(ids, tokens, capacity, out_count, "the text");
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

ember_status ember_session_collect_activations(ember_session* session, int enable, int include_output) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  return done(session->session->collect_activations(enable != 0, include_output != 0));
}

size_t ember_session_activation_count(const ember_session* session) {
  if (!session || !session->session->activation_stats()) return 0;
  return session->session->activation_stats()->entries.size();
}

ember_status ember_session_activation_stats(const ember_session* session, size_t index, ember_activation_stats* info,
                                            float* sum_sq, size_t capacity) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!info) return fail(EMBER_ERR_INVALID_ARGUMENT, "info is NULL");
  const ember::ActivationStats* stats = session->session->activation_stats();
  if (!stats) {
    return fail(EMBER_ERR_INVALID_ARGUMENT,
                "the session is not collecting activation statistics (ember_session_collect_activations)");
  }
  if (index >= stats->entries.size()) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "index = %zu: the session has %zu matrices with statistics",
                                     index, stats->entries.size()));
  }
  const ember::ActivationStats::Entry& e = stats->entries[index];
  if (sum_sq && capacity < static_cast<size_t>(e.cols)) {
    return done(ember::Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "capacity = %zu: '%s' has %lld columns", capacity,
                                     e.name.c_str(), static_cast<long long>(e.cols)));
  }
  info->weight = e.name.c_str();
  info->cols = e.cols;
  info->rows = e.rows;
  if (sum_sq) {
    for (int64_t c = 0; c < e.cols; ++c) sum_sq[c] = static_cast<float>(e.sum_sq[c]);
  }
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

ember_status ember_session_decode_logits(ember_session* session, const int32_t* tokens, size_t count, float* logits,
                                        int32_t n_logits) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!tokens) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL");
  if (!logits) return fail(EMBER_ERR_INVALID_ARGUMENT, "logits is NULL");
  if (count == 0 || count > static_cast<size_t>(INT32_MAX)) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "count = %zu: must be in 1..%d", count, INT32_MAX));
  }
  ember::Session::BatchItem item;
  item.seq = 0;
  item.tokens = tokens;
  item.n_tokens = static_cast<int32_t>(count);
  item.logits = logits;
  item.n_logits = n_logits;
  return done(session->session->decode_batch(&item, 1));
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

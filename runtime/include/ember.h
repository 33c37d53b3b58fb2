/* ember — LLM inference runtime for edge hardware. The public C API.
 *
 * Usage (error handling shortened; every call returns an ember_status):
 *
 *   ember_model* model = NULL;
 *   ember_model_options mopt;
 *   ember_model_options_default(&mopt);
 *   if (ember_model_open("stories260K.ember", &mopt, &model) != EMBER_OK) {
 *     fprintf(stderr, "%s\n", ember_last_error());
 *     return 1;
 *   }
 *   ember_session_options sopt;
 *   ember_session_options_default(&sopt);
 *   sopt.context_length = 256;
 *   ember_session* session = NULL;
 *   ember_session_create(model, &sopt, &session);
 *
 *   ember_generate_options gopt;
 *   ember_generate_options_default(&gopt);      // greedy
 *   gopt.max_new_tokens = 64;
 *   ember_generate(session, "Once upon a time", &gopt, on_token, NULL);
 *
 *   ember_session_free(session);
 *   ember_model_free(model);
 *
 * where on_token is
 *   int on_token(void* user, int32_t token, const char* piece, size_t len) {
 *     fwrite(piece, 1, len, stdout);
 *     return 0;                                // non-zero stops generation
 *   }
 *
 * Conventions: opaque handles; every *_open and *_create has a *_free that
 * accepts NULL; options structs begin with `size_t struct_size`, are filled
 * by *_options_default() and passed by pointer (a NULL options pointer means
 * defaults). On failure a call returns a non-zero ember_status and
 * ember_last_error() describes it (thread-local, valid until the next ember
 * call on the same thread). No call aborts on bad input.
 */
#ifndef EMBER_H_
#define EMBER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes, grouped: argument 1xx, memory 2xx, file format 3xx,
 * runtime/backend 4xx, security 5xx. Values never change once released. */
typedef enum ember_status {
  EMBER_OK = 0,

  EMBER_ERR_INVALID_ARGUMENT = 100, /* a NULL handle, a bad option value */
  EMBER_ERR_TOKEN_OUT_OF_RANGE = 101, /* a token id outside the vocabulary */
  EMBER_ERR_UNSUPPORTED = 102,      /* valid, but not supported here */

  EMBER_ERR_NO_MEMORY = 200,        /* allocation failed or budget exceeded */
  EMBER_ERR_CONTEXT_FULL = 201,     /* no room left in the session's context */

  EMBER_ERR_IO = 300,               /* cannot open, read, map or write a file */
  EMBER_ERR_FORMAT = 301,           /* framing, identifier, FlatBuffer structure */
  EMBER_ERR_VERSION = 302,          /* a schema version this build does not know */
  EMBER_ERR_TRUNCATED = 303,        /* the file ends before a section does */
  EMBER_ERR_BAD_TENSOR = 304,       /* offset, size, dtype, shape, overlap */
  EMBER_ERR_BAD_HPARAMS = 305,      /* heads, dims, layers inconsistent */
  EMBER_ERR_BAD_TOKENIZER = 306,    /* vocabulary, special ids, pieces */
  EMBER_ERR_MISSING_TENSOR = 307,   /* the architecture needs a tensor absent */

  EMBER_ERR_BACKEND = 400,          /* a backend failed (device error) */
  EMBER_ERR_INTERNAL = 401,         /* a bug in ember; please report */

  EMBER_ERR_INTEGRITY = 500,        /* a digest does not match */
  EMBER_ERR_SIGNATURE = 501         /* a signature is missing or wrong */
} ember_status;

/* Name of a status ("EMBER_ERR_FORMAT"); never NULL. */
const char* ember_status_string(ember_status status);

/* Details of the last failure on this thread; "" if none. The pointer stays
 * valid until the next ember call on this thread. */
const char* ember_last_error(void);

/* Library version "MAJOR.MINOR.PATCH". */
const char* ember_version(void);

/* ---- Models ------------------------------------------------------------ */

typedef struct ember_model ember_model;

/* What must be proven about a file before it is used. */
typedef enum ember_integrity_policy {
  EMBER_INTEGRITY_NONE = 0,      /* structure and semantics only (default) */
  EMBER_INTEGRITY_DIGEST = 1,    /* + the data segment's SHA-256 matches the metadata */
  EMBER_INTEGRITY_SIGNATURE = 2  /* + an ECDSA P-256 signature by public_key_pem */
} ember_integrity_policy;

typedef struct ember_model_options {
  size_t struct_size; /* sizeof(ember_model_options) */
  /* Check the data segment's SHA-256 against the metadata before use
   * (reads the whole file once). Default 0. Same as policy DIGEST. */
  int verify_digest;
  /* ember_integrity_policy; default EMBER_INTEGRITY_NONE. Fails closed: the
   * SIGNATURE policy without a key, or a key without it, is
   * EMBER_ERR_INVALID_ARGUMENT. A missing, foreign or broken signature is
   * EMBER_ERR_SIGNATURE; a data digest mismatch EMBER_ERR_INTEGRITY. */
  int integrity_policy;
  /* PEM text of the public key that must have signed the file (policy
   * SIGNATURE). Not owned; read during ember_model_open only.
   * public_key_pem_len 0 means the text is NUL-terminated. */
  const char* public_key_pem;
  size_t public_key_pem_len;
} ember_model_options;

void ember_model_options_default(ember_model_options* options);

/* Maps and verifies an .ember file. On success *out_model owns the mapping;
 * free it with ember_model_free. Errors: EMBER_ERR_IO, EMBER_ERR_FORMAT,
 * EMBER_ERR_VERSION, EMBER_ERR_TRUNCATED, EMBER_ERR_BAD_*, ... */
ember_status ember_model_open(const char* path, const ember_model_options* options,
                              ember_model** out_model);

/* Releases a model. All its sessions must have been freed. NULL is a no-op. */
void ember_model_free(ember_model* model);

typedef struct ember_model_info {
  size_t struct_size;
  int32_t vocab_size;
  int32_t dim;
  int32_t hidden_dim;
  int32_t n_layers;
  int32_t n_heads;
  int32_t n_kv_heads;
  int32_t max_context; /* the context the model was trained for */
  int32_t bos_id;      /* -1 when the vocabulary has none */
  int32_t eos_id;
  uint64_t n_parameters;
} ember_model_info;

/* Fills *info (info->struct_size must be set by the caller). */
ember_status ember_model_get_info(const ember_model* model, ember_model_info* info);

/* ---- Tokenizer ----------------------------------------------------------- */

/* Encodes UTF-8 text (text_len bytes; NUL bytes are text like any other).
 * add_bos: prepend the model's BOS id. Writes at most capacity ids to
 * tokens and the full count to *out_count; when capacity is too small the
 * call returns EMBER_ERR_INVALID_ARGUMENT with *out_count set to the count
 * needed. */
ember_status ember_tokenize(const ember_model* model, const char* text, size_t text_len,
                            int add_bos, int32_t* tokens, size_t capacity,
                            size_t* out_count);

/* Decodes ids into UTF-8 text, as the pieces would be printed in sequence
 * (the leading space after BOS dropped, byte pieces turned into bytes).
 * Writes at most capacity bytes and the full length to *out_len; too small a
 * buffer gives EMBER_ERR_INVALID_ARGUMENT with *out_len set. */
ember_status ember_detokenize(const ember_model* model, const int32_t* tokens, size_t count,
                              char* text, size_t capacity, size_t* out_len);

/* The bytes `token` prints as when it follows `prev` (-1 at the start): the
 * leading space of a piece right after BOS is dropped, byte pieces become
 * bytes, control tokens print nothing. Buffer rules as ember_detokenize. */
ember_status ember_token_to_piece(const ember_model* model, int32_t prev, int32_t token, char* piece,
                                  size_t capacity, size_t* out_len);

/* ---- Sessions ------------------------------------------------------------ */

typedef struct ember_session ember_session;

/* Element type of the KV cache, chosen independently of the weights'. */
typedef enum ember_kv_type {
  EMBER_KV_F32 = 0,
  EMBER_KV_F16 = 1,
  EMBER_KV_Q8_0 = 2 /* 32-element blocks with an f16 scale */
} ember_kv_type;

/* Where a session runs. */
typedef enum ember_backend_kind {
  EMBER_BACKEND_AUTO = 0, /* a GPU where the model fits, else the CPU */
  EMBER_BACKEND_CPU = 1,
  EMBER_BACKEND_VULKAN = 2
} ember_backend_kind;

typedef struct ember_session_options {
  size_t struct_size;     /* sizeof(ember_session_options) */
  int32_t context_length; /* positions the KV cache holds; 0 = the model's */
  int32_t max_batch;      /* most tokens one prefill call processes at once;
                             longer prompts are split. Default 512. */
  int32_t n_threads;      /* CPU threads; 0 = all cores. Default 0. */
  int32_t kv_type_k;      /* ember_kv_type of the keys; default EMBER_KV_F32 */
  int32_t kv_type_v;      /* ember_kv_type of the values; default EMBER_KV_F32 */
  int32_t backend;        /* ember_backend_kind; default EMBER_BACKEND_CPU */
  /* Caller-owned memory for the session's arena (NULL = the session
   * allocates it). Must be at least the plan's arena_bytes, 64-byte
   * aligned, and outlive the session. */
  void* arena;
  size_t arena_size;
  /* Cap on private memory (resident weights + arena); 0 = no cap. Creation
   * fails with EMBER_ERR_NO_MEMORY when the plan exceeds it. */
  uint64_t max_bytes;
} ember_session_options;

/* Every byte a session would use, computed before anything is allocated. */
typedef struct ember_memory_plan {
  size_t struct_size;              /* sizeof(ember_memory_plan), set by caller */
  uint64_t weights_mapped_bytes;   /* read in place from the mapped file */
  uint64_t weights_resident_bytes; /* copies: repacked or converted weights */
  uint64_t kv_bytes;               /* the KV cache */
  uint64_t activations_bytes;      /* activations for the largest batch */
  uint64_t scratch_bytes;          /* per-thread and backend working memory */
  uint64_t runtime_bytes;          /* handles, tables, logits, history */
  uint64_t arena_bytes;            /* the session's arena: kv + activations + scratch */
  uint64_t private_bytes;          /* resident weights + arena + runtime */
  uint64_t device_bytes;           /* GPU memory (0 on the CPU backend) */
  /* First-order estimates, for comparison: parameters x bits / 8, and
   * layers x 2 x context x kv_heads x head_dim x kv_bits / 8. */
  uint64_t estimate_weights_bytes;
  uint64_t estimate_kv_bytes;
  int32_t context_length;          /* the context the plan is for */
  int32_t max_batch;
} ember_memory_plan;

/* Computes the plan for `options` on `model` without allocating the session.
 * plan->struct_size must be set by the caller. */
ember_status ember_plan(const ember_model* model, const ember_session_options* options,
                        ember_memory_plan* plan);

void ember_session_options_default(ember_session_options* options);

/* Creates a session (a KV cache and working memory) on a model. Several
 * sessions may share one model; each session is used by one thread at a
 * time. */
ember_status ember_session_create(ember_model* model, const ember_session_options* options,
                                  ember_session** out_session);

void ember_session_free(ember_session* session);

/* Runs tokens through the model at the session's next positions. When logits
 * is not NULL it receives vocab_size floats: the logits after the last
 * token. Errors: EMBER_ERR_TOKEN_OUT_OF_RANGE, EMBER_ERR_CONTEXT_FULL (the
 * session is left unchanged). */
ember_status ember_session_prefill(ember_session* session, const int32_t* tokens,
                                   size_t count, float* logits);

/* One token at the next position; logits as for prefill. */
ember_status ember_session_decode(ember_session* session, int32_t token, float* logits);

/* Positions used so far. */
int32_t ember_session_position(const ember_session* session);

/* What the session runs on, e.g. "cpu (avx512vnni, 2 threads)" or the GPU's
 * name and features; "" for NULL. Valid for the session's life. */
const char* ember_session_backend(const ember_session* session);

/* Forgets every position: the session starts afresh. */
ember_status ember_session_reset(ember_session* session);

/* Removes positions [start, end) from the session's memory; later positions
 * move down by end - start (their keys are re-rotated for the new
 * positions). Removing a tail (end = the current position) rewinds the
 * session exactly. Errors: EMBER_ERR_INVALID_ARGUMENT for a range outside
 * [0, position]. */
ember_status ember_session_remove(ember_session* session, int32_t start, int32_t end);

/* ---- Generation ----------------------------------------------------------- */

typedef struct ember_generate_options {
  size_t struct_size;      /* sizeof(ember_generate_options) */
  int32_t max_new_tokens;  /* default 128 */
  float temperature;       /* 0 = greedy (default) */
  int32_t top_k;           /* 0 = off */
  float top_p;             /* 1 = off */
  float min_p;             /* 0 = off */
  float repeat_penalty;    /* 1 = off */
  int32_t repeat_last_n;   /* tokens the penalty looks back over; default 64 */
  uint64_t seed;           /* sampling seed; the same seed, the same tokens */
  int add_bos;             /* prepend BOS to the prompt; default 1 */
  /* When the context is full, drop the older half of the positions after
   * the first (BOS) and go on, instead of stopping. Default 0. */
  int context_shift;
} ember_generate_options;

void ember_generate_options_default(ember_generate_options* options);

/* Called for each generated token with its printable piece (may be empty,
 * not NUL-terminated). Return non-zero to stop generation. */
typedef int (*ember_token_callback)(void* user_data, int32_t token, const char* piece,
                                    size_t piece_len);

/* Tokenizes the prompt, prefills it as a batch, then samples up to
 * max_new_tokens tokens, stopping early at end of sequence, when the
 * callback returns non-zero, or when the context is full (which is not an
 * error here). The prompt's own pieces are not passed to the callback. */
ember_status ember_generate(ember_session* session, const char* prompt,
                            const ember_generate_options* options,
                            ember_token_callback callback, void* user_data);

/* ---- Sampling, for hosts that drive prefill and decode themselves ---- */

typedef struct ember_sampler ember_sampler;

/* A sampler for `model`'s vocabulary, configured from the sampling fields of
 * options (temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
 * seed). Bad values give EMBER_ERR_INVALID_ARGUMENT naming the field. */
ember_status ember_sampler_create(const ember_model* model, const ember_generate_options* options,
                                  ember_sampler** out_sampler);

void ember_sampler_free(ember_sampler* sampler);

/* Picks the next token from vocab_size logits (modified in place). history:
 * the tokens seen so far, for the repetition penalty (may be NULL if
 * history_len is 0). */
ember_status ember_sampler_sample(ember_sampler* sampler, float* logits, const int32_t* history,
                                  size_t history_len, int32_t* out_token);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_H_ */

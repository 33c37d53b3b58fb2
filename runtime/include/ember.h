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
 * defaults; a struct_size smaller than today's, from a caller built against
 * an older ember.h, keeps the newer fields at their defaults). Every call
 * that returns an ember_status first clears the thread-local last error; on
 * failure it returns a non-zero ember_status and ember_last_error()
 * describes it (valid until the next such call on the same thread), on
 * success ember_last_error() is "". A caller buffer too small for the result
 * gives EMBER_ERR_BUFFER_TOO_SMALL with the size needed reported (each
 * function says where). No call aborts on bad input.
 */
#ifndef EMBER_H_
#define EMBER_H_

#include <stddef.h>
#include <stdint.h>

/* The version of this header; ember_version() returns the library's, as
 * "MAJOR.MINOR.PATCH". They match the project() version in CMakeLists.txt
 * (a static_assert in the build checks). While MAJOR is 0, a minor release
 * may change the ABI. */
#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0

/* Marks every exported declaration. The library is built with
 * -fvisibility=hidden, so only these symbols are exported when it is linked
 * into a shared object; EMBER_API can be predefined to override. */
#ifndef EMBER_API
#if defined(_WIN32)
#define EMBER_API
#else
#define EMBER_API __attribute__((visibility("default")))
#endif
#endif

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
  EMBER_ERR_BUFFER_TOO_SMALL = 103, /* a caller's buffer or arena is too small;
                                       the function says how the size needed
                                       is reported */
  EMBER_ERR_TOO_COMPLEX = 104,      /* valid input past a complexity budget
                                       ember sets on it, not the process out of
                                       memory: a grammar whose matcher would
                                       hold too many parse stacks, states or
                                       nodes, or cost too much to compile
                                       (messages begin "grammar: too complex:") */

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
  EMBER_ERR_STATE_MISMATCH = 308,   /* a saved session state is for another model,
                                       context length or KV type */

  EMBER_ERR_BACKEND = 400,          /* a backend failed (device error) */
  EMBER_ERR_INTERNAL = 401,         /* a bug in ember; please report */

  EMBER_ERR_INTEGRITY = 500,        /* a digest does not match */
  EMBER_ERR_SIGNATURE = 501         /* a signature is missing or wrong */
} ember_status;

/* Name of a status ("EMBER_ERR_FORMAT"); "EMBER_ERR_UNKNOWN" for a value
 * that is not one; never NULL. A static string. Does not touch the last
 * error. */
EMBER_API const char* ember_status_string(ember_status status);

/* Details of the last failure on this thread; "" if none or if the last
 * status-returning call succeeded. Owned by the library; the pointer stays
 * valid until the next status-returning ember call on this thread. */
EMBER_API const char* ember_last_error(void);

/* Library version "MAJOR.MINOR.PATCH" (a static string), equal to the
 * EMBER_VERSION_* macros of the header the library was built with. */
EMBER_API const char* ember_version(void);

/* The SHA-256 of size bytes at data, written to out_hex as 64 lowercase hex
 * digits and a NUL (a digest for keys: `ember serve` keeps its compiled
 * tool-call grammars under one). data may be NULL when size is 0. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (a NULL out_hex, NULL data with size > 0). */
EMBER_API ember_status ember_sha256_hex(const void* data, size_t size, char out_hex[65]);

/* ---- Models ------------------------------------------------------------ */

typedef struct ember_model ember_model;

/* What must be proven about a file before it is used. Each level includes
 * the one before it. */
typedef enum ember_integrity_policy {
  EMBER_INTEGRITY_NONE = 0,      /* structure and semantics only (default) */
  EMBER_INTEGRITY_DIGEST = 1,    /* + the data segment's SHA-256 matches the metadata
                                    (reads the whole data segment once) */
  EMBER_INTEGRITY_SIGNATURE = 2  /* + an ECDSA P-256 signature by public_key_pem over
                                    every byte before the trailer (the digest too) */
} ember_integrity_policy;

typedef struct ember_model_options {
  size_t struct_size; /* sizeof(ember_model_options) */
  /* ember_integrity_policy; default EMBER_INTEGRITY_NONE. The policy alone
   * says what is checked. Fails closed: the SIGNATURE policy without a key,
   * or a key without it, is EMBER_ERR_INVALID_ARGUMENT. A missing, foreign
   * or broken signature is EMBER_ERR_SIGNATURE; a data digest mismatch
   * EMBER_ERR_INTEGRITY. */
  int integrity_policy;
  /* PEM text of the public key that must have signed the file (policy
   * SIGNATURE). Not owned; read during ember_model_open only.
   * public_key_pem_len 0 means the text is NUL-terminated. */
  const char* public_key_pem;
  size_t public_key_pem_len;
  /* 1 (default): register the mapping with ember's process-wide SIGBUS
   * handler (installed on first use, chained to the previous handler), so
   * that a file truncated while mapped reads as zeros and the next call on
   * the model or its sessions fails with EMBER_ERR_IO instead of the process
   * dying. 0: leave signals alone (for hosts that own SIGBUS); a truncated
   * file then raises SIGBUS as for any mapping. */
  int guard_mapping;
} ember_model_options;

/* Fills *options with the defaults (NULL is a no-op). */
EMBER_API void ember_model_options_default(ember_model_options* options);

/* Maps and verifies an .ember file. On success *out_model owns the mapping;
 * free it with ember_model_free. path is read during the call only.
 * Errors: EMBER_ERR_INVALID_ARGUMENT (NULL path or out_model, bad option),
 * EMBER_ERR_IO, EMBER_ERR_FORMAT, EMBER_ERR_VERSION, EMBER_ERR_TRUNCATED,
 * EMBER_ERR_BAD_*, EMBER_ERR_MISSING_TENSOR, EMBER_ERR_INTEGRITY,
 * EMBER_ERR_SIGNATURE. On failure *out_model is NULL. */
EMBER_API ember_status ember_model_open(const char* path, const ember_model_options* options,
                                        ember_model** out_model);

/* Releases a model. All its sessions must have been freed. NULL is a no-op. */
EMBER_API void ember_model_free(ember_model* model);

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
  /* 1 when the vocabulary asks for BOS before a text (GGUF
   * tokenizer.ggml.add_bos_token; Qwen's say 0): what a host passes as
   * EMBER_TOKENIZE_ADD_BOS / ember_generate_options.add_bos for this model.
   * Appended: an older struct_size does not receive it. */
  int32_t add_bos;
  /* 1 for an encoder (GGUF bert, nomic-bert): it makes embedding sessions
   * only (ember_session_options.embeddings), never logits. Appended. */
  int32_t encoder;
} ember_model_info;

/* Fills *info (info->struct_size must be set by the caller; a smaller,
 * older struct receives the fields it has). Errors:
 * EMBER_ERR_INVALID_ARGUMENT for NULL or a struct_size below sizeof(size_t)
 * or above sizeof(ember_model_info). */
EMBER_API ember_status ember_model_get_info(const ember_model* model, ember_model_info* info);

/* ---- Tokenizer ----------------------------------------------------------- */

/* 1 when `token` ends a generation for this model (EOS, EOT, EOM, and the
 * vocabulary's end-of-turn pieces such as <|im_end|> and <end_of_turn>),
 * else 0 (also for NULL or an id outside the vocabulary). ember_generate
 * stops on these; a host running its own decode loop checks them. */
EMBER_API int ember_token_is_eog(const ember_model* model, int32_t token);

/* ember_tokenize's flags. */
enum {
  EMBER_TOKENIZE_ADD_BOS = 1,       /* prepend the model's BOS id */
  /* Text spelling a control token ("<|im_start|>", "<end_of_turn>") becomes
   * that token, as in a rendered chat template; without it such text is
   * encoded as ordinary text (the safe default for user input). */
  EMBER_TOKENIZE_PARSE_SPECIAL = 2
};

/* Encodes UTF-8 text (text_len bytes; NUL bytes are text like any other).
 * flags: EMBER_TOKENIZE_* bits (1 = add BOS, as the former add_bos
 * argument); other bits are EMBER_ERR_INVALID_ARGUMENT. On success writes the ids to tokens
 * and their count to *out_count. When capacity is smaller than the count,
 * returns EMBER_ERR_BUFFER_TOO_SMALL, writes nothing to tokens and sets
 * *out_count to the count needed (tokens may be NULL with capacity 0 to ask
 * for it). Other errors leave *out_count 0. */
EMBER_API ember_status ember_tokenize(const ember_model* model, const char* text, size_t text_len,
                                      int flags, int32_t* tokens, size_t capacity,
                                      size_t* out_count);

/* Decodes ids into UTF-8 text, as the pieces would be printed in sequence
 * (the leading space after BOS dropped, byte pieces turned into bytes). No
 * NUL is appended. On success writes the bytes to text and their number to
 * *out_len. When capacity is smaller, returns EMBER_ERR_BUFFER_TOO_SMALL,
 * writes nothing to text and sets *out_len to the bytes needed (text may be
 * NULL with capacity 0 to ask). EMBER_ERR_TOKEN_OUT_OF_RANGE for a bad id
 * (*out_len 0). */
EMBER_API ember_status ember_detokenize(const ember_model* model, const int32_t* tokens, size_t count,
                                        char* text, size_t capacity, size_t* out_len);

/* The bytes `token` prints as when it follows `prev` (-1 at the start): the
 * leading space of a piece right after BOS is dropped, byte pieces become
 * bytes, control tokens print nothing. Buffer rules and errors as
 * ember_detokenize (EMBER_ERR_BUFFER_TOO_SMALL with *out_len needed). */
EMBER_API ember_status ember_token_to_piece(const ember_model* model, int32_t prev, int32_t token, char* piece,
                                            size_t capacity, size_t* out_len);

/* ---- Chat formatting ----------------------------------------------------- */

/* One message of a conversation: NUL-terminated UTF-8 strings, borrowed for
 * the call only. */
typedef struct ember_chat_message {
  const char* role;    /* "system", "user", "assistant", ... */
  const char* content;
} ember_chat_message;

/* The built-in template ember_chat_format uses for `model` when it is given
 * no chat_template and the file has none (chosen by the model family and
 * vocabulary: "chatml" for qwen2/qwen3, "phi3" ("phi4-mini" when the
 * vocabulary has Phi-4-mini's <|/tool|>), "gemma", "llama3" for a
 * vocabulary with <|eot_id|>, "llama2" for other SentencePiece llama
 * vocabularies, else "chatml"); NULL when the file has its own template or
 * model is NULL. A host says which template it uses (ember serve prints it). */
EMBER_API const char* ember_chat_default_template(const ember_model* model);

/* Renders a conversation into the prompt text the model was trained on, as
 * Hugging Face's apply_chat_template does (a Jinja2 subset; docs/
 * decisions.md "Chat templates"). `chat_template`: NULL for the model's own
 * (GGUF tokenizer.chat_template, kept by `ember convert`; when the file has
 * none, the built-in ember_chat_default_template names), a built-in name
 * ("chatml", "llama2", "llama3", "phi3", "phi4-mini", "gemma", "mistral", "mistral-v7",
 * "zephyr", "deepseek", "vicuna", "qwen"), or Jinja template text (anything
 * holding "{{" or "{%"). `model` may be NULL when chat_template is given;
 * with a model, bos_token and eos_token are its BOS and EOS pieces, else "".
 * add_generation_prompt: end with the assistant turn's opening. No NUL is
 * appended. Buffer rules as ember_detokenize: EMBER_ERR_BUFFER_TOO_SMALL
 * with *out_len set to the bytes needed (text may be NULL with capacity 0
 * to ask). Errors (*out_len 0): EMBER_ERR_INVALID_ARGUMENT (NULL out_len;
 * NULL text with capacity > 0; NULL messages with n_messages > 0; a NULL
 * role or content, naming the message; NULL model and NULL chat_template;
 * an unknown built-in name; the template's raise_exception, with its
 * message), EMBER_ERR_UNSUPPORTED (the model has no template; a construct
 * the subset does not render, named), EMBER_ERR_FORMAT (a template syntax
 * error, with line:column), EMBER_ERR_NO_MEMORY (a template past its bounds:
 * output size, loop iterations, nesting). */
EMBER_API ember_status ember_chat_format(const ember_model* model, const char* chat_template,
                                         const ember_chat_message* messages, size_t n_messages,
                                         int add_generation_prompt, char* text, size_t capacity,
                                         size_t* out_len);

/* The same from OpenAI-shaped JSON, for conversations with tool calls:
 * messages_json an array of {role, content, ...} objects (every member
 * reaches the template: an assistant's tool_calls [{id, type, function
 * {name, arguments}}], a tool message's tool_call_id; an "arguments" string
 * holding a JSON object reaches it as that object, as Hugging Face
 * templates expect; a null content is ""; "developer" becomes "system"); tools_json NULL, "" or
 * "null" for none, else an array of {"type": "function", "function": {name,
 * description, parameters}}, the template's `tools` variable (an empty
 * array: none). The built-in "chatml" (qwen), "llama3" and "phi4-mini"
 * templates render tools, calls and results in their families' forms. A
 * template that reads the tools from the system message (Phi-4-mini's:
 * message['tools']) gets them there, as JSON text of the functions, and
 * when it does not read tool_calls, an assistant's calls appended to its
 * content in its call form (see ember_chat_tool_syntax); a template that
 * reads a call's results only as the assistant's tool_responses (Gemma 4's
 * first) gets the tool messages there. Errors as
 * ember_chat_format, and EMBER_ERR_INVALID_ARGUMENT naming the element
 * (messages[2].tool_calls[0].function.name, tools[1].type) or the line:column
 * of text that is not JSON; at most 16 MiB each, nested at most 64 deep. */
EMBER_API ember_status ember_chat_format_json(const ember_model* model, const char* chat_template,
                                              const char* messages_json, const char* tools_json,
                                              int add_generation_prompt, char* text, size_t capacity,
                                              size_t* out_len);

/* How the model of a template writes a tool call (chat_template as for
 * ember_chat_format), chosen from the template's text:
 *   EMBER_TOOL_SYNTAX_HERMES, "<tool_call>\n{"name": N, "arguments":
 *     {...}}\n</tool_call>" (Qwen2.5, Qwen3, Hermes, and the default for
 *     other families: Gemma 2 and 3 have no call form of their own);
 *   EMBER_TOOL_SYNTAX_LLAMA3, a bare {"name": N, "parameters": {...}}
 *     object (a Llama 3.x template: one call per message);
 *   EMBER_TOOL_SYNTAX_MISTRAL, "[TOOL_CALLS]" and a JSON array of {"name": N,
 *     "arguments": {...}} (a template that writes "[TOOL_CALLS][": Mistral
 *     7B v0.3, Mistral Nemo; their call ids are 9 letters and digits);
 *   EMBER_TOOL_SYNTAX_MISTRAL_ARGS, "[TOOL_CALLS]N[ARGS]{...}" once per call
 *     (a template that writes "[TOOL_CALLS]" and "[ARGS]": Mistral Small
 *     3.2, Devstral, Ministral 3; Small 3.2's may put "[CALL_ID]" and a
 *     9-character id before "[ARGS]");
 *   EMBER_TOOL_SYNTAX_PHI4, "<|tool_call|>[{"name": N, "arguments": {...}}]
 *     <|/tool_call|>" (Phi-4-mini, whose template reads the tools from the
 *     system message: ember_chat_format_json puts them there; Granite 3.x);
 *   EMBER_TOOL_SYNTAX_GEMMA4, "<|tool_call>call:N{key:value,...}
 *     <tool_call|>" (Gemma 4: keys bare, strings between <|"|> marks).
 * The markers are control tokens in some vocabularies (Mistral's, Phi's),
 * printed as nothing: readers of the text take the forms without them.
 * HERMES for NULL arguments or an unknown name. Values are appended, never
 * renumbered. */
enum {
  EMBER_TOOL_SYNTAX_HERMES = 0,
  EMBER_TOOL_SYNTAX_LLAMA3 = 1,
  EMBER_TOOL_SYNTAX_MISTRAL = 2,
  EMBER_TOOL_SYNTAX_MISTRAL_ARGS = 3,
  EMBER_TOOL_SYNTAX_PHI4 = 4,
  EMBER_TOOL_SYNTAX_GEMMA4 = 5
};
EMBER_API int ember_chat_tool_syntax(const ember_model* model, const char* chat_template);

/* ---- Sessions ------------------------------------------------------------ */

typedef struct ember_session ember_session;

/* A CPU thread pool a host creates once and runs sessions on (the
 * session option thread_pool): several sessions may share one, so that an
 * application with many sessions keeps one set of threads. Threading rule:
 * steps (prefill, decode, generate) of sessions sharing a pool may be called
 * concurrently from different threads; the pool runs them one after the
 * other, each with all its threads (each session itself is still used by one
 * thread at a time). Ownership: a session keeps a reference to its pool, so
 * ember_threadpool_free may come before the sessions' ember_session_free
 * (the threads stop when the last user is freed) and freeing the handle
 * twice is the only misuse; the intended order is the sessions first, then
 * the pool. Vulkan sessions ignore the pool. */
typedef struct ember_threadpool ember_threadpool;

/* Creates a pool of n_threads threads in all (1..1024; the calling thread of
 * a step is one of them). On failure *out_pool is NULL. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (n_threads, a NULL out_pool),
 * EMBER_ERR_NO_MEMORY (the OS refused a thread). */
EMBER_API ember_status ember_threadpool_create(int32_t n_threads, ember_threadpool** out_pool);

/* Releases the caller's reference to the pool (see ember_threadpool). NULL is
 * a no-op. */
EMBER_API void ember_threadpool_free(ember_threadpool* pool);

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
   * allocates it). Must be 64-byte aligned (else EMBER_ERR_INVALID_ARGUMENT)
   * and at least the plan's arena_bytes (else EMBER_ERR_BUFFER_TOO_SMALL;
   * ember_plan reports arena_bytes), and outlive the session. Not owned. */
  void* arena;
  size_t arena_size;
  /* Cap on private memory (resident weights + arena); 0 = no cap. Creation
   * fails with EMBER_ERR_NO_MEMORY when the plan exceeds it. */
  uint64_t max_bytes;
  /* Folder of the Vulkan backend's pipeline cache (compiled shaders kept
   * between runs, file vulkan-pipelines-KEY.bin; an invalid file is ignored
   * and replaced). NULL (default): $XDG_CACHE_HOME/ember, else
   * $HOME/.cache/ember; "" : no cache on disk. Not owned; read during
   * ember_session_create only. EMBER_VULKAN_PIPELINE_CACHE=0 in the
   * environment also turns it off. Ignored by the CPU backend. */
  const char* vulkan_pipeline_cache_dir;
  /* The CPU backend runs on this pool (see ember_threadpool) instead of
   * threads of its own; n_threads is then ignored and the plan's per-thread
   * scratch uses the pool's thread count. NULL (default): the session's own
   * pool of n_threads. Not owned: the session takes a reference. */
  ember_threadpool* thread_pool;
  /* Sequences the session holds (1..256; default 1), each with its own
   * positions 0 .. context_length - 1 and KV cache: batched decoding runs
   * them together (ember_session_decode_batch), every weight read once per
   * step for all of them. The KV cache is n_seqs times one sequence's. The
   * single-sequence calls (prefill, decode, generate, remove, tokens, save,
   * load) work on sequence 0. Both the CPU and the Vulkan backends run
   * n_seqs > 1 (on Vulkan every sequence's cache is in device memory: the
   * plan's device_bytes count them). Appended: an older struct_size gets
   * 1. */
  int32_t n_seqs;
  /* Sliding-window layers (Gemma 2/3) keep every position instead of a
   * ring of window + max_batch rows (0, default: the ring, on the CPU: the
   * plan's KV shrinks accordingly). With the ring, ember_session_remove /
   * ember_session_seq_remove / ember_session_seq_copy are refused
   * (EMBER_ERR_UNSUPPORTED) where the window would read positions the ring
   * no longer holds; 1 keeps them all. Appended. */
  int32_t sliding_window_full;
  /* Speculative decoding: tokens one sequence may have verified in a step
   * beyond its own (0..EMBER_MAX_DRAFT, below max_batch; default 0 = none).
   * The session's logits buffer then holds n_seqs x (1 + max_draft) rows
   * (the plan's runtime_bytes count them); ember_generate_options.lookup
   * drafts up to this many. Appended. */
  int32_t max_draft;
  /* 1: an embedding session (see "Embeddings" below): each step outputs the
   * final hidden states (the output norm applied, model dim floats a row)
   * instead of logits, for any of its rows; ember_embed_tokens and
   * ember_embed_texts pool them. prefill / decode then write dim floats
   * (the last token's hidden state) where they write logits, and generation
   * is refused (EMBER_ERR_UNSUPPORTED). The plan counts no logits head.
   * Appended: an older struct_size gets 0. */
  int32_t embeddings;
} ember_session_options;

/* The most drafted tokens a step verifies per sequence. */
#define EMBER_MAX_DRAFT 16

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
  int32_t context_length;          /* the context the plan is for (per sequence) */
  int32_t max_batch;
  int32_t n_seqs;                  /* sequences (appended) */
} ember_memory_plan;

/* Computes the plan for `options` on `model` without allocating the session.
 * plan->struct_size must be set by the caller (a smaller, older struct
 * receives the fields it has). Errors as ember_session_create's option
 * checks, EMBER_ERR_INVALID_ARGUMENT for a bad struct_size. */
EMBER_API ember_status ember_plan(const ember_model* model, const ember_session_options* options,
                                  ember_memory_plan* plan);

/* Fills *options with the defaults (NULL is a no-op). */
EMBER_API void ember_session_options_default(ember_session_options* options);

/* Creates a session (a KV cache and working memory) on a model. Several
 * sessions may share one model; each session is used by one thread at a
 * time. The model must outlive the session. On failure *out_session is NULL.
 * Errors: EMBER_ERR_INVALID_ARGUMENT (a bad option, naming it),
 * EMBER_ERR_BUFFER_TOO_SMALL (the caller's arena), EMBER_ERR_NO_MEMORY
 * (allocation or max_bytes), EMBER_ERR_UNSUPPORTED / EMBER_ERR_BACKEND (the
 * backend), EMBER_ERR_IO / EMBER_ERR_INTEGRITY (the file changed). */
EMBER_API ember_status ember_session_create(ember_model* model, const ember_session_options* options,
                                            ember_session** out_session);

/* Releases a session and what it allocated (not a caller's arena). NULL is a
 * no-op. */
EMBER_API void ember_session_free(ember_session* session);

/* Runs tokens through the model at the session's next positions. When logits
 * is not NULL it receives vocab_size floats: the logits after the last
 * token. Errors: EMBER_ERR_TOKEN_OUT_OF_RANGE, EMBER_ERR_CONTEXT_FULL (the
 * session is left unchanged). */
EMBER_API ember_status ember_session_prefill(ember_session* session, const int32_t* tokens,
                                             size_t count, float* logits);

/* One token at the next position; logits and errors as for prefill. */
EMBER_API ember_status ember_session_decode(ember_session* session, int32_t token, float* logits);

/* Tokens at the next positions of sequence 0, in steps as for prefill, and
 * the logits of each of the last n_logits of them: n_logits x vocab_size
 * floats, oldest first (scoring text, as perplexity does). n_logits is
 * 1 .. min(count, 1 + the session's max_draft): a session made with
 * max_draft = 16 gives up to 17 rows per call. A row's logits are bitwise
 * those of the same token decoded alone. Errors: as prefill, and
 * EMBER_ERR_INVALID_ARGUMENT naming n_logits and its bound. */
EMBER_API ember_status ember_session_decode_logits(ember_session* session, const int32_t* tokens, size_t count,
                                                   float* logits, int32_t n_logits);

/* Positions used so far; 0 for NULL. Does not touch the last error. */
EMBER_API int32_t ember_session_position(const ember_session* session);

/* What the session runs on, e.g. "cpu (avx512vnni, 2 threads)" or the GPU's
 * name and features; "" for NULL. Owned by the session, valid for its
 * life. Does not touch the last error. */
EMBER_API const char* ember_session_backend(const ember_session* session);

/* Forgets every position: the session starts afresh. Errors:
 * EMBER_ERR_INVALID_ARGUMENT for NULL. */
EMBER_API ember_status ember_session_reset(ember_session* session);

/* Removes positions [start, end) from the session's memory; later positions
 * move down by end - start (their keys are re-rotated for the new
 * positions). Removing a tail (end = the current position) rewinds the
 * session exactly. Errors: EMBER_ERR_INVALID_ARGUMENT for a range outside
 * [0, position]. */
EMBER_API ember_status ember_session_remove(ember_session* session, int32_t start, int32_t end);

/* The tokens the session holds, position by position (what prefill,
 * decode, generate and load put there, after any removal). Buffer rules as
 * ember_tokenize: when capacity is smaller than the count, returns
 * EMBER_ERR_BUFFER_TOO_SMALL, writes nothing and sets *out_count to the
 * count needed (tokens may be NULL with capacity 0 to ask). Errors:
 * EMBER_ERR_INVALID_ARGUMENT for NULL session or out_count. */
EMBER_API ember_status ember_session_tokens(const ember_session* session, int32_t* tokens, size_t capacity,
                                            size_t* out_count);

/* ---- Activation statistics (an importance matrix for quantizing) --------
 * While collecting, every step adds, for each weight matrix the model
 * multiplies an activation by, the sum over the step's rows of each input
 * column's square, and the rows counted: what `ember imatrix` writes and
 * `ember quantize --imatrix` weighs rounding errors by. The logits head
 * (output.weight, or the tied token_embd.weight) only with include_output.
 * Turning it on (again) starts from zero; ember_session_reset keeps the
 * sums. Errors: EMBER_ERR_INVALID_ARGUMENT (NULL),
 * EMBER_ERR_UNSUPPORTED from a backend that does not collect them (today
 * every backend but the CPU's). */
EMBER_API ember_status ember_session_collect_activations(ember_session* session, int enable, int include_output);

typedef struct ember_activation_stats {
  const char* weight;  /* the tensor's name, GGUF's ("blk.0.attn_q.weight"); valid while collecting */
  int64_t cols;        /* input columns: sum_sq's length */
  int64_t rows;        /* input rows counted */
} ember_activation_stats;

/* Matrices with statistics (0 when not collecting or for NULL). */
EMBER_API size_t ember_session_activation_count(const ember_session* session);
/* Entry `index` (0 .. count - 1, in the graph's order): *info, and when
 * sum_sq is not NULL its cols sums (capacity floats at least, else
 * EMBER_ERR_BUFFER_TOO_SMALL naming both). Errors: EMBER_ERR_INVALID_ARGUMENT
 * (NULL session or info, index out of range, not collecting). */
EMBER_API ember_status ember_session_activation_stats(const ember_session* session, size_t index,
                                                      ember_activation_stats* info, float* sum_sq,
                                                      size_t capacity);

/* ---- Batched decoding ----------------------------------------------------
 * A session made with n_seqs > 1 holds that many sequences; one call runs
 * new tokens of several of them as one step (or several steps of up to
 * max_batch rows), so that each weight matrix is read once for all of them:
 * on a CPU, N sequences decode for little more than the cost of one. A
 * sequence joins or leaves between calls; a long prompt given as one item
 * is a chunk of prefill among the others' decode tokens (the caller chooses
 * the chunk size to bound the others' inter-token latency).
 * Threading: like every session call, one thread at a time per session. */
typedef struct ember_batch_item {
  int32_t seq;           /* 0 .. n_seqs - 1; each sequence at most once per call */
  const int32_t* tokens; /* its new tokens, at the sequence's next positions */
  size_t n_tokens;       /* >= 1 */
  float* logits;         /* vocab_size floats: the logits after its last
                            token, or NULL. Owned by the caller. */
} ember_batch_item;

/* Runs every item's tokens. Everything is checked before anything runs; on
 * an error nothing changes. Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, a
 * sequence out of range or given twice, n_tokens 0, n_items 0 or above
 * n_seqs), EMBER_ERR_TOKEN_OUT_OF_RANGE, EMBER_ERR_CONTEXT_FULL (the item
 * and sequence named). */
EMBER_API ember_status ember_session_decode_batch(ember_session* session, const ember_batch_item* items,
                                                  size_t n_items);

/* Sequences the session holds; 0 for NULL. */
EMBER_API int32_t ember_session_n_seqs(const ember_session* session);

/* Sequence seq's next position; -1 for NULL or a sequence out of range. */
EMBER_API int32_t ember_session_seq_position(const ember_session* session, int32_t seq);

/* Sequence seq's tokens, position by position; buffer rules as
 * ember_session_tokens. */
EMBER_API ember_status ember_session_seq_tokens(const ember_session* session, int32_t seq, int32_t* tokens,
                                                size_t capacity, size_t* out_count);

/* Forgets sequence seq's positions [start, end) (as ember_session_remove;
 * start = 0, end = its position: it starts afresh). */
EMBER_API ember_status ember_session_seq_remove(ember_session* session, int32_t seq, int32_t start, int32_t end);

/* Sequence dst becomes a copy of the first n_tokens positions of sequence
 * src (tokens and KV): a prompt prefix computed once and reused (a prefix
 * cache). dst's own positions are forgotten; src is unchanged. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (a sequence out of range, n_tokens above src's
 * position). */
EMBER_API ember_status ember_session_seq_copy(ember_session* session, int32_t src, int32_t dst, int32_t n_tokens);

/* ---- Saved sessions -------------------------------------------------------
 * A session's state is its positions, its token history and exactly the KV
 * rows it uses, in its KV types, after a header naming the model (SHA-256 of
 * the model file's metadata), the context length, the KV types, the layers
 * and the row width; a SHA-256 of the whole state ends it. It loads only
 * into a session on the same model with the same context_length and KV
 * types (the backend may differ where both can move their cache):
 * anything else is refused before the session is touched. Format:
 * docs/decisions.md, "Sessions: multi-turn, stop strings, saved state". */

/* Writes the session's state to `path` (through a temporary file renamed
 * into place). Errors: EMBER_ERR_INVALID_ARGUMENT (NULL), EMBER_ERR_IO,
 * EMBER_ERR_NO_MEMORY, EMBER_ERR_UNSUPPORTED (a backend that cannot read its
 * cache). */
EMBER_API ember_status ember_session_save(const ember_session* session, const char* path);

/* Writes the state to a caller buffer. On success *out_size is the bytes
 * written. When capacity is smaller, returns EMBER_ERR_BUFFER_TOO_SMALL,
 * writes nothing and sets *out_size to the bytes needed (buffer may be NULL
 * with capacity 0 to ask). Other errors as ember_session_save. */
EMBER_API ember_status ember_session_save_buffer(const ember_session* session, void* buffer, size_t capacity,
                                                 size_t* out_size);

/* Replaces the session's positions, tokens and KV with a state saved by
 * ember_session_save. Everything is checked first; on failure the session
 * is unchanged (except EMBER_ERR_BACKEND while writing the cache, which
 * leaves it reset). Errors: EMBER_ERR_INVALID_ARGUMENT (NULL), EMBER_ERR_IO,
 * EMBER_ERR_TRUNCATED (shorter than its header says), EMBER_ERR_FORMAT (not
 * a state, bad fields, trailing bytes), EMBER_ERR_VERSION,
 * EMBER_ERR_INTEGRITY (its SHA-256 does not match: corrupt),
 * EMBER_ERR_STATE_MISMATCH (another model, context length, KV type; the
 * message names the field and both values), EMBER_ERR_UNSUPPORTED (a backend
 * that cannot write its cache). */
EMBER_API ember_status ember_session_load(ember_session* session, const char* path);

/* As ember_session_load, from `size` bytes at `buffer` (read during the call
 * only). */
EMBER_API ember_status ember_session_load_buffer(ember_session* session, const void* buffer, size_t size);

/* ---- Generation ----------------------------------------------------------- */

/* Structured output. A grammar is compiled once for a model's vocabulary
 * and then constrains any number of generations (ember_generate_options
 * .grammar); its caches (each state's token mask) are shared by them.
 *
 * ember_grammar_create: GBNF text, llama.cpp's grammar syntax (rules
 * `name ::= ...`, literals, [classes], ( ) * + ? {m,n}), starting at rule
 * `root` (NULL: "root"). EMBER_ERR_INVALID_ARGUMENT with "grammar:LINE:COL:
 * ..." for malformed text, left recursion, or a grammar past the limits.
 *
 * ember_grammar_create_json_schema: a JSON Schema (text); NULL or "" for
 * any JSON object (OpenAI's json_object mode). EMBER_ERR_UNSUPPORTED names a
 * validation keyword ember cannot honour and where ("schema keyword
 * 'uniqueItems' at /properties/tags"); annotations are ignored.
 *
 * Both: EMBER_ERR_TOO_COMPLEX ("grammar: too complex: ...") for a grammar
 * past the matcher's budgets (parse stacks, states, compile work): the
 * caller's grammar, not the process's memory. A generation constrained by
 * a grammar can end with the same status (EMBER_STOP_ERROR) when the text
 * leads the matcher past a budget. */
typedef struct ember_grammar ember_grammar;
EMBER_API ember_status ember_grammar_create(const ember_model* model, const char* gbnf, const char* root,
                                            ember_grammar** out);
EMBER_API ember_status ember_grammar_create_json_schema(const ember_model* model, const char* schema,
                                                        ember_grammar** out);
/* The GBNF text a JSON Schema becomes (NULL or "": any JSON object), as
 * ember_grammar_create_json_schema compiles it: copied into buf (with its
 * terminating NUL) when buf_size is enough; *needed (may be NULL) is the
 * size it takes. EMBER_ERR_BUFFER_TOO_SMALL otherwise. */
EMBER_API ember_status ember_json_schema_to_gbnf(const char* schema, char* buf, size_t buf_size, size_t* needed);
EMBER_API void ember_grammar_free(ember_grammar* grammar);

/* The bytes a compiled grammar holds now: its rules, its copy of the
 * vocabulary's text (a few MiB for a 150,000-token vocabulary), and what
 * generations add as they use it (parse-stack nodes, matcher states and
 * their transitions, kept token masks). Counted by its containers'
 * capacities, hash-table entries estimated. 0 for NULL. */
EMBER_API uint64_t ember_grammar_memory(const ember_grammar* grammar);
/* Caps what the grammar may hold (as ember_grammar_memory counts it; 0: no
 * cap beyond its own budgets, the default). Past the cap the oldest token
 * masks are dropped (recomputed when needed); a generation that needs more
 * states than fit ends with EMBER_ERR_TOO_COMPLEX ("grammar: too complex:
 * ... max_bytes"), a growth counted at its peak (the old and the new buffer),
 * so what it holds never passes the cap. Thread-safe. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL), EMBER_ERR_NO_MEMORY when it already
 * holds more than max_bytes without masks (the cap is left as it was). */
EMBER_API ember_status ember_grammar_set_max_bytes(ember_grammar* grammar, uint64_t max_bytes);

/* One entry of ember_generate_options.logit_bias. */
typedef struct ember_logit_bias {
  int32_t token;
  float bias;
} ember_logit_bias;

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
  int add_bos;             /* prepend BOS to the prompt: 1 yes, 0 no, -1 (the
                            * default) as the model says (ember_model_info.add_bos) */
  /* When the context is full, drop the older half of the positions after
   * the first (BOS) and go on, instead of stopping. Default 0. */
  int context_shift;
  /* When not NULL, receives vocab_size floats: the logits after the last
   * prompt token, before sampling touches them. Not owned; written during
   * ember_generate only. Default NULL. Ignored by ember_sampler_create. */
  float* prompt_logits;
  /* The prompt as exact token ids (n_prompt_tokens > 0 of them), run as
   * given: nothing is tokenized and nothing added (add_bos is ignored), for
   * token-exact comparisons with other runtimes. When set, ember_generate's
   * prompt argument must be NULL. Not owned; read during ember_generate
   * only. Default NULL and 0. Ignored by ember_sampler_create. */
  const int32_t* prompt_tokens;
  size_t n_prompt_tokens;
  /* Stop strings: generation ends when the generated text (not the prompt)
   * contains one of these n_stop_strings NUL-terminated strings, wherever
   * token boundaries fall; the stop string and anything after it are never
   * passed to the callback (the stop reason is then EMBER_STOP_STRING).
   * Text that could still be the start of a stop string is held back until
   * it is decided: the callback then receives the held tokens in order,
   * each with its whole piece, or (the token where a stop string begins)
   * with the bytes before it. Held text is passed on when generation ends
   * for another reason. At most EMBER_MAX_STOP_STRINGS strings of 1 to
   * EMBER_MAX_STOP_STRING_BYTES bytes (else EMBER_ERR_INVALID_ARGUMENT
   * naming the index). Not owned; read during ember_generate only. Default
   * NULL and 0. Ignored by ember_sampler_create. */
  const char* const* stop_strings;
  size_t n_stop_strings;
  /* ---- Appended (an older struct_size keeps these at their defaults). */
  /* OpenAI-style penalties over the same window as repeat_penalty (the last
   * repeat_last_n tokens): a token's logit loses frequency_penalty times its
   * count there, and presence_penalty once if it occurs at all. In [-2, 2]
   * (else EMBER_ERR_INVALID_ARGUMENT naming the field); default 0 = off. */
  float presence_penalty;
  float frequency_penalty;
  /* Added to these tokens' logits before every other sampling stage
   * (-INFINITY bans a token): n_logit_bias entries, each token at most once
   * and inside the vocabulary (else EMBER_ERR_TOKEN_OUT_OF_RANGE /
   * EMBER_ERR_INVALID_ARGUMENT naming the index); biases finite or
   * -INFINITY. Not owned; read when the generation starts. Default NULL, 0. */
  const ember_logit_bias* logit_bias;
  size_t n_logit_bias;
  /* A text prompt's control-token text ("<|im_start|>", "<end_of_turn>")
   * becomes those tokens, as in a rendered chat template
   * (EMBER_TOKENIZE_PARSE_SPECIAL); BOS is then added only when the text does
   * not begin with it. 0 (default): the prompt is encoded as plain text. */
  int parse_special;
  /* 0 (default): the prompt follows what the sequence already holds (a later
   * turn of a conversation). 1: the prompt is the sequence's whole content:
   * the longest common prefix of what the sequence holds and the prompt is
   * kept (all but the prompt's last token at most, which runs again for its
   * logits), the rest forgotten, and only the remainder runs (a
   * conversation rendered whole each turn; a prefix cache). */
  int reuse_prefix;
  /* Log-probabilities, of the model's own distribution (a softmax of the
   * logits before the sampling chain touches them): ember_generator events
   * carry the sampled token's (logprobs 1) and the top_logprobs most likely
   * tokens' (0..EMBER_MAX_TOP_LOGPROBS; needs logprobs 1). ember_generate's
   * callback does not carry them. Default 0, 0. */
  int logprobs;
  int32_t top_logprobs;
  /* Structured output: the text must follow this grammar
   * (ember_grammar_create / ember_grammar_create_json_schema, made for this
   * model). Each step the tokens it rejects are masked before the sampling
   * chain; the generation ends (EMBER_STOP_END) when the grammar allows
   * nothing more, and a token limit leaves a prefix of a valid text. Not
   * owned: it must outlive the generation (it is shared; one grammar may
   * serve many sequences and threads). Default NULL. */
  const struct ember_grammar* grammar;
  /* Speculative decoding by prompt lookup (1; default 0): each decode step
   * also runs up to draft_max tokens drafted from the text itself (what
   * follows the latest earlier occurrence of its last lookup_ngram tokens,
   * or of fewer), and keeps those the sampling picks, so that one weight
   * read yields several tokens where the text repeats (code, documents
   * quoted back, structured output). The output is the same as without it
   * for the same seed, token for token; only the speed differs. Needs a
   * session made with max_draft >= 1. draft_max: 1..the session's
   * max_draft, 0 (default) = the session's max_draft; the draft length
   * adapts to the acceptance below it. lookup_ngram: 1..16, default 3.
   * ember_generate_stats reports drafted and accepted tokens. */
  int lookup;
  int32_t draft_max;
  int32_t lookup_ngram;
  /* Speculative decoding with a draft model instead: this session, of a
   * smaller model with the target's vocabulary (every token of the draft's
   * vocabulary the same piece in the target's, the same BOS and EOS; else
   * EMBER_ERR_INVALID_ARGUMENT naming the first token that differs), drafts
   * up to draft_max tokens greedily in its sequence of the same index as
   * this one (sequence 0 for ember_generate), which it keeps in step with
   * this sequence's text. Its context must be at least the target's. Like
   * lookup, the output is the same as without it; needs the target session's
   * max_draft. Not with lookup. Not owned; used by one generation at a time
   * per sequence. Default NULL. */
  struct ember_session* draft_session;
} ember_generate_options;


/* The most alternatives ember_generate_options.top_logprobs asks for. */
#define EMBER_MAX_TOP_LOGPROBS 20

/* Limits on ember_generate_options.stop_strings. */
#define EMBER_MAX_STOP_STRINGS 64
#define EMBER_MAX_STOP_STRING_BYTES 1024

/* Fills *options with the defaults (NULL is a no-op). */
EMBER_API void ember_generate_options_default(ember_generate_options* options);

/* Called for each generated token with its printable piece (may be empty,
 * not NUL-terminated). With stop strings, a token is passed once its text is
 * decided, and a piece may be cut short where a stop string begins (see
 * ember_generate_options.stop_strings). Return non-zero to stop generation. */
typedef int (*ember_token_callback)(void* user_data, int32_t token, const char* piece,
                                    size_t piece_len);

/* Tokenizes the prompt (a NUL-terminated string, read during the call; or
 * takes options->prompt_tokens as they are, with prompt NULL),
 * prefills it as a batch at the session's next position, then samples up to
 * max_new_tokens tokens, stopping early at the end of generation (any of
 * the vocabulary's end-of-generation tokens: EOS, end of turn, ...; or BOS
 * for llama2.c vocabularies), at a stop string, when the callback returns
 * non-zero, or when the context is full (which is not an error here; see
 * context_shift). The prompt's own pieces are not passed to the callback;
 * callback may be NULL.
 *
 * Multi-turn: the session keeps its positions and KV between calls, so a
 * later call runs only its own prompt (set add_bos 0 after the first turn)
 * and generates from there. Every sampled token but the last has been run
 * through the model; the last one (ember_generate_stats.last_token: the
 * end-of-generation token, the one that completed a stop string, or the
 * max_new_tokens-th) has not, so a conversation that keeps it passes it
 * first in the next prompt. ember_session_tokens lists what the session
 * holds.
 * ember_generate_last_stats() tells how it went. This is a generator
 * (ember_generator_*) with one sequence, sequence 0. max_new_tokens 0 only prefills (prompt_logits, if set, is
 * still written). Errors: EMBER_ERR_INVALID_ARGUMENT (bad options, an empty
 * prompt without BOS, both or neither of prompt and prompt_tokens,
 * prompt_tokens NULL with n_prompt_tokens > 0 or set with 0),
 * EMBER_ERR_TOKEN_OUT_OF_RANGE (a prompt_tokens id outside the vocabulary;
 * the message names its index and value; the session is left unchanged),
 * EMBER_ERR_CONTEXT_FULL (the prompt does not fit), and the errors of
 * ember_session_prefill. */
EMBER_API ember_status ember_generate(ember_session* session, const char* prompt,
                                      const ember_generate_options* options,
                                      ember_token_callback callback, void* user_data);

/* Why generation stopped. */
typedef enum ember_stop_reason {
  EMBER_STOP_NONE = 0,         /* no generation has run (or it failed) */
  EMBER_STOP_MAX_TOKENS = 1,   /* max_new_tokens were generated */
  EMBER_STOP_END = 2,          /* the model ended the sequence */
  EMBER_STOP_CALLBACK = 3,     /* the callback returned non-zero */
  EMBER_STOP_CONTEXT_FULL = 4, /* no room left and context_shift was off */
  EMBER_STOP_STRING = 5,       /* the text reached one of the stop strings */
  EMBER_STOP_CANCELLED = 6,    /* ember_generator_cancel */
  EMBER_STOP_ERROR = 7         /* a step failed for this sequence (the event says why) */
} ember_stop_reason;

/* What the last ember_generate call on a session did. Times are
 * wall-clock milliseconds. */
typedef struct ember_generate_stats {
  size_t struct_size;       /* sizeof(ember_generate_stats), set by caller */
  int32_t prompt_tokens;    /* the prompt's tokens, BOS included */
  int32_t generated_tokens; /* tokens passed to the callback */
  double prefill_ms;        /* running the prompt */
  double first_token_ms;    /* from the call's start to the first sampled token */
  double decode_ms;         /* from the first sampled token to the end */
  int32_t stop_reason;      /* ember_stop_reason */
  int32_t position;         /* the session's position at the end */
  int32_t sampled_tokens;   /* tokens sampled: those passed to the callback,
                               held-back or stop-string tokens, the end token */
  int32_t last_token;       /* the last sampled token, which generation never
                               runs through the model (see ember_generate); -1
                               when none was sampled */
  int32_t reused_tokens;    /* of prompt_tokens, those the sequence already held
                               (reuse_prefix) and that did not run again. Appended. */
  /* Speculative decoding (appended): decode steps run, tokens drafted, and
   * drafted tokens kept (acceptance = accepted / drafted; tokens per step =
   * sampled_tokens / decode_steps, the first sampled token, which comes
   * with the prompt, aside). */
  int32_t decode_steps;
  int32_t drafted_tokens;
  int32_t accepted_tokens;
} ember_generate_stats;

/* Fills *stats (stats->struct_size set by the caller; a smaller, older
 * struct receives the fields it has) from the session's last
 * ember_generate call; all zero (last_token -1) before the first. Errors:
 * EMBER_ERR_INVALID_ARGUMENT for NULL or a bad struct_size. */
EMBER_API ember_status ember_generate_last_stats(const ember_session* session, ember_generate_stats* stats);

/* Whether `draft` can be ember_generate_options.draft_session for every
 * sequence of `target`: EMBER_OK, or EMBER_ERR_INVALID_ARGUMENT naming what
 * differs (a vocabulary piece, BOS/EOS, fewer sequences, a shorter
 * context, the same session). Generation checks this itself; a host calls
 * it to refuse a draft model when it is opened rather than at the first
 * request. */
EMBER_API ember_status ember_session_check_draft(const ember_session* target, const ember_session* draft);

/* ---- Sampling, for hosts that drive prefill and decode themselves ---- */

typedef struct ember_sampler ember_sampler;

/* A sampler for `model`'s vocabulary, configured from the sampling fields of
 * options (temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
 * seed). Bad values give EMBER_ERR_INVALID_ARGUMENT naming the field. The
 * sampler is independent of the model once created; free it with
 * ember_sampler_free. */
EMBER_API ember_status ember_sampler_create(const ember_model* model, const ember_generate_options* options,
                                            ember_sampler** out_sampler);

/* NULL is a no-op. */
EMBER_API void ember_sampler_free(ember_sampler* sampler);

/* Picks the next token from vocab_size logits (modified in place). history:
 * the tokens seen so far, for the repetition penalty (may be NULL if
 * history_len is 0). logits must hold the sampler's vocab_size floats.
 * Errors: EMBER_ERR_INVALID_ARGUMENT for NULL arguments. */
EMBER_API ember_status ember_sampler_sample(ember_sampler* sampler, float* logits, const int32_t* history,
                                            size_t history_len, int32_t* out_token);


/* ---- The generator: one engine for every generation -----------------------
 * A generator drives the sequences of one session (one, or the n_seqs of a
 * batched session): each sequence started with a prompt and its own
 * ember_generate_options (sampling chain, end-of-generation tokens, stop
 * strings, limits, log-probabilities), and each ember_generator_step
 * advances every active sequence by one batched step — chunks of the
 * prompts still running and one token of each sequence decoding, every
 * weight read once for all of them — then samples each, cuts its text at
 * stop strings and whole UTF-8 characters, and reports what it released
 * through the callback. ember_generate is a generator with one sequence;
 * `ember run`, `ember chat` and `ember serve` are its clients.
 *
 *   ember_generator* gen = NULL;
 *   ember_generator_create(session, NULL, &gen);
 *   ember_generator_start(gen, 0, "Once upon a time", &gopt);
 *   ember_generator_start(gen, 1, "The dog", &gopt);      // n_seqs >= 2
 *   while (ember_generator_active(gen, -1) > 0) ember_generator_step(gen, on_event, NULL);
 *   ember_generator_free(gen);
 *
 * Threading and lifetime: like the session, one thread at a time; the
 * session outlives the generator (free the generator first). A sequence is
 * driven by one generator at a time; between steps the host may use the
 * session's calls on sequences that are not active (ember_session_seq_copy
 * to share a prefix, ember_session_seq_tokens, ...). */
typedef struct ember_generator ember_generator;

typedef struct ember_generator_options {
  size_t struct_size; /* sizeof(ember_generator_options) */
  /* Rows of one step: each decoding sequence's token, the rest for prompt
   * chunks, the oldest start first (at least one row, so a prompt always
   * advances): a long prompt delays the others by one such step. 0
   * (default): the session's max_batch. At most 65536. */
  int32_t max_step_rows;
} ember_generator_options;

/* Fills *options with the defaults (NULL is a no-op). */
EMBER_API void ember_generator_options_default(ember_generator_options* options);

/* A generator over `session`'s sequences (none active). On failure
 * *out_generator is NULL. Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, a bad
 * option), EMBER_ERR_NO_MEMORY. */
EMBER_API ember_status ember_generator_create(ember_session* session, const ember_generator_options* options,
                                              ember_generator** out_generator);

/* NULL is a no-op. Sequences still active simply stop (their positions stay
 * in the session). */
EMBER_API void ember_generator_free(ember_generator* generator);

/* Starts sequence seq (0 .. n_seqs - 1, not active) on a prompt: the text
 * `prompt` (NUL-terminated, read during the call) tokenized by
 * ember_tokenize_prompt's rule with options->parse_special and add_bos, or
 * options->prompt_tokens as they are (prompt NULL); placed after what the
 * sequence holds, or over it (options->reuse_prefix). options (NULL:
 * defaults) gives the rest: sampling, max_new_tokens, context_shift, stop
 * strings (copied), logit bias (copied), log-probabilities; prompt_logits,
 * when set, must stay valid until the step that runs the prompt's last
 * token. Nothing runs until the next ember_generator_step. Everything is
 * checked first; on an error nothing changes. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL generator, seq out of range or active,
 * both or neither of prompt and prompt_tokens, an empty prompt, a bad
 * option: the message names it), EMBER_ERR_TOKEN_OUT_OF_RANGE (a
 * prompt_tokens id, or a logit_bias token), EMBER_ERR_CONTEXT_FULL (the
 * prompt does not fit the context after what the sequence keeps). */
EMBER_API ember_status ember_generator_start(ember_generator* generator, int32_t seq, const char* prompt,
                                             const ember_generate_options* options);

/* What a step released for one sequence. A token event (finish
 * EMBER_STOP_NONE) releases a sampled token with the bytes of text that
 * became final with it: its piece, less what is held back (text that could
 * begin a stop string, or an unfinished UTF-8 character), plus what earlier
 * tokens held back; a host appends every event's text. A sequence's last
 * event has finish != EMBER_STOP_NONE and token -1, and may carry the final
 * bytes of text (a UTF-8 character the text ended inside). End-of-generation
 * tokens and the text of a stop string are never released. Pointers are
 * valid during the callback only. */
typedef struct ember_token_logprob {
  int32_t token;
  float logprob;
} ember_token_logprob;

typedef struct ember_generator_event {
  int32_t seq;
  int32_t token;       /* the released token; -1 on the last event */
  const char* text;    /* not NUL-terminated; may be empty */
  size_t text_len;
  float logprob;       /* the token's log-probability (options->logprobs), else NAN */
  const ember_token_logprob* top_logprobs; /* the most likely first; n_top_logprobs of them */
  int32_t n_top_logprobs;
  int32_t finish;      /* ember_stop_reason: EMBER_STOP_NONE on a token event */
  ember_status status; /* finish EMBER_STOP_ERROR: what failed; else EMBER_OK */
  const char* message; /* its description; "" otherwise */
} ember_generator_event;

/* Return non-zero from a token event to stop that sequence
 * (EMBER_STOP_CALLBACK; its last event follows). Ignored on a last event. */
typedef int (*ember_generator_callback)(void* user_data, const ember_generator_event* event);

/* One batched step of every active sequence: sequences cancelled end
 * first (EMBER_STOP_CANCELLED); then the prompts' chunks and the decoding
 * tokens run as one ember_session_decode_batch; each sequence whose prompt
 * is done samples its next token, and its events go to callback (may be
 * NULL) in order. A sequence the step fails for ends with an
 * EMBER_STOP_ERROR event naming the error, the others go on. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL generator). A step with no active
 * sequence does nothing. */
EMBER_API ember_status ember_generator_step(ember_generator* generator, ember_generator_callback callback,
                                            void* user_data);

/* Sequence seq ends at the next step with EMBER_STOP_CANCELLED (a no-op when
 * it is not active). Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, seq out of
 * range). */
EMBER_API ember_status ember_generator_cancel(ember_generator* generator, int32_t seq);

/* 1 when sequence seq is active, else 0; with seq -1, the number of active
 * sequences. 0 for NULL. Does not touch the last error. */
EMBER_API int32_t ember_generator_active(const ember_generator* generator, int32_t seq);

/* Sequence seq's last (or current) generation, as ember_generate_last_stats
 * (stats->struct_size set by the caller; position: the sequence's). Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL, seq out of range, a bad struct_size). */
EMBER_API ember_status ember_generator_seq_stats(const ember_generator* generator, int32_t seq,
                                                 ember_generate_stats* stats);

/* The tokens of sequence seq's last prompt, as ember_generator_start made
 * them (BOS included). Buffer rules as ember_tokenize. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL, seq out of range). */
EMBER_API ember_status ember_generator_seq_prompt(const ember_generator* generator, int32_t seq, int32_t* tokens,
                                                  size_t capacity, size_t* out_count);

/* The prompt rule every generation uses: `text` (text_len bytes) encoded,
 * its control-token text parsed as control tokens when parse_special, then
 * BOS in front when add_bos says so (1; or -1 and the model asks for one:
 * ember_model_info.add_bos) and the tokens do not already begin with it (a
 * rendered chat template may write BOS itself). Buffer rules and errors as
 * ember_tokenize. */
EMBER_API ember_status ember_tokenize_prompt(const ember_model* model, const char* text, size_t text_len,
                                             int parse_special, int add_bos, int32_t* tokens, size_t capacity,
                                             size_t* out_count);

/* ---- Embeddings -------------------------------------------------------------
 * An embedding session (ember_session_options.embeddings = 1) turns each
 * input (a text, or an array of token ids) into one vector of the model's
 * dim floats: every input runs from position 0 of a free sequence of the
 * session (what the sequences held is forgotten), as many inputs in one
 * step as the session's sequences and max_batch allow, and its rows are
 * pooled and normalized as llama.cpp's llama-embedding does. Any decoder
 * model embeds (mean or last-token pooling); an embedding model's file says
 * its pooling (GGUF pooling_type: Qwen3-Embedding's is last). */

/* How an input's rows become one embedding (llama.cpp's numbering). */
typedef enum ember_pooling {
  EMBER_POOLING_UNSPECIFIED = -1, /* the file's pooling_type, else mean */
  EMBER_POOLING_NONE = 0,         /* every token's row is an output */
  EMBER_POOLING_MEAN = 1,
  EMBER_POOLING_CLS = 2,          /* the first token's row */
  EMBER_POOLING_LAST = 3,         /* the last token's row */
  EMBER_POOLING_RANK = 4          /* a reranker's score (classifier head) */
} ember_pooling;

typedef struct ember_embed_options {
  size_t struct_size; /* sizeof(ember_embed_options) */
  int32_t pooling;    /* ember_pooling; default EMBER_POOLING_UNSPECIFIED */
  /* As llama-embedding's --embd-normalize: -1 none, 0 scaled so the largest
   * absolute value is 32760, 1 taxicab, 2 Euclidean (default), p > 2 the
   * p-norm. */
  int32_t normalize;
} ember_embed_options;

EMBER_API void ember_embed_options_default(ember_embed_options* options);

/* The pooling a model's file declares (ember_pooling), or
 * EMBER_POOLING_UNSPECIFIED when it declares none (ember then pools by the
 * mean); EMBER_POOLING_UNSPECIFIED for NULL. Does not touch the last error. */
EMBER_API int32_t ember_model_pooling(const ember_model* model);

/* Floats in one embedding: the model's dim for an embedding session, 0 for
 * any other session or NULL. Does not touch the last error. */
EMBER_API int32_t ember_session_embedding_size(const ember_session* session);

/* Embeds n_inputs token arrays (tokens[i], n_tokens[i] ids each, run as
 * given: nothing is added) into out, input after input: n_inputs x
 * embedding_size floats, or with EMBER_POOLING_NONE every input's tokens x
 * embedding_size (token after token). out_floats: out's capacity in floats.
 * Everything is checked before anything runs. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL, a session not made for embeddings, an
 * input of 0 tokens, a bad option, naming it), EMBER_ERR_TOKEN_OUT_OF_RANGE,
 * EMBER_ERR_CONTEXT_FULL (an input longer than the session's context),
 * EMBER_ERR_BUFFER_TOO_SMALL (out_floats below what the inputs need; the
 * message says how many), EMBER_ERR_UNSUPPORTED (rank pooling without a
 * classifier head). With EMBER_POOLING_RANK an input is a query and a
 * document already joined, and its row is the head's outputs
 * (ember_rerank does the joining). */
EMBER_API ember_status ember_embed_tokens(ember_session* session, const int32_t* const* tokens,
                                          const size_t* n_tokens, size_t n_inputs,
                                          const ember_embed_options* options, float* out, size_t out_floats);

/* The ids a text embeds as (what ember_embed_texts runs): control-token
 * text parsed, BOS and EOS added as the vocabulary says
 * (tokenizer.ggml.add_bos_token / add_eos_token), as llama-embedding
 * tokenizes. Buffer rules and errors as ember_tokenize. */
EMBER_API ember_status ember_embed_tokenize(const ember_model* model, const char* text, size_t text_len,
                                            int32_t* tokens, size_t capacity, size_t* out_count);

/* Embeds n_texts texts (texts[i], text_lens[i] bytes; text_lens NULL: each
 * NUL-terminated), each tokenized as llama-embedding does: control-token
 * text parsed, BOS and EOS added as the vocabulary says. out as for
 * ember_embed_tokens with one row per text (EMBER_POOLING_NONE is refused:
 * tokenize and call ember_embed_tokens, which knows the rows). Errors as
 * ember_embed_tokens', an empty text (no tokens) included. */
EMBER_API ember_status ember_embed_texts(ember_session* session, const char* const* texts, const size_t* text_lens,
                                         size_t n_texts, const ember_embed_options* options, float* out,
                                         size_t out_floats);

/* Reranking: scores a query against n_documents documents (NUL-terminated)
 * with the model's classifier head (a reranker: GGUF cls / cls.output, as
 * llama.cpp's rank pooling), each pair run as one input ([CLS] query [SEP]
 * document [SEP] for a WordPiece vocabulary, as llama.cpp joins them),
 * batched over the session's sequences. scores[i]: document i's score, the
 * head's first output, not normalized (higher is more relevant). Errors as
 * ember_embed_texts'; EMBER_ERR_UNSUPPORTED for a model without a
 * classifier head. */
EMBER_API ember_status ember_rerank(ember_session* session, const char* query, const char* const* documents,
                                    size_t n_documents, float* scores);

/* ==== Inspection: backends and model files ================================
 * For hosts and tools that show, compare or re-check what they run on
 * (`ember backends`, `ember bench`, `ember verify`): the backends built in
 * with what each found, what an open model's file holds beyond
 * ember_model_info, and its digest and signature checked on demand. */

/* ---- Backends ----------------------------------------------------------- */

/* What kind of device a backend found. */
typedef enum ember_device_type {
  EMBER_DEVICE_CPU = 0,
  EMBER_DEVICE_INTEGRATED_GPU = 1,
  EMBER_DEVICE_DISCRETE_GPU = 2,
  EMBER_DEVICE_VIRTUAL = 3, /* a software device, e.g. lavapipe */
  EMBER_DEVICE_OTHER = 4
} ember_device_type;

/* One backend built into the library and the device its probe found. Every
 * string is owned by the library, NUL-terminated and valid for the life of
 * the process. */
typedef struct ember_backend_info {
  size_t struct_size;             /* sizeof(ember_backend_info), set by the caller */
  const char* name;               /* "cpu", "vulkan" */
  int32_t kind;                   /* ember_backend_kind: what ember_session_options.backend takes */
  int32_t available;              /* 1 when a session can be created there */
  int32_t device_type;            /* ember_device_type */
  const char* device_type_name;   /* "cpu", "integrated gpu", "discrete gpu", "virtual", "other" */
  const char* device_name;        /* "AMD EPYC 9V84", "llvmpipe (...)"; "" when none was found */
  uint64_t memory_bytes;          /* host RAM for the cpu, the largest device-local heap for a GPU;
                                     0 when unknown */
  const char* unavailable_reason; /* why not, when available is 0; else "" */
  int32_t batched_decoding;       /* 1 when it runs sessions of n_seqs > 1 (ember_session_decode_batch,
                                     several sequences of one ember_generator) */
  uint32_t weight_types;          /* bit (1u << t) set for each ember_weight_type t it runs */
  uint32_t kv_types;              /* bit (1u << k) set for each ember_kv_type k its KV cache takes */
} ember_backend_info;

/* "q4_k", "f16", ...: the name of an ember_weight_type; "?" for a value
 * that is not one. A static string. */
EMBER_API const char* ember_weight_type_name(int32_t type);

/* "f32", "f16", "q8_0": the name of an ember_kv_type; "?" otherwise. */
EMBER_API const char* ember_kv_type_name(int32_t type);

/* How many backends this library was built with (at least 1: the cpu). Does
 * not touch the last error. */
EMBER_API size_t ember_backend_count(void);

/* Fills *info for backend `index` (0 .. ember_backend_count() - 1, the cpu
 * first). The first call probes every backend (it may load a driver and list
 * devices, never opens one); later calls return the same answers. A smaller,
 * older struct receives the fields it has. Errors:
 * EMBER_ERR_INVALID_ARGUMENT (NULL info, a bad struct_size, an index out of
 * range, naming it). */
EMBER_API ember_status ember_backend_get_info(size_t index, ember_backend_info* info);

/* ---- Model files ---------------------------------------------------------- */

/* Weight types of a tensor (values never change). */
typedef enum ember_weight_type {
  EMBER_TYPE_F32 = 0,
  EMBER_TYPE_F16 = 1,
  EMBER_TYPE_BF16 = 2,
  EMBER_TYPE_Q8_0 = 3,
  EMBER_TYPE_Q4_0 = 4,
  EMBER_TYPE_Q4_1 = 5,
  EMBER_TYPE_Q5_0 = 6,
  EMBER_TYPE_Q5_1 = 7,
  EMBER_TYPE_Q2_K = 8,
  EMBER_TYPE_Q3_K = 9,
  EMBER_TYPE_Q4_K = 10,
  EMBER_TYPE_Q5_K = 11,
  EMBER_TYPE_Q6_K = 12,
  EMBER_TYPE_IQ4_NL = 13,
  EMBER_TYPE_IQ4_XS = 14,
  EMBER_TYPE_COUNT = 15 /* the number of types, not a type */
} ember_weight_type;

/* What an open model's file holds beyond ember_model_info: its size and
 * sections, digest, signature trailer, provenance and weight totals. The
 * pointers are owned by the model and valid until ember_model_free. */
typedef struct ember_model_file_info {
  size_t struct_size;           /* sizeof(ember_model_file_info), set by the caller */
  uint64_t file_bytes;          /* the whole file, a signature trailer included */
  uint32_t schema_version;      /* the format version the file records */
  uint64_t data_offset;         /* where the data segment (the tensors) starts */
  uint64_t data_bytes;          /* its size */
  char data_sha256[65];         /* the data segment's SHA-256 as the metadata records it,
                                   64 lowercase hex digits (checked at open under
                                   EMBER_INTEGRITY_DIGEST, or by ember_model_check_digest) */
  uint64_t signed_bytes;        /* what a signature covers: every byte before the trailer */
  int32_t has_signature;        /* 1 when the file ends with a signature trailer */
  char signature_key_id[65];    /* the trailer's key id as recorded (hex; see ember_key_id;
                                   not trusted until ember_model_check_signature);
                                   "" when unsigned */
  const char* source_file;      /* provenance: the file it was converted from */
  char source_sha256[65];       /* that file's SHA-256, hex; "" when not recorded */
  const char* converter;        /* the program (and version) that wrote the file */
  const char* quantization;     /* how the weights were typed, e.g. "q8_0 (norms f32)" */
  size_t n_tensors;             /* see ember_model_get_tensor_info */
  uint64_t weight_bytes;        /* every tensor's bytes */
  uint64_t decode_weight_bytes; /* what one decode step reads of them: every tensor whole, but one
                                   row of the token embedding table when the output matrix is a
                                   tensor of its own */
} ember_model_file_info;

/* Fills *info (struct_size set by the caller; a smaller, older struct
 * receives the fields it has). Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, a
 * bad struct_size). */
EMBER_API ember_status ember_model_get_file_info(const ember_model* model, ember_model_file_info* info);

/* One tensor of a model file. name is owned by the model (valid until
 * ember_model_free); type_name and layout are static strings. */
typedef struct ember_tensor_info {
  size_t struct_size;      /* sizeof(ember_tensor_info), set by the caller */
  const char* name;        /* "blk.0.attn_q.weight" */
  int32_t type;            /* ember_weight_type */
  const char* type_name;   /* "q8_0" */
  const char* layout;      /* how blocks are stored: "row-major" or "rows16" */
  int32_t n_dims;          /* 1 or 2 */
  int64_t shape[4];        /* outermost first ([rows, cols]); the unused entries 0 */
  uint64_t elements;
  uint64_t offset;         /* within the data segment */
  uint64_t bytes;
  double bits_per_weight;  /* of its type, block scales included */
} ember_tensor_info;

/* Fills *info for tensor `index` (0 .. n_tensors - 1, in file order).
 * Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, a bad struct_size, an index out
 * of range). */
EMBER_API ember_status ember_model_get_tensor_info(const ember_model* model, size_t index, ember_tensor_info* info);

/* Hashes the data segment again and compares it with the metadata's
 * SHA-256, then checks that the file is still the one opened (not resized or
 * rewritten in place since): what EMBER_INTEGRITY_DIGEST checks at open, on
 * demand, for a host that re-checks a model it keeps open. Reads the whole
 * data segment. Errors: EMBER_ERR_INVALID_ARGUMENT (NULL),
 * EMBER_ERR_INTEGRITY (the digest does not match, or the file changed),
 * EMBER_ERR_IO (a read past a truncated end was absorbed). */
EMBER_API ember_status ember_model_check_digest(const ember_model* model);

/* Checks the file's signature trailer with `public_key_pem` (PEM text,
 * public_key_pem_len bytes, 0 = NUL-terminated; read during the call only):
 * what EMBER_INTEGRITY_SIGNATURE checks at open, on demand. Hashes every
 * byte before the trailer. Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, a key
 * that is not P-256 PEM), EMBER_ERR_SIGNATURE (no trailer, a trailer made by
 * another key, or bytes that are not the signed ones). */
EMBER_API ember_status ember_model_check_signature(const ember_model* model, const char* public_key_pem,
                                                   size_t public_key_pem_len);

/* The key id of a P-256 key (PEM text of a public or a private key,
 * pem_len bytes, 0 = NUL-terminated): SHA-256 of its public key (DER
 * SubjectPublicKeyInfo), written to out_hex as 64 lowercase hex digits and a
 * NUL: what a signature trailer records (ember_model_file_info.
 * signature_key_id). Errors: EMBER_ERR_INVALID_ARGUMENT (NULL, text that is
 * not a P-256 key). */
EMBER_API ember_status ember_key_id(const char* pem, size_t pem_len, char out_hex[65]);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_H_ */

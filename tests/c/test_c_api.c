/* The public API driven from C (compiled as C11): ember.h must be usable
 * from C, and a host written in C must be able to open a model, tokenize,
 * prefill, decode with a sampler, generate with a callback and detokenize.
 *
 * Usage: ember_c_api_test MODEL.ember   (or EMBER_C_TEST_MODEL=MODEL.ember)
 * CTest passes stories260K converted by the c_api_model fixture. Prints each
 * failed check and exits 1 if any failed; exits 2 when no model is given. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

static int g_checks = 0;
static int g_failures = 0;

#define CHECK(cond)                                                                              \
  do {                                                                                           \
    ++g_checks;                                                                                  \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: \"%s\")\n", __FILE__, __LINE__, #cond, \
              ember_last_error());                                                               \
      ++g_failures;                                                                              \
    }                                                                                            \
  } while (0)

/* The call must return `want`; a failure also needs a last-error message. */
#define CHECK_STATUS(call, want)                                                                  \
  do {                                                                                            \
    ember_status st_ = (call);                                                                    \
    ++g_checks;                                                                                   \
    if (st_ != (want)) {                                                                          \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: \"%s\")\n", __FILE__,      \
              __LINE__, #call, ember_status_string(st_), ember_status_string(want),               \
              ember_last_error());                                                                \
      ++g_failures;                                                                               \
    } else if (st_ != EMBER_OK && ember_last_error()[0] == '\0') {                                \
      fprintf(stderr, "%s:%d: %s failed with an empty ember_last_error()\n", __FILE__, __LINE__,  \
              #call);                                                                             \
      ++g_failures;                                                                               \
    }                                                                                             \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, EMBER_OK)

/* Stops the program (after the summary) when a later step cannot run. */
#define REQUIRE(cond)                                                                           \
  do {                                                                                          \
    CHECK(cond);                                                                                \
    if (!(cond)) {                                                                              \
      fprintf(stderr, "%s:%d: cannot continue\n", __FILE__, __LINE__);                          \
      goto done;                                                                                \
    }                                                                                           \
  } while (0)

#define MAX_TOKENS 64
#define STOP_AFTER 5

typedef struct {
  int calls;
  int32_t tokens[MAX_TOKENS];
  size_t text_len;
  char text[1024];
} collector;

/* Records each token and its piece; asks to stop after STOP_AFTER tokens. */
static int on_token(void* user_data, int32_t token, const char* piece, size_t piece_len) {
  collector* c = (collector*)user_data;
  if (c->calls < MAX_TOKENS) c->tokens[c->calls] = token;
  c->calls++;
  if (piece_len > 0 && piece == NULL) return 1;
  if (c->text_len + piece_len < sizeof c->text) {
    memcpy(c->text + c->text_len, piece, piece_len);
    c->text_len += piece_len;
  }
  return c->calls >= STOP_AFTER;
}

/* The generator's events for two sequences: tokens and text per sequence. */
typedef struct {
  int tokens[2];
  int finishes[2];
  int32_t finish_reason[2];
  size_t text_len[2];
  char text[2][1024];
} event_log;

static int on_event(void* user_data, const ember_generator_event* e) {
  event_log* g = (event_log*)user_data;
  if (e->seq < 0 || e->seq > 1) return 1;
  if (e->text_len > 0 && e->text == NULL) return 1;
  if (g->text_len[e->seq] + e->text_len < sizeof g->text[0]) {
    memcpy(g->text[e->seq] + g->text_len[e->seq], e->text, e->text_len);
    g->text_len[e->seq] += e->text_len;
  }
  if (e->finish != EMBER_STOP_NONE) {
    g->finishes[e->seq]++;
    g->finish_reason[e->seq] = e->finish;
  } else {
    g->tokens[e->seq]++;
  }
  return 0;
}

static int never_called(void* user_data, int32_t token, const char* piece, size_t piece_len) {
  (void)token;
  (void)piece;
  (void)piece_len;
  ++*(int*)user_data;
  return 1;
}

/* A P-256 public key made for this test by openssl (its private half was
 * thrown away) and its key id, SHA-256 of the DER SubjectPublicKeyInfo as
 * `openssl ec -pubout -outform DER | sha256sum` printed it. */
static const char kTestPublicKey[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEdglwbZ0D/RXwPzlTX0Pf7Yyec+Tk\n"
    "d6M4KOUpS043b4s08LbF1h6ImzPkAfy5u/dljsQDLTmLhUP4fQaE2a4Viw==\n"
    "-----END PUBLIC KEY-----\n";
static const char kTestKeyId[] = "ed266bba0f527913618e37685cb28ed12214c878c8e8f5f7c04d7cd5bf7dac90";

static int is_hex64(const char* s) {
  size_t i;
  for (i = 0; i < 64; ++i) {
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  }
  return s[64] == '\0';
}

/* The inspection section: backends, the model file, its tensors, the
 * digest and signature checks, key ids. `model` is an unsigned file. */
static void check_inspection(ember_model* model) {
  size_t i, n_backends = ember_backend_count();
  ember_backend_info b;
  ember_model_file_info f;
  ember_tensor_info t;
  uint64_t bytes = 0;
  char id[65];
  CHECK(n_backends >= 1);
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  CHECK_OK(ember_backend_get_info(0, &b));
  CHECK(b.name != NULL && strcmp(b.name, "cpu") == 0);
  CHECK(b.kind == EMBER_BACKEND_CPU && b.available == 1 && b.device_type == EMBER_DEVICE_CPU);
  CHECK(b.batched_decoding == 1);
  CHECK(b.device_type_name != NULL && strcmp(b.device_type_name, "cpu") == 0);
  CHECK(b.device_name != NULL && b.unavailable_reason != NULL && b.unavailable_reason[0] == '\0');
  for (i = 1; i < n_backends; ++i) {
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    CHECK_OK(ember_backend_get_info(i, &b));
    CHECK(b.name != NULL && b.kind != EMBER_BACKEND_CPU && b.device_name != NULL);
    CHECK(b.available == 1 || (b.unavailable_reason != NULL && b.unavailable_reason[0] != '\0'));
  }
  CHECK_STATUS(ember_backend_get_info(n_backends, &b), EMBER_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ember_backend_get_info(0, NULL), EMBER_ERR_INVALID_ARGUMENT);
  b.struct_size = 0;
  CHECK_STATUS(ember_backend_get_info(0, &b), EMBER_ERR_INVALID_ARGUMENT);
  /* An older, shorter struct receives only the fields it has. */
  memset(&b, 0x5a, sizeof b);
  b.struct_size = offsetof(ember_backend_info, available);
  CHECK_OK(ember_backend_get_info(0, &b));
  CHECK(b.kind == EMBER_BACKEND_CPU && b.available == 0x5a5a5a5a);

  memset(&f, 0, sizeof f);
  f.struct_size = sizeof f;
  CHECK_OK(ember_model_get_file_info(model, &f));
  CHECK(f.schema_version >= 1);
  CHECK(f.data_offset > 0 && f.data_bytes > 0);
  CHECK(f.signed_bytes == f.data_offset + f.data_bytes && f.file_bytes == f.signed_bytes);
  CHECK(f.has_signature == 0 && f.signature_key_id[0] == '\0');
  CHECK(is_hex64(f.data_sha256));
  CHECK(f.source_file != NULL && f.converter != NULL && f.quantization != NULL);
  CHECK(f.n_tensors > 0);
  for (i = 0; i < f.n_tensors; ++i) {
    int d;
    uint64_t elements = 1;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    CHECK_OK(ember_model_get_tensor_info(model, i, &t));
    CHECK(t.name != NULL && t.name[0] != '\0' && t.type_name != NULL && t.layout != NULL);
    CHECK(t.type >= 0 && t.type < EMBER_TYPE_COUNT);
    CHECK(t.n_dims == 1 || t.n_dims == 2);
    for (d = 0; d < t.n_dims; ++d) elements *= (uint64_t)t.shape[d];
    CHECK(t.elements == elements && t.shape[3] == 0);
    CHECK(t.bytes > 0 && t.offset + t.bytes <= f.data_bytes);
    CHECK(t.bits_per_weight > 0);
    /* stories260K is f32 throughout: 32 bits, 4 bytes a weight. */
    CHECK(t.type == EMBER_TYPE_F32 && strcmp(t.type_name, "f32") == 0 && t.bytes == 4 * t.elements);
    bytes += t.bytes;
  }
  CHECK(f.weight_bytes == bytes);
  CHECK(f.decode_weight_bytes > 0 && f.decode_weight_bytes <= f.weight_bytes);
  CHECK_STATUS(ember_model_get_tensor_info(model, f.n_tensors, &t), EMBER_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ember_model_get_tensor_info(NULL, 0, &t), EMBER_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ember_model_get_file_info(model, NULL), EMBER_ERR_INVALID_ARGUMENT);

  CHECK_OK(ember_model_check_digest(model));
  CHECK_STATUS(ember_model_check_digest(NULL), EMBER_ERR_INVALID_ARGUMENT);
  CHECK_OK(ember_key_id(kTestPublicKey, 0, id));
  CHECK(strcmp(id, kTestKeyId) == 0);
  CHECK_OK(ember_key_id(kTestPublicKey, strlen(kTestPublicKey), id));
  CHECK(strcmp(id, kTestKeyId) == 0);
  CHECK_STATUS(ember_key_id("not a key", 0, id), EMBER_ERR_INVALID_ARGUMENT);
  CHECK(id[0] == '\0');
  CHECK_STATUS(ember_key_id(NULL, 0, id), EMBER_ERR_INVALID_ARGUMENT);
  /* The file is unsigned: a good key finds no signature, a bad one is refused as an argument. */
  CHECK_STATUS(ember_model_check_signature(model, kTestPublicKey, 0), EMBER_ERR_SIGNATURE);
  CHECK_STATUS(ember_model_check_signature(model, "not a key", 0), EMBER_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ember_model_check_signature(model, NULL, 0), EMBER_ERR_INVALID_ARGUMENT);
}

/* Tools through a chat template from C: OpenAI-shaped JSON in, the prompt
 * out, and the call syntax of the template. */
static void check_chat_tools(void) {
  const char* messages =
      "[{\"role\":\"user\",\"content\":\"Weather?\"},"
      "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
      "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},"
      "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"cold\"}]";
  const char* tools = "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{}}}]";
  char out[4096];
  size_t len = 0;
  CHECK(ember_chat_format_json(NULL, "chatml", messages, tools, 1, out, sizeof out, &len) == EMBER_OK);
  CHECK(len > 0 && len < sizeof out);
  if (len < sizeof out) out[len] = '\0';
  CHECK(strstr(out, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}") != NULL);
  CHECK(strstr(out, "<tool_response>\ncold\n</tool_response>") != NULL);
  CHECK(ember_chat_format_json(NULL, "chatml", "[1]", NULL, 1, out, sizeof out, &len) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(strstr(ember_last_error(), "messages[0]") != NULL);
  CHECK(ember_chat_tool_syntax(NULL, "chatml") == EMBER_TOOL_SYNTAX_HERMES);
  CHECK(ember_chat_tool_syntax(NULL, "llama3") == EMBER_TOOL_SYNTAX_LLAMA3);
  CHECK(ember_chat_tool_syntax(NULL, "phi4-mini") == EMBER_TOOL_SYNTAX_PHI4);
  CHECK(ember_chat_tool_syntax(NULL, "{{ '[TOOL_CALLS]' + name + '[ARGS]' }}") == EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  CHECK(ember_chat_tool_syntax(NULL, "{{ '<|tool_call>call:' + name }}") == EMBER_TOOL_SYNTAX_GEMMA4);
  CHECK(ember_grammar_memory(NULL) == 0);
  CHECK(ember_grammar_set_max_bytes(NULL, 1) == EMBER_ERR_INVALID_ARGUMENT);
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : getenv("EMBER_C_TEST_MODEL");
  if (path == NULL || path[0] == '\0') {
    fprintf(stderr,
            "c_api: no model given. Usage: %s MODEL.ember (or set EMBER_C_TEST_MODEL). CTest passes one\n"
            "converted from stories260K.bin by the c_api_model fixture.\n",
            argv[0]);
    return 2;
  }

  ember_model* model = NULL;
  ember_session* session = NULL;
  ember_sampler* sampler = NULL;
  float* logits = NULL;
  int32_t* prompt = NULL;
  /* Declared before the first REQUIRE (a goto may not skip initializations). */
  const char* text = "Once upon a time";
  size_t n_prompt = 0, n = 0, history_len = 0, story_len = 0;
  int n_greedy = 0;
  int32_t history[MAX_TOKENS];
  int32_t greedy[STOP_AFTER];
  char story[512];
  ember_model_info info;

  /* ---- no model needed ---- */
  {
    const char* v = ember_version();
    CHECK(v != NULL && v[0] != '\0');
    int major = -1, minor = -1, patch = -1;
    CHECK(v != NULL && sscanf(v, "%d.%d.%d", &major, &minor, &patch) == 3);
    /* the header's macros name the library's version */
    CHECK(major == EMBER_VERSION_MAJOR && minor == EMBER_VERSION_MINOR && patch == EMBER_VERSION_PATCH);
    CHECK(strcmp(ember_status_string(EMBER_ERR_BUFFER_TOO_SMALL), "EMBER_ERR_BUFFER_TOO_SMALL") == 0);
    CHECK(strcmp(ember_status_string(EMBER_OK), "EMBER_OK") == 0);
    CHECK(strcmp(ember_status_string(EMBER_ERR_FORMAT), "EMBER_ERR_FORMAT") == 0);
    CHECK(strcmp(ember_status_string(EMBER_ERR_CONTEXT_FULL), "EMBER_ERR_CONTEXT_FULL") == 0);
    CHECK(ember_status_string((ember_status)9999) != NULL);
    char digest[65];
    CHECK(ember_sha256_hex("abc", 3, digest) == EMBER_OK);
    CHECK(strcmp(digest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    CHECK(ember_sha256_hex(NULL, 1, digest) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_last_error() != NULL);
  }
  ember_model_options mopt;
  ember_session_options sopt;
  ember_generate_options gopt;
  {
    memset(&mopt, 0x7F, sizeof mopt);
    ember_model_options_default(&mopt);
    CHECK(mopt.struct_size == sizeof mopt);
    CHECK(mopt.integrity_policy == EMBER_INTEGRITY_NONE);
    CHECK(mopt.public_key_pem == NULL);
    CHECK(mopt.guard_mapping == 1);
    memset(&sopt, 0x7F, sizeof sopt);
    ember_session_options_default(&sopt);
    CHECK(sopt.struct_size == sizeof sopt);
    CHECK(sopt.context_length == 0);
    CHECK(sopt.max_batch == 512);
    CHECK(sopt.n_threads == 0);
    CHECK(sopt.kv_type_k == EMBER_KV_F32);
    CHECK(sopt.kv_type_v == EMBER_KV_F32);
    CHECK(sopt.backend == EMBER_BACKEND_CPU);
    CHECK(sopt.arena == NULL);
    CHECK(sopt.arena_size == 0);
    CHECK(sopt.max_bytes == 0);
    CHECK(sopt.vulkan_pipeline_cache_dir == NULL);
    CHECK(sopt.n_seqs == 1);
    CHECK(sopt.thread_pool == NULL);
    memset(&gopt, 0x7F, sizeof gopt);
    ember_generate_options_default(&gopt);
    CHECK(gopt.struct_size == sizeof gopt);
    CHECK(gopt.max_new_tokens == 128);
    CHECK(gopt.temperature == 0.0f);
    CHECK(gopt.top_k == 0);
    CHECK(gopt.top_p == 1.0f);
    CHECK(gopt.min_p == 0.0f);
    CHECK(gopt.repeat_penalty == 1.0f);
    CHECK(gopt.repeat_last_n == 64);
    CHECK(gopt.seed == 0);
    CHECK(gopt.add_bos == -1); /* as the model says */
    CHECK(gopt.context_shift == 0);
    CHECK(gopt.prompt_logits == NULL);
    CHECK(gopt.prompt_tokens == NULL);
    CHECK(gopt.n_prompt_tokens == 0);
  }
  /* misuse without a model */
  CHECK_STATUS(ember_model_open(NULL, NULL, &model), EMBER_ERR_INVALID_ARGUMENT);
  CHECK(model == NULL);
  CHECK_STATUS(ember_model_open(path, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ember_model_open("/nonexistent/dir/model.ember", NULL, &model), EMBER_ERR_IO);
  CHECK(model == NULL);
  ember_model_free(NULL);
  ember_session_free(NULL);
  ember_sampler_free(NULL);

  /* ---- open the model ---- */
  mopt.integrity_policy = EMBER_INTEGRITY_DIGEST;
  {
    ember_status st = ember_model_open(path, &mopt, &model);
    if (st != EMBER_OK) {
      fprintf(stderr, "c_api: cannot open '%s': %s: %s\n", path, ember_status_string(st), ember_last_error());
      ++g_failures;
      goto done;
    }
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_OK(ember_model_get_info(model, &info));
  REQUIRE(info.vocab_size > 0);
  CHECK(info.dim > 0 && info.n_layers > 0 && info.n_heads > 0 && info.n_kv_heads > 0);
  CHECK(info.max_context > 0);
  CHECK(info.bos_id >= -1 && info.bos_id < info.vocab_size);
  CHECK(info.eos_id >= -1 && info.eos_id < info.vocab_size);
  CHECK(info.n_parameters > 0);

  /* ---- session ---- */
  sopt.context_length = 128;
  CHECK_OK(ember_session_create(model, &sopt, &session));
  REQUIRE(session != NULL);
  CHECK(ember_session_position(session) == 0);

  /* ---- tokenize: ask for the size, then fill ---- */
  CHECK_STATUS(ember_tokenize(model, text, strlen(text), 1, NULL, 0, &n_prompt), EMBER_ERR_BUFFER_TOO_SMALL);
  REQUIRE(n_prompt >= 2 && n_prompt <= MAX_TOKENS - STOP_AFTER);
  prompt = (int32_t*)malloc(n_prompt * sizeof *prompt);
  REQUIRE(prompt != NULL);
  CHECK_OK(ember_tokenize(model, text, strlen(text), 1, prompt, n_prompt, &n));
  CHECK(n == n_prompt);
  if (info.bos_id >= 0) CHECK(prompt[0] == info.bos_id);
  {
    char back[256];
    size_t len = 0;
    CHECK_OK(ember_detokenize(model, prompt, n_prompt, back, sizeof back, &len));
    CHECK(len == strlen(text) && memcmp(back, text, len) == 0);
    /* one byte short: the length needed, nothing written */
    memset(back, '#', sizeof back);
    CHECK_STATUS(ember_detokenize(model, prompt, n_prompt, back, strlen(text) - 1, &len), EMBER_ERR_BUFFER_TOO_SMALL);
    CHECK(len == strlen(text) && back[0] == '#');
    /* a successful call clears the last error */
    CHECK_OK(ember_detokenize(model, prompt, n_prompt, back, sizeof back, &len));
    CHECK(ember_last_error()[0] == '\0');
  }

  /* ---- prefill, then greedy decode with a sampler ---- */
  logits = (float*)malloc((size_t)info.vocab_size * sizeof *logits);
  REQUIRE(logits != NULL);
  CHECK_OK(ember_session_prefill(session, prompt, n_prompt, logits));
  CHECK(ember_session_position(session) == (int32_t)n_prompt);
  {
    int finite = 1;
    for (int32_t i = 0; i < info.vocab_size; ++i) finite &= isfinite(logits[i]) != 0;
    CHECK(finite);
  }
  CHECK_OK(ember_sampler_create(model, &gopt, &sampler)); /* greedy defaults */
  REQUIRE(sampler != NULL);
  for (size_t i = 0; i < n_prompt; ++i) history[history_len++] = prompt[i];
  for (int step = 0; step < STOP_AFTER; ++step) {
    int32_t next = -1;
    CHECK_OK(ember_sampler_sample(sampler, logits, history, history_len, &next));
    REQUIRE(next >= 0 && next < info.vocab_size);
    greedy[n_greedy++] = next;
    size_t piece_len = 0;
    char piece[64];
    CHECK_OK(ember_token_to_piece(model, history[history_len - 1], next, piece, sizeof piece, &piece_len));
    if (story_len + piece_len < sizeof story) {
      memcpy(story + story_len, piece, piece_len);
      story_len += piece_len;
    }
    history[history_len++] = next;
    CHECK_OK(ember_session_decode(session, next, logits));
  }
  CHECK(ember_session_position(session) == (int32_t)(n_prompt + STOP_AFTER));
  {
    char decoded[512];
    size_t len = 0;
    CHECK_OK(ember_detokenize(model, greedy, (size_t)n_greedy, decoded, sizeof decoded, &len));
    CHECK(len > 0);
    printf("c_api: greedy continuation of \"%s\": \"%.*s\"\n", text, (int)story_len, story);
  }

  /* ---- misuse on live handles ---- */
  {
    const int32_t pos = ember_session_position(session);
    CHECK_STATUS(ember_session_decode(session, -1, logits), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    CHECK_STATUS(ember_session_decode(session, info.vocab_size, logits), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    CHECK_STATUS(ember_session_decode(session, INT32_MAX, logits), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    CHECK(ember_session_position(session) == pos);
    CHECK_STATUS(ember_session_prefill(session, prompt, 0, logits), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_session_prefill(NULL, prompt, 1, logits), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_session_prefill(session, NULL, 1, logits), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_session_position(session) == pos);
    CHECK_STATUS(ember_tokenize(NULL, text, strlen(text), 1, prompt, n_prompt, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_tokenize(model, text, strlen(text), 1, prompt, n_prompt, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_generate(session, NULL, &gopt, on_token, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_generate_options bad = gopt;
    bad.top_p = NAN;
    ember_sampler* bad_sampler = NULL;
    CHECK_STATUS(ember_sampler_create(model, &bad, &bad_sampler), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(bad_sampler == NULL);
    CHECK(strstr(ember_last_error(), "top_p") != NULL);
    bad = gopt;
    bad.struct_size = 0;
    CHECK_STATUS(ember_sampler_create(model, &bad, &bad_sampler), EMBER_ERR_INVALID_ARGUMENT);
    ember_session_options bad_sopt = sopt;
    bad_sopt.context_length = -1;
    ember_session* bad_session = NULL;
    CHECK_STATUS(ember_session_create(model, &bad_sopt, &bad_session), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(bad_session == NULL);
    int calls = 0;
    bad = gopt;
    bad.temperature = -1.0f;
    CHECK_STATUS(ember_generate(session, "x", &bad, never_called, &calls), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(calls == 0);
    CHECK(ember_session_position(session) == pos);
  }

  /* ---- ember_generate: the callback stops it after STOP_AFTER tokens ---- */
  CHECK_OK(ember_session_reset(session));
  CHECK(ember_session_position(session) == 0);
  {
    collector c;
    memset(&c, 0, sizeof c);
    gopt.max_new_tokens = 50;
    CHECK_OK(ember_generate(session, text, &gopt, on_token, &c));
    CHECK(c.calls == STOP_AFTER); /* it stopped when asked */
    /* the prompt, then one decode per token except the last (it stopped) */
    CHECK(ember_session_position(session) == (int32_t)(n_prompt + STOP_AFTER - 1));
    /* greedy is deterministic: the same tokens as the sampler loop above */
    int same = c.calls == n_greedy;
    for (int i = 0; same && i < n_greedy; ++i) same = c.tokens[i] == greedy[i];
    CHECK(same);
    CHECK(c.text_len == story_len && memcmp(c.text, story, story_len) == 0);
    printf("c_api: ember_generate stopped after %d tokens: \"%.*s\"\n", c.calls, (int)c.text_len, c.text);
    ember_generate_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_OK(ember_generate_last_stats(session, &stats));
    CHECK(stats.stop_reason == EMBER_STOP_CALLBACK);
    CHECK(stats.prompt_tokens == (int32_t)n_prompt);
    CHECK(stats.generated_tokens == STOP_AFTER);
    CHECK(stats.position == ember_session_position(session));
    CHECK(stats.prefill_ms >= 0 && stats.decode_ms >= 0);
  }
  /* ---- ember_generate with the prompt as exact ids: the same tokens ---- */
  CHECK_OK(ember_session_reset(session));
  {
    collector c;
    memset(&c, 0, sizeof c);
    ember_generate_options ids = gopt;
    ids.max_new_tokens = 50;
    ids.add_bos = 0; /* ignored with prompt_tokens: the ids run as given */
    ids.prompt_tokens = prompt;
    ids.n_prompt_tokens = n_prompt;
    CHECK_OK(ember_generate(session, NULL, &ids, on_token, &c));
    CHECK(c.calls == STOP_AFTER);
    int same = c.calls == n_greedy;
    for (int i = 0; same && i < n_greedy; ++i) same = c.tokens[i] == greedy[i];
    CHECK(same);
    CHECK(ember_session_position(session) == (int32_t)(n_prompt + STOP_AFTER - 1));
    /* max_new_tokens 0: the prompt only */
    CHECK_OK(ember_session_reset(session));
    ids.max_new_tokens = 0;
    ids.prompt_logits = logits;
    CHECK_OK(ember_generate(session, NULL, &ids, never_called, &c.calls));
    CHECK(ember_session_position(session) == (int32_t)n_prompt);
    /* misuse: both prompts, a count without ids, ids without a count, an id
       outside the vocabulary (named with its index; the session unchanged) */
    CHECK_OK(ember_session_reset(session));
    CHECK_STATUS(ember_generate(session, text, &ids, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ids.prompt_tokens = NULL;
    CHECK_STATUS(ember_generate(session, NULL, &ids, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ids.prompt_tokens = prompt;
    ids.n_prompt_tokens = 0;
    CHECK_STATUS(ember_generate(session, NULL, &ids, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    {
      int32_t bad_ids[3];
      bad_ids[0] = prompt[0];
      bad_ids[1] = info.vocab_size;
      bad_ids[2] = prompt[0];
      ids.prompt_tokens = bad_ids;
      ids.n_prompt_tokens = 3;
      CHECK_STATUS(ember_generate(session, NULL, &ids, NULL, NULL), EMBER_ERR_TOKEN_OUT_OF_RANGE);
      CHECK(strstr(ember_last_error(), "prompt_tokens[1]") != NULL);
      bad_ids[1] = -5;
      CHECK_STATUS(ember_generate(session, NULL, &ids, NULL, NULL), EMBER_ERR_TOKEN_OUT_OF_RANGE);
      CHECK(strstr(ember_last_error(), "-5") != NULL);
    }
    CHECK(ember_session_position(session) == 0);
    CHECK(c.calls == STOP_AFTER); /* never_called was never called */
  }

  /* the session continues where generation left off */
  {
    const int32_t pos = ember_session_position(session);
    int32_t tok = info.bos_id >= 0 ? info.bos_id : 0;
    CHECK_OK(ember_session_decode(session, tok, NULL));
    CHECK(ember_session_position(session) == pos + 1);
  }

  /* ---- batched decoding from C: two sequences in one step give each the
   * logits of a session of its own ---- */
  {
    const size_t bytes = (size_t)info.vocab_size * sizeof(float);
    float* l0 = (float*)malloc(bytes);
    float* l1 = (float*)malloc(bytes);
    float* lone = (float*)malloc(bytes);
    ember_session_options bo = sopt;
    bo.n_seqs = 2;
    ember_session* batch = NULL;
    ember_session* single = NULL;
    CHECK_OK(ember_session_create(model, &bo, &batch));
    CHECK_OK(ember_session_create(model, &sopt, &single));
    if (batch && single && l0 && l1 && lone) {
      CHECK(ember_session_n_seqs(batch) == 2);
      ember_batch_item items[2];
      memset(items, 0, sizeof items);
      items[0].seq = 0;
      items[0].tokens = prompt;
      items[0].n_tokens = n_prompt;
      items[0].logits = l0;
      items[1].seq = 1;
      items[1].tokens = prompt;
      items[1].n_tokens = 1;
      items[1].logits = l1;
      CHECK_OK(ember_session_decode_batch(batch, items, 2));
      CHECK_OK(ember_session_prefill(single, prompt, n_prompt, lone));
      CHECK(memcmp(l0, lone, bytes) == 0);
      CHECK(ember_session_seq_position(batch, 0) == (int32_t)n_prompt);
      CHECK(ember_session_seq_position(batch, 1) == 1);
      CHECK(ember_session_seq_position(batch, 2) == -1);
      CHECK_OK(ember_session_seq_copy(batch, 0, 1, (int32_t)n_prompt));
      CHECK(ember_session_seq_position(batch, 1) == (int32_t)n_prompt);
      items[1].n_tokens = 2; /* the same sequence twice */
      items[0].seq = 1;
      CHECK_STATUS(ember_session_decode_batch(batch, items, 2), EMBER_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(ember_session_decode_batch(batch, NULL, 1), EMBER_ERR_INVALID_ARGUMENT);
    }
    ember_session_free(batch);
    ember_session_free(single);
    free(l0);
    free(l1);
    free(lone);
  }

  /* ---- a host thread pool shared by two sessions: the logits of a session
   * with a pool of its own, step for step ---- */
  {
    ember_threadpool* pool = NULL;
    ember_session* a = NULL;
    ember_session* b = NULL;
    ember_session* own = NULL;
    const size_t bytes = (size_t)info.vocab_size * sizeof(float);
    float* la = (float*)malloc(bytes);
    float* lb = (float*)malloc(bytes);
    float* lo = (float*)malloc(bytes);
    ember_session_options shared = sopt;
    ember_session_options separate = sopt;
    CHECK_STATUS(ember_threadpool_create(0, &pool), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(pool == NULL);
    CHECK_OK(ember_threadpool_create(2, &pool));
    shared.thread_pool = pool;
    separate.n_threads = 2;
    CHECK_OK(ember_session_create(model, &shared, &a));
    CHECK_OK(ember_session_create(model, &shared, &b));
    CHECK_OK(ember_session_create(model, &separate, &own));
    if (a && b && own && la && lb && lo) {
      int32_t tok = prompt[n_prompt - 1];
      CHECK_OK(ember_session_prefill(a, prompt, n_prompt, la));
      CHECK_OK(ember_session_prefill(b, prompt, n_prompt, lb));
      CHECK_OK(ember_session_prefill(own, prompt, n_prompt, lo));
      CHECK(memcmp(la, lo, bytes) == 0 && memcmp(lb, lo, bytes) == 0);
      for (int step = 0; step < 4; ++step) {
        CHECK_OK(ember_session_decode(a, tok, la));
        CHECK_OK(ember_session_decode(b, tok, lb));
        CHECK_OK(ember_session_decode(own, tok, lo));
        CHECK(memcmp(la, lo, bytes) == 0 && memcmp(lb, lo, bytes) == 0);
        tok = (tok * 7 + 3) % info.vocab_size;
      }
    }
    /* the intended order: sessions first, then the pool */
    ember_session_free(a);
    ember_session_free(b);
    ember_session_free(own);
    ember_threadpool_free(pool);
    ember_threadpool_free(NULL);
    free(la);
    free(lb);
    free(lo);
  }

  /* ---- stop strings, the session's tokens, a saved state, from C ---- */
  {
    collector c;
    memset(&c, 0, sizeof c);
    ember_generate_options sg = gopt;
    /* the first two bytes of the third greedy token's piece onwards: cut there */
    const char* stops[2];
    char stop[3];
    size_t len = 0;
    char piece[64];
    if (n_greedy >= 3) CHECK_OK(ember_token_to_piece(model, greedy[1], greedy[2], piece, sizeof piece, &len));
    if (len >= 2) {
      size_t cut = 0;
      while (cut + 2 <= story_len && memcmp(story + cut, piece, 2) != 0) ++cut;
      stop[0] = piece[0];
      stop[1] = piece[1];
      stop[2] = '\0';
      stops[0] = "never in a story";
      stops[1] = stop;
      sg.stop_strings = stops;
      sg.n_stop_strings = 2;
      sg.max_new_tokens = 50;
      CHECK_OK(ember_session_reset(session));
      CHECK_OK(ember_generate(session, text, &sg, on_token, &c));
      {
        ember_generate_stats stats;
        memset(&stats, 0, sizeof stats);
        stats.struct_size = sizeof stats;
        CHECK_OK(ember_generate_last_stats(session, &stats));
        CHECK(stats.stop_reason == EMBER_STOP_STRING);
        CHECK(c.text_len == cut && memcmp(c.text, story, cut) == 0);
        CHECK(strstr(c.text, stop) == NULL);
      }
    }
    /* the tokens the session holds, then a saved state loaded elsewhere */
    {
      size_t n = 0, size = 0, wrote = 0;
      CHECK_STATUS(ember_session_tokens(session, NULL, 0, &n), ember_session_position(session)
                                                                      ? EMBER_ERR_BUFFER_TOO_SMALL
                                                                      : EMBER_OK);
      CHECK(n == (size_t)ember_session_position(session));
      CHECK_STATUS(ember_session_save_buffer(session, NULL, 0, &size), EMBER_ERR_BUFFER_TOO_SMALL);
      CHECK(size > 128);
      void* state = malloc(size);
      ember_session* other = NULL;
      CHECK_OK(ember_session_create(model, &sopt, &other));
      if (state && other) {
        CHECK_OK(ember_session_save_buffer(session, state, size, &wrote));
        CHECK(wrote == size);
        CHECK_OK(ember_session_load_buffer(other, state, size));
        CHECK(ember_session_position(other) == ember_session_position(session));
        ((unsigned char*)state)[size - 1] ^= 1;
        CHECK_STATUS(ember_session_load_buffer(other, state, size), EMBER_ERR_INTEGRITY);
        CHECK_STATUS(ember_session_load_buffer(other, state, 10), EMBER_ERR_TRUNCATED);
        CHECK_STATUS(ember_session_load_buffer(NULL, state, size), EMBER_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(ember_session_load(other, NULL), EMBER_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(ember_session_save(NULL, "x"), EMBER_ERR_INVALID_ARGUMENT);
        CHECK(ember_session_position(other) == ember_session_position(session));
      }
      ember_session_free(other);
      free(state);
    }
  }
  check_inspection(model);
  check_chat_tools();

  /* ---- the generator: two sequences in one batched session; the same
   * greedy request in both gives the same text as ember_generate alone ---- */
  {
    ember_session_options bopt;
    ember_session_options_default(&bopt);
    bopt.context_length = 128;
    bopt.n_seqs = 2;
    ember_session* batched = NULL;
    ember_generator* gen = NULL;
    ember_generator_options genopt;
    ember_generate_options g2;
    event_log log;
    collector alone;
    memset(&log, 0, sizeof log);
    memset(&alone, 0, sizeof alone);
    ember_generator_options_default(&genopt);
    CHECK(genopt.struct_size == sizeof genopt && genopt.max_step_rows == 0);
    ember_generate_options_default(&g2);
    g2.max_new_tokens = STOP_AFTER - 1; /* on_token stops at STOP_AFTER */
    CHECK(g2.logprobs == 0 && g2.top_logprobs == 0 && g2.logit_bias == NULL && g2.reuse_prefix == 0);
    CHECK_OK(ember_session_create(model, &bopt, &batched));
    CHECK_STATUS(ember_generator_create(NULL, NULL, &gen), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(ember_generator_create(batched, &genopt, &gen));
    if (batched && gen) {
      CHECK_OK(ember_generator_start(gen, 0, text, &g2));
      CHECK_OK(ember_generator_start(gen, 1, text, &g2));
      CHECK_STATUS(ember_generator_start(gen, 2, text, &g2), EMBER_ERR_INVALID_ARGUMENT);
      CHECK(ember_generator_active(gen, -1) == 2);
      while (ember_generator_active(gen, -1) > 0) CHECK_OK(ember_generator_step(gen, on_event, &log));
      CHECK(log.finishes[0] == 1 && log.finishes[1] == 1);
      CHECK(log.finish_reason[0] == EMBER_STOP_MAX_TOKENS);
      CHECK(log.tokens[0] == STOP_AFTER - 1 && log.tokens[1] == STOP_AFTER - 1);
      CHECK(log.text_len[0] == log.text_len[1] && memcmp(log.text[0], log.text[1], log.text_len[0]) == 0);
      ember_session_reset(session);
      CHECK_OK(ember_generate(session, text, &g2, on_token, &alone));
      CHECK(alone.text_len == log.text_len[0] && memcmp(alone.text, log.text[0], alone.text_len) == 0);
      {
        ember_generate_stats st;
        size_t np = 0;
        st.struct_size = sizeof st;
        CHECK_OK(ember_generator_seq_stats(gen, 1, &st));
        CHECK(st.generated_tokens == STOP_AFTER - 1 && st.stop_reason == EMBER_STOP_MAX_TOKENS);
        CHECK_STATUS(ember_generator_seq_prompt(gen, 0, NULL, 0, &np), EMBER_ERR_BUFFER_TOO_SMALL);
        CHECK(np == (size_t)st.prompt_tokens);
      }
      CHECK_STATUS(ember_generator_cancel(gen, 5), EMBER_ERR_INVALID_ARGUMENT);
    }
    ember_generator_free(gen);
    ember_generator_free(NULL);
    ember_session_free(batched);
  }

done:
  ember_sampler_free(sampler);
  ember_session_free(session);
  ember_model_free(model);
  free(logits);
  free(prompt);
  if (g_failures) {
    fprintf(stderr, "c_api: FAILED: %d of %d checks failed\n", g_failures, g_checks);
    return 1;
  }
  printf("c_api: all %d checks passed\n", g_checks);
  return 0;
}

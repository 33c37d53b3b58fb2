// The C API under misuse: NULL handles and out-pointers, bad struct sizes,
// token ids outside the vocabulary, a full context, buffers too small, bad
// sampler options. Every call must return its documented status (never
// crash), leave the session as it was, and set ember_last_error().
// The model is a tiny synthetic one written to a temp file: no test data.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <system_error>
#include <string>
#include <vector>

#include "ember.h"
#include "format/model_file.h"
#include "test_data.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

// The tiny synthetic model, written once per process ("" on failure) and
// removed with its directory at exit.
struct TinyModelFile {
  std::string dir, path;
  TinyModelFile() {
    SynthShape shape;
    if (!synth_shape("tiny", &shape)) return;
    auto model = make_synthetic(shape, DType::F32, 11, "");
    if (!model.is_ok()) return;
    dir = test::temp_dir("c_api");
    if (write_model(model.value()->spec, dir + "/tiny.ember").is_ok()) path = dir + "/tiny.ember";
  }
  ~TinyModelFile() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

const std::string& tiny_model_path() {
  static const TinyModelFile file;
  return file.path;
}

// An open model (and optionally a session) for one test case.
struct Fixture {
  ember_model* model = nullptr;
  ember_model_info info{};

  Fixture() {
    REQUIRE(!tiny_model_path().empty());
    const ember_status s = ember_model_open(tiny_model_path().c_str(), nullptr, &model);
    INFO(ember_last_error());
    REQUIRE(s == EMBER_OK);
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
  }
  ~Fixture() { ember_model_free(model); }

  ember_session* session(int32_t context_length) const {
    ember_session_options o;
    ember_session_options_default(&o);
    o.context_length = context_length;
    ember_session* s = nullptr;
    const ember_status st = ember_session_create(model, &o, &s);
    INFO(ember_last_error());
    REQUIRE(st == EMBER_OK);
    return s;
  }
};

std::string name_of(ember_status s) { return ember_status_string(s); }

}  // namespace
}  // namespace ember

// The call returns `want` and leaves a non-empty last error.
#define EXPECT_STATUS(call, want)                                                  \
  do {                                                                             \
    const ember_status st_ = (call);                                               \
    CHECK(::ember::name_of(st_) == ::ember::name_of(want));                        \
    if (st_ != EMBER_OK) CHECK_MESSAGE(ember_last_error()[0] != '\0', #call);     \
  } while (0)

#define EXPECT_INVALID(call) EXPECT_STATUS(call, EMBER_ERR_INVALID_ARGUMENT)

namespace ember {

TEST_SUITE("c_api") {

TEST_CASE("status strings and version") {
  const struct { ember_status s; const char* name; } all[] = {
      {EMBER_OK, "EMBER_OK"},
      {EMBER_ERR_INVALID_ARGUMENT, "EMBER_ERR_INVALID_ARGUMENT"},
      {EMBER_ERR_TOKEN_OUT_OF_RANGE, "EMBER_ERR_TOKEN_OUT_OF_RANGE"},
      {EMBER_ERR_UNSUPPORTED, "EMBER_ERR_UNSUPPORTED"},
      {EMBER_ERR_BUFFER_TOO_SMALL, "EMBER_ERR_BUFFER_TOO_SMALL"},
      {EMBER_ERR_TOO_COMPLEX, "EMBER_ERR_TOO_COMPLEX"},
      {EMBER_ERR_NO_MEMORY, "EMBER_ERR_NO_MEMORY"},
      {EMBER_ERR_CONTEXT_FULL, "EMBER_ERR_CONTEXT_FULL"},
      {EMBER_ERR_IO, "EMBER_ERR_IO"},
      {EMBER_ERR_FORMAT, "EMBER_ERR_FORMAT"},
      {EMBER_ERR_VERSION, "EMBER_ERR_VERSION"},
      {EMBER_ERR_TRUNCATED, "EMBER_ERR_TRUNCATED"},
      {EMBER_ERR_BAD_TENSOR, "EMBER_ERR_BAD_TENSOR"},
      {EMBER_ERR_BAD_HPARAMS, "EMBER_ERR_BAD_HPARAMS"},
      {EMBER_ERR_BAD_TOKENIZER, "EMBER_ERR_BAD_TOKENIZER"},
      {EMBER_ERR_MISSING_TENSOR, "EMBER_ERR_MISSING_TENSOR"},
      {EMBER_ERR_STATE_MISMATCH, "EMBER_ERR_STATE_MISMATCH"},
      {EMBER_ERR_BACKEND, "EMBER_ERR_BACKEND"},
      {EMBER_ERR_INTERNAL, "EMBER_ERR_INTERNAL"},
      {EMBER_ERR_INTEGRITY, "EMBER_ERR_INTEGRITY"},
      {EMBER_ERR_SIGNATURE, "EMBER_ERR_SIGNATURE"},
  };
  for (const auto& e : all) CHECK(std::string(ember_status_string(e.s)) == e.name);
  // An unknown value still gets a string, never NULL.
  const char* unknown = ember_status_string(static_cast<ember_status>(12345));
  REQUIRE(unknown != nullptr);
  CHECK(std::string(unknown).size() > 0);

  const char* v = ember_version();
  REQUIRE(v != nullptr);
  const std::string version = v;
  CHECK(!version.empty());
  int major = -1, minor = -1, patch = -1;
  CHECK(std::sscanf(v, "%d.%d.%d", &major, &minor, &patch) == 3);
  CHECK(major == EMBER_VERSION_MAJOR);
  CHECK(minor == EMBER_VERSION_MINOR);
  CHECK(patch == EMBER_VERSION_PATCH);
  CHECK(ember_last_error() != nullptr);
}

TEST_CASE("a successful call clears the last error a failed one left") {
  Fixture f;
  ember_session* s = f.session(16);
  int32_t tokens[8] = {1, 2};
  char text[64];
  size_t n = 0;
  ember_model_info info;
  ember_memory_plan plan;
  ember_generate_stats stats;
  int32_t tok = 0;
  // The sampler reads vocab_size logits.
  std::vector<float> logits_dummy(static_cast<size_t>(f.info.vocab_size), 0.0f);
  // Each pair: a call that fails, then one that succeeds; afterwards the last
  // error must be "" (not the earlier failure's message).
  const auto fail_then = [&](const char* what, const std::function<ember_status()>& bad,
                             const std::function<ember_status()>& good) {
    INFO(what);
    CHECK(bad() != EMBER_OK);
    CHECK(ember_last_error()[0] != '\0');
    const ember_status st = good();
    INFO(ember_last_error());
    CHECK(st == EMBER_OK);
    CHECK(std::string(ember_last_error()).empty());
  };
  ember_sampler* sampler = nullptr;
  fail_then("model_get_info", [&] { return ember_model_get_info(nullptr, &info); },
            [&] { info.struct_size = sizeof info; return ember_model_get_info(f.model, &info); });
  fail_then("tokenize", [&] { return ember_tokenize(f.model, "Hello", 5, 1, tokens, 1, &n); },
            [&] { return ember_tokenize(f.model, "Hello", 5, 1, tokens, 8, &n); });
  fail_then("tokenize flags", [&] { return ember_tokenize(f.model, "Hello", 5, 4, tokens, 8, &n); },
            [&] { return ember_tokenize(f.model, "Hello", 5, EMBER_TOKENIZE_ADD_BOS, tokens, 8, &n); });
  {
    // "<s>" spelled in text: the BOS token only when special text is parsed.
    int32_t ids[16];
    size_t plain = 0, special = 0;
    REQUIRE(ember_tokenize(f.model, "<s>Hi", 5, 0, ids, 16, &plain) == EMBER_OK);
    CHECK((plain == 0 || ids[0] != 1));
    REQUIRE(ember_tokenize(f.model, "<s>Hi", 5, EMBER_TOKENIZE_PARSE_SPECIAL, ids, 16, &special) == EMBER_OK);
    REQUIRE(special >= 1);
    CHECK(ids[0] == 1);
    CHECK(special < plain);
  }
  fail_then("detokenize", [&] { return ember_detokenize(f.model, tokens, n, text, 0, &n); },
            [&] { return ember_detokenize(f.model, tokens, 2, text, sizeof text, &n); });
  fail_then("token_to_piece", [&] { return ember_token_to_piece(f.model, -1, -5, text, sizeof text, &n); },
            [&] { return ember_token_to_piece(f.model, -1, tokens[1], text, sizeof text, &n); });
  fail_then("plan", [&] { plan.struct_size = 1; return ember_plan(f.model, nullptr, &plan); },
            [&] { plan.struct_size = sizeof plan; return ember_plan(f.model, nullptr, &plan); });
  fail_then("prefill", [&] { return ember_session_prefill(s, tokens, 0, nullptr); },
            [&] { return ember_session_prefill(s, tokens, 1, nullptr); });
  fail_then("decode", [&] { return ember_session_decode(s, -3, nullptr); },
            [&] { return ember_session_decode(s, tokens[1], nullptr); });
  fail_then("remove", [&] { return ember_session_remove(s, 5, 1); }, [&] { return ember_session_remove(s, 1, 2); });
  fail_then("reset", [&] { return ember_session_reset(nullptr); }, [&] { return ember_session_reset(s); });
  fail_then("generate", [&] { return ember_generate(s, nullptr, nullptr, nullptr, nullptr); },
            [&] {
              ember_generate_options o;
              ember_generate_options_default(&o);
              o.max_new_tokens = 2;
              return ember_generate(s, "hi", &o, nullptr, nullptr);
            });
  fail_then("generate_last_stats", [&] { return ember_generate_last_stats(nullptr, &stats); },
            [&] { stats.struct_size = sizeof stats; return ember_generate_last_stats(s, &stats); });
  fail_then("sampler_create", [&] { return ember_sampler_create(nullptr, nullptr, &sampler); },
            [&] { return ember_sampler_create(f.model, nullptr, &sampler); });
  fail_then("sampler_sample", [&] { return ember_sampler_sample(sampler, nullptr, nullptr, 0, &tok); },
            [&] { return ember_sampler_sample(sampler, logits_dummy.data(), nullptr, 0, &tok); });
  ember_sampler_free(sampler);
  ember_session_free(s);
  ember_session* s2 = nullptr;
  fail_then("session_create", [&] { return ember_session_create(nullptr, nullptr, &s2); },
            [&] { return ember_session_create(f.model, nullptr, &s2); });
  ember_session_free(s2);
  ember_model* m = nullptr;
  fail_then("model_open", [&] { return ember_model_open("/nonexistent/x.ember", nullptr, &m); },
            [&] { return ember_model_open(tiny_model_path().c_str(), nullptr, &m); });
  ember_model_free(m);
}

TEST_CASE("NULL handles and out-pointers are EMBER_ERR_INVALID_ARGUMENT") {
  Fixture f;
  ember_session* s = f.session(16);
  ember_sampler* sampler = nullptr;
  REQUIRE(ember_sampler_create(f.model, nullptr, &sampler) == EMBER_OK);
  int32_t tokens[4] = {1, 5, 6, 7};
  size_t n = 99;
  char text[64];
  std::vector<float> logits(static_cast<size_t>(f.info.vocab_size));

  // defaults on NULL do nothing
  ember_model_options_default(nullptr);
  ember_session_options_default(nullptr);
  ember_generate_options_default(nullptr);

  // models
  ember_model* m = reinterpret_cast<ember_model*>(0x1);
  EXPECT_INVALID(ember_model_open(nullptr, nullptr, &m));
  CHECK(m == nullptr);  // *out is cleared on failure
  EXPECT_INVALID(ember_model_open(tiny_model_path().c_str(), nullptr, nullptr));
  ember_model_info info{};
  info.struct_size = sizeof info;
  EXPECT_INVALID(ember_model_get_info(nullptr, &info));
  EXPECT_INVALID(ember_model_get_info(f.model, nullptr));

  // tokenizer
  EXPECT_INVALID(ember_tokenize(nullptr, "a", 1, 1, tokens, 4, &n));
  EXPECT_INVALID(ember_tokenize(f.model, "a", 1, 1, tokens, 4, nullptr));
  EXPECT_INVALID(ember_tokenize(f.model, nullptr, 3, 1, tokens, 4, &n));
  EXPECT_INVALID(ember_tokenize(f.model, "a", 1, 1, nullptr, 4, &n));
  EXPECT_INVALID(ember_detokenize(nullptr, tokens, 2, text, sizeof text, &n));
  EXPECT_INVALID(ember_detokenize(f.model, tokens, 2, text, sizeof text, nullptr));
  EXPECT_INVALID(ember_detokenize(f.model, nullptr, 2, text, sizeof text, &n));
  EXPECT_INVALID(ember_detokenize(f.model, tokens, 2, nullptr, sizeof text, &n));
  EXPECT_INVALID(ember_token_to_piece(nullptr, -1, 5, text, sizeof text, &n));
  EXPECT_INVALID(ember_token_to_piece(f.model, -1, 5, text, sizeof text, nullptr));
  EXPECT_INVALID(ember_token_to_piece(f.model, -1, 5, nullptr, sizeof text, &n));

  // sessions
  ember_session* out_s = reinterpret_cast<ember_session*>(0x1);
  EXPECT_INVALID(ember_session_create(nullptr, nullptr, &out_s));
  CHECK(out_s == nullptr);
  EXPECT_INVALID(ember_session_create(f.model, nullptr, nullptr));
  EXPECT_INVALID(ember_session_prefill(nullptr, tokens, 2, logits.data()));
  EXPECT_INVALID(ember_session_prefill(s, nullptr, 2, logits.data()));
  EXPECT_INVALID(ember_session_decode(nullptr, 5, logits.data()));
  EXPECT_INVALID(ember_session_reset(nullptr));
  CHECK(ember_session_position(nullptr) == 0);
  CHECK(ember_session_position(s) == 0);
  EXPECT_INVALID(ember_session_remove(nullptr, 0, 0));
  size_t count = 7;
  EXPECT_INVALID(ember_session_tokens(nullptr, nullptr, 0, &count));
  CHECK(count == 0);
  EXPECT_INVALID(ember_session_tokens(s, nullptr, 0, nullptr));
  EXPECT_INVALID(ember_session_save(nullptr, "/tmp/x"));
  EXPECT_INVALID(ember_session_save(s, nullptr));
  EXPECT_INVALID(ember_session_save_buffer(nullptr, nullptr, 0, &count));
  EXPECT_INVALID(ember_session_save_buffer(s, nullptr, 0, nullptr));
  EXPECT_INVALID(ember_session_load(nullptr, "/tmp/x"));
  EXPECT_INVALID(ember_session_load(s, nullptr));
  EXPECT_INVALID(ember_session_load_buffer(nullptr, "x", 1));
  EXPECT_INVALID(ember_session_load_buffer(s, nullptr, 1));
  ember_memory_plan plan{};
  plan.struct_size = sizeof plan;
  EXPECT_INVALID(ember_plan(nullptr, nullptr, &plan));
  EXPECT_INVALID(ember_plan(f.model, nullptr, nullptr));

  // generation and sampling
  EXPECT_INVALID(ember_generate(nullptr, "a", nullptr, nullptr, nullptr));
  EXPECT_INVALID(ember_generate(s, nullptr, nullptr, nullptr, nullptr));
  CHECK(ember_session_position(s) == 0);
  ember_sampler* out_sampler = reinterpret_cast<ember_sampler*>(0x1);
  EXPECT_INVALID(ember_sampler_create(nullptr, nullptr, &out_sampler));
  CHECK(out_sampler == nullptr);
  EXPECT_INVALID(ember_sampler_create(f.model, nullptr, nullptr));
  int32_t tok = -7;
  EXPECT_INVALID(ember_sampler_sample(nullptr, logits.data(), nullptr, 0, &tok));
  EXPECT_INVALID(ember_sampler_sample(sampler, nullptr, nullptr, 0, &tok));
  EXPECT_INVALID(ember_sampler_sample(sampler, logits.data(), nullptr, 0, nullptr));
  EXPECT_INVALID(ember_sampler_sample(sampler, logits.data(), nullptr, 3, &tok));
  CHECK(tok == -7);

  // *_free(NULL) is a no-op
  ember_model_free(nullptr);
  ember_session_free(nullptr);
  ember_sampler_free(nullptr);

  ember_sampler_free(sampler);
  ember_session_free(s);
}

TEST_CASE("an ember_generate_options from before stop strings runs without them") {
  Fixture f;
  ember_session* s = f.session(16);
  ember_generate_options go;
  ember_generate_options_default(&go);
  go.max_new_tokens = 3;
  const char* stops[] = {""};  // would be refused, but lies past the old struct's end
  go.stop_strings = stops;
  go.n_stop_strings = 1;
  go.struct_size = offsetof(ember_generate_options, stop_strings);
  CHECK(ember_generate(s, "hi", &go, nullptr, nullptr) == EMBER_OK);
  go.struct_size = sizeof go;
  EXPECT_INVALID(ember_generate(s, "hi", &go, nullptr, nullptr));
  ember_session_free(s);
}

TEST_CASE("wrong struct_size is rejected") {
  Fixture f;
  const size_t bad_sizes[] = {0, 1, sizeof(size_t) - 1, size_t(1) << 20, SIZE_MAX};
  for (size_t bad : bad_sizes) {
    INFO("struct_size = " << bad);
    ember_model_options mo;
    ember_model_options_default(&mo);
    mo.struct_size = bad;
    ember_model* m = nullptr;
    EXPECT_INVALID(ember_model_open(tiny_model_path().c_str(), &mo, &m));
    CHECK(m == nullptr);

    ember_session_options so;
    ember_session_options_default(&so);
    so.struct_size = bad;
    ember_session* s = nullptr;
    EXPECT_INVALID(ember_session_create(f.model, &so, &s));
    CHECK(s == nullptr);

    ember_generate_options go;
    ember_generate_options_default(&go);
    go.struct_size = bad;
    ember_sampler* sampler = nullptr;
    EXPECT_INVALID(ember_sampler_create(f.model, &go, &sampler));
    CHECK(sampler == nullptr);
    ember_session* live = f.session(16);
    EXPECT_INVALID(ember_generate(live, "hi", &go, nullptr, nullptr));
    CHECK(ember_session_position(live) == 0);
    ember_session_free(live);

    ember_memory_plan plan;
    std::memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    EXPECT_INVALID(ember_plan(f.model, &so, &plan));
    plan.struct_size = bad;
    EXPECT_INVALID(ember_plan(f.model, nullptr, &plan));

    ember_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = bad;
    EXPECT_INVALID(ember_model_get_info(f.model, &info));
  }
  // An older, shorter ember_model_info gets only its own fields.
  struct OldInfo {
    size_t struct_size;
    int32_t vocab_size;
    int32_t dim;
  };
  unsigned char buf[sizeof(ember_model_info)];
  std::memset(buf, 0xEE, sizeof buf);
  OldInfo old{};
  old.struct_size = offsetof(ember_model_info, hidden_dim);
  std::memcpy(buf, &old, sizeof old);
  REQUIRE(ember_model_get_info(f.model, reinterpret_cast<ember_model_info*>(buf)) == EMBER_OK);
  std::memcpy(&old, buf, sizeof old);
  CHECK(old.vocab_size == f.info.vocab_size);
  CHECK(old.dim == f.info.dim);
  for (size_t i = offsetof(ember_model_info, hidden_dim); i < sizeof buf; ++i) CHECK(buf[i] == 0xEE);
}

TEST_CASE("options structs from before the newest fields keep those fields' defaults") {
  Fixture f;
  // The fields after the cut hold garbage the library must not read.
  ember_model_options mo;
  ember_model_options_default(&mo);
  mo.struct_size = offsetof(ember_model_options, guard_mapping);
  mo.guard_mapping = 0x5A5A5A5A;
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(tiny_model_path().c_str(), &mo, &m) == EMBER_OK);
  ember_model_free(m);

  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 16;
  so.struct_size = offsetof(ember_session_options, vulkan_pipeline_cache_dir);
  so.vulkan_pipeline_cache_dir = reinterpret_cast<const char*>(0x1);  // would crash if read
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(f.model, &so, &s) == EMBER_OK);

  std::vector<float> sink(static_cast<size_t>(f.info.vocab_size), -1.0f);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = 2;
  g.struct_size = offsetof(ember_generate_options, prompt_logits);
  g.prompt_logits = sink.data();
  REQUIRE(ember_generate(s, "hi", &g, nullptr, nullptr) == EMBER_OK);
  CHECK(std::count(sink.begin(), sink.end(), -1.0f) == static_cast<std::ptrdiff_t>(sink.size()));  // untouched
  // The newest struct size does write them.
  ember_session_reset(s);
  g.struct_size = sizeof g;
  REQUIRE(ember_generate(s, "hi", &g, nullptr, nullptr) == EMBER_OK);
  CHECK(std::count(sink.begin(), sink.end(), -1.0f) < static_cast<std::ptrdiff_t>(sink.size()));

  // An older ember_generate_stats gets its own fields only.
  unsigned char buf[sizeof(ember_generate_stats)];
  std::memset(buf, 0xEE, sizeof buf);
  ember_generate_stats* st = reinterpret_cast<ember_generate_stats*>(buf);
  st->struct_size = offsetof(ember_generate_stats, prefill_ms);
  REQUIRE(ember_generate_last_stats(s, st) == EMBER_OK);
  CHECK(st->generated_tokens == 2);
  CHECK(st->prompt_tokens > 0);
  for (size_t i = offsetof(ember_generate_stats, prefill_ms); i < sizeof buf; ++i) CHECK(buf[i] == 0xEE);
  ember_session_free(s);
}

TEST_CASE("ember_generate with prompt_tokens: the ids as given, errors named, older structs unaffected") {
  Fixture f;
  ember_session* s = f.session(32);
  // The text path's ids, given as ids, give the same logits and tokens.
  std::vector<int32_t> ids(16);
  size_t n = 0;
  REQUIRE(ember_tokenize(f.model, "hello", 5, 1, ids.data(), ids.size(), &n) == EMBER_OK);
  ids.resize(n);
  REQUIRE(ids.size() >= 2);  // BOS and at least one id of the text
  struct Tokens {
    static int add(void* user, int32_t token, const char*, size_t) {
      static_cast<std::vector<int32_t>*>(user)->push_back(token);
      return 0;
    }
  };
  const size_t vocab = static_cast<size_t>(f.info.vocab_size);
  std::vector<float> text_logits(vocab), id_logits(vocab);
  std::vector<int32_t> text_tokens, id_tokens;
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = 6;
  g.prompt_logits = text_logits.data();
  REQUIRE(ember_generate(s, "hello", &g, &Tokens::add, &text_tokens) == EMBER_OK);
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  g.prompt_logits = id_logits.data();
  g.prompt_tokens = ids.data();
  g.n_prompt_tokens = ids.size();
  g.add_bos = 1;  // ignored: nothing is added to ids
  REQUIRE(ember_generate(s, nullptr, &g, &Tokens::add, &id_tokens) == EMBER_OK);
  CHECK(id_tokens == text_tokens);
  CHECK(std::memcmp(id_logits.data(), text_logits.data(), vocab * sizeof(float)) == 0);
  ember_generate_stats stats;
  stats.struct_size = sizeof stats;
  REQUIRE(ember_generate_last_stats(s, &stats) == EMBER_OK);
  CHECK(stats.prompt_tokens == static_cast<int32_t>(ids.size()));

  // Without BOS the ids are not padded with one: a different context.
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  g.prompt_tokens = ids.data() + 1;
  g.n_prompt_tokens = ids.size() - 1;
  g.max_new_tokens = 0;  // prefill only
  REQUIRE(ember_generate(s, nullptr, &g, &Tokens::add, &id_tokens) == EMBER_OK);
  CHECK(ember_session_position(s) == static_cast<int32_t>(ids.size() - 1));
  CHECK(id_tokens.size() == text_tokens.size());  // nothing generated
  CHECK(std::memcmp(id_logits.data(), text_logits.data(), vocab * sizeof(float)) != 0);

  // Misuse: every case fails before anything runs.
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  g.prompt_tokens = ids.data();
  g.n_prompt_tokens = ids.size();
  EXPECT_INVALID(ember_generate(s, "hello", &g, nullptr, nullptr));  // both
  g.n_prompt_tokens = 0;
  EXPECT_INVALID(ember_generate(s, nullptr, &g, nullptr, nullptr));
  g.prompt_tokens = nullptr;
  g.n_prompt_tokens = 3;
  EXPECT_INVALID(ember_generate(s, nullptr, &g, nullptr, nullptr));
  for (int32_t bad : {-1, f.info.vocab_size, INT32_MAX, INT32_MIN}) {
    INFO("token " << bad);
    const int32_t batch[3] = {ids[0], ids[0], bad};
    g.prompt_tokens = batch;
    g.n_prompt_tokens = 3;
    EXPECT_STATUS(ember_generate(s, nullptr, &g, nullptr, nullptr), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    const std::string msg = ember_last_error();
    CHECK(msg.find("prompt_tokens[2] = " + std::to_string(bad)) != std::string::npos);
  }
  CHECK(ember_session_position(s) == 0);

  // A struct from before prompt_tokens: garbage there is never read.
  ember_generate_options old;
  ember_generate_options_default(&old);
  old.struct_size = offsetof(ember_generate_options, prompt_tokens);
  old.max_new_tokens = 2;
  old.prompt_tokens = reinterpret_cast<const int32_t*>(0x1);  // would crash if read
  old.n_prompt_tokens = 99;
  CHECK(ember_generate(s, "hello", &old, nullptr, nullptr) == EMBER_OK);
  ember_session_free(s);
}

TEST_CASE("token ids out of range leave the session unchanged") {
  Fixture f;
  ember_session* s = f.session(32);
  std::vector<float> logits(static_cast<size_t>(f.info.vocab_size));
  REQUIRE(ember_session_prefill(s, std::vector<int32_t>{1, 40, 41}.data(), 3, logits.data()) == EMBER_OK);
  REQUIRE(ember_session_position(s) == 3);
  for (int32_t bad : {-1, f.info.vocab_size, INT32_MAX, INT32_MIN}) {
    INFO("token " << bad);
    EXPECT_STATUS(ember_session_decode(s, bad, logits.data()), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    CHECK(ember_session_position(s) == 3);
    // a bad id in the middle of a batch: nothing of the batch runs
    const int32_t batch[4] = {40, 41, bad, 42};
    EXPECT_STATUS(ember_session_prefill(s, batch, 4, logits.data()), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    CHECK(ember_session_position(s) == 3);
    std::string msg = ember_last_error();
    CHECK(msg.find(std::to_string(bad)) != std::string::npos);
    // detokenizing it is the same error
    size_t n = 0;
    char text[16];
    EXPECT_STATUS(ember_detokenize(f.model, &bad, 1, text, sizeof text, &n), EMBER_ERR_TOKEN_OUT_OF_RANGE);
    EXPECT_STATUS(ember_token_to_piece(f.model, -1, bad, text, sizeof text, &n), EMBER_ERR_TOKEN_OUT_OF_RANGE);
  }
  // prefill of 0 tokens
  const int32_t one = 40;
  EXPECT_INVALID(ember_session_prefill(s, &one, 0, logits.data()));
  CHECK(ember_session_position(s) == 3);
  // still usable
  CHECK(ember_session_decode(s, 42, logits.data()) == EMBER_OK);
  CHECK(ember_session_position(s) == 4);
  ember_session_free(s);
}

TEST_CASE("session context: negative, 0 = the model's, full") {
  Fixture f;
  ember_session_options o;
  ember_session_options_default(&o);
  ember_session* s = nullptr;
  for (int32_t bad : {-1, INT32_MIN}) {
    o.context_length = bad;
    EXPECT_INVALID(ember_session_create(f.model, &o, &s));
    CHECK(s == nullptr);
  }
  o.context_length = 8;
  for (int32_t bad : {0, -1, 70000}) {
    o.max_batch = bad;
    EXPECT_INVALID(ember_session_create(f.model, &o, &s));
  }
  o.max_batch = 512;
  o.n_threads = -1;
  EXPECT_INVALID(ember_session_create(f.model, &o, &s));

  std::vector<float> logits(static_cast<size_t>(f.info.vocab_size));
  std::vector<int32_t> ids(static_cast<size_t>(f.info.max_context) + 1, 40);

  SUBCASE("0 means the model's context") {
    s = f.session(0);
    REQUIRE(f.info.max_context > 0);
    CHECK(ember_session_prefill(s, ids.data(), static_cast<size_t>(f.info.max_context), logits.data()) == EMBER_OK);
    CHECK(ember_session_position(s) == f.info.max_context);
    EXPECT_STATUS(ember_session_decode(s, 40, logits.data()), EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_session_position(s) == f.info.max_context);
    ember_session_free(s);
  }
  SUBCASE("a context of 8: 9 tokens do not fit, 8 do") {
    s = f.session(8);
    EXPECT_STATUS(ember_session_prefill(s, ids.data(), 9, logits.data()), EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_session_position(s) == 0);
    CHECK(ember_session_prefill(s, ids.data(), 5, logits.data()) == EMBER_OK);
    EXPECT_STATUS(ember_session_prefill(s, ids.data(), 4, logits.data()), EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_session_position(s) == 5);
    CHECK(ember_session_prefill(s, ids.data(), 3, logits.data()) == EMBER_OK);
    CHECK(ember_session_position(s) == 8);
    EXPECT_STATUS(ember_session_decode(s, 40, logits.data()), EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_session_position(s) == 8);
    // usable after: reset and run again, the same logits as a fresh session
    REQUIRE(ember_session_reset(s) == EMBER_OK);
    CHECK(ember_session_position(s) == 0);
    CHECK(ember_session_prefill(s, ids.data(), 8, logits.data()) == EMBER_OK);
    ember_session* fresh = f.session(8);
    std::vector<float> fresh_logits(logits.size());
    CHECK(ember_session_prefill(fresh, ids.data(), 8, fresh_logits.data()) == EMBER_OK);
    CHECK(std::memcmp(logits.data(), fresh_logits.data(), logits.size() * sizeof(float)) == 0);
    ember_session_free(fresh);
    // generation in a full context stops quietly (not an error)
    REQUIRE(ember_session_reset(s) == EMBER_OK);
    ember_generate_options g;
    ember_generate_options_default(&g);
    g.max_new_tokens = 100;
    CHECK(ember_generate(s, "hello", &g, nullptr, nullptr) == EMBER_OK);
    CHECK(ember_session_position(s) <= 8);
    // a prompt longer than the context is CONTEXT_FULL
    REQUIRE(ember_session_reset(s) == EMBER_OK);
    EXPECT_STATUS(ember_generate(s, "a much longer prompt than eight", &g, nullptr, nullptr), EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_session_position(s) == 0);
    ember_session_free(s);
  }
}

TEST_CASE("session options out of range: kv types, backend, arena") {
  Fixture f;
  auto check_bad = [&](const char* field, auto edit) {
    INFO(field);
    ember_session_options o;
    ember_session_options_default(&o);
    o.context_length = 16;
    edit(&o);
    ember_session* s = reinterpret_cast<ember_session*>(0x1);
    EXPECT_INVALID(ember_session_create(f.model, &o, &s));
    CHECK(s == nullptr);
    CHECK(std::string(ember_last_error()).find(field) != std::string::npos);
    ember_memory_plan plan{};
    plan.struct_size = sizeof plan;
    EXPECT_INVALID(ember_plan(f.model, &o, &plan));
  };
  check_bad("kv_type_k", [](ember_session_options* o) { o->kv_type_k = -1; });
  check_bad("kv_type_k", [](ember_session_options* o) { o->kv_type_k = EMBER_KV_Q8_0 + 1; });
  check_bad("kv_type_v", [](ember_session_options* o) { o->kv_type_v = INT32_MAX; });
  check_bad("backend", [](ember_session_options* o) { o->backend = -1; });
  check_bad("backend", [](ember_session_options* o) { o->backend = EMBER_BACKEND_VULKAN + 1; });
  static uint8_t arena[64];
  check_bad("arena", [](ember_session_options* o) {
    o->arena = arena;
    o->arena_size = 0;
  });
  check_bad("context_length", [](ember_session_options* o) { o->context_length = -1; });
  check_bad("max_batch", [](ember_session_options* o) { o->max_batch = 0; });
  check_bad("n_threads", [](ember_session_options* o) { o->n_threads = -1; });
}

TEST_CASE("ember_session_remove outside [0, position] is EMBER_ERR_INVALID_ARGUMENT") {
  Fixture f;
  ember_session* s = f.session(16);
  const int32_t ids[4] = {1, 40, 41, 42};
  REQUIRE(ember_session_prefill(s, ids, 4, nullptr) == EMBER_OK);
  const int32_t bad[][2] = {{-1, 2}, {3, 2}, {0, 5}, {5, 5}, {INT32_MIN, INT32_MAX}, {2, INT32_MAX}};
  for (const auto& r : bad) {
    INFO("remove [" << r[0] << ", " << r[1] << ")");
    EXPECT_INVALID(ember_session_remove(s, r[0], r[1]));
    CHECK(ember_session_position(s) == 4);
  }
  CHECK(ember_session_remove(s, 4, 4) == EMBER_OK);  // empty range
  CHECK(ember_session_position(s) == 4);
  CHECK(ember_session_remove(s, 2, 4) == EMBER_OK);  // the tail: a rewind
  CHECK(ember_session_position(s) == 2);
  CHECK(ember_session_decode(s, 41, nullptr) == EMBER_OK);
  CHECK(ember_session_position(s) == 3);
  ember_session_free(s);
}

TEST_CASE("buffers too small report the size needed") {
  Fixture f;
  const char* text = "Hello, world";
  size_t needed = 0;
  // capacity 0 (NULL buffer) asks for the size
  EXPECT_STATUS(ember_tokenize(f.model, text, std::strlen(text), 1, nullptr, 0, &needed), EMBER_ERR_BUFFER_TOO_SMALL);
  REQUIRE(needed > 2);
  std::vector<int32_t> ids(needed);
  size_t n = 0;
  std::fill(ids.begin(), ids.end(), -7);
  EXPECT_STATUS(ember_tokenize(f.model, text, std::strlen(text), 1, ids.data(), needed - 1, &n),
                EMBER_ERR_BUFFER_TOO_SMALL);
  CHECK(n == needed);
  CHECK(std::string(ember_last_error()).find("capacity") != std::string::npos);
  CHECK(std::count(ids.begin(), ids.end(), -7) == static_cast<std::ptrdiff_t>(needed));  // nothing written
  REQUIRE(ember_tokenize(f.model, text, std::strlen(text), 1, ids.data(), needed, &n) == EMBER_OK);
  CHECK(n == needed);
  CHECK(ids[0] == f.info.bos_id);

  size_t len = 0;
  EXPECT_STATUS(ember_detokenize(f.model, ids.data(), ids.size(), nullptr, 0, &len), EMBER_ERR_BUFFER_TOO_SMALL);
  CHECK(len == std::strlen(text));
  std::string out(len, '\0');
  EXPECT_STATUS(ember_detokenize(f.model, ids.data(), ids.size(), out.data(), len - 1, &n), EMBER_ERR_BUFFER_TOO_SMALL);
  CHECK(n == len);
  CHECK(out == std::string(len, '\0'));  // nothing written
  REQUIRE(ember_detokenize(f.model, ids.data(), ids.size(), out.data(), len, &n) == EMBER_OK);
  CHECK(out == text);

  // a piece: ids are BOS, "▁", "H", ...; "H" prints as one byte
  REQUIRE(ids.size() > 2);
  EXPECT_STATUS(ember_token_to_piece(f.model, ids[1], ids[2], nullptr, 0, &len), EMBER_ERR_BUFFER_TOO_SMALL);
  CHECK(len == 1);
  char piece = 0;
  CHECK(ember_token_to_piece(f.model, ids[1], ids[2], &piece, 1, &len) == EMBER_OK);
  CHECK(piece == 'H');
  // text NULL with length 0 is the empty text
  CHECK(ember_tokenize(f.model, nullptr, 0, 1, ids.data(), ids.size(), &n) == EMBER_OK);
  CHECK(n == 1);
  CHECK(ember_tokenize(f.model, nullptr, 0, 0, nullptr, 0, &n) == EMBER_OK);
  CHECK(n == 0);
  // zero tokens detokenize to nothing
  CHECK(ember_detokenize(f.model, nullptr, 0, nullptr, 0, &n) == EMBER_OK);
  CHECK(n == 0);
}

TEST_CASE("sampler options NaN or negative are EMBER_ERR_INVALID_ARGUMENT") {
  Fixture f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto check_bad = [&](const char* field, auto edit) {
    INFO(field);
    ember_generate_options o;
    ember_generate_options_default(&o);
    edit(&o);
    ember_sampler* sampler = reinterpret_cast<ember_sampler*>(0x1);
    EXPECT_INVALID(ember_sampler_create(f.model, &o, &sampler));
    CHECK(sampler == nullptr);
    CHECK(std::string(ember_last_error()).find(field) != std::string::npos);
    ember_session* s = f.session(16);
    EXPECT_INVALID(ember_generate(s, "hi", &o, nullptr, nullptr));
    CHECK(ember_session_position(s) == 0);
    ember_session_free(s);
  };
  check_bad("temperature", [&](ember_generate_options* o) { o->temperature = nan; });
  check_bad("temperature", [&](ember_generate_options* o) { o->temperature = -0.5f; });
  check_bad("temperature", [&](ember_generate_options* o) { o->temperature = inf; });
  check_bad("top_k", [&](ember_generate_options* o) { o->top_k = -1; });
  check_bad("top_p", [&](ember_generate_options* o) { o->top_p = nan; });
  check_bad("top_p", [&](ember_generate_options* o) { o->top_p = -0.1f; });
  check_bad("top_p", [&](ember_generate_options* o) { o->top_p = 0.0f; });
  check_bad("top_p", [&](ember_generate_options* o) { o->top_p = 1.5f; });
  check_bad("min_p", [&](ember_generate_options* o) { o->min_p = nan; });
  check_bad("min_p", [&](ember_generate_options* o) { o->min_p = -0.1f; });
  check_bad("repeat_penalty", [&](ember_generate_options* o) { o->repeat_penalty = nan; });
  check_bad("repeat_penalty", [&](ember_generate_options* o) { o->repeat_penalty = -1.0f; });
  check_bad("repeat_penalty", [&](ember_generate_options* o) { o->repeat_penalty = 0.0f; });
  check_bad("repeat_last_n", [&](ember_generate_options* o) { o->repeat_last_n = -1; });

  // generate-only: max_new_tokens negative; an empty prompt without BOS
  ember_session* s = f.session(16);
  ember_generate_options o;
  ember_generate_options_default(&o);
  o.max_new_tokens = -1;
  EXPECT_INVALID(ember_generate(s, "hi", &o, nullptr, nullptr));
  ember_generate_options_default(&o);
  o.add_bos = 0;
  EXPECT_INVALID(ember_generate(s, "", &o, nullptr, nullptr));
  CHECK(ember_session_position(s) == 0);
  // max_new_tokens 0 only prefills the prompt
  ember_generate_options_default(&o);
  o.max_new_tokens = 0;
  CHECK(ember_generate(s, "hi", &o, nullptr, nullptr) == EMBER_OK);
  CHECK(ember_session_position(s) > 0);
  ember_session_free(s);
}

}  // TEST_SUITE

}  // namespace ember

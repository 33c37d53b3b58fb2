// Speculative decoding by prompt lookup (issue 42): a generation with drafts
// verified in its decode steps must release exactly what the same request
// releases without them — tokens, text, finish reason, log-probabilities,
// what the sequence holds afterwards — greedy and sampled (the same seed
// draws the same numbers), with stop strings, limits, grammars, batched
// sequences, sliding-window rings, every synthetic family, and on Vulkan;
// and the drafts must actually be used where the text repeats.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/quantize.h"
#include "tools/convert/synthetic.h"

namespace {

struct Model {
  ember_model* m = nullptr;
  ember_model_info info{};
  explicit Model(const std::string& path) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  }
  ~Model() { ember_model_free(m); }
};

struct SessionShape {
  int32_t context = 128;
  int32_t max_batch = 512;
  int32_t n_seqs = 1;
  int32_t max_draft = 0;
  int32_t backend = EMBER_BACKEND_CPU;
};

ember_session* make_session(const Model& model, const SessionShape& shape) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = shape.context;
  so.max_batch = shape.max_batch;
  so.n_seqs = shape.n_seqs;
  so.max_draft = shape.max_draft;
  so.n_threads = 2;
  so.backend = shape.backend;
  so.vulkan_pipeline_cache_dir = "";
  ember_session* s = nullptr;
  const ember_status st = ember_session_create(model.m, &so, &s);
  REQUIRE_MESSAGE(st == EMBER_OK, ember_last_error());
  return s;
}

// What one generation released, and what its sequence holds after it.
struct Out {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<float> logprobs;
  int32_t finish = EMBER_STOP_NONE;
  std::vector<int32_t> held;  // the sequence's tokens afterwards
  ember_generate_stats stats{};
};

int collect(void* user, const ember_generator_event* e) {
  auto* outs = static_cast<std::vector<Out>*>(user);
  Out& o = (*outs)[static_cast<size_t>(e->seq)];
  o.text.append(e->text, e->text_len);
  if (e->finish != EMBER_STOP_NONE) {
    o.finish = e->finish;
    return 0;
  }
  o.tokens.push_back(e->token);
  o.logprobs.push_back(e->logprob);
  return 0;
}

struct Request {
  std::string prompt;
  ember_generate_options o;
  std::vector<std::string> stops;
  std::vector<const char*> stop_ptrs;
  Request(std::string p, int32_t max_new) : prompt(std::move(p)) {
    ember_generate_options_default(&o);
    o.max_new_tokens = max_new;
  }
  // The options, with prompt lookup of up to k drafts (0: none).
  ember_generate_options with(int32_t k, int32_t ngram = 3) {
    stop_ptrs.clear();
    for (const auto& s : stops) stop_ptrs.push_back(s.c_str());
    ember_generate_options g = o;
    g.stop_strings = stop_ptrs.data();
    g.n_stop_strings = stop_ptrs.size();
    g.lookup = k > 0 ? 1 : 0;
    g.draft_max = k;
    g.lookup_ngram = ngram;
    return g;
  }
};

std::vector<int32_t> held_tokens(ember_session* s, int32_t seq) {
  std::vector<int32_t> t(4096);
  size_t n = 0;
  REQUIRE(ember_session_seq_tokens(s, seq, t.data(), t.size(), &n) == EMBER_OK);
  t.resize(n);
  return t;
}

// `reqs` run together by one generator over a session of `shape` (one
// sequence each), each with up to k drafts: by prompt lookup, or by the
// draft session when one is given.
std::vector<Out> run(const Model& model, SessionShape shape, std::vector<Request>& reqs, int32_t k,
                     int32_t ngram = 3, ember_session* draft = nullptr) {
  shape.n_seqs = static_cast<int32_t>(reqs.size());
  shape.max_draft = k;
  ember_session* s = make_session(model, shape);
  ember_generator* gen = nullptr;
  REQUIRE(ember_generator_create(s, nullptr, &gen) == EMBER_OK);
  std::vector<Out> outs(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    ember_generate_options g = reqs[i].with(k, ngram);
    if (draft) {
      g.lookup = 0;
      g.draft_session = draft;
    }
    REQUIRE_MESSAGE(ember_generator_start(gen, static_cast<int32_t>(i), reqs[i].prompt.c_str(), &g) == EMBER_OK,
                    std::string(ember_last_error()));
  }
  for (int step = 0; step < 10000 && ember_generator_active(gen, -1) > 0; ++step) {
    REQUIRE(ember_generator_step(gen, collect, &outs) == EMBER_OK);
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    outs[i].stats.struct_size = sizeof outs[i].stats;
    REQUIRE(ember_generator_seq_stats(gen, static_cast<int32_t>(i), &outs[i].stats) == EMBER_OK);
    outs[i].held = held_tokens(s, static_cast<int32_t>(i));
  }
  ember_generator_free(gen);
  ember_session_free(s);
  return outs;
}

void check_same(const Out& got, const Out& want) {
  CHECK(got.tokens == want.tokens);
  CHECK(got.text == want.text);
  CHECK(got.finish == want.finish);
  CHECK(got.held == want.held);
  CHECK(got.stats.sampled_tokens == want.stats.sampled_tokens);
  CHECK(got.stats.last_token == want.stats.last_token);
  REQUIRE(got.logprobs.size() == want.logprobs.size());
  for (size_t i = 0; i < got.logprobs.size(); ++i) {
    if (std::isnan(want.logprobs[i])) {
      CHECK(std::isnan(got.logprobs[i]));
    } else {
      CHECK(got.logprobs[i] == want.logprobs[i]);
    }
  }
  CHECK(got.stats.accepted_tokens <= got.stats.drafted_tokens);
  CHECK(want.stats.drafted_tokens == 0);
}

// The greedy continuation of "Once upon a time" (stories260K), and a prompt
// that already holds it: the model copies from it.
std::string copy_prompt(const Model& model) {
  std::vector<Request> one;
  one.emplace_back("Once upon a time", 48);
  const std::vector<Out> first = run(model, SessionShape{}, one, 0);
  return "Once upon a time" + first[0].text + "\nOnce upon a time";
}

std::vector<Request> stories_requests(const std::string& copy) {
  std::vector<Request> r;
  r.emplace_back("Once upon a time", 60);
  r.emplace_back(copy, 40);
  r.emplace_back("Lily went to the", 50);
  r.back().o.temperature = 0.8f;
  r.back().o.top_p = 0.9f;
  r.back().o.seed = 7;
  r.emplace_back("The dog ran and ran and ran until it was tired and then it", 50);
  r.back().stops = {"park", "."};
  r.emplace_back("One day", 45);
  r.back().o.temperature = 1.1f;
  r.back().o.min_p = 0.05f;
  r.back().o.repeat_penalty = 1.3f;
  r.back().o.frequency_penalty = 0.3f;
  r.back().o.seed = 3;
  r.emplace_back(copy, 30);
  r.back().o.logprobs = 1;
  r.back().o.temperature = 0.7f;
  r.back().o.seed = 11;
  return r;
}

}  // namespace

TEST_CASE("lookup: greedy and sampled generations are unchanged, token for token (stories260K)") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const std::string copy = copy_prompt(model);
  std::vector<Request> reqs = stories_requests(copy);
  // Each alone without drafts: the reference.
  std::vector<Out> want;
  for (auto& r : reqs) {
    std::vector<Request> one{r};
    want.push_back(run(model, SessionShape{}, one, 0)[0]);
  }
  for (int32_t k : {1, 4, 8}) {
    for (int32_t ngram : {1, 3}) {
      CAPTURE(k);
      CAPTURE(ngram);
      // Each alone (one sequence: the verification rows are one item's).
      int32_t drafted = 0, accepted = 0;
      for (size_t i = 0; i < reqs.size(); ++i) {
        CAPTURE(i);
        std::vector<Request> one{reqs[i]};
        const Out got = run(model, SessionShape{}, one, k, ngram)[0];
        check_same(got, want[i]);
        drafted += got.stats.drafted_tokens;
        accepted += got.stats.accepted_tokens;
        if (i == 1 && ngram == 3) {
          // The copying prompt (the model follows its own text for a
          // sentence, then wanders), matching 3-token suffixes: many drafts
          // are kept, and steps yield well over one token each.
          CHECK(got.stats.accepted_tokens * 5 >= got.stats.drafted_tokens * 2);
          CHECK((got.stats.sampled_tokens - 1) * 10 > got.stats.decode_steps * 14);
        }
      }
      CHECK(drafted > 0);
      CHECK(accepted > 0);
      // All together in one batched session.
      const std::vector<Out> together = run(model, SessionShape{}, reqs, k, ngram);
      for (size_t i = 0; i < reqs.size(); ++i) {
        CAPTURE(i);
        check_same(together[i], want[i]);
      }
    }
  }
}

TEST_CASE("lookup: the limits hold exactly, and a grammar constrains the same way") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const std::string copy = copy_prompt(model);
  // max_new_tokens of 1, 2, 3 and 7 against drafts of 8: never more tokens.
  for (int32_t n : {1, 2, 3, 7}) {
    CAPTURE(n);
    std::vector<Request> r;
    r.emplace_back(copy, n);
    const Out want = run(model, SessionShape{}, r, 0)[0];
    const Out got = run(model, SessionShape{}, r, 8)[0];
    check_same(got, want);
    CHECK(static_cast<int32_t>(got.tokens.size()) <= n);
  }
  // The context's last positions: drafts never run past it.
  {
    std::vector<Request> r;
    r.emplace_back(copy, 1000);
    SessionShape shape;
    shape.context = 100;
    const Out want = run(model, shape, r, 0)[0];
    const Out got = run(model, shape, r, 6)[0];
    CHECK(want.finish == EMBER_STOP_CONTEXT_FULL);
    check_same(got, want);
  }
  // A grammar: lower-case words and spaces, then a period.
  ember_grammar* grammar = nullptr;
  REQUIRE_MESSAGE(ember_grammar_create(model.m, "root ::= [a-z ]+ \".\"", nullptr, &grammar) == EMBER_OK,
                  ember_last_error());
  for (float temp : {0.0f, 0.9f}) {
    CAPTURE(temp);
    std::vector<Request> r;
    r.emplace_back(copy, 40);
    r.back().o.grammar = grammar;
    r.back().o.temperature = temp;
    r.back().o.seed = 5;
    const Out want = run(model, SessionShape{}, r, 0)[0];
    const Out got = run(model, SessionShape{}, r, 4)[0];
    check_same(got, want);
  }
  ember_grammar_free(grammar);
}

TEST_CASE("lookup: every synthetic family, rings and quantized weights give the same greedy text") {
  const std::string dir = ember::test::temp_dir("speculative-families");
  for (const char* arch : {"llama", "llama3", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"}) {
    for (ember::DType t : {ember::DType::F32, ember::DType::Q8_0}) {
      const std::string type = ember::dtype_name(t);
      CAPTURE(arch);
      CAPTURE(type);
      ember::SynthShape shape;
      REQUIRE(ember::synth_shape("tiny", &shape));
      shape.arch = arch;
      auto m = ember::make_synthetic(shape, t, 17, "");
      REQUIRE_MESSAGE(m.is_ok(), m.status().message());
      const std::string path = dir + "/" + arch + "-" + type + ".ember";
      REQUIRE(ember::write_model(m.value()->spec, path).is_ok());
      Model model(path);
      // A prompt that repeats itself, so that lookup finds drafts; batches
      // of 6 rows (gemma: rings of window 8 + 6), drafts of up to 5.
      std::vector<Request> r;
      r.emplace_back("abc abd abc abd abc abd abc", 40);
      r.emplace_back("the cat the cat the", 40);
      r.back().o.temperature = 0.9f;
      r.back().o.seed = 2;
      SessionShape sh;
      sh.context = 96;
      sh.max_batch = 6;
      const std::vector<Out> want = run(model, sh, r, 0);
      const std::vector<Out> got = run(model, sh, r, 5);
      int32_t drafted = 0;
      for (size_t i = 0; i < r.size(); ++i) {
        CAPTURE(i);
        check_same(got[i], want[i]);
        drafted += got[i].stats.drafted_tokens;
      }
      CHECK(drafted > 0);
    }
  }
}

#if EMBER_VULKAN  // a build without the Vulkan backend (the aarch64 cross build) has no such device
TEST_CASE("lookup: on Vulkan the same text as without") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES") && std::filesystem::exists(lvp)) setenv("VK_ICD_FILENAMES", lvp, 1);
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  Model model(path);
  SessionShape shape;
  shape.backend = EMBER_BACKEND_VULKAN;
  {
    ember_session_options so;
    ember_session_options_default(&so);
    so.backend = EMBER_BACKEND_VULKAN;
    so.context_length = 128;
    so.vulkan_pipeline_cache_dir = "";
    ember_session* probe = nullptr;
    if (ember_session_create(model.m, &so, &probe) != EMBER_OK) {
      if (ember::test::test_data_required()) FAIL("no Vulkan device: " << ember_last_error());
      MESSAGE("skipped: no Vulkan device: " << ember_last_error());
      return;
    }
    ember_session_free(probe);
  }
  std::vector<Request> reqs;
  reqs.emplace_back("Once upon a time", 40);
  reqs.emplace_back(copy_prompt(model), 30);
  const std::vector<Out> want = run(model, shape, reqs, 0);
  const std::vector<Out> got = run(model, shape, reqs, 4);
  for (size_t i = 0; i < reqs.size(); ++i) {
    CAPTURE(i);
    check_same(got[i], want[i]);
  }
  CHECK(got[1].stats.accepted_tokens > 0);
}
#endif

TEST_CASE("lookup: bad settings are refused naming the setting") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  // The session: max_draft within 0..16 and below max_batch.
  for (const std::pair<int32_t, int32_t>& shape : {std::pair{-1, 512}, std::pair{17, 512}, std::pair{4, 4}}) {
    const int32_t draft = shape.first, batch = shape.second;
    CAPTURE(draft);
    ember_session_options so;
    ember_session_options_default(&so);
    so.max_draft = draft;
    so.max_batch = batch;
    so.context_length = 64;
    ember_session* s = nullptr;
    CHECK(ember_session_create(model.m, &so, &s) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(s == nullptr);
    CHECK(std::string(ember_last_error()).find("max_draft") != std::string::npos);
  }
  // The generation: lookup needs a session with room for the drafts.
  SessionShape shape;
  shape.max_draft = 2;
  ember_session* s = make_session(model, shape);
  struct Bad {
    int lookup;
    int32_t draft_max, ngram;
    const char* names;
  };
  for (const Bad& b : {Bad{1, 3, 3, "max_draft"}, Bad{1, -1, 3, "draft_max"}, Bad{1, 2, 0, "ngram"},
                       Bad{1, 2, 17, "ngram"}, Bad{2, 2, 3, "lookup"}}) {
    CAPTURE(b.names);
    ember_generate_options g;
    ember_generate_options_default(&g);
    g.lookup = b.lookup;
    g.draft_max = b.draft_max;
    g.lookup_ngram = b.ngram;
    CHECK(ember_generate(s, "Once", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(std::string(ember_last_error()).find(b.names) != std::string::npos);
    CHECK(ember_session_position(s) == 0);
  }
  ember_session_free(s);
  // Without max_draft in the session at all.
  ember_session* plain = make_session(model, SessionShape{});
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.lookup = 1;
  CHECK(ember_generate(plain, "Once", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("max_draft") != std::string::npos);
  ember_session_free(plain);
}

TEST_CASE("draft model: the same text as without, greedy and sampled, alone and batched (stories260K)") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  // Drafts by a Q8_0 copy (another file: its vocabulary compared piece by
  // piece) and by the same model object.
  Model other(ember::test::stories_q8_0_model());
  const std::string copy = copy_prompt(model);
  std::vector<Request> reqs = stories_requests(copy);
  std::vector<Out> want;
  for (auto& r : reqs) {
    std::vector<Request> one{r};
    want.push_back(run(model, SessionShape{}, one, 0)[0]);
  }
  for (const Model* dm : {&other, &model}) {
    SessionShape dshape;
    dshape.n_seqs = static_cast<int32_t>(reqs.size());
    ember_session* draft = make_session(*dm, dshape);
    for (int32_t k : {1, 4}) {
      CAPTURE(k);
      int32_t drafted = 0, accepted = 0;
      for (size_t i = 0; i < reqs.size(); ++i) {
        CAPTURE(i);
        std::vector<Request> one{reqs[i]};
        const Out got = run(model, SessionShape{}, one, k, 3, draft)[0];
        check_same(got, want[i]);
        drafted += got.stats.drafted_tokens;
        accepted += got.stats.accepted_tokens;
        // Greedy with the same weights: every draft is the target's choice.
        if (dm == &model && reqs[i].o.temperature == 0.0f) {
          CHECK(got.stats.accepted_tokens == got.stats.drafted_tokens);
        }
      }
      CHECK(drafted > 0);
      CHECK(accepted > 0);
      const std::vector<Out> together = run(model, SessionShape{}, reqs, k, 3, draft);
      for (size_t i = 0; i < reqs.size(); ++i) {
        CAPTURE(i);
        check_same(together[i], want[i]);
      }
    }
    ember_session_free(draft);
  }
}

TEST_CASE("draft model: a draft that is never right costs little, drafting backs off, the text is the same") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  // The draft: stories260K with its classifier (tied to the embeddings in
  // the llama2.c file) zeroed, so every logit is 0 and it always proposes
  // token 0 (<unk>), which greedy stories text never holds: every draft is
  // rejected.
  auto imported = ember::import_llama2c(ember::test::test_data("models/stories260K.bin"),
                                        ember::test::test_data("models/tok512.bin"));
  REQUIRE(imported.is_ok());
  ember::ModelSpec spec = imported.value()->spec;
  std::vector<uint8_t> zeros;
  bool zeroed = false;
  for (ember::TensorSource& t : spec.tensors) {
    if (t.name != "output.weight" && t.name != "token_embd.weight") continue;
    zeros.assign(t.size, 0);
    t.data = zeros.data();
    zeroed = true;
  }
  REQUIRE(zeroed);
  const std::string file = ember::test::temp_dir("speculative-draft") + "/stories-never-right.ember";
  REQUIRE(ember::write_model(spec, file).is_ok());
  Model wrong(file);
  ember_session* draft = make_session(wrong, SessionShape{});
  std::vector<Request> reqs{Request("Lily had a", 60)};
  const Out want = run(model, SessionShape{}, reqs, 0)[0];
  const Out got = run(model, SessionShape{}, reqs, 4, 3, draft)[0];
  check_same(got, want);
  REQUIRE(got.stats.sampled_tokens >= 50);
  CHECK(got.stats.accepted_tokens == 0);
  CHECK(got.stats.drafted_tokens > 0);
  // Two misses, then pauses of 1, 2, 4, 8, 16 steps: about a dozen drafts
  // over 60 tokens (without the back-off, one or more every step).
  CHECK(got.stats.drafted_tokens <= 16);
  ember_session_free(draft);
}

TEST_CASE("draft model: another vocabulary, a short context, too few sequences are refused by name") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  auto m = ember::make_synthetic(shape, ember::DType::F32, 3, "");
  REQUIRE(m.is_ok());
  const std::string synth = ember::test::temp_dir("speculative-draft") + "/builtin-vocab.ember";
  REQUIRE(ember::write_model(m.value()->spec, synth).is_ok());
  Model foreign(synth);
  SessionShape target;
  target.max_draft = 4;
  ember_session* s = make_session(model, target);
  auto refused = [&](ember_session* draft, int lookup, const char* names) {
    CAPTURE(names);
    ember_generate_options g;
    ember_generate_options_default(&g);
    g.draft_session = draft;
    g.lookup = lookup;
    CHECK(ember_generate(s, "Once", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(std::string(ember_last_error()).find(names) != std::string::npos);
    CHECK(ember_session_position(s) == 0);
  };
  ember_session* d1 = make_session(foreign, SessionShape{});
  refused(d1, 0, "vocabulary");
  SessionShape short_ctx;
  short_ctx.context = 64;
  ember_session* d2 = make_session(model, short_ctx);
  refused(d2, 0, "context");
  SessionShape ok;
  ember_session* d3 = make_session(model, ok);
  refused(d3, 1, "lookup and draft_session");
  refused(s, 0, "target session");
  // Drafting for sequence 1 needs a draft session of two sequences.
  SessionShape two;
  two.n_seqs = 2;
  two.max_draft = 4;
  ember_session* s2 = make_session(model, two);
  ember_generator* gen = nullptr;
  REQUIRE(ember_generator_create(s2, nullptr, &gen) == EMBER_OK);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.draft_session = d3;
  CHECK(ember_generator_start(gen, 1, "Once", &g) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("sequence") != std::string::npos);
  CHECK(ember_generator_start(gen, 0, "Once", &g) == EMBER_OK);
  ember_generator_free(gen);
  // The same checks up front, for every sequence of the target.
  auto checked = [&](const ember_session* target, const ember_session* draft, const char* names) {
    CAPTURE(names);
    CHECK(ember_session_check_draft(target, draft) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(std::string(ember_last_error()).find(names) != std::string::npos);
  };
  checked(s, d1, "vocabulary");
  checked(s, d2, "context");
  checked(s2, d3, "sequence");
  checked(s, s, "target session");
  checked(nullptr, d3, "target");
  checked(s, nullptr, "draft");
  CHECK(ember_session_check_draft(s, d3) == EMBER_OK);
  ember_session_free(s2);
  ember_session_free(d3);
  ember_session_free(d2);
  ember_session_free(d1);
  ember_session_free(s);
}

TEST_CASE("draft model: a later turn keeps the draft sequence in step") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  SessionShape shape;
  shape.max_draft = 3;
  ember_session* plain = make_session(model, shape);
  ember_session* spec = make_session(model, shape);
  ember_session* draft = make_session(model, SessionShape{});
  for (const char* turn : {"Once upon a time", " The dog", " Then"}) {
    CAPTURE(turn);
    ember_generate_options g;
    ember_generate_options_default(&g);
    g.max_new_tokens = 24;
    g.add_bos = ember_session_position(plain) == 0 ? -1 : 0;
    std::string a, b;
    auto cb = [](void* u, int32_t, const char* piece, size_t len) {
      static_cast<std::string*>(u)->append(piece, len);
      return 0;
    };
    REQUIRE(ember_generate(plain, turn, &g, cb, &a) == EMBER_OK);
    g.draft_session = draft;
    REQUIRE(ember_generate(spec, turn, &g, cb, &b) == EMBER_OK);
    CHECK(a == b);
    CHECK(held_tokens(plain, 0) == held_tokens(spec, 0));
    ember_generate_stats st;
    st.struct_size = sizeof st;
    REQUIRE(ember_generate_last_stats(spec, &st) == EMBER_OK);
    CHECK(st.accepted_tokens == st.drafted_tokens);
    CHECK(st.drafted_tokens > 0);
  }
  ember_session_free(draft);
  ember_session_free(spec);
  ember_session_free(plain);
}

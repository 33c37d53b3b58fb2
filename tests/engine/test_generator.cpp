// The generator (ember_generator_*, runtime/engine/generator.h): several
// sequences of one session advanced by batched steps must each give what
// the same request gives alone through ember_generate — tokens and text,
// whatever the others do, when they join, how prompts are cut into steps —
// and each rule of the per-token loop (limits, end tokens, stop strings,
// whole UTF-8 characters, logit bias, log-probabilities, cancel, prefix
// reuse) must hold in its events.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
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

ember_session* make_session(const Model& model, int32_t n_seqs, int32_t context, int32_t max_batch = 512) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_seqs = n_seqs;
  so.context_length = context;
  so.max_batch = max_batch;
  so.n_threads = 2;
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(model.m, &so, &s) == EMBER_OK, ember_last_error());
  return s;
}

// One request: a prompt and its options (the arrays the options point at
// live here).
struct Request {
  std::string prompt;
  ember_generate_options o;
  std::vector<std::string> stops;
  std::vector<const char*> stop_ptrs;
  std::vector<ember_logit_bias> bias;
  Request(std::string p, int32_t max_new) : prompt(std::move(p)) {
    ember_generate_options_default(&o);
    o.max_new_tokens = max_new;
  }
  const ember_generate_options* options() {
    stop_ptrs.clear();
    for (const auto& s : stops) stop_ptrs.push_back(s.c_str());
    o.stop_strings = stop_ptrs.data();
    o.n_stop_strings = stop_ptrs.size();
    o.logit_bias = bias.data();
    o.n_logit_bias = bias.size();
    return &o;
  }
};

// What one sequence released.
struct Out {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<std::string> pieces;       // each token event's text
  std::vector<float> logprobs;
  std::vector<std::vector<ember_token_logprob>> tops;
  int32_t finish = EMBER_STOP_NONE;
  int finish_events = 0;
  ember_status status = EMBER_OK;
  int stop_after = -1;  // the callback asks to stop after this many tokens
};

int collect(void* user, const ember_generator_event* e) {
  auto* outs = static_cast<std::vector<Out>*>(user);
  Out& o = (*outs)[static_cast<size_t>(e->seq)];
  o.text.append(e->text, e->text_len);
  if (e->finish != EMBER_STOP_NONE) {
    CHECK(e->token == -1);
    o.finish = e->finish;
    o.status = e->status;
    ++o.finish_events;
    return 0;
  }
  CHECK(o.finish_events == 0);  // nothing after the last event
  o.tokens.push_back(e->token);
  o.pieces.emplace_back(e->text, e->text_len);
  o.logprobs.push_back(e->logprob);
  o.tops.emplace_back(e->top_logprobs, e->top_logprobs + e->n_top_logprobs);
  return o.stop_after >= 0 && static_cast<int>(o.tokens.size()) >= o.stop_after;
}

// ember_generate alone in a one-sequence session: the reference.
Out alone(const Model& model, Request& r, int32_t context) {
  ember_session* s = make_session(model, 1, context);
  Out out;
  auto cb = [](void* user, int32_t token, const char* piece, size_t len) {
    Out* o = static_cast<Out*>(user);
    o->tokens.push_back(token);
    o->text.append(piece, len);
    return 0;
  };
  REQUIRE_MESSAGE(ember_generate(s, r.prompt.c_str(), r.options(), cb, &out) == EMBER_OK, ember_last_error());
  ember_generate_stats st;
  st.struct_size = sizeof st;
  REQUIRE(ember_generate_last_stats(s, &st) == EMBER_OK);
  out.finish = st.stop_reason;
  ember_session_free(s);
  return out;
}

// Steps until no sequence is active; at step k starts the requests whose
// join step is k. Returns each sequence's output.
std::vector<Out> run_batched(ember_generator* gen, std::vector<Request>& reqs, const std::vector<int>& join) {
  std::vector<Out> outs(reqs.size());
  size_t started = 0;
  for (int step = 0; step < 10000; ++step) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (join[i] == step) {
        REQUIRE_MESSAGE(ember_generator_start(gen, static_cast<int32_t>(i), reqs[i].prompt.c_str(), reqs[i].options()) ==
                            EMBER_OK,
                        ember_last_error());
        ++started;
      }
    }
    if (started == reqs.size() && ember_generator_active(gen, -1) == 0) break;
    REQUIRE(ember_generator_step(gen, collect, &outs) == EMBER_OK);
  }
  return outs;
}

std::vector<Request> stories_requests() {
  std::vector<Request> r;
  r.emplace_back("Once upon a time", 40);
  r.emplace_back("Lily went to the", 30);
  r.back().o.temperature = 0.8f;
  r.back().o.top_p = 0.9f;
  r.back().o.seed = 7;
  r.emplace_back("The dog ran and ran and ran until it was tired and then it", 50);
  r.back().stops = {"park", "."};
  r.emplace_back("One day", 25);
  r.back().o.temperature = 1.1f;
  r.back().o.min_p = 0.05f;
  r.back().o.repeat_penalty = 1.3f;
  r.back().o.presence_penalty = 0.5f;
  r.back().o.frequency_penalty = 0.3f;
  r.back().o.seed = 3;
  return r;
}

// False when `s` ends inside a UTF-8 character: a lead byte with fewer
// continuation bytes after it than it announces.
bool ends_whole(const std::string& s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;
    if (c >= 0xC0) return back >= (c >= 0xF0 ? 4u : c >= 0xE0 ? 3u : 2u);
    return true;
  }
  return true;
}

}  // namespace

TEST_CASE("generator: batched sequences give what each gives alone through ember_generate (stories260K)") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const int32_t context = 128;
  std::vector<Request> reqs = stories_requests();
  std::vector<Out> want;
  for (auto& r : reqs) want.push_back(alone(model, r, context));
  // Everyone at once, then staggered joins; steps of at most 3 rows cut the
  // prompts into chunks between the others' decode rows.
  for (int32_t rows : {0, 3}) {
    for (const std::vector<int>& join : {std::vector<int>{0, 0, 0, 0}, std::vector<int>{0, 2, 5, 9}}) {
      ember_session* s = make_session(model, 6, context);
      ember_generator_options go;
      ember_generator_options_default(&go);
      go.max_step_rows = rows;
      ember_generator* gen = nullptr;
      REQUIRE(ember_generator_create(s, &go, &gen) == EMBER_OK);
      std::vector<Out> got = run_batched(gen, reqs, join);
      for (size_t i = 0; i < reqs.size(); ++i) {
        INFO("request ", i, " joining at step ", join[i], ", rows ", rows);
        CHECK(got[i].tokens == want[i].tokens);
        CHECK(got[i].text == want[i].text);
        CHECK(got[i].finish == want[i].finish);
        CHECK(got[i].finish_events == 1);
        ember_generate_stats st;
        st.struct_size = sizeof st;
        REQUIRE(ember_generator_seq_stats(gen, static_cast<int32_t>(i), &st) == EMBER_OK);
        CHECK(st.generated_tokens == static_cast<int32_t>(got[i].tokens.size()));
        CHECK(st.stop_reason == got[i].finish);
      }
      CHECK(want[0].finish == EMBER_STOP_MAX_TOKENS);
      CHECK(want[2].finish == EMBER_STOP_STRING);
      ember_generator_free(gen);
      ember_session_free(s);
    }
  }
}

TEST_CASE("generator: token events carry whole UTF-8 characters, their text is the tokens' text") {
  // The built-in vocabulary has 256 byte pieces: a sampled run breaks
  // characters across tokens.
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  auto m = ember::make_synthetic(shape, ember::DType::F32, 11, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const std::string path = ember::test::temp_dir("generator") + "/bytes.ember";
  REQUIRE(ember::write_model(m.value()->spec, path).is_ok());
  Model model(path);
  ember_session* s = make_session(model, 2, 256);
  ember_generator* gen = nullptr;
  REQUIRE(ember_generator_create(s, nullptr, &gen) == EMBER_OK);
  int broken = 0;  // token pieces that were not whole characters by themselves
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::vector<Request> reqs;
    reqs.emplace_back("hello", 120);
    reqs.back().o.reuse_prefix = 1;  // each run over the last one
    reqs.back().o.temperature = 1.5f;
    reqs.back().o.seed = seed;
    std::vector<Out> outs = run_batched(gen, reqs, {0});
    const Out& o = outs[0];
    std::string raw;  // the tokens' own pieces, one after the other
    for (size_t i = 0; i < o.tokens.size(); ++i) {
      char buf[64];
      size_t len = 0;
      REQUIRE(ember_token_to_piece(model.m, i ? o.tokens[i - 1] : 5, o.tokens[i], buf, sizeof buf, &len) == EMBER_OK);
      const std::string piece(buf, len);
      if (!ends_whole(piece)) ++broken;
      raw += piece;
    }
    // No event ends inside a character that the text after it completes
    // (a lead byte whose continuation never comes is released as it is).
    size_t at = 0;
    for (const std::string& piece : o.pieces) {
      at += piece.size();
      if (!ends_whole(piece) && at < o.text.size()) {
        CHECK((static_cast<unsigned char>(o.text[at]) & 0xC0) != 0x80);
      }
    }
    CHECK(o.text == raw);
  }
  CHECK(broken > 0);  // the check above had something to check
  ember_generator_free(gen);
  ember_session_free(s);
}

TEST_CASE("generator: each finish reason, exactly one last event") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session* s = make_session(model, 4, 64);
  ember_generator* gen = nullptr;
  REQUIRE(ember_generator_create(s, nullptr, &gen) == EMBER_OK);
  std::vector<Request> reqs;
  reqs.emplace_back("Once upon a time", 5);     // max tokens
  reqs.emplace_back("Once upon a time", 500);   // the context (64) ends it
  reqs.emplace_back("Once upon a time", 500);   // EOS forced by a bias
  reqs.back().bias = {{model.info.eos_id, 100.0f}};
  reqs.emplace_back("Once upon a time", 500);   // the callback stops it
  std::vector<Out> outs(reqs.size());
  outs[3].stop_after = 4;
  for (size_t i = 0; i < reqs.size(); ++i) {
    REQUIRE(ember_generator_start(gen, static_cast<int32_t>(i), reqs[i].prompt.c_str(), reqs[i].options()) == EMBER_OK);
  }
  while (ember_generator_active(gen, -1) > 0) REQUIRE(ember_generator_step(gen, collect, &outs) == EMBER_OK);
  CHECK(outs[0].finish == EMBER_STOP_MAX_TOKENS);
  CHECK(outs[0].tokens.size() == 5);
  CHECK(outs[1].finish == EMBER_STOP_CONTEXT_FULL);
  ember_generate_stats st;
  st.struct_size = sizeof st;
  REQUIRE(ember_generator_seq_stats(gen, 1, &st) == EMBER_OK);
  CHECK(st.position == 64);
  CHECK(outs[2].finish == EMBER_STOP_END);
  CHECK(outs[2].tokens.empty());
  CHECK(outs[3].finish == EMBER_STOP_CALLBACK);
  CHECK(outs[3].tokens.size() == 4);
  for (const Out& o : outs) CHECK(o.finish_events == 1);

  // Cancelled: after two steps, the next step ends it.
  std::vector<Out> c(1);
  Request r("Once upon a time", 100);
  REQUIRE(ember_generator_start(gen, 0, r.prompt.c_str(), r.options()) == EMBER_OK);
  REQUIRE(ember_generator_step(gen, collect, &c) == EMBER_OK);
  REQUIRE(ember_generator_step(gen, collect, &c) == EMBER_OK);
  REQUIRE(ember_generator_cancel(gen, 0) == EMBER_OK);
  CHECK(ember_generator_active(gen, 0) == 1);
  REQUIRE(ember_generator_step(gen, collect, &c) == EMBER_OK);
  CHECK(ember_generator_active(gen, 0) == 0);
  CHECK(c[0].finish == EMBER_STOP_CANCELLED);
  CHECK(c[0].tokens.size() == 2);
  ember_generator_free(gen);
  ember_session_free(s);
}

TEST_CASE("generator: logit bias bans and forces tokens, log-probabilities are the model's softmax") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session* s = make_session(model, 2, 128);
  ember_generator* gen = nullptr;
  REQUIRE(ember_generator_create(s, nullptr, &gen) == EMBER_OK);

  Request plain("Once upon a time", 12);
  plain.o.logprobs = 1;
  plain.o.top_logprobs = 5;
  std::vector<float> prompt_logits(static_cast<size_t>(model.info.vocab_size));
  plain.o.prompt_logits = prompt_logits.data();
  std::vector<Request> one;
  one.push_back(plain);
  const Out base = run_batched(gen, one, {0})[0];
  REQUIRE(base.tokens.size() == 12);
  // The first token's log-probability from the prompt's logits.
  double mx = -INFINITY, sum = 0;
  for (float v : prompt_logits) mx = std::max<double>(mx, v);
  for (float v : prompt_logits) sum += std::exp(v - mx);
  const double lse = mx + std::log(sum);
  CHECK(base.logprobs[0] == doctest::Approx(prompt_logits[base.tokens[0]] - lse).epsilon(1e-5));
  for (size_t i = 0; i < base.tokens.size(); ++i) {
    REQUIRE(base.tops[i].size() == 5);
    // Greedy: the sampled token is the most likely one.
    CHECK(base.tops[i][0].token == base.tokens[i]);
    CHECK(base.tops[i][0].logprob == doctest::Approx(base.logprobs[i]));
    double mass = 0;
    for (size_t k = 0; k < base.tops[i].size(); ++k) {
      if (k) CHECK(base.tops[i][k].logprob <= base.tops[i][k - 1].logprob);
      CHECK(base.tops[i][k].logprob <= 0.0f);
      mass += std::exp(base.tops[i][k].logprob);
    }
    CHECK(mass <= 1.0 + 1e-5);
  }

  // Banning the greedy run's first token changes the first token; forcing
  // a token makes it every token.
  std::vector<Request> ban;
  ban.emplace_back("Once upon a time", 12);
  ban.back().bias = {{base.tokens[0], -INFINITY}};
  const Out banned = run_batched(gen, ban, {0})[0];
  REQUIRE(!banned.tokens.empty());
  CHECK(banned.tokens[0] != base.tokens[0]);
  std::vector<Request> force;
  force.emplace_back("Once upon a time", 6);
  force.back().bias = {{300, 50.0f}};
  const Out forced = run_batched(gen, force, {0})[0];
  CHECK(forced.tokens == std::vector<int32_t>(6, 300));
  ember_generator_free(gen);
  ember_session_free(s);
}

TEST_CASE("generator: reuse_prefix keeps what the sequence holds up to where the prompt differs") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session* s = make_session(model, 1, 256);
  ember_generator* gen = nullptr;
  REQUIRE(ember_generator_create(s, nullptr, &gen) == EMBER_OK);
  std::vector<Request> first;
  first.emplace_back("Once upon a time, there was a little girl", 8);
  first.back().o.reuse_prefix = 1;
  (void)run_batched(gen, first, {0});
  size_t prompt_len = 0;
  REQUIRE(ember_generator_seq_prompt(gen, 0, nullptr, 0, &prompt_len) == EMBER_ERR_BUFFER_TOO_SMALL);
  // A longer prompt sharing the first one's text: its tokens up to where
  // they differ are kept, the rest runs; the output is a fresh run's.
  std::vector<Request> second;
  second.emplace_back("Once upon a time, there was a little girl named Sue. She liked", 20);
  second.back().o.reuse_prefix = 1;
  const Out got = run_batched(gen, second, {0})[0];
  ember_generate_stats st;
  st.struct_size = sizeof st;
  REQUIRE(ember_generator_seq_stats(gen, 0, &st) == EMBER_OK);
  CHECK(st.reused_tokens > 0);
  CHECK(st.reused_tokens >= static_cast<int32_t>(prompt_len) - 1);
  CHECK(st.reused_tokens < st.prompt_tokens);
  const Out fresh = alone(model, second[0], 256);
  CHECK(got.tokens == fresh.tokens);
  CHECK(got.text == fresh.text);
  ember_generator_free(gen);
  ember_session_free(s);
}

TEST_CASE("generator: bad starts are refused naming what is wrong, and change nothing") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session* s = make_session(model, 2, 32);
  ember_generator* gen = nullptr;
  CHECK(ember_generator_create(nullptr, nullptr, &gen) == EMBER_ERR_INVALID_ARGUMENT);
  ember_generator_options go;
  ember_generator_options_default(&go);
  go.max_step_rows = -1;
  CHECK(ember_generator_create(s, &go, &gen) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(gen == nullptr);
  REQUIRE(ember_generator_create(s, nullptr, &gen) == EMBER_OK);
  ember_generate_options o;
  auto refused = [&](int32_t seq, const char* prompt, ember_status want, const char* names) {
    CHECK(ember_generator_start(gen, seq, prompt, &o) == want);
    CHECK(std::string(ember_last_error()).find(names) != std::string::npos);
    CHECK(ember_generator_active(gen, -1) == 0);
  };
  ember_generate_options_default(&o);
  refused(2, "hi", EMBER_ERR_INVALID_ARGUMENT, "seq = 2");
  refused(-1, "hi", EMBER_ERR_INVALID_ARGUMENT, "seq = -1");
  refused(0, nullptr, EMBER_ERR_INVALID_ARGUMENT, "prompt is NULL");
  o.top_logprobs = 21;
  o.logprobs = 1;
  refused(0, "hi", EMBER_ERR_INVALID_ARGUMENT, "top_logprobs");
  ember_generate_options_default(&o);
  o.top_logprobs = 2;
  refused(0, "hi", EMBER_ERR_INVALID_ARGUMENT, "needs logprobs");
  ember_generate_options_default(&o);
  o.presence_penalty = 3.0f;
  refused(0, "hi", EMBER_ERR_INVALID_ARGUMENT, "presence_penalty");
  ember_generate_options_default(&o);
  o.top_p = 0.0f;
  refused(0, "hi", EMBER_ERR_INVALID_ARGUMENT, "top_p");
  ember_generate_options_default(&o);
  ember_logit_bias bad[2] = {{5, 1.0f}, {model.info.vocab_size, 1.0f}};
  o.logit_bias = bad;
  o.n_logit_bias = 2;
  refused(0, "hi", EMBER_ERR_TOKEN_OUT_OF_RANGE, "logit_bias[1]");
  bad[1] = {5, NAN};
  refused(0, "hi", EMBER_ERR_INVALID_ARGUMENT, "logit_bias[1]");
  ember_generate_options_default(&o);
  const int32_t ids[2] = {1, 99999};
  o.prompt_tokens = ids;
  o.n_prompt_tokens = 2;
  refused(0, nullptr, EMBER_ERR_TOKEN_OUT_OF_RANGE, "prompt_tokens[1]");
  refused(0, "hi", EMBER_ERR_INVALID_ARGUMENT, "both");
  ember_generate_options_default(&o);
  o.add_bos = 0;
  refused(0, "", EMBER_ERR_INVALID_ARGUMENT, "empty");
  ember_generate_options_default(&o);
  const std::string longer(400, 'a');
  refused(0, longer.c_str(), EMBER_ERR_CONTEXT_FULL, "context of 32");
  // An active sequence cannot be started again.
  REQUIRE(ember_generator_start(gen, 1, "Once", &o) == EMBER_OK);
  CHECK(ember_generator_start(gen, 1, "Once", &o) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("generating") != std::string::npos);
  CHECK(ember_generator_cancel(gen, 7) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_generator_step(nullptr, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  // A NULL callback still steps.
  while (ember_generator_active(gen, -1) > 0) REQUIRE(ember_generator_step(gen, nullptr, nullptr) == EMBER_OK);
  CHECK(ember_session_seq_position(s, 1) > 1);
  CHECK(ember_session_seq_position(s, 0) == 0);
  ember_generator_free(gen);
  ember_session_free(s);
}

// Sessions that live longer than one call (issue 14): multi-turn
// conversations that keep their KV, stop strings through ember_generate, and
// saved states, all through the C API on the real stories260K model.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"
#include "test_data.h"

namespace {

struct Model {
  ember_model* m = nullptr;
  explicit Model(const std::string& path) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
  }
  ~Model() { ember_model_free(m); }
  int32_t vocab() const {
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
    return info.vocab_size;
  }
};

struct Session {
  ember_session* s = nullptr;
  Session(const Model& model, int32_t context, int32_t kv_k = EMBER_KV_F32) {
    ember_session_options so;
    ember_session_options_default(&so);
    so.context_length = context;
    so.n_threads = 1;
    so.kv_type_k = kv_k;
    REQUIRE_MESSAGE(ember_session_create(model.m, &so, &s) == EMBER_OK, ember_last_error());
  }
  ~Session() { ember_session_free(s); }
  std::vector<int32_t> tokens() const {
    size_t n = 0;
    ember_status st = ember_session_tokens(s, nullptr, 0, &n);
    REQUIRE((st == EMBER_OK || st == EMBER_ERR_BUFFER_TOO_SMALL));
    std::vector<int32_t> t(n);
    REQUIRE(ember_session_tokens(s, t.data(), t.size(), &n) == EMBER_OK);
    return t;
  }
  ember_generate_stats stats() const {
    ember_generate_stats g;
    g.struct_size = sizeof g;
    REQUIRE(ember_generate_last_stats(s, &g) == EMBER_OK);
    return g;
  }
};

struct Turn {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<float> prompt_logits;
  ember_generate_stats stats{};
};

int collect(void* user, int32_t token, const char* piece, size_t len) {
  Turn* t = static_cast<Turn*>(user);
  t->tokens.push_back(token);
  t->text.append(piece, len);
  return 0;
}

// One ember_generate call: a text prompt, or exact ids when `ids` is set.
Turn generate(Session& s, const Model& m, const char* prompt, const std::vector<int32_t>* ids, int32_t max_new,
              const std::vector<std::string>& stops = {}) {
  Turn t;
  t.prompt_logits.assign(static_cast<size_t>(m.vocab()), 0.0f);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = max_new;
  g.prompt_logits = t.prompt_logits.data();
  if (ids) {
    g.prompt_tokens = ids->data();
    g.n_prompt_tokens = ids->size();
  }
  std::vector<const char*> stop_ptrs;
  for (const std::string& x : stops) stop_ptrs.push_back(x.c_str());
  g.stop_strings = stop_ptrs.data();
  g.n_stop_strings = stop_ptrs.size();
  REQUIRE_MESSAGE(ember_generate(s.s, ids ? nullptr : prompt, &g, &collect, &t) == EMBER_OK, ember_last_error());
  t.stats = s.stats();
  return t;
}

std::vector<int32_t> tokenize(const Model& m, const std::string& text, bool bos) {
  size_t n = 0;
  ember_tokenize(m.m, text.data(), text.size(), bos, nullptr, 0, &n);
  std::vector<int32_t> ids(n);
  REQUIRE(ember_tokenize(m.m, text.data(), text.size(), bos, ids.data(), ids.size(), &n) == EMBER_OK);
  return ids;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string stories() { return ember::test::stories_model("llama2c"); }

std::vector<uint8_t> save(const Session& s) {
  size_t need = 0;
  CHECK(ember_session_save_buffer(s.s, nullptr, 0, &need) == EMBER_ERR_BUFFER_TOO_SMALL);
  REQUIRE(need > 0);
  std::vector<uint8_t> buf(need);
  size_t wrote = 0;
  REQUIRE_MESSAGE(ember_session_save_buffer(s.s, buf.data(), buf.size(), &wrote) == EMBER_OK, ember_last_error());
  CHECK(wrote == need);
  return buf;
}

}  // namespace

TEST_SUITE("sessions") {

TEST_CASE("a multi-turn conversation's logits equal a fresh prefill of the whole conversation") {
  const std::string path = stories();
  if (path.empty()) return;
  Model m(path);
  Session a(m, 256);
  const Turn t1 = generate(a, m, "Once upon a time", nullptr, 12);
  REQUIRE(t1.stats.sampled_tokens > 0);
  const int32_t last = t1.stats.last_token;
  REQUIRE(last >= 0);
  // The session holds the prompt and every sampled token but the last.
  std::vector<int32_t> held = tokenize(m, "Once upon a time", true);
  if (t1.stats.stop_reason == EMBER_STOP_MAX_TOKENS) {
    held.insert(held.end(), t1.tokens.begin(), t1.tokens.end() - 1);
    CHECK(t1.tokens.back() == last);
  } else {
    held.insert(held.end(), t1.tokens.begin(), t1.tokens.end());
  }
  CHECK(a.tokens() == held);
  CHECK(t1.stats.position == static_cast<int32_t>(held.size()));

  // Turn 2: the last token of turn 1, then the new text; only these run.
  std::vector<int32_t> turn2{last};
  for (int32_t id : tokenize(m, " Then the dog said", false)) turn2.push_back(id);
  const Turn t2 = generate(a, m, nullptr, &turn2, 6);
  CHECK(t2.stats.prompt_tokens == static_cast<int32_t>(turn2.size()));
  // Turn 3, as another host would write it: prefill the new tokens with
  // ember_session_prefill, then generate from one more token.
  std::vector<int32_t> turn3{t2.stats.last_token};
  for (int32_t id : tokenize(m, " and the cat", false)) turn3.push_back(id);
  const int32_t before3 = ember_session_position(a.s);
  REQUIRE(ember_session_prefill(a.s, turn3.data(), turn3.size() - 1, nullptr) == EMBER_OK);
  CHECK(ember_session_position(a.s) == before3 + static_cast<int32_t>(turn3.size()) - 1);
  const std::vector<int32_t> turn3_tail{turn3.back()};
  const Turn t3 = generate(a, m, nullptr, &turn3_tail, 6);

  // A fresh session given the whole conversation at once.
  std::vector<int32_t> whole = held;
  whole.insert(whole.end(), turn2.begin(), turn2.end());
  Session b(m, 256);
  const Turn f2 = generate(b, m, nullptr, &whole, 6);
  CHECK(same_bits(f2.prompt_logits, t2.prompt_logits));
  CHECK(f2.tokens == t2.tokens);

  whole = a.tokens();
  whole.push_back(t3.stats.last_token);
  std::vector<int32_t> upto3(whole.begin(), whole.begin() + before3 + static_cast<int32_t>(turn3.size()));
  Session c(m, 256);
  const Turn f3 = generate(c, m, nullptr, &upto3, 6);
  CHECK(same_bits(f3.prompt_logits, t3.prompt_logits));
  CHECK(f3.tokens == t3.tokens);
  CHECK(c.tokens() == a.tokens());
}

TEST_CASE("a turn that does not fit the context is refused and changes nothing, context shift goes on") {
  const std::string path = stories();
  if (path.empty()) return;
  Model m(path);
  Session a(m, 32);
  const Turn t1 = generate(a, m, "Once upon a time", nullptr, 10);
  const std::vector<int32_t> held = a.tokens();
  std::vector<int32_t> big(40, t1.stats.last_token);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.prompt_tokens = big.data();
  g.n_prompt_tokens = big.size();
  CHECK(ember_generate(a.s, nullptr, &g, nullptr, nullptr) == EMBER_ERR_CONTEXT_FULL);
  CHECK(std::string(ember_last_error()).find("does not fit the context of 32") != std::string::npos);
  CHECK(a.tokens() == held);

  // Generating into a full context stops with EMBER_STOP_CONTEXT_FULL ...
  const std::vector<int32_t> one{t1.stats.last_token};
  const Turn t2 = generate(a, m, nullptr, &one, 100);
  if (t2.stats.stop_reason != EMBER_STOP_END) {
    CHECK(t2.stats.stop_reason == EMBER_STOP_CONTEXT_FULL);
    CHECK(t2.stats.position == 32);
  }
  // ... or, with context_shift, drops the older half and goes on.
  Session b(m, 32);
  (void)generate(b, m, "Once upon a time", nullptr, 10);
  g = ember_generate_options();
  ember_generate_options_default(&g);
  g.max_new_tokens = 60;
  g.context_shift = 1;
  const std::vector<int32_t> one_b{b.stats().last_token};
  g.prompt_tokens = one_b.data();
  g.n_prompt_tokens = 1;
  Turn t3;
  REQUIRE(ember_generate(b.s, nullptr, &g, &collect, &t3) == EMBER_OK);
  const ember_generate_stats st = b.stats();
  if (st.stop_reason != EMBER_STOP_END) {
    CHECK(st.stop_reason == EMBER_STOP_MAX_TOKENS);
    CHECK(st.generated_tokens == 60);
  }
  CHECK(st.position <= 32);
}

TEST_CASE("stop strings split across tokens are caught and never passed on") {
  const std::string path = stories();
  if (path.empty()) return;
  Model m(path);
  Turn plain;
  {
    Session s(m, 256);
    plain = generate(s, m, "Once upon a time", nullptr, 40);
  }
  REQUIRE(plain.tokens.size() >= 8);
  // Pieces of each token, to pick a stop string that straddles a boundary.
  std::vector<std::string> pieces;
  std::vector<size_t> ends;
  {
    Session s(m, 256);
    struct P {
      std::vector<std::string>* pieces;
      static int add(void* u, int32_t, const char* p, size_t n) {
        static_cast<P*>(u)->pieces->emplace_back(p, n);
        return 0;
      }
    } p{&pieces};
    ember_generate_options g;
    ember_generate_options_default(&g);
    g.max_new_tokens = 40;
    REQUIRE(ember_generate(s.s, "Once upon a time", &g, &P::add, &p) == EMBER_OK);
  }
  size_t end = 0;
  for (const std::string& p : pieces) ends.push_back(end += p.size());
  REQUIRE(end == plain.text.size());
  // A boundary after token k with at least 2 bytes on each side.
  size_t k = 2;
  while (k + 1 < pieces.size() && (pieces[k].size() < 2 || pieces[k + 1].size() < 2)) ++k;
  REQUIRE(k + 1 < pieces.size());
  const std::string stop = plain.text.substr(ends[k] - 2, 4);
  const size_t cut = plain.text.find(stop);
  REQUIRE(cut != std::string::npos);
  CAPTURE(stop);

  Session s(m, 256);
  const Turn t = generate(s, m, "Once upon a time", nullptr, 40, {"never-in-a-story", stop});
  CHECK(t.stats.stop_reason == EMBER_STOP_STRING);
  CHECK(t.text == plain.text.substr(0, cut));
  CHECK(t.text.find(stop) == std::string::npos);
  // The tokens passed are the first ones of the plain run, the last possibly
  // cut short; the stop string's last token was sampled, not run.
  REQUIRE(t.tokens.size() <= plain.tokens.size());
  CHECK(std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + t.tokens.size()) == t.tokens);
  CHECK(t.stats.generated_tokens == static_cast<int32_t>(t.tokens.size()));
  CHECK(t.stats.last_token == plain.tokens[t.stats.sampled_tokens - 1]);

  // A stop string whose start the text ends with, but never completes: the
  // held text is passed on at the end, so nothing is lost.
  Session s2(m, 256);
  const std::string tail = plain.text.substr(plain.text.size() - 2) + "\x01\x02";
  const Turn t2 = generate(s2, m, "Once upon a time", nullptr, 40, {tail});
  CHECK(t2.text == plain.text);
  CHECK(t2.tokens == plain.tokens);
  CHECK(t2.stats.stop_reason == plain.stats.stop_reason);
}

TEST_CASE("stop strings: bad values are refused naming the index") {
  const std::string path = stories();
  if (path.empty()) return;
  Model m(path);
  Session s(m, 64);
  ember_generate_options g;
  ember_generate_options_default(&g);
  const char* stops[] = {"ok", ""};
  g.stop_strings = stops;
  g.n_stop_strings = 2;
  CHECK(ember_generate(s.s, "a", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("stop_strings[1] is empty") != std::string::npos);
  const char* null_stops[] = {nullptr};
  g.stop_strings = null_stops;
  g.n_stop_strings = 1;
  CHECK(ember_generate(s.s, "a", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("stop_strings[0] is NULL") != std::string::npos);
  g.stop_strings = nullptr;
  g.n_stop_strings = 3;
  CHECK(ember_generate(s.s, "a", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  std::string longer(EMBER_MAX_STOP_STRING_BYTES + 1, 'x');
  const char* long_stops[] = {longer.c_str()};
  g.stop_strings = long_stops;
  g.n_stop_strings = 1;
  CHECK(ember_generate(s.s, "a", &g, nullptr, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_position(s.s) == 0);
}

TEST_CASE("save -> load into a fresh session -> continue equals continuing directly") {
  const std::string path = stories();
  if (path.empty()) return;
  Model m(path);
  for (int32_t kv : {EMBER_KV_F32, EMBER_KV_Q8_0}) {
    CAPTURE(kv);
    Session a(m, 128, kv);
    const Turn t1 = generate(a, m, "Once upon a time", nullptr, 12);
    const std::vector<uint8_t> state = save(a);
    const std::string dir = ember::test::temp_dir("session_state");
    const std::string file = dir + "/turn1.state";
    REQUIRE_MESSAGE(ember_session_save(a.s, file.c_str()) == EMBER_OK, ember_last_error());
    CHECK(ember::test::read_text_file(file) == std::string(state.begin(), state.end()));

    Session b(m, 128, kv);
    (void)generate(b, m, "Something else entirely", nullptr, 3);  // loading replaces all of it
    REQUIRE_MESSAGE(ember_session_load_buffer(b.s, state.data(), state.size()) == EMBER_OK, ember_last_error());
    CHECK(b.tokens() == a.tokens());
    Session c(m, 128, kv);
    REQUIRE_MESSAGE(ember_session_load(c.s, file.c_str()) == EMBER_OK, ember_last_error());
    CHECK(c.tokens() == a.tokens());
    CHECK(save(c) == state);

    std::vector<int32_t> next{t1.stats.last_token};
    for (int32_t id : tokenize(m, " The end", false)) next.push_back(id);
    const Turn direct = generate(a, m, nullptr, &next, 10);
    const Turn loaded = generate(b, m, nullptr, &next, 10);
    const Turn from_file = generate(c, m, nullptr, &next, 10);
    CHECK(same_bits(direct.prompt_logits, loaded.prompt_logits));
    CHECK(direct.tokens == loaded.tokens);
    CHECK(same_bits(direct.prompt_logits, from_file.prompt_logits));
    CHECK(direct.tokens == from_file.tokens);
    std::remove(file.c_str());
  }
}

TEST_CASE("a saved state from another context, KV type or model is refused, bad bytes are a status") {
  const std::string path = stories();
  if (path.empty()) return;
  Model m(path);
  Session a(m, 128);
  (void)generate(a, m, "Once upon a time", nullptr, 8);
  const std::vector<uint8_t> state = save(a);

  auto refused = [&](Session& s, ember_status want, const std::vector<std::string>& words,
                     const std::vector<uint8_t>& bytes) {
    const std::vector<int32_t> before = s.tokens();
    CHECK(ember_session_load_buffer(s.s, bytes.data(), bytes.size()) == want);
    const std::string msg = ember_last_error();
    for (const std::string& w : words) CHECK_MESSAGE(msg.find(w) != std::string::npos, msg, " lacks ", w);
    CHECK(s.tokens() == before);
  };
  Session other_ctx(m, 64);
  (void)generate(other_ctx, m, "Hi", nullptr, 2);
  refused(other_ctx, EMBER_ERR_STATE_MISMATCH, {"context_length", "128", "64"}, state);
  Session other_kv(m, 128, EMBER_KV_F16);
  refused(other_kv, EMBER_ERR_STATE_MISMATCH, {"kv_type_k", "f32", "f16"}, state);
  const std::string gguf = ember::test::stories_model("gguf");
  if (!gguf.empty()) {
    Model other(gguf);
    Session other_model(other, 128);
    refused(other_model, EMBER_ERR_STATE_MISMATCH, {"model identity"}, state);
  }

  Session fresh(m, 128);
  (void)generate(fresh, m, "Hi", nullptr, 2);
  std::vector<uint8_t> bad = state;
  bad.resize(state.size() - 1);
  refused(fresh, EMBER_ERR_TRUNCATED, {"bytes"}, bad);
  bad.assign(state.begin(), state.begin() + 50);
  refused(fresh, EMBER_ERR_TRUNCATED, {"header"}, bad);
  bad = state;
  bad[state.size() / 2] ^= 0x40;
  refused(fresh, EMBER_ERR_INTEGRITY, {"SHA-256"}, bad);
  bad = state;
  bad[0] = 'X';
  refused(fresh, EMBER_ERR_FORMAT, {"magic"}, bad);
  bad = state;
  bad[8] = 9;
  refused(fresh, EMBER_ERR_VERSION, {"version 9"}, bad);
  bad = state;
  bad.push_back(0);
  refused(fresh, EMBER_ERR_FORMAT, {"after"}, bad);
  bad = state;
  bad[64] ^= 1;  // n_pos: the payload no longer matches
  refused(fresh, EMBER_ERR_FORMAT, {"payload_bytes"}, bad);

  CHECK(ember_session_load(fresh.s, "/nonexistent/ember.state") == EMBER_ERR_IO);
  size_t n = 0;
  std::vector<uint8_t> small(10);
  CHECK(ember_session_save_buffer(a.s, small.data(), small.size(), &n) == EMBER_ERR_BUFFER_TOO_SMALL);
  CHECK(n == state.size());
  CHECK(ember_session_save(a.s, "/nonexistent/dir/x.state") == EMBER_ERR_IO);
  // An empty session saves and loads too.
  Session empty(m, 128);
  const std::vector<uint8_t> none = save(empty);
  REQUIRE(ember_session_load_buffer(fresh.s, none.data(), none.size()) == EMBER_OK);
  CHECK(ember_session_position(fresh.s) == 0);
}

}  // TEST_SUITE

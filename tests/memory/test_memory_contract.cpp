// The memory contract (ARCHITECTURE.md principle 1): the plan is exact, the session
// lives in one arena of that size, budgets are enforced with useful errors,
// decode allocates nothing, a full context changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ember.h"
#include "memory/alloc_counter.h"
#include "model/stories_fixture.h"
#include "test_data.h"
#include "tools/convert/synthetic.h"

namespace {

// A tiny synthetic model file (no test data needed), made once.
std::string tiny_model() {
  static std::string path;
  if (!path.empty()) return path;
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  auto m = ember::make_synthetic(shape, ember::DType::F32, 7, "");
  REQUIRE(m.is_ok());
  path = ember::test::temp_dir("memory") + "/tiny.ember";
  REQUIRE(ember::write_model(m.value()->spec, path).is_ok());
  return path;
}

struct Model {
  ember_model* m = nullptr;
  int32_t vocab = 0;
  explicit Model(const std::string& path) {
    REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
    vocab = info.vocab_size;
  }
  ~Model() { ember_model_free(m); }
};

ember_memory_plan plan_for(ember_model* m, const ember_session_options& o) {
  ember_memory_plan p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  REQUIRE(ember_plan(m, &o, &p) == EMBER_OK);
  return p;
}

ember_session_options options(int32_t ctx, int32_t kv = EMBER_KV_F32) {
  ember_session_options o;
  ember_session_options_default(&o);
  o.context_length = ctx;
  o.kv_type_k = kv;
  o.kv_type_v = kv;
  o.n_threads = 1;
  return o;
}

std::vector<int32_t> some_tokens(int n, int vocab) {
  std::vector<int32_t> t;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>(3 + (x >> 8) % static_cast<uint32_t>(vocab - 3)));
  }
  return t;
}

}  // namespace

TEST_SUITE("memory") {

TEST_CASE("the session runs inside a caller arena of exactly arena_bytes, and not a byte more") {
  Model model(tiny_model());
  for (int32_t kv : {EMBER_KV_F32, EMBER_KV_F16, EMBER_KV_Q8_0}) {
    for (int32_t ctx : {32, 100, 256}) {
      CAPTURE(kv);
      CAPTURE(ctx);
      ember_session_options o = options(ctx, kv);
      const ember_memory_plan p = plan_for(model.m, o);
      CHECK(p.arena_bytes == p.kv_bytes + p.activations_bytes + p.scratch_bytes + p.runtime_bytes);
      CHECK(p.private_bytes >= p.arena_bytes + p.weights_resident_bytes);
      // The arena plus a guard region that must stay untouched.
      const size_t guard = 4096;
      std::vector<uint8_t> storage(p.arena_bytes + guard + 64);
      uint8_t* base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
      std::memset(base + p.arena_bytes, 0xA5, guard);
      o.arena = base;
      o.arena_size = p.arena_bytes - 1;
      ember_session* s = nullptr;
      CHECK(ember_session_create(model.m, &o, &s) == EMBER_ERR_BUFFER_TOO_SMALL);
      CHECK(std::string(ember_last_error()).find("arena_size") != std::string::npos);
      CHECK(s == nullptr);
      o.arena_size = p.arena_bytes;
      REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
      const std::vector<int32_t> toks = some_tokens(ctx, model.vocab);
      REQUIRE(ember_session_prefill(s, toks.data(), toks.size() - 1, nullptr) == EMBER_OK);
      REQUIRE(ember_session_decode(s, toks.back(), nullptr) == EMBER_OK);
      ember_session_free(s);
      bool intact = true;
      for (size_t i = 0; i < guard; ++i) intact &= base[p.arena_bytes + i] == 0xA5;
      CHECK(intact);
    }
  }
}

TEST_CASE("the planned arena of the reference model does not grow") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const ember_memory_plan p = plan_for(model.m, options(512));
  // Threshold: the arena measured when this test was written (f32 KV, batch
  // 512, context 512). Raise it only on purpose, in its own commit. Raised
  // from 2200000 for the tiled attention's per-thread chunk buffers and
  // block accumulators (scratch 51 -> 130 KB with blocks of up to 128 query
  // vectors per key head; issue 44, item 2).
  CHECK(p.arena_bytes <= 2300000);
  CHECK(p.kv_bytes == p.estimate_kv_bytes);
  CHECK(p.weights_mapped_bytes == 1040128);
  MESSAGE("stories260K arena " << p.arena_bytes << " bytes (kv " << p.kv_bytes << ", activations "
                               << p.activations_bytes << ", scratch " << p.scratch_bytes << ")");
}

TEST_CASE("budgets: one byte below the plan fails with the numbers, the plan's figure succeeds") {
  Model model(tiny_model());
  ember_session_options o = options(200);
  const ember_memory_plan p = plan_for(model.m, o);
  ember_session* s = nullptr;
  o.max_bytes = p.private_bytes - 1;
  CHECK(ember_session_create(model.m, &o, &s) == EMBER_ERR_NO_MEMORY);
  const std::string msg = ember_last_error();
  CHECK(msg.find(std::to_string(p.private_bytes)) != std::string::npos);
  CHECK(msg.find(std::to_string(p.private_bytes - 1)) != std::string::npos);
  CHECK(msg.find("largest context that fits is 199") != std::string::npos);
  o.max_bytes = p.private_bytes;
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  ember_session_free(s);

  // Shrink the budget step by step: every failure is clean and says so; the
  // largest context it names really fits.
  for (uint64_t budget = p.private_bytes; budget > 1000; budget = budget * 3 / 4) {
    o.max_bytes = budget;
    s = nullptr;
    const ember_status st = ember_session_create(model.m, &o, &s);
    if (st == EMBER_OK) {
      ember_session_free(s);
      continue;
    }
    CHECK(st == EMBER_ERR_NO_MEMORY);
    CHECK(s == nullptr);
    const std::string m = ember_last_error();
    const size_t at = m.find("largest context that fits is ");
    REQUIRE(at != std::string::npos);
    const int fit = std::atoi(m.c_str() + at + 29);
    if (fit > 0) {
      ember_session_options f = o;
      f.context_length = fit;
      CHECK(ember_session_create(model.m, &f, &s) == EMBER_OK);
      ember_session_free(s);
      f.context_length = fit + 1;
      CHECK(ember_session_create(model.m, &f, &s) == EMBER_ERR_NO_MEMORY);
    }
  }
}

TEST_CASE("100 decode steps allocate nothing on the heap") {
  Model model(tiny_model());
  ember_session_options o = options(256);
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  std::vector<float> logits(model.vocab);
  const std::vector<int32_t> toks = some_tokens(120, model.vocab);
  REQUIRE(ember_session_prefill(s, toks.data(), 10, logits.data()) == EMBER_OK);
  ember::test::start_counting_allocations();
  for (int i = 10; i < 110; ++i) REQUIRE(ember_session_decode(s, toks[i], logits.data()) == EMBER_OK);
  const long allocations = ember::test::stop_counting_allocations();
  CHECK(allocations == 0);
  ember_session_free(s);
}

TEST_CASE("batched decoding allocates nothing on the heap either: 4 sequences, 50 steps, a prompt chunk joining") {
  Model model(tiny_model());
  ember_session_options o = options(128);
  o.n_seqs = 4;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  std::vector<float> logits(4 * static_cast<size_t>(model.vocab));
  const std::vector<int32_t> toks = some_tokens(120, model.vocab);
  ember::test::start_counting_allocations();
  for (int step = 0; step < 50; ++step) {
    ember_batch_item items[4];
    for (int32_t q = 0; q < 4; ++q) {
      // Sequence 3 joins at step 20 with a 10-token prompt chunk.
      const bool chunk = q == 3 && step == 20;
      items[q] = {q, toks.data() + step, chunk ? size_t{10} : size_t{1}, logits.data() + q * model.vocab};
    }
    REQUIRE(ember_session_decode_batch(s, items, step < 20 ? 3 : 4) == EMBER_OK);
  }
  const long allocations = ember::test::stop_counting_allocations();
  CHECK(allocations == 0);
  CHECK(ember_session_seq_position(s, 0) == 50);
  CHECK(ember_session_seq_position(s, 3) == 10 + 29);
  ember_session_free(s);
}

TEST_CASE("a full context returns EMBER_ERR_CONTEXT_FULL and changes nothing, rewinding equals a fresh session") {
  Model model(tiny_model());
  ember_session_options o = options(16);
  ember_session *s = nullptr, *fresh = nullptr;
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  const std::vector<int32_t> toks = some_tokens(16, model.vocab);
  std::vector<float> a(model.vocab), b(model.vocab);
  REQUIRE(ember_session_prefill(s, toks.data(), 16, a.data()) == EMBER_OK);
  CHECK(ember_session_decode(s, 5, b.data()) == EMBER_ERR_CONTEXT_FULL);
  CHECK(ember_session_position(s) == 16);
  CHECK(ember_session_prefill(s, toks.data(), 2, b.data()) == EMBER_ERR_CONTEXT_FULL);
  CHECK(ember_session_position(s) == 16);
  // Remove the last 6 positions, continue with 3 new tokens; a fresh session
  // fed the same history gives bit-identical logits.
  REQUIRE(ember_session_remove(s, 10, 16) == EMBER_OK);
  CHECK(ember_session_position(s) == 10);
  const std::vector<int32_t> more = {7, 8, 9};
  REQUIRE(ember_session_prefill(s, more.data(), 3, a.data()) == EMBER_OK);
  REQUIRE(ember_session_create(model.m, &o, &fresh) == EMBER_OK);
  std::vector<int32_t> history(toks.begin(), toks.begin() + 10);
  history.insert(history.end(), more.begin(), more.end());
  REQUIRE(ember_session_prefill(fresh, history.data(), history.size(), b.data()) == EMBER_OK);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  // Bad ranges are refused.
  CHECK(ember_session_remove(s, 5, 4) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_remove(s, 0, 100) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_remove(s, -1, 2) == EMBER_ERR_INVALID_ARGUMENT);
  ember_session_free(s);
  ember_session_free(fresh);
}

TEST_CASE("context shifting keeps a long generation going in a small cache") {
  Model model(tiny_model());
  ember_session_options o = options(24);
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = 100;
  g.context_shift = 1;
  int count = 0;
  auto cb = [](void* user, int32_t, const char*, size_t) {
    ++*static_cast<int*>(user);
    return 0;
  };
  REQUIRE(ember_generate(s, "abc", &g, cb, &count) == EMBER_OK);
  CHECK(count == 100);
  CHECK(ember_session_position(s) <= 24);
  // Shifting the middle re-rotates keys; the session stays usable and sane.
  ember_session_free(s);
}

TEST_CASE("KV precision is independent: f16 and q8_0 caches stay close to f32 on the real model") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  std::vector<int32_t> ids(64);
  size_t n = 0;
  const std::string text = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  REQUIRE(ember_tokenize(model.m, text.data(), text.size(), 1, ids.data(), ids.size(), &n) == EMBER_OK);
  std::vector<float> ref(512), got(512);
  ember_session* s = nullptr;
  ember_session_options o = options(128, EMBER_KV_F32);
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  REQUIRE(ember_session_prefill(s, ids.data(), n, ref.data()) == EMBER_OK);
  ember_session_free(s);
  for (int32_t kv : {EMBER_KV_F16, EMBER_KV_Q8_0}) {
    CAPTURE(kv);
    o = options(128, kv);
    REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
    REQUIRE(ember_session_prefill(s, ids.data(), n, got.data()) == EMBER_OK);
    ember_session_free(s);
    double max_diff = 0;
    for (size_t i = 0; i < ref.size(); ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(ref[i] - got[i])));
    MESSAGE("kv type " << kv << ": max |logit - f32 logit| = " << max_diff);
    // q8_0 shares one scale per 32 elements: on this model that block spans
    // four 8-wide heads, hence the looser bound. Both keep the top token.
    CHECK(max_diff < (kv == EMBER_KV_F16 ? 0.01 : 0.5));
    CHECK(max_diff > 0.0);  // really a different cache type
    auto argmax = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
    CHECK(argmax(got) == argmax(ref));
  }
}

TEST_CASE("many sessions on one model, on many threads, are bit-identical to a session alone") {
  Model model(tiny_model());
  const std::vector<int32_t> toks = some_tokens(40, model.vocab);
  auto run = [&](int seed_shift, std::vector<int32_t>* out) {
    ember_session_options o = options(64);
    ember_session* s = nullptr;
    if (ember_session_create(model.m, &o, &s) != EMBER_OK) return;
    std::vector<float> logits(model.vocab);
    std::vector<int32_t> prompt(toks.begin() + seed_shift, toks.begin() + seed_shift + 8);
    ember_session_prefill(s, prompt.data(), prompt.size(), logits.data());
    for (int i = 0; i < 24; ++i) {
      int32_t best = 0;
      for (int32_t v = 1; v < model.vocab; ++v) best = logits[v] > logits[best] ? v : best;
      out->push_back(best);
      ember_session_decode(s, best, logits.data());
    }
    ember_session_free(s);
  };
  const int n = 4;
  std::vector<std::vector<int32_t>> alone(n), together(n);
  for (int i = 0; i < n; ++i) run(i, &alone[i]);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(run, i, &together[i]);
  for (auto& t : threads) t.join();
  for (int i = 0; i < n; ++i) {
    CHECK(alone[i].size() == 24);
    CHECK(alone[i] == together[i]);
  }
}

}  // TEST_SUITE

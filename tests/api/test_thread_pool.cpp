// Host thread pools (ember_threadpool): sessions sharing one give the same
// logits as sessions on pools of their own, alternately or concurrently; the
// plan counts the pool's threads; misuse is an error or harmless.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ember.h"
#include "memory/alloc_counter.h"
#include "test_data.h"
#include "tools/convert/synthetic.h"

namespace {

// A tiny Q8_0 model (quantized activations are shared between matmuls, the
// state most at risk when sessions share threads), made once.
std::string tiny_q8_model() {
  static std::string path;
  if (!path.empty()) return path;
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  auto m = ember::make_synthetic(shape, ember::DType::Q8_0, 11, "");
  REQUIRE(m.is_ok());
  path = ember::test::temp_dir("threadpool") + "/tiny-q8_0.ember";
  REQUIRE(ember::write_model(m.value()->spec, path).is_ok());
  return path;
}

struct Model {
  ember_model* m = nullptr;
  int32_t vocab = 0;
  Model() {
    REQUIRE(ember_model_open(tiny_q8_model().c_str(), nullptr, &m) == EMBER_OK);
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
    vocab = info.vocab_size;
  }
  ~Model() { ember_model_free(m); }
};

ember_session* open_session(const Model& model, ember_threadpool* pool, int32_t n_threads) {
  ember_session_options o;
  ember_session_options_default(&o);
  o.context_length = 64;
  o.max_batch = 8;
  o.n_threads = n_threads;
  o.thread_pool = pool;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model.m, &o, &s) == EMBER_OK);
  return s;
}

std::vector<int32_t> prompt_for(int which, int32_t vocab) {
  std::vector<int32_t> p;
  for (int i = 0; i < 11; ++i) p.push_back(3 + (i * 31 + which * 7) % (vocab - 3));
  return p;
}

// Prefill then `steps` greedy decodes; every step's logits.
struct Run {
  ember_session* s;
  std::vector<int32_t> prompt;
  std::vector<float> logits, all;
  int32_t next = 0;
  void start(int32_t vocab) {
    logits.assign(vocab, 0.0f);
    REQUIRE(ember_session_prefill(s, prompt.data(), prompt.size(), logits.data()) == EMBER_OK);
    take();
  }
  void step() {
    REQUIRE(ember_session_decode(s, next, logits.data()) == EMBER_OK);
    take();
  }
  void take() {
    all.insert(all.end(), logits.begin(), logits.end());
    next = 0;
    for (size_t v = 1; v < logits.size(); ++v) next = logits[v] > logits[next] ? static_cast<int32_t>(v) : next;
  }
};

std::vector<float> alone(const Model& model, int which, int steps) {
  ember_session* s = open_session(model, nullptr, 3);
  Run r{s, prompt_for(which, model.vocab)};
  r.start(model.vocab);
  for (int i = 0; i < steps; ++i) r.step();
  ember_session_free(s);
  return r.all;
}

}  // namespace

TEST_SUITE("api") {

TEST_CASE("two sessions sharing one thread pool give the logits of sessions with pools of their own") {
  Model model;
  const std::vector<float> want0 = alone(model, 0, 6), want1 = alone(model, 1, 6);
  ember_threadpool* pool = nullptr;
  REQUIRE(ember_threadpool_create(3, &pool) == EMBER_OK);
  REQUIRE(pool != nullptr);
  // n_threads is ignored when a pool is given.
  Run a{open_session(model, pool, 1), prompt_for(0, model.vocab)};
  Run b{open_session(model, pool, 7), prompt_for(1, model.vocab)};
  a.start(model.vocab);
  b.start(model.vocab);
  for (int i = 0; i < 6; ++i) {  // interleaved steps
    a.step();
    b.step();
  }
  CHECK(a.all == want0);
  CHECK(b.all == want1);
  // Decoding on a shared pool allocates nothing either.
  ember::test::start_counting_allocations();
  for (int i = 0; i < 10; ++i) REQUIRE(ember_session_decode(a.s, a.next, a.logits.data()) == EMBER_OK);
  CHECK(ember::test::stop_counting_allocations() == 0);
  ember_session_free(a.s);
  ember_session_free(b.s);
  ember_threadpool_free(pool);
}

TEST_CASE("sessions sharing a pool may be called from several threads at once: the pool takes them in turn") {
  Model model;
  constexpr int kSessions = 4;
  std::vector<std::vector<float>> want(kSessions), got(kSessions);
  for (int i = 0; i < kSessions; ++i) want[i] = alone(model, i, 12);
  ember_threadpool* pool = nullptr;
  REQUIRE(ember_threadpool_create(3, &pool) == EMBER_OK);
  std::vector<ember_session*> sessions;
  for (int i = 0; i < kSessions; ++i) sessions.push_back(open_session(model, pool, 0));
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      Run r{sessions[i], prompt_for(i, model.vocab)};
      r.logits.assign(model.vocab, 0.0f);
      if (ember_session_prefill(r.s, r.prompt.data(), r.prompt.size(), r.logits.data()) != EMBER_OK) return;
      r.take();
      for (int k = 0; k < 12; ++k) {
        if (ember_session_decode(r.s, r.next, r.logits.data()) != EMBER_OK) return;
        r.take();
      }
      got[i] = r.all;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kSessions; ++i) {
    CAPTURE(i);
    CHECK(got[i] == want[i]);
  }
  for (ember_session* s : sessions) ember_session_free(s);
  ember_threadpool_free(pool);
}

TEST_CASE("the plan counts the pool's threads, not n_threads") {
  Model model;
  auto plan = [&](ember_threadpool* pool, int32_t n_threads) {
    ember_session_options o;
    ember_session_options_default(&o);
    o.context_length = 64;
    o.n_threads = n_threads;
    o.thread_pool = pool;
    ember_memory_plan p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    REQUIRE(ember_plan(model.m, &o, &p) == EMBER_OK);
    return p.scratch_bytes;
  };
  ember_threadpool* pool = nullptr;
  REQUIRE(ember_threadpool_create(4, &pool) == EMBER_OK);
  CHECK(plan(pool, 1) == plan(nullptr, 4));
  CHECK(plan(pool, 1) > plan(nullptr, 1));
  ember_threadpool_free(pool);
}

TEST_CASE("thread pool misuse: bad counts are errors naming the value, freeing the pool first is harmless") {
  ember_threadpool* pool = reinterpret_cast<ember_threadpool*>(&pool);
  CHECK(ember_threadpool_create(0, &pool) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(pool == nullptr);
  CHECK(std::string(ember_last_error()).find("n_threads = 0") != std::string::npos);
  CHECK(ember_threadpool_create(1025, &pool) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_threadpool_create(2, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  ember_threadpool_free(nullptr);

  // The session keeps its pool's threads alive after the handle is freed.
  Model model;
  const std::vector<float> want = alone(model, 2, 4);
  REQUIRE(ember_threadpool_create(3, &pool) == EMBER_OK);
  Run r{open_session(model, pool, 0), prompt_for(2, model.vocab)};
  ember_threadpool_free(pool);
  r.start(model.vocab);
  for (int i = 0; i < 4; ++i) r.step();
  CHECK(r.all == want);
  ember_session_free(r.s);
}

}  // TEST_SUITE

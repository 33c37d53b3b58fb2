#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace ember {
namespace {

Sampler make(const SamplerParams& p, int32_t vocab) {
  auto r = Sampler::create(p, vocab);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return std::move(r).value();
}

// Deterministic pseudo-random logits (not the sampler's PRNG).
std::vector<float> random_logits(int32_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 24) * 8.0f - 4.0f;
  }
  return v;
}

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (int32_t i = 1; i < static_cast<int32_t>(v.size()); ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

std::vector<int32_t> draw_sequence(const SamplerParams& p, int32_t vocab, int n) {
  Sampler s = make(p, vocab);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    auto logits = random_logits(vocab, static_cast<uint32_t>(i));
    out.push_back(s.sample(logits.data(), nullptr, 0));
  }
  return out;
}

}  // namespace

TEST_SUITE("sampling") {

TEST_CASE("greedy is argmax, lowest id on ties, whatever the other options") {
  SamplerParams p;
  p.temperature = 0.0f;
  p.top_k = 5;
  p.top_p = 0.3f;
  p.min_p = 0.5f;
  p.seed = 7;
  Sampler s = make(p, 1000);
  for (uint32_t i = 0; i < 20; ++i) {
    auto logits = random_logits(1000, i);
    const int32_t expected = argmax(logits);
    CHECK(s.sample(logits.data(), nullptr, 0) == expected);
  }
  Sampler small = make(p, 5);
  std::vector<float> ties = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  CHECK(small.sample(ties.data(), nullptr, 0) == 1);
  // NaN is treated as -inf and never wins.
  std::vector<float> with_nan = {NAN, 0.5f, NAN, 0.7f, -INFINITY};
  CHECK(small.sample(with_nan.data(), nullptr, 0) == 3);
}

TEST_CASE("same seed gives the same sequence, a different seed a different one") {
  SamplerParams p;
  p.temperature = 1.0f;
  p.seed = 1234;
  const auto a = draw_sequence(p, 512, 64);
  const auto b = draw_sequence(p, 512, 64);
  CHECK(a == b);
  p.seed = 1235;
  const auto c = draw_sequence(p, 512, 64);
  CHECK(a != c);
  // reseed() restarts the sequence.
  p.seed = 1234;
  Sampler s = make(p, 512);
  std::vector<int32_t> first;
  for (int i = 0; i < 8; ++i) {
    auto logits = random_logits(512, static_cast<uint32_t>(i));
    first.push_back(s.sample(logits.data(), nullptr, 0));
  }
  s.reseed(1234);
  for (int i = 0; i < 8; ++i) {
    auto logits = random_logits(512, static_cast<uint32_t>(i));
    CHECK(s.sample(logits.data(), nullptr, 0) == first[i]);
  }
}

TEST_CASE("the draw is pinned: a fixed seed gives fixed tokens on every platform") {
  // These values come from this implementation; they must never change
  // across compilers, libms or machines (the PRNG and exp are our own).
  SamplerParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.seed = 42;
  const auto seq = draw_sequence(p, 32000, 8);
  const std::vector<int32_t> expected = {839, 8252, 18734, 29917, 12617, 14583, 16156, 6872};
  CHECK(seq == expected);
}

TEST_CASE("top_k = 1 equals greedy") {
  SamplerParams p;
  p.temperature = 1.5f;
  p.top_k = 1;
  p.seed = 99;
  Sampler s = make(p, 32000);
  for (uint32_t i = 0; i < 20; ++i) {
    auto logits = random_logits(32000, i);
    const int32_t expected = argmax(logits);
    CHECK(s.sample(logits.data(), nullptr, 0) == expected);
  }
}

TEST_CASE("a tiny top_p equals greedy, with and without top_k") {
  for (int32_t top_k : {0, 50}) {
    SamplerParams p;
    p.temperature = 2.0f;
    p.top_p = 1e-6f;
    p.top_k = top_k;
    p.seed = 5;
    Sampler s = make(p, 32000);
    for (uint32_t i = 0; i < 20; ++i) {
      auto logits = random_logits(32000, i);
      const int32_t expected = argmax(logits);
      CHECK(s.sample(logits.data(), nullptr, 0) == expected);
    }
  }
}

TEST_CASE("top_p keeps the nucleus") {
  // Probabilities 0.5, 0.3, 0.2 (as logits): top_p 0.7 keeps ids 0 and 1.
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_p = 0.7f;
  p.seed = 3;
  Sampler s = make(p, 3);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 4000; ++i) {
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    counts[s.sample(logits.data(), nullptr, 0)]++;
  }
  CHECK(counts[2] == 0);
  CHECK(counts[0] > 0);
  CHECK(counts[1] > 0);
}

TEST_CASE("min_p filters tokens below min_p times the best") {
  // Probabilities 0.6, 0.3, 0.1: min_p 0.4 cuts at 0.24, so id 2 never comes.
  SamplerParams p;
  p.temperature = 1.0f;
  p.min_p = 0.4f;
  p.seed = 11;
  Sampler s = make(p, 3);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 4000; ++i) {
    std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    counts[s.sample(logits.data(), nullptr, 0)]++;
  }
  CHECK(counts[2] == 0);
  CHECK(counts[1] > 1000);  // expected ~1333 (1/3 of the survivors' mass)
  // min_p = 1 keeps only the best.
  p.min_p = 1.0f;
  Sampler best = make(p, 32000);
  for (uint32_t i = 0; i < 10; ++i) {
    auto logits = random_logits(32000, i);
    const int32_t expected = argmax(logits);
    CHECK(best.sample(logits.data(), nullptr, 0) == expected);
  }
}

TEST_CASE("repetition penalty changes the argmax") {
  SamplerParams p;
  p.temperature = 0.0f;
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 4;
  Sampler s = make(p, 5);
  // id 1 leads (3.0) but was seen: 3.0 / 2 = 1.5 < 2.0 (id 3).
  std::vector<float> logits = {0.0f, 3.0f, -1.0f, 2.0f, 1.0f};
  const std::vector<int32_t> history = {1, 1, 1};
  CHECK(s.sample(logits.data(), history.data(), history.size()) == 3);
  CHECK(logits[1] == doctest::Approx(1.5f));  // divided once although seen three times
  // A negative logit is multiplied.
  std::vector<float> neg = {-1.0f, -1.5f, -4.0f, -4.0f, -4.0f};
  const std::vector<int32_t> h0 = {0};
  CHECK(s.sample(neg.data(), h0.data(), h0.size()) == 1);  // -2.0 < -1.5
  // Outside the window it has no effect: id 1 is 5 tokens back.
  std::vector<float> again = {0.0f, 3.0f, -1.0f, 2.0f, 1.0f};
  const std::vector<int32_t> old = {1, 0, 0, 0, 0};
  CHECK(s.sample(again.data(), old.data(), old.size()) == 1);
  // Out-of-range history ids are ignored, not a crash.
  std::vector<float> oob = {0.0f, 3.0f, -1.0f, 2.0f, 1.0f};
  const std::vector<int32_t> bad = {-3, 99, 5};
  CHECK(s.sample(oob.data(), bad.data(), bad.size()) == 1);
}

TEST_CASE("temperature 1 reproduces a known 3-way softmax") {
  // Probabilities 0.2, 0.5, 0.3. 20000 draws: the standard deviation of a
  // frequency is at most sqrt(0.25/20000) = 0.0035; allow ~4.3 sigma.
  SamplerParams p;
  p.temperature = 1.0f;
  p.seed = 2024;
  Sampler s = make(p, 3);
  const double expected[3] = {0.2, 0.5, 0.3};
  int counts[3] = {0, 0, 0};
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    // Shifted logits: the softmax must not care about the offset.
    std::vector<float> logits = {std::log(0.2f) + 7.0f, std::log(0.5f) + 7.0f,
                                 std::log(0.3f) + 7.0f};
    const int32_t t = s.sample(logits.data(), nullptr, 0);
    REQUIRE(t >= 0);
    REQUIRE(t < 3);
    counts[t]++;
  }
  for (int i = 0; i < 3; ++i) {
    const double frequency = static_cast<double>(counts[i]) / draws;
    CHECK_MESSAGE(std::fabs(frequency - expected[i]) < 0.015,
                  "id " << i << ": " << frequency << " vs " << expected[i]);
  }
}

TEST_CASE("temperature sharpens and flattens") {
  // At temperature 0.25 the 0.5/0.3/0.2 split becomes ~0.86/0.11/0.03.
  SamplerParams p;
  p.temperature = 0.25f;
  p.seed = 8;
  Sampler s = make(p, 3);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 10000; ++i) {
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    counts[s.sample(logits.data(), nullptr, 0)]++;
  }
  CHECK(counts[0] > 8000);
  CHECK(counts[2] < 600);
}

TEST_CASE("NaN and infinite logits do not crash and are handled") {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  p.seed = 1;
  Sampler s = make(p, 6);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> logits = {NAN, 1.0f, NAN, 0.5f, -INFINITY, NAN};
    const int32_t t = s.sample(logits.data(), nullptr, 0);
    CHECK((t == 1 || t == 3));
  }
  std::vector<float> inf = {0.0f, INFINITY, 1.0f, INFINITY, NAN, -INFINITY};
  for (int i = 0; i < 100; ++i) {
    auto copy = inf;
    const int32_t t = s.sample(copy.data(), nullptr, 0);
    CHECK((t == 1 || t == 3));
  }
  std::vector<float> all_nan = {NAN, NAN, NAN, NAN, NAN, NAN};
  CHECK(s.sample(all_nan.data(), nullptr, 0) == 0);
  std::vector<float> all_neg_inf(6, -INFINITY);
  CHECK(s.sample(all_neg_inf.data(), nullptr, 0) == 0);
  CHECK(s.sample(nullptr, nullptr, 0) == -1);
  Sampler empty;
  float one = 1.0f;
  CHECK(empty.sample(&one, nullptr, 0) == -1);
}

TEST_CASE("logit bias, presence and frequency penalties change exactly the logits they name") {
  // Greedy reads the logits after the chain: the modified logits are visible
  // through sample()'s in-place update.
  SamplerParams p;
  p.logit_bias = {{2, 1.5f}, {4, -INFINITY}};
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.repeat_last_n = 4;
  Sampler s = make(p, 6);
  std::vector<float> l = {1, 1, 1, 1, 9, 1};
  // History: token 0 three times (one of them outside the window of 4),
  // token 1 once, token 3 once.
  const int32_t history[] = {0, 0, 1, 0, 3};
  const int32_t t = s.sample(l.data(), history, 5);
  CHECK(l[0] == doctest::Approx(1 - 0.5f - 2 * 0.25f));  // twice in the window
  CHECK(l[1] == doctest::Approx(1 - 0.5f - 0.25f));
  CHECK(l[2] == doctest::Approx(2.5f));
  CHECK(l[3] == doctest::Approx(1 - 0.5f - 0.25f));
  CHECK(std::isinf(l[4]));  // banned, though it was the best
  CHECK(l[5] == 1.0f);
  CHECK(t == 2);
  // The counts are back to zero: the same call again changes the same way.
  std::vector<float> l2 = {1, 1, 1, 1, 9, 1};
  (void)s.sample(l2.data(), history, 5);
  CHECK(l2 == l);
}

TEST_CASE("logit bias and the new penalties are checked, naming the entry") {
  SamplerParams p;
  p.presence_penalty = 2.5f;
  CHECK(Sampler::create(p, 8).status().code() == EMBER_ERR_INVALID_ARGUMENT);
  p = SamplerParams();
  p.frequency_penalty = NAN;
  CHECK(Sampler::create(p, 8).status().code() == EMBER_ERR_INVALID_ARGUMENT);
  p = SamplerParams();
  p.logit_bias = {{1, 1.0f}, {8, 1.0f}};
  auto r = Sampler::create(p, 8);
  CHECK(r.status().code() == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(r.status().message().find("logit_bias[1]") != std::string::npos);
  p.logit_bias = {{1, 1.0f}, {1, 2.0f}};
  CHECK(Sampler::create(p, 8).status().code() == EMBER_ERR_INVALID_ARGUMENT);
  p.logit_bias = {{1, INFINITY}};
  CHECK(Sampler::create(p, 8).status().code() == EMBER_ERR_INVALID_ARGUMENT);
  p.logit_bias = {{1, -INFINITY}};
  CHECK(Sampler::create(p, 8).is_ok());
}

TEST_CASE("invalid parameters are rejected with EMBER_ERR_INVALID_ARGUMENT") {
  struct Case {
    const char* field;
    SamplerParams params;
  };
  auto with = [](auto edit) {
    SamplerParams p;
    edit(p);
    return p;
  };
  const Case cases[] = {
      {"temperature", with([](SamplerParams& p) { p.temperature = NAN; })},
      {"temperature", with([](SamplerParams& p) { p.temperature = -0.5f; })},
      {"temperature", with([](SamplerParams& p) { p.temperature = INFINITY; })},
      {"top_k", with([](SamplerParams& p) { p.top_k = -1; })},
      {"top_p", with([](SamplerParams& p) { p.top_p = 0.0f; })},
      {"top_p", with([](SamplerParams& p) { p.top_p = 1.5f; })},
      {"top_p", with([](SamplerParams& p) { p.top_p = NAN; })},
      {"min_p", with([](SamplerParams& p) { p.min_p = -0.1f; })},
      {"min_p", with([](SamplerParams& p) { p.min_p = 1.01f; })},
      {"min_p", with([](SamplerParams& p) { p.min_p = NAN; })},
      {"repeat_penalty", with([](SamplerParams& p) { p.repeat_penalty = 0.0f; })},
      {"repeat_penalty", with([](SamplerParams& p) { p.repeat_penalty = -1.0f; })},
      {"repeat_penalty", with([](SamplerParams& p) { p.repeat_penalty = NAN; })},
      {"repeat_last_n", with([](SamplerParams& p) { p.repeat_last_n = -1; })},
  };
  for (const Case& c : cases) {
    auto r = Sampler::create(c.params, 32);
    CHECK_MESSAGE(r.status().code() == EMBER_ERR_INVALID_ARGUMENT, c.field);
    CHECK_MESSAGE(r.status().message().find(c.field) != std::string::npos,
                  r.status().message());
  }
  for (int32_t vocab : {0, -5}) {
    auto r = Sampler::create(SamplerParams{}, vocab);
    CHECK(r.status().code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(r.status().message().find("vocab_size") != std::string::npos);
  }
  // The edges that are allowed.
  SamplerParams edge;
  edge.top_p = 1.0f;
  edge.min_p = 1.0f;
  edge.repeat_last_n = 0;
  edge.top_k = 100000;
  CHECK(Sampler::create(edge, 32).is_ok());
}

}  // TEST_SUITE("sampling")

}  // namespace ember

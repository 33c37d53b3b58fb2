#include "sampling/sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace ember {
namespace {

// e^x for x <= 0, built only from IEEE-754 +, *, floor and ldexp, which are
// exactly rounded everywhere; libm's exp/expf differ by an ulp between
// platforms, and an ulp can move a draw across a boundary. Relative error is
// about 1e-15, far below what a float probability can show.
double deterministic_exp(double x) {
  if (!(x > -104.0)) return 0.0;  // below the smallest float subnormal (also -inf, NaN)
  if (x > 0.0) x = 0.0;           // callers subtract the maximum; guard rounding
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2 = 0.6931471805599453;
  // One operation per statement: compilers may fuse a*b+c within one
  // expression into an FMA (clang does by default where the ISA has one),
  // which rounds differently; across statements they may not.
  const double scaled = x * kLog2e;
  const double n = std::floor(scaled + 0.5);
  const double n_ln2 = n * kLn2;
  const double r = x - n_ln2;  // |r| <= ~0.35
  // Taylor series of e^r to degree 12: truncation error < 1e-15 on |r| <= 0.35.
  static constexpr double kCoefficients[] = {
      1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
      1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
      1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
      1.0};
  double p = kCoefficients[0];
  for (size_t i = 1; i < sizeof kCoefficients / sizeof kCoefficients[0]; ++i) {
    const double pr = p * r;
    p = pr + kCoefficients[i];
  }
  return std::ldexp(p, static_cast<int>(n));
}

// splitmix64: spreads any seed (including 0) into a well-mixed state.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A total order (value descending, id ascending) so that selection and
// sorting give the same result with every standard library.
struct ByValueDesc {
  const float* value;
  bool operator()(int32_t a, int32_t b) const {
    if (value[a] != value[b]) return value[a] > value[b];
    return a < b;
  }
};

}  // namespace

Result<Sampler> Sampler::create(const SamplerParams& p, int32_t vocab_size) {
  if (vocab_size <= 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vocab_size must be > 0, got %d",
                         static_cast<int>(vocab_size));
  }
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "temperature must be finite and >= 0, got %g",
                         static_cast<double>(p.temperature));
  }
  if (p.top_k < 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "top_k must be >= 0, got %d",
                         static_cast<int>(p.top_k));
  }
  // Written as negations so NaN fails too.
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "top_p must be in (0, 1], got %g",
                         static_cast<double>(p.top_p));
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "min_p must be in [0, 1], got %g",
                         static_cast<double>(p.min_p));
  }
  if (!std::isfinite(p.repeat_penalty) || !(p.repeat_penalty > 0.0f)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "repeat_penalty must be finite and > 0, got %g",
                         static_cast<double>(p.repeat_penalty));
  }
  if (p.repeat_last_n < 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "repeat_last_n must be >= 0, got %d",
                         static_cast<int>(p.repeat_last_n));
  }

  for (const auto& [name, v] : {std::pair<const char*, float>{"presence_penalty", p.presence_penalty},
                                {"frequency_penalty", p.frequency_penalty}}) {
    if (!(v >= -2.0f && v <= 2.0f)) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s must be in [-2, 2], got %g", name, static_cast<double>(v));
    }
  }
  for (size_t i = 0; i < p.logit_bias.size(); ++i) {
    const auto [token, bias] = p.logit_bias[i];
    if (token < 0 || token >= vocab_size) {
      return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE, "logit_bias[%zu].token = %d is outside the vocabulary (0..%d)",
                           i, static_cast<int>(token), static_cast<int>(vocab_size - 1));
    }
    if (!(std::isfinite(bias) || bias == -INFINITY)) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "logit_bias[%zu].bias = %g: must be finite or -inf", i,
                           static_cast<double>(bias));
    }
    for (size_t j = 0; j < i; ++j) {
      if (p.logit_bias[j].first == token) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT, "logit_bias[%zu] and logit_bias[%zu] both name token %d", j, i,
                             static_cast<int>(token));
      }
    }
  }

  Sampler s;
  s.params_ = p;
  s.vocab_size_ = vocab_size;
  const size_t n = static_cast<size_t>(vocab_size);
  s.ids_.assign(n, 0);
  s.probs_.assign(n, 0.0f);
  s.seen_.assign(n, 0);
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) s.counts_.assign(n, 0);
  s.reseed(p.seed);
  return s;
}

void Sampler::reseed(uint64_t seed) {
  params_.seed = seed;
  rng_state_ = splitmix64(seed);
  if (rng_state_ == 0) rng_state_ = 0x9E3779B97F4A7C15ull;  // xorshift must not start at 0
}

// xorshift64*: tiny, fast, and its output is fixed by its definition.
uint64_t Sampler::next_u64() {
  uint64_t x = rng_state_;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng_state_ = x;
  return x * 0x2545F4914F6CDD1Dull;
}

double Sampler::next_unit() {
  return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

void Sampler::apply_penalty(float* logits, const int32_t* history, size_t history_len) {
  for (const auto& [token, bias] : params_.logit_bias) logits[token] += bias;
  if (params_.repeat_last_n == 0 || history == nullptr || history_len == 0) return;
  const size_t window = static_cast<size_t>(params_.repeat_last_n);
  const size_t start = history_len > window ? history_len - window : 0;
  if (params_.repeat_penalty != 1.0f) {
    const float penalty = params_.repeat_penalty;
    // seen_ makes each distinct token count once however often it repeats.
    for (size_t i = start; i < history_len; ++i) {
      const int32_t t = history[i];
      if (t < 0 || t >= vocab_size_ || seen_[t]) continue;
      seen_[t] = 1;
      float& l = logits[t];
      l = l > 0.0f ? l / penalty : l * penalty;
    }
    for (size_t i = start; i < history_len; ++i) {
      const int32_t t = history[i];
      if (t >= 0 && t < vocab_size_) seen_[t] = 0;
    }
  }
  if (!counts_.empty()) {
    // Presence and frequency (llama.cpp's order: after the repetition
    // penalty): counted over the window, applied once per distinct token,
    // the counts back to 0 as they are used.
    for (size_t i = start; i < history_len; ++i) {
      const int32_t t = history[i];
      if (t >= 0 && t < vocab_size_) ++counts_[t];
    }
    for (size_t i = start; i < history_len; ++i) {
      const int32_t t = history[i];
      if (t < 0 || t >= vocab_size_ || counts_[t] == 0) continue;
      logits[t] -= static_cast<float>(counts_[t]) * params_.frequency_penalty + params_.presence_penalty;
      counts_[t] = 0;
    }
  }
}

// Lowest id among the maxima; NaN never wins (comparisons with NaN are false).
int32_t Sampler::greedy(const float* logits) const {
  int32_t best = 0;
  float best_value = -INFINITY;
  for (int32_t i = 0; i < vocab_size_; ++i) {
    if (logits[i] > best_value) {
      best_value = logits[i];
      best = i;
    }
  }
  return best;
}

int32_t Sampler::sample(float* logits, const int32_t* history, size_t history_len) {
  if (logits == nullptr || vocab_size_ <= 0) return -1;
  apply_penalty(logits, history, history_len);
  if (params_.temperature == 0.0f) return greedy(logits);

  const int32_t n = vocab_size_;
  const float temperature = params_.temperature;
  for (int32_t i = 0; i < n; ++i) {
    float v = logits[i];
    if (std::isnan(v)) {
      v = -INFINITY;
    } else {
      v = v / temperature;
      // +inf would make inf - inf = NaN below; the largest float keeps the
      // token the winner without poisoning the softmax.
      if (v > FLT_MAX) v = FLT_MAX;
    }
    logits[i] = v;
  }

  int32_t* ids = ids_.data();
  float* probs = probs_.data();
  for (int32_t i = 0; i < n; ++i) ids[i] = i;
  int32_t count = n;
  bool sorted = false;  // ids[0..count) in descending probability order?

  if (params_.top_k > 0 && params_.top_k < n) {
    // Selection is O(n); only the k survivors are sorted.
    const int32_t k = params_.top_k;
    ByValueDesc by_logit{logits};
    std::nth_element(ids, ids + (k - 1), ids + n, by_logit);
    std::sort(ids, ids + k, by_logit);
    count = k;
    sorted = true;
  }

  float max_logit = -INFINITY;
  for (int32_t j = 0; j < count; ++j) max_logit = std::max(max_logit, logits[ids[j]]);
  if (max_logit == -INFINITY) return greedy(logits);  // nothing has any mass

  // Softmax numerators; the subtraction runs in double so FLT_MAX - (-FLT_MAX)
  // does not overflow. The normalization is deferred to the draw.
  double sum = 0.0;
  for (int32_t j = 0; j < count; ++j) {
    const int32_t id = ids[j];
    const float p = static_cast<float>(
        deterministic_exp(static_cast<double>(logits[id]) - static_cast<double>(max_logit)));
    probs[id] = p;
    sum += p;
  }

  if (params_.top_p < 1.0f) {
    const double target = static_cast<double>(params_.top_p) * sum;
    ByValueDesc by_prob{probs};
    // Without top-k, sort only as far as the nucleus reaches: a prefix of 64,
    // doubled while the cumulative mass falls short. Typical nuclei are small.
    int32_t m = sorted ? count : std::min<int32_t>(count, 64);
    int32_t keep = 0;
    for (;;) {
      if (!sorted) std::partial_sort(ids, ids + m, ids + count, by_prob);
      double cumulative = 0.0;
      for (int32_t j = 0; j < m; ++j) {
        cumulative += probs[ids[j]];
        if (cumulative >= target) {
          keep = j + 1;
          break;
        }
      }
      if (keep > 0) break;
      if (m == count) {
        keep = count;  // rounding kept the sum just short of the target
        break;
      }
      m = count - m <= m ? count : m * 2;
    }
    count = keep;
    sorted = true;
  }

  if (params_.min_p > 0.0f) {
    float max_prob = 0.0f;
    for (int32_t j = 0; j < count; ++j) max_prob = std::max(max_prob, probs[ids[j]]);
    const float threshold = params_.min_p * max_prob;
    // Compaction keeps the current order, whichever it is; the most likely
    // token always passes (threshold <= max_prob).
    int32_t kept = 0;
    for (int32_t j = 0; j < count; ++j) {
      if (probs[ids[j]] >= threshold) ids[kept++] = ids[j];
    }
    count = kept;
  }

  // Draw from the renormalized survivors; the order of ids[] is canonical
  // (id order, or the total order above), so the draw is reproducible.
  double total = 0.0;
  for (int32_t j = 0; j < count; ++j) total += probs[ids[j]];
  const double r = next_unit() * total;
  double cumulative = 0.0;
  for (int32_t j = 0; j < count; ++j) {
    cumulative += probs[ids[j]];
    if (r < cumulative) return ids[j];
  }
  return ids[count - 1];  // r rounded onto the very end of the mass
}

}  // namespace ember

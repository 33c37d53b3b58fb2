// Token sampling: greedy, repetition penalty, temperature, top-k, top-p,
// min-p and a seeded draw. The draw uses its own PRNG and its own exp() so
// that the same logits and the same seed give the same token on every
// machine, compiler and thread count (std::random distributions and libm's
// expf are implementation-defined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ember {

// What the sampler does to a row of logits. Defaults are greedy decoding.
struct SamplerParams {
  // 0 = greedy (argmax after the repetition penalty; every other filter is
  // ignored). Must be finite and >= 0.
  float temperature = 0.0f;
  // Keep only the k most likely tokens; 0 = off. Must be >= 0; a value at or
  // above the vocabulary size is the same as off.
  int32_t top_k = 0;
  // Nucleus: keep the smallest set of most likely tokens whose probability
  // reaches top_p (always at least one). In (0, 1]; 1 = off.
  float top_p = 1.0f;
  // Keep tokens whose probability is at least min_p times the most likely
  // one's. In [0, 1]; 0 = off.
  float min_p = 0.0f;
  // CTRL / llama.cpp style: over the distinct tokens among the last
  // repeat_last_n of the history, positive logits are divided by the
  // penalty and negative ones multiplied. Finite and > 0; 1 = off.
  float repeat_penalty = 1.0f;
  // How much history the penalty looks at; 0 = none. Must be >= 0.
  int32_t repeat_last_n = 64;
  // OpenAI-style penalties over the same window (the last repeat_last_n
  // tokens of the history): a token's logit loses frequency_penalty times
  // its count there, and presence_penalty once if it occurs at all. Finite,
  // in [-2, 2] as OpenAI's; 0 = off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Added to the named tokens' logits before every other stage (a bias of
  // -inf bans the token). Ids in [0, vocab_size), each at most once; biases
  // finite or -inf.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Seed of the draw; the same seed gives the same sequence.
  uint64_t seed = 0;
};

// Turns logits into a token id. Owns its scratch (three arrays of
// vocab_size entries, allocated by create()), so sample() never touches the
// heap. Not thread-safe: one sampler per sequence.
class Sampler {
 public:
  // An empty sampler (no vocabulary); exists so Result<Sampler> can hold
  // one. Use create(). sample() on it returns -1.
  Sampler() = default;

  // Validates params and vocab_size (> 0); EMBER_ERR_INVALID_ARGUMENT naming
  // the field and the value otherwise. Allocates all scratch.
  static Result<Sampler> create(const SamplerParams& params, int32_t vocab_size);

  // logits: vocab_size floats, modified in place (logit bias, penalties,
  // temperature, NaN treated as -inf). The chain: logit bias, repetition
  // penalty, presence and frequency penalties, then (temperature 0) argmax,
  // or temperature, top-k, top-p, min-p and a seeded draw. history: the tokens seen so far (prompt and
  // generated), oldest first, for the repetition penalty; may be null when
  // history_len is 0; ids outside the vocabulary are ignored. Returns a
  // token id in [0, vocab_size); with every logit -inf or NaN, returns 0.
  // Returns -1 only for a null logits pointer or an empty sampler.
  int32_t sample(float* logits, const int32_t* history, size_t history_len);

  // Restarts the draw's random sequence as if created with `seed`.
  void reseed(uint64_t seed);

  const SamplerParams& params() const { return params_; }
  int32_t vocab_size() const { return vocab_size_; }

 private:
  void apply_penalty(float* logits, const int32_t* history, size_t history_len);
  int32_t greedy(const float* logits) const;
  uint64_t next_u64();
  double next_unit();  // uniform in [0, 1)

  SamplerParams params_;
  int32_t vocab_size_ = 0;
  uint64_t rng_state_ = 0;
  // Scratch, vocab_size entries each; lifetime = the sampler's.
  std::vector<int32_t> ids_;    // candidate token ids
  std::vector<float> probs_;    // unnormalized probability per token id
  std::vector<uint8_t> seen_;   // marks distinct tokens for the penalty; all 0 between calls
  std::vector<int32_t> counts_; // occurrences in the window (presence/frequency only); all 0 between calls
};

}  // namespace ember

// Synthetic models: deterministic pseudo-random weights of a named shape, for
// demos, tests of quantized paths and benchmarks (speed does not depend on
// the weights' values).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tools/convert/importers.h"

namespace ember {

struct SynthShape {
  std::string name;
  uint32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  uint32_t vocab_size = 0;  // 0: the vocabulary's own size; more than the built-in
                            // vocabulary holds: padded with unused pieces
  uint32_t context = 0;
  uint32_t head_dim = 0;    // 0: dim / n_heads (HParams::explicit_head_dim)
  // The family: "llama" (llama2-style: theta 10000, an output matrix) or
  // "llama3" (theta 500000, tied embeddings, a rope_freqs tensor of Llama
  // 3.1-style frequency factors: scale 8, low/high frequency factors 1 and
  // 4, original context 8192) or "qwen2" (theta 1000000, tied embeddings,
  // half-split RoPE, Q/K/V biases) or "qwen3" (qwen2's theta, tied
  // embeddings and RoPE, per-head Q/K RMSNorm instead of biases) or "phi3"
  // (llama with half-split RoPE and an output matrix; its GGUF fuses Q/K/V
  // and gate/up) or "gemma2" / "gemma3" (heads 2 x dim / n_heads wide unless
  // head_dim says, tied embeddings, post norms, a window of 8 on even layers;
  // gemma2: soft-caps 1.5 (scores) and 2 (logits); gemma3: Q/K norms, theta
  // 1e6 (global, linear factor 8) and 10000 (sliding)).
  std::string arch = "llama";
  // Partial rotary: the first rope_dims elements of each head rotate (even,
  // <= the head width); 0: all of them.
  uint32_t rope_dims = 0;
  // phi3 only: LongRoPE with this original context (rope_factors_long/short
  // tensors of made-up factors, short 1..1.25 and long 1..16 across the
  // pairs, and the attention factor llama.cpp's converter derives:
  // sqrt(1 + ln(context / orig) / ln(orig)) when context > orig, else 1).
  // 0: none.
  uint32_t long_rope_orig = 0;
};

// LongRoPE's synthetic factors for `pairs` rotated pairs (what
// make_synthetic stores; tests recompute the angles from them).
std::vector<float> synth_long_rope_factors(uint32_t pairs, bool long_factors);

// The synthetic families ("llama", "llama3", "qwen2", "qwen3", "phi3",
// "gemma2", "gemma3"); false for another name.
bool synth_arch_known(const std::string& arch);

// Llama 3.1-style RoPE frequency factors for head_dim / 2 pairs (what
// llama.cpp's converter stores as rope_freqs.weight for rope_type llama3).
std::vector<float> llama3_rope_factors(uint32_t head_dim, float theta, float factor, float low_freq_factor,
                                       float high_freq_factor, float original_context);

// tiny, 110m, 0.5b, 1.1b; false for an unknown name.
bool synth_shape(const std::string& name, SynthShape* out);

// A small built-in SentencePiece vocabulary (control tokens, 256 byte
// pieces, printable ASCII), used when no real vocabulary is at hand.
Vocab builtin_vocab();

// Builds a model of `shape` with weights of type `dtype` (norms stay f32).
// vocab_path: a GGUF file (name ending .gguf: its tokenizer.ggml.* whole),
// a llama2.c tokenizer.bin, or "" for the built-in vocabulary.
Result<std::unique_ptr<ImportedModel>> make_synthetic(const SynthShape& shape, DType dtype, uint64_t seed,
                                                      const std::string& vocab_path);

}  // namespace ember

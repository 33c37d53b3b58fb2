// Synthetic models: deterministic pseudo-random weights of a named shape, for
// demos, tests of quantized paths and benchmarks (speed does not depend on
// the weights' values).
#pragma once

#include <memory>
#include <string>

#include "tools/convert/importers.h"

namespace ember {

struct SynthShape {
  std::string name;
  uint32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  uint32_t vocab_size = 0;  // 0: the vocabulary's own size; more than the built-in
                            // vocabulary holds: padded with unused pieces
  uint32_t context = 0;
};

// tiny, 110m, 0.5b, 1.1b; false for an unknown name.
bool synth_shape(const std::string& name, SynthShape* out);

// A small built-in SentencePiece vocabulary (control tokens, 256 byte
// pieces, printable ASCII), used when no real vocabulary is at hand.
Vocab builtin_vocab();

// Builds a model of `shape` with weights of type `dtype` (norms stay f32).
// vocab_path: a llama2.c tokenizer.bin, or "" for the built-in vocabulary.
Result<std::unique_ptr<ImportedModel>> make_synthetic(const SynthShape& shape, DType dtype, uint64_t seed,
                                                      const std::string& vocab_path);

}  // namespace ember

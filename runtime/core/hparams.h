// Hyper-parameters of a llama-family model, as the runtime uses them.
#pragma once

#include <cstdint>

namespace ember {

enum class RopeStyle : uint8_t { Adjacent = 0, Half = 1 };

struct HParams {
  uint32_t dim = 0;
  uint32_t hidden_dim = 0;
  uint32_t n_layers = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t vocab_size = 0;
  uint32_t max_seq_len = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeStyle rope_style = RopeStyle::Adjacent;
  bool tied_embeddings = false;

  uint32_t head_dim() const { return n_heads ? dim / n_heads : 0; }
  uint32_t kv_dim() const { return head_dim() * n_kv_heads; }
};

// Sanity bounds a file must respect; beyond them it is refused before any
// size is computed from it (a hostile file cannot make us allocate).
constexpr uint32_t kMaxLayers = 1024;
constexpr uint32_t kMaxDim = 1u << 16;
constexpr uint32_t kMaxHiddenDim = 1u << 18;
constexpr uint32_t kMaxHeads = 1024;
constexpr uint32_t kMaxVocab = 1u << 20;
constexpr uint32_t kMaxSeqLen = 1u << 20;

}  // namespace ember

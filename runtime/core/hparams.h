// Hyper-parameters of a llama-family model, as the runtime uses them.
#pragma once

#include <cstdint>

namespace ember {

enum class RopeStyle : uint8_t { Adjacent = 0, Half = 1 };

// The model family: which variant of the one forward pass (model/llama_graph)
// the file needs. Stored in files: append, never renumber.
//   Llama: the llama2/3 graph (Mistral, SmolLM2, TinyLlama are llama too).
//   Qwen2: llama plus Q/K/V biases (blk.N.attn_{q,k,v}.bias), half-split RoPE.
//   Qwen3: llama plus a per-head RMSNorm of Q and K before RoPE
//          (blk.N.attn_{q,k}_norm.weight, head_dim wide), half-split RoPE.
//   Phi3: llama with half-split RoPE; GGUF fuses Q/K/V and gate/up, which
//         the importer splits into llama's tensors (lossless: whole rows).
// Gemma2 = 4 and Gemma3 = 5 are taken (another branch).
enum class ModelArch : uint8_t { Llama = 0, Qwen2 = 1, Qwen3 = 2, Phi3 = 3 };
constexpr int kModelArchCount = 4;
// GGUF's general.architecture names ("llama", "qwen2", "qwen3", "phi3").
inline const char* model_arch_name(ModelArch a) {
  switch (a) {
    case ModelArch::Qwen2: return "qwen2";
    case ModelArch::Qwen3: return "qwen3";
    case ModelArch::Phi3: return "phi3";
    default: return "llama";
  }
}
// The rotation llama.cpp applies to an architecture (fixed per architecture
// in its llama_model_rope_type): halves (NEOX) for qwen2, qwen3 and phi3.
inline RopeStyle model_arch_rope_style(ModelArch a) {
  return a == ModelArch::Llama ? RopeStyle::Adjacent : RopeStyle::Half;
}

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
  ModelArch arch = ModelArch::Llama;
  // The width of one attention head (GGUF attention.key_length), or 0 for
  // dim / n_heads. Qwen3 and Gemma heads are wider than dim / n_heads: the
  // queries are n_heads * head_dim wide, the attention output projects back
  // to dim.
  uint32_t explicit_head_dim = 0;

  uint32_t head_dim() const { return explicit_head_dim ? explicit_head_dim : (n_heads ? dim / n_heads : 0); }
  uint32_t q_dim() const { return head_dim() * n_heads; }
  uint32_t kv_dim() const { return head_dim() * n_kv_heads; }
};

// Sanity bounds a file must respect; beyond them it is refused before any
// size is computed from it (a hostile file cannot make us allocate).
constexpr uint32_t kMaxLayers = 1024;
constexpr uint32_t kMaxDim = 1u << 16;
constexpr uint32_t kMaxHiddenDim = 1u << 18;
constexpr uint32_t kMaxHeads = 1024;
constexpr uint32_t kMaxHeadDim = 1024;
constexpr uint32_t kMaxVocab = 1u << 20;
constexpr uint32_t kMaxSeqLen = 1u << 20;

}  // namespace ember

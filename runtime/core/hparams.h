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
//   Gemma2: embeddings scaled by sqrt(dim), GELU(tanh)-gated FFN, norms after
//     the attention and FFN sublayers too (blk.N.post_attention_norm,
//     blk.N.post_ffw_norm), attention and final-logit soft-capping, sliding-
//     window layers (HParams below), half-split RoPE.
//   Gemma3: Gemma2 plus per-head Q/K RMSNorm (blk.N.attn_{q,k}_norm), a RoPE
//     base of its own for the sliding-window layers, no attention soft-cap.
//   Bert: an encoder (model/bert_graph): learned positions, token type 0,
//     layer norms after each sublayer, GELU FFN, bidirectional attention;
//     no logits head (embedding sessions only).
//   NomicBert: Bert with half-split RoPE on q and k instead of learned
//     positions, a SwiGLU FFN, fused qkv split at import, biases optional.
enum class ModelArch : uint8_t {
  Llama = 0, Qwen2 = 1, Qwen3 = 2, Phi3 = 3, Gemma2 = 4, Gemma3 = 5, Bert = 6, NomicBert = 7
};
constexpr int kModelArchCount = 8;
// Whether a stored value names a family this build runs.
inline bool model_arch_known(unsigned v) { return v < static_cast<unsigned>(kModelArchCount); }
// GGUF's general.architecture names ("llama", "qwen2", "qwen3", "phi3",
// "gemma2", "gemma3").
inline const char* model_arch_name(ModelArch a) {
  switch (a) {
    case ModelArch::Qwen2: return "qwen2";
    case ModelArch::Qwen3: return "qwen3";
    case ModelArch::Phi3: return "phi3";
    case ModelArch::Gemma2: return "gemma2";
    case ModelArch::Gemma3: return "gemma3";
    case ModelArch::Bert: return "bert";
    case ModelArch::NomicBert: return "nomic-bert";
    default: return "llama";
  }
}
inline bool model_arch_is_gemma(ModelArch a) { return a == ModelArch::Gemma2 || a == ModelArch::Gemma3; }
// An encoder: bidirectional attention, no logits head (embeddings only).
inline bool model_arch_is_encoder(ModelArch a) { return a == ModelArch::Bert || a == ModelArch::NomicBert; }
// The rotation llama.cpp applies to an architecture (fixed per architecture
// in its llama_model_rope_type): halves (NEOX) for all but llama.
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
  // Gemma's description (0 / 1 = off for every other family):
  // scores = cap * tanh(scores / cap) before the softmax (GGUF
  // attn_logit_softcapping), and the same on the logits (final_logit_softcapping).
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // q.k scale, or 0 for 1 / sqrt(head_dim) (Gemma's 27B models use
  // 1 / sqrt(dim / n_heads)).
  float attn_scale = 0.0f;
  // Sliding-window attention: a layer l with sliding_layer(l) sees the keys
  // in (p - sliding_window, p] from position p. swa_period: layer l slides
  // when l % period < period - 1 (every period-th layer is global); 0 with a
  // window: every layer slides.
  uint32_t sliding_window = 0;
  uint32_t swa_period = 0;
  // RoPE base of the sliding layers, or 0 for rope_theta.
  float rope_theta_swa = 0.0f;
  // Linear RoPE scaling of the global (not sliding) layers: positions are
  // divided by it (GGUF rope.scaling.factor with type linear; Gemma 3 4B).
  float rope_scale_global = 1.0f;
  // Partial rotary (GGUF rope.dimension_count; Phi-4-mini: 96 of 128): the
  // first rope_dims elements of each head rotate, the rest pass through.
  // 0 = head_dim; else even and <= head_dim.
  uint32_t rope_dims = 0;
  // cos/sin multiplied by it (GGUF rope.scaling.attn_factor: LongRoPE's
  // attention factor, which llama.cpp's converter derives from the context
  // ratio); 1 = none.
  float rope_attn_factor = 1.0f;
  // LongRoPE (phi3's rope_factors_long/short tensors): the long factors are
  // used when the session's context exceeds this (GGUF
  // rope.scaling.original_context_length), the short ones otherwise;
  // 0 = max_seq_len (llama.cpp's default, the training context).
  uint32_t rope_orig_context = 0;
  // How the file says its rows become one embedding (GGUF pooling_type,
  // llama.cpp's numbering): -1 unspecified, 0 none, 1 mean, 2 cls (first
  // token), 3 last token, 4 rank (a classifier head's score).
  int8_t pooling = -1;

  uint32_t rotated_dims() const { return rope_dims ? rope_dims : head_dim(); }
  uint32_t long_rope_threshold() const { return rope_orig_context ? rope_orig_context : max_seq_len; }
  bool sliding_layer(uint32_t l) const {
    if (sliding_window == 0) return false;
    return swa_period == 0 || l % swa_period < swa_period - 1;
  }
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

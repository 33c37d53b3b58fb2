// The llama-family forward pass, written once (ARCHITECTURE.md principle 4):
// binds the file's tensors and emits the Graph every backend executes.
#pragma once

#include "core/graph.h"
#include "core/status.h"
#include "format/model_file.h"

namespace ember {

// A tensor of the file by name, or null; the graph's reference to one.
const TensorView* graph_find_tensor(const ModelContents& c, const std::string& name);
WeightRef graph_weight_ref(const TensorView& t);

// GGUF-style tensor names (blk.N.attn_q.weight ...), shapes [rows, cols];
// biases blk.N.attn_q.bias (qwen2); per-head norms blk.N.attn_q_norm.weight
// (qwen3). phi3's fused GGUF tensors arrive split (tools/convert/gguf_import).
std::string llama_tensor_name(const char* base, int layer);
std::string llama_bias_name(const char* base, int layer);

// Checks that every tensor the architecture needs is present with the shape
// the hyper-parameters imply (EMBER_ERR_MISSING_TENSOR, EMBER_ERR_BAD_TENSOR),
// that the optional frequency factors are well formed (f32 [rotated dims /
// 2], finite, > 0: Llama 3.x's rope_freqs.weight, or phi3's LongRoPE pair
// rope_factors_long/short.weight, both or neither), and that the file holds
// no other tensor (EMBER_ERR_UNSUPPORTED naming it: never ignored).
Status check_llama_tensors(const ModelContents& contents);

// Whether `name` is a tensor the llama graph of `hp` reads (its matrices and
// norms, output.weight unless tied, rope_freqs.weight, phi3's
// rope_factors_long/short.weight). Importers refuse the
// others by name.
bool is_llama_tensor(const HParams& hp, const std::string& name);

// What a graph's output rows hold: the logits, or (embeddings) each row's
// final hidden state after the output norm, without the logits head.
enum class GraphOutput : uint8_t { Logits, Embeddings };

// Emits the forward pass for a session shape (n_seqs sequences of `context`
// positions each; a step's logits for up to max_outputs rows, 0: n_seqs). The model must have passed check_llama_tensors.
// LongRoPE: the Rope ops read the long factors when `context` exceeds
// HParams::long_rope_threshold(), else the short ones.
Result<Graph> build_llama_graph(const ModelContents& contents, int32_t context, int32_t max_batch,
                                KvType kv_type_k = KvType::F32, KvType kv_type_v = KvType::F32,
                                int32_t n_seqs = 1, int32_t max_outputs = 0,
                                GraphOutput output = GraphOutput::Logits);

// The llama ops' parameters from the hyper-parameters (what
// build_llama_graph puts on each op; tests building graphs by hand use them
// too). rope_heads: heads in the rotated row (n_heads for q, n_kv_heads for k).
RmsNormParams llama_rmsnorm_params(const HParams& hp);
// freq_factors: the rope_freqs tensor's data, or null.
RopeParams llama_rope_params(const HParams& hp, uint32_t rope_heads, const float* freq_factors = nullptr);
AttentionParams llama_attention_params(const HParams& hp);

}  // namespace ember

// The BERT encoder's forward pass (GGUF "bert": BGE, all-MiniLM, E5), as a
// Graph every backend that has its ops runs: token embeddings plus learned
// positions plus token type 0, a layer norm, then per layer bidirectional
// attention and a GELU FFN, each added to its input and layer-normed. The
// output rows are the last layer's hidden states: an embedding graph only
// (an encoder has no logits head). GGUF "nomic-bert" (nomic-embed-text) is
// the same with half-split RoPE on q and k instead of learned positions and
// a SwiGLU FFN (ffn_gate); its fused attn_qkv is split at import.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/status.h"
#include "format/model_file.h"
#include "model/llama_graph.h"

namespace ember {

// Every tensor the encoder needs, with the shape the hyper-parameters imply
// (EMBER_ERR_MISSING_TENSOR, EMBER_ERR_BAD_TENSOR; norms and biases f32), and
// no other (EMBER_ERR_UNSUPPORTED naming it: a classifier head, cls.*, is a
// reranker's, which ember does not run yet).
Status check_bert_tensors(const ModelContents& contents);
bool is_bert_tensor(const HParams& hp, const std::string& name);

// The encoder's graph for a session shape. EMBER_ERR_UNSUPPORTED for a
// logits graph; EMBER_ERR_INVALID_ARGUMENT for a context past the learned
// positions (hparams max_seq_len).
Result<Graph> build_bert_graph(const ModelContents& contents, int32_t context, int32_t max_batch, KvType kv_type_k,
                               KvType kv_type_v, int32_t n_seqs, GraphOutput output);

}  // namespace ember

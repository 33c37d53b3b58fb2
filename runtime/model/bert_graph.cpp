#include "model/bert_graph.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace ember {
namespace {

struct BertTensor {
  std::string name;
  int64_t rows;  // 0 for vectors
  int64_t cols;
  bool f32_only;
  bool optional;
};

// "blk.N.base", and with ".suffix".
std::string layer_base(int layer, const char* base) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "blk.%d.%s", layer, base);
  return buf;
}
std::string layer_name(int layer, const char* base, const char* suffix) {
  return layer_base(layer, base) + "." + suffix;
}

// The encoder's tensors, in GGUF's names and ember's [rows, cols] shapes.
// Matrices' biases are optional, as llama.cpp's loader has them (BERT's
// files carry them, nomic-bert's none).
std::vector<BertTensor> bert_tensors(const HParams& hp) {
  const int64_t dim = hp.dim, kv = hp.kv_dim(), hidden = hp.hidden_dim;
  const bool nomic = hp.arch == ModelArch::NomicBert;
  std::vector<BertTensor> e;
  e.push_back({"token_embd.weight", hp.vocab_size, dim, false, false});
  if (!nomic) e.push_back({"position_embd.weight", hp.max_seq_len, dim, false, false});
  e.push_back({"token_types.weight", -1, dim, false, true});  // any number of types
  e.push_back({"token_embd_norm.weight", 0, dim, true, false});
  e.push_back({"token_embd_norm.bias", 0, dim, true, false});
  // A reranker's classifier head (engine/embed.h, RankHead): optional.
  e.push_back({"cls.weight", dim, dim, false, true});
  e.push_back({"cls.bias", 0, dim, true, true});
  e.push_back({"cls.output.weight", -1, dim, false, true});  // any number of labels
  e.push_back({"cls.output.bias", 0, -1, true, true});       // cls.output's rows
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const int li = static_cast<int>(l);
    const struct {
      const char* base;
      int64_t rows, cols;
    } mats[] = {{"attn_q", dim, dim}, {"attn_k", kv, dim}, {"attn_v", kv, dim},
                {"attn_output", dim, dim}, {"ffn_up", hidden, dim}, {"ffn_down", dim, hidden}};
    for (const auto& m : mats) {
      e.push_back({layer_name(li, m.base, "weight"), m.rows, m.cols, false, false});
      e.push_back({layer_name(li, m.base, "bias"), 0, m.rows, true, true});
    }
    if (nomic) e.push_back({layer_name(li, "ffn_gate", "weight"), hidden, dim, false, false});
    for (const char* norm : {"attn_output_norm", "layer_output_norm"}) {
      e.push_back({layer_name(li, norm, "weight"), 0, dim, true, false});
      e.push_back({layer_name(li, norm, "bias"), 0, dim, true, false});
    }
  }
  return e;
}

Status check_shape(const BertTensor& e, const TensorView& t) {
  const bool vector_ok = e.rows == 0 && t.n_dims == 1 && (e.cols < 0 ? t.shape[0] >= 1 : t.shape[0] == e.cols);
  const bool matrix_ok = e.rows != 0 && t.n_dims == 2 && (e.rows < 0 ? t.shape[0] >= 1 : t.shape[0] == e.rows) &&
                         t.shape[1] == e.cols;
  if (!vector_ok && !matrix_ok) {
    return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': expected %s [%lld%s], got %d dims [%lld, %lld]",
                         e.name.c_str(), e.rows == 0 ? "a vector" : "a matrix",
                         static_cast<long long>(e.rows == 0 ? e.cols : e.rows),
                         e.rows == 0 ? "" : (", " + std::to_string(e.cols)).c_str(), t.n_dims,
                         static_cast<long long>(t.shape[0]), static_cast<long long>(t.n_dims > 1 ? t.shape[1] : 0));
  }
  if (e.f32_only && t.dtype != DType::F32) {
    return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': norms and biases must be f32, got %s", e.name.c_str(),
                         dtype_name(t.dtype));
  }
  return Status::ok();
}

}  // namespace

bool is_bert_tensor(const HParams& hp, const std::string& name) {
  for (const BertTensor& e : bert_tensors(hp)) {
    if (e.name == name) return true;
  }
  return false;
}

Status check_bert_tensors(const ModelContents& contents) {
  const std::vector<BertTensor> expected = bert_tensors(contents.hparams);
  for (const TensorView& t : contents.tensors) {
    if (!is_bert_tensor(contents.hparams, t.name)) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "tensor '%s' is not part of the bert graph ember runs "
                           "(refused rather than ignored)", t.name.c_str());
    }
  }
  for (const BertTensor& e : expected) {
    const TensorView* t = graph_find_tensor(contents, e.name);
    if (!t) {
      if (e.optional) continue;
      return Status::error(EMBER_ERR_MISSING_TENSOR, "tensor '%s' is required but missing", e.name.c_str());
    }
    EMBER_TRY(check_shape(e, *t));
  }
  // The head's pieces agree: a bias needs its matrix and matches its rows.
  const TensorView* out = graph_find_tensor(contents, "cls.output.weight");
  const TensorView* out_bias = graph_find_tensor(contents, "cls.output.bias");
  if ((out_bias && (!out || out_bias->shape[0] != out->shape[0])) ||
      (graph_find_tensor(contents, "cls.bias") && !graph_find_tensor(contents, "cls.weight"))) {
    return Status::error(EMBER_ERR_BAD_TENSOR,
                         "the classifier head's biases need their matrices, cls.output.bias one value per row of "
                         "cls.output.weight");
  }
  return Status::ok();
}

Result<Graph> build_bert_graph(const ModelContents& contents, int32_t context, int32_t max_batch, KvType kv_type_k,
                               KvType kv_type_v, int32_t n_seqs, GraphOutput output) {
  const HParams& hp = contents.hparams;
  if (output != GraphOutput::Embeddings) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "a bert model is an encoder without a logits head: make an embedding session "
                         "(ember_session_options.embeddings = 1)");
  }
  const bool nomic = hp.arch == ModelArch::NomicBert;
  if (!nomic && context > static_cast<int32_t>(hp.max_seq_len)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "context_length = %d: this bert model has learned positions for %u (its context_length)",
                         context, hp.max_seq_len);
  }
  Graph g;
  g.hparams = hp;
  g.context = context;
  g.max_batch = max_batch;
  g.n_seqs = n_seqs;
  g.max_outputs = max_batch;  // any row may be an output
  g.kv_type_k = kv_type_k;
  g.kv_type_v = kv_type_v;
  g.embeddings = true;
  auto weight = [&](const std::string& name) {
    g.weights.push_back(graph_weight_ref(*graph_find_tensor(contents, name)));
    return static_cast<int32_t>(g.weights.size() - 1);
  };
  auto activation = [&](const char* name, int64_t cols, int32_t rows) {
    g.activations.push_back({name, cols, rows});
    return static_cast<int32_t>(g.activations.size() - 1);
  };
  auto op = [&](OpKind kind, int32_t out, int32_t a, int32_t b = -1, int32_t w = -1) -> Op& {
    Op o;
    o.kind = kind;
    o.out = out;
    o.a = a;
    o.b = b;
    o.weight = w;
    g.ops.push_back(o);
    return g.ops.back();
  };
  auto layernorm = [&](int32_t out, int32_t a, const std::string& base, bool last_row) {
    Op& o = op(OpKind::LayerNorm, out, a, -1, weight(base + ".weight"));
    o.bias = weight(base + ".bias");
    o.params.layernorm.eps = hp.norm_eps;
    o.last_row = last_row;
  };
  // A matmul and its bias.
  auto linear = [&](int32_t out, int32_t a, int li, const char* base) {
    op(OpKind::MatMul, out, a, -1, weight(layer_name(li, base, "weight")));
  };
  // The matrix's bias, where the file has one.
  auto bias = [&](int32_t x, int li, const char* base) {
    const std::string name = layer_name(li, base, "bias");
    if (graph_find_tensor(contents, name)) op(OpKind::BiasAdd, x, x, -1, weight(name));
  };

  const int64_t dim = hp.dim, kv_dim = hp.kv_dim();
  const int32_t B = max_batch;
  const int32_t x = activation("x", dim, B);
  const int32_t q = activation("q", dim, B);
  const int32_t k = activation("k", kv_dim, B);
  const int32_t v = activation("v", kv_dim, B);
  const int32_t att = activation("att", dim, B);
  const int32_t o = activation("o", dim, B);
  const int32_t up = activation("up", hp.hidden_dim, B);
  const int32_t gate = nomic ? activation("gate", hp.hidden_dim, B) : -1;
  const int32_t last = activation("final", dim, B);
  g.activations[last].per_output = true;

  op(OpKind::Embed, x, -1, -1, weight("token_embd.weight"));
  if (graph_find_tensor(contents, "token_types.weight")) {
    op(OpKind::AddRows, x, x, -1, weight("token_types.weight"));  // every token is of type 0
  }
  if (!nomic) op(OpKind::AddRows, x, x, -1, weight("position_embd.weight")).params.add_rows.by_position = true;
  layernorm(x, x, "token_embd_norm", false);
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const int li = static_cast<int>(l);
    linear(q, x, li, "attn_q");
    linear(k, x, li, "attn_k");
    linear(v, x, li, "attn_v");
    bias(q, li, "attn_q");
    bias(k, li, "attn_k");
    bias(v, li, "attn_v");
    if (nomic) {
      // Positions by rotation (half-split pairs, the file's base).
      op(OpKind::Rope, q, q).params.rope = llama_rope_params(hp, hp.n_heads);
      op(OpKind::Rope, k, k).params.rope = llama_rope_params(hp, hp.n_kv_heads);
    }
    Op& a = op(OpKind::Attention, att, q, k);
    a.c = v;
    a.layer = li;
    a.params.attention = llama_attention_params(hp);
    a.params.attention.causal = false;
    linear(o, att, li, "attn_output");
    bias(o, li, "attn_output");
    op(OpKind::Add, o, o, x);
    layernorm(x, o, layer_base(li, "attn_output_norm"), false);
    linear(up, x, li, "ffn_up");
    bias(up, li, "ffn_up");
    int32_t ffn = up;
    if (nomic) {
      linear(gate, x, li, "ffn_gate");
      op(OpKind::SwiGLU, gate, gate, up);  // silu(gate) * up
      ffn = gate;
    } else {
      op(OpKind::Gelu, up, up);
    }
    linear(o, ffn, li, "ffn_down");
    bias(o, li, "ffn_down");
    op(OpKind::Add, o, o, x);
    // The last layer's norm writes the step's output rows.
    const bool final_layer = l + 1 == hp.n_layers;
    layernorm(final_layer ? last : x, o, layer_base(li, "layer_output_norm"), final_layer);
  }
  g.logits = last;
  return g;
}

}  // namespace ember

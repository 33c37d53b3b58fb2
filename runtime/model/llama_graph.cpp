#include "model/llama_graph.h"

#include "model/bert_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ember {
namespace {

struct Expect {
  std::string name;
  int64_t rows;  // 0 for vectors
  int64_t cols;
  bool f32_only;
};

std::vector<Expect> expected_tensors(const HParams& hp) {
  const int64_t dim = hp.dim, q = hp.q_dim(), kv = hp.kv_dim();
  std::vector<Expect> e;
  e.push_back({"token_embd.weight", hp.vocab_size, dim, false});
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const int li = static_cast<int>(l);
    e.push_back({llama_tensor_name("attn_norm", li), 0, dim, true});
    e.push_back({llama_tensor_name("attn_q", li), q, dim, false});
    e.push_back({llama_tensor_name("attn_k", li), kv, dim, false});
    e.push_back({llama_tensor_name("attn_v", li), kv, dim, false});
    if (hp.arch == ModelArch::Qwen2) {
      e.push_back({llama_bias_name("attn_q", li), 0, q, true});
      e.push_back({llama_bias_name("attn_k", li), 0, kv, true});
      e.push_back({llama_bias_name("attn_v", li), 0, kv, true});
    }
    if (hp.arch == ModelArch::Qwen3 || hp.arch == ModelArch::Gemma3) {
      e.push_back({llama_tensor_name("attn_q_norm", li), 0, hp.head_dim(), true});
      e.push_back({llama_tensor_name("attn_k_norm", li), 0, hp.head_dim(), true});
    }
    e.push_back({llama_tensor_name("attn_output", li), dim, q, false});
    if (model_arch_is_gemma(hp.arch)) {
      e.push_back({llama_tensor_name("post_attention_norm", li), 0, dim, true});
      e.push_back({llama_tensor_name("post_ffw_norm", li), 0, dim, true});
    }
    e.push_back({llama_tensor_name("ffn_norm", li), 0, dim, true});
    e.push_back({llama_tensor_name("ffn_gate", li), hp.hidden_dim, dim, false});
    e.push_back({llama_tensor_name("ffn_up", li), hp.hidden_dim, dim, false});
    e.push_back({llama_tensor_name("ffn_down", li), dim, hp.hidden_dim, false});
  }
  e.push_back({"output_norm.weight", 0, dim, true});
  if (!hp.tied_embeddings) e.push_back({"output.weight", hp.vocab_size, dim, false});
  return e;
}

const TensorView* find(const ModelContents& c, const std::string& name) { return graph_find_tensor(c, name); }
WeightRef weight_ref(const TensorView& t) { return graph_weight_ref(t); }

}  // namespace

const TensorView* graph_find_tensor(const ModelContents& c, const std::string& name) {
  for (const auto& t : c.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

WeightRef graph_weight_ref(const TensorView& t) {
  WeightRef w;
  w.name = t.name.c_str();
  w.dtype = t.dtype;
  w.layout = t.layout;
  w.data = t.data;
  w.rows = t.rows();
  w.cols = t.cols();
  w.size = t.size;
  return w;
}

std::string llama_bias_name(const char* base, int layer) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "blk.%d.%s.bias", layer, base);
  return buf;
}

std::string llama_tensor_name(const char* base, int layer) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "blk.%d.%s.weight", layer, base);
  return buf;
}

const char* const kRopeFreqs = "rope_freqs.weight";
const char* const kRopeLong = "rope_factors_long.weight";
const char* const kRopeShort = "rope_factors_short.weight";

namespace {
// phi3's LongRoPE factor tensors (llama.cpp loads them for phi3).
bool is_long_rope_tensor(const HParams& hp, const std::string& name) {
  return hp.arch == ModelArch::Phi3 && (name == kRopeLong || name == kRopeShort);
}

// An f32 [n_rot / 2] vector of finite factors > 0, as each frequency-factor
// tensor must be.
Status check_factor_tensor(const TensorView& f, int64_t half) {
  if (f.n_dims != 1 || f.shape[0] != half || f.dtype != DType::F32) {
    return Status::error(EMBER_ERR_BAD_TENSOR,
                         "tensor '%s': expected f32 [%lld] (rotated dims / 2), got %s with %d dims [%lld]",
                         f.name.c_str(), static_cast<long long>(half), dtype_name(f.dtype), f.n_dims,
                         static_cast<long long>(f.shape[0]));
  }
  const float* v = reinterpret_cast<const float*>(f.data);
  for (int64_t j = 0; j < half; ++j) {
    if (!(v[j] > 0.0f && v[j] < 1e30f)) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s'[%lld] = %g: frequency factors must be finite and > 0",
                           f.name.c_str(), static_cast<long long>(j), v[j]);
    }
  }
  return Status::ok();
}
}  // namespace

bool is_llama_tensor(const HParams& hp, const std::string& name) {
  if (model_arch_is_encoder(hp.arch)) return is_bert_tensor(hp, name);
  if (name == kRopeFreqs || is_long_rope_tensor(hp, name)) return true;
  for (const Expect& e : expected_tensors(hp)) {
    if (e.name == name) return true;
  }
  return false;
}

Status check_llama_tensors(const ModelContents& contents) {
  if (model_arch_is_encoder(contents.hparams.arch)) return check_bert_tensors(contents);
  const std::vector<Expect> expected = expected_tensors(contents.hparams);
  // Every tensor of the file is used: one the graph does not know would
  // change the arithmetic of the model it came from, so it is refused, never
  // dropped.
  for (const TensorView& t : contents.tensors) {
    bool known = t.name == kRopeFreqs || is_long_rope_tensor(contents.hparams, t.name);
    for (size_t i = 0; i < expected.size() && !known; ++i) known = expected[i].name == t.name;
    if (!known) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "tensor '%s' is not part of the llama graph ember runs (refused rather than ignored)",
                           t.name.c_str());
    }
  }
  // Frequency factors, one per rotated pair: Llama 3.x's rope_freqs, or
  // phi3's LongRoPE pair (both or neither; not with rope_freqs, which
  // llama.cpp's phi3 does not read).
  const int64_t half = contents.hparams.rotated_dims() / 2;
  const TensorView* freqs = find(contents, kRopeFreqs);
  const TensorView* lng = find(contents, kRopeLong);
  const TensorView* sht = find(contents, kRopeShort);
  if ((lng != nullptr) != (sht != nullptr)) {
    return Status::error(EMBER_ERR_MISSING_TENSOR, "tensor '%s' is required with '%s' (LongRoPE needs both)",
                         lng ? kRopeShort : kRopeLong, lng ? kRopeLong : kRopeShort);
  }
  if (lng && freqs) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "tensor '%s' together with LongRoPE's '%s': two sets of factors",
                         kRopeFreqs, kRopeLong);
  }
  for (const TensorView* f : {freqs, lng, sht}) {
    if (f) EMBER_TRY(check_factor_tensor(*f, half));
  }
  for (const Expect& e : expected) {
    const TensorView* t = find(contents, e.name);
    if (!t) return Status::error(EMBER_ERR_MISSING_TENSOR, "tensor '%s' is required but missing", e.name.c_str());
    const bool vector_ok = e.rows == 0 && t->n_dims == 1 && t->shape[0] == e.cols;
    const bool matrix_ok = e.rows != 0 && t->n_dims == 2 && t->shape[0] == e.rows && t->shape[1] == e.cols;
    if (!vector_ok && !matrix_ok) {
      if (e.rows == 0) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': expected shape [%lld], got %d dims [%lld, ...]",
                             e.name.c_str(), static_cast<long long>(e.cols), t->n_dims,
                             static_cast<long long>(t->shape[0]));
      }
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': expected shape [%lld, %lld], got %d dims [%lld, %lld]",
                           e.name.c_str(), static_cast<long long>(e.rows), static_cast<long long>(e.cols), t->n_dims,
                           static_cast<long long>(t->shape[0]), static_cast<long long>(t->n_dims > 1 ? t->shape[1] : 0));
    }
    if (e.f32_only && t->dtype != DType::F32) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': norm weights must be f32, got %s", e.name.c_str(),
                           dtype_name(t->dtype));
    }
  }
  return Status::ok();
}

RmsNormParams llama_rmsnorm_params(const HParams& hp) {
  RmsNormParams p;
  p.eps = hp.norm_eps;
  return p;
}

RopeParams llama_rope_params(const HParams& hp, uint32_t rope_heads, const float* freq_factors) {
  RopeParams p;
  p.freq_factors = freq_factors;
  p.head_dim = hp.head_dim();
  p.n_heads = rope_heads;
  p.theta = hp.rope_theta;
  p.style = hp.rope_style;
  p.n_rot = hp.rotated_dims();
  p.mscale = hp.rope_attn_factor;
  return p;
}

AttentionParams llama_attention_params(const HParams& hp) {
  AttentionParams p;
  p.n_heads = hp.n_heads;
  p.n_kv_heads = hp.n_kv_heads;
  p.head_dim = hp.head_dim();
  // As the CPU computed it before the parameter moved onto the op.
  p.scale = hp.attn_scale != 0.0f ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  p.softcap = hp.attn_softcap;
  return p;
}

Result<Graph> build_llama_graph(const ModelContents& contents, int32_t context, int32_t max_batch,
                                KvType kv_type_k, KvType kv_type_v, int32_t n_seqs, int32_t max_outputs,
                                GraphOutput output) {
  if (model_arch_is_encoder(contents.hparams.arch)) {
    return build_bert_graph(contents, context, max_batch, kv_type_k, kv_type_v, n_seqs, output);
  }
  const HParams& hp = contents.hparams;
  Graph g;
  g.n_seqs = n_seqs;
  g.max_outputs = max_outputs > 0 ? max_outputs : n_seqs;
  g.kv_type_k = kv_type_k;
  g.kv_type_v = kv_type_v;
  g.hparams = hp;
  g.context = context;
  g.max_batch = max_batch;

  auto weight = [&](const std::string& name) {
    g.weights.push_back(weight_ref(*find(contents, name)));
    return static_cast<int32_t>(g.weights.size() - 1);
  };
  int32_t k_act = -1;  // the keys' activation (set below, before any op)
  int cur_layer = -1;  // the layer being emitted (its RoPE base and window)
  // Per-pair frequency factors (check_llama_tensors checked them): Llama
  // 3.x's rope_freqs, or phi3's LongRoPE factors chosen by the session's
  // context as llama.cpp chooses them (long when the context exceeds the
  // original one, short otherwise).
  const TensorView* freqs = find(contents, kRopeFreqs);
  if (!freqs && find(contents, kRopeLong)) {
    const bool long_ctx = static_cast<uint32_t>(std::max(context, 0)) > hp.long_rope_threshold();
    freqs = find(contents, long_ctx ? kRopeLong : kRopeShort);
  }
  const float* freq_factors = freqs ? reinterpret_cast<const float*>(freqs->data) : nullptr;
  auto activation = [&](const char* name, int64_t cols, int32_t rows) {
    g.activations.push_back({name, cols, rows});
    return static_cast<int32_t>(g.activations.size() - 1);
  };
  auto op = [&](OpKind kind, int32_t out, int32_t a, int32_t b = -1, int32_t c = -1, int32_t w = -1,
                int32_t layer = -1, bool last_row = false) {
    Op o;
    // Each op carries what it needs; Rope's row holds n_heads (q) or
    // n_kv_heads (k) heads.
    switch (kind) {
      case OpKind::RmsNorm: o.params.rmsnorm = llama_rmsnorm_params(hp); break;
      case OpKind::Rope:
        o.params.rope = llama_rope_params(hp, a == k_act ? hp.n_kv_heads : hp.n_heads, freq_factors);
        if (cur_layer >= 0 && hp.sliding_layer(static_cast<uint32_t>(cur_layer))) {
          // Gemma's sliding layers: their own base, no linear scaling.
          if (hp.rope_theta_swa != 0.0f) o.params.rope.theta = hp.rope_theta_swa;
        } else if (hp.rope_scale_global != 1.0f) {
          o.params.rope.freq_scale = 1.0f / hp.rope_scale_global;
        }
        break;
      case OpKind::Attention:
        o.params.attention = llama_attention_params(hp);
        if (hp.sliding_layer(static_cast<uint32_t>(layer))) o.params.attention.window = hp.sliding_window;
        break;
      default: break;
    }
    o.kind = kind;
    o.out = out;
    o.a = a;
    o.b = b;
    o.c = c;
    o.weight = w;
    o.layer = layer;
    o.last_row = last_row;
    g.ops.push_back(o);
  };

  const int64_t dim = hp.dim, q_dim = hp.q_dim(), kv_dim = hp.kv_dim();
  const int32_t B = max_batch;
  // Lifetime: x lives across the whole step; the others within one layer.
  const int32_t x = activation("x", dim, B);
  const int32_t h = activation("h", dim, B);
  const int32_t q = activation("q", q_dim, B);
  const int32_t k = activation("k", kv_dim, B);
  k_act = k;
  const int32_t v = activation("v", kv_dim, B);
  const int32_t att = activation("att", q_dim, B);
  const int32_t o = activation("o", dim, B);
  const int32_t gate = activation("gate", hp.hidden_dim, B);
  const int32_t up = activation("up", hp.hidden_dim, B);
  // The logits head: one row per sequence a step may finish, and its
  // drafted rows (Graph::max_outputs).
  const int32_t last = activation("final", dim, g.max_outputs);
  g.activations[last].per_output = true;
  const bool embeddings = output == GraphOutput::Embeddings;
  const int32_t logits = embeddings ? -1 : activation("logits", hp.vocab_size, g.max_outputs);
  if (!embeddings) g.activations[logits].per_output = true;

  const bool gemma = model_arch_is_gemma(hp.arch);
  const int32_t embd = weight("token_embd.weight");
  op(OpKind::Embed, x, -1, -1, -1, embd);
  // Gemma scales the embeddings by sqrt(dim), computed in f32 as llama.cpp does.
  if (gemma) g.ops.back().params.embed.scale = std::sqrt(static_cast<float>(hp.dim));
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const int li = static_cast<int>(l);
    cur_layer = li;
    op(OpKind::RmsNorm, h, x, -1, -1, weight(llama_tensor_name("attn_norm", li)));
    op(OpKind::MatMul, q, h, -1, -1, weight(llama_tensor_name("attn_q", li)));
    op(OpKind::MatMul, k, h, -1, -1, weight(llama_tensor_name("attn_k", li)));
    op(OpKind::MatMul, v, h, -1, -1, weight(llama_tensor_name("attn_v", li)));
    if (hp.arch == ModelArch::Qwen2) {
      // After the three matmuls, which stay one fused step.
      op(OpKind::BiasAdd, q, q, -1, -1, weight(llama_bias_name("attn_q", li)));
      op(OpKind::BiasAdd, k, k, -1, -1, weight(llama_bias_name("attn_k", li)));
      op(OpKind::BiasAdd, v, v, -1, -1, weight(llama_bias_name("attn_v", li)));
    }
    if (hp.arch == ModelArch::Qwen3 || hp.arch == ModelArch::Gemma3) {
      // Each head of q and k RMS-normalized on its own (one head_dim-wide
      // weight for all heads), before RoPE.
      op(OpKind::RmsNorm, q, q, -1, -1, weight(llama_tensor_name("attn_q_norm", li)));
      g.ops.back().params.rmsnorm.group = hp.head_dim();
      op(OpKind::RmsNorm, k, k, -1, -1, weight(llama_tensor_name("attn_k_norm", li)));
      g.ops.back().params.rmsnorm.group = hp.head_dim();
    }
    op(OpKind::Rope, q, q);
    op(OpKind::Rope, k, k);
    op(OpKind::Attention, att, q, k, v, -1, li);
    op(OpKind::MatMul, o, att, -1, -1, weight(llama_tensor_name("attn_output", li)));
    // Gemma: the sublayer's output is normalized before the residual add.
    int32_t sub = o;
    if (gemma) {
      op(OpKind::RmsNorm, h, o, -1, -1, weight(llama_tensor_name("post_attention_norm", li)));
      sub = h;
    }
    op(OpKind::Add, x, x, sub);
    op(OpKind::RmsNorm, h, x, -1, -1, weight(llama_tensor_name("ffn_norm", li)));
    op(OpKind::MatMul, gate, h, -1, -1, weight(llama_tensor_name("ffn_gate", li)));
    op(OpKind::MatMul, up, h, -1, -1, weight(llama_tensor_name("ffn_up", li)));
    op(gemma ? OpKind::GeGLU : OpKind::SwiGLU, gate, gate, up);
    op(OpKind::MatMul, o, gate, -1, -1, weight(llama_tensor_name("ffn_down", li)));
    if (gemma) op(OpKind::RmsNorm, h, o, -1, -1, weight(llama_tensor_name("post_ffw_norm", li)));
    op(OpKind::Add, x, x, sub);
  }
  // Only the last position's logits are needed for generation (one per
  // sequence in a batched step).
  op(OpKind::RmsNorm, last, x, -1, -1, weight("output_norm.weight"), -1, /*last_row=*/true);
  if (embeddings) {
    // The normalized hidden states are the output; the head is not read.
    g.embeddings = true;
    g.logits = last;
    return g;
  }
  op(OpKind::MatMul, logits, last, -1, -1, hp.tied_embeddings ? embd : weight("output.weight"));
  if (hp.final_softcap != 0.0f) {
    op(OpKind::Softcap, logits, logits);
    g.ops.back().params.softcap.cap = hp.final_softcap;
  }
  g.logits = logits;
  return g;
}

}  // namespace ember

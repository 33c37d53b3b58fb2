#include "core/graph.h"

#include <cmath>

namespace ember {

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::Embed: return "embed";
    case OpKind::RmsNorm: return "rmsnorm";
    case OpKind::MatMul: return "matmul";
    case OpKind::Rope: return "rope";
    case OpKind::Attention: return "attention";
    case OpKind::Add: return "add";
    case OpKind::SwiGLU: return "swiglu";
    case OpKind::BiasAdd: return "bias-add";
    case OpKind::GeGLU: return "geglu";
    case OpKind::Softcap: return "softcap";
    case OpKind::LayerNorm: return "layernorm";
    case OpKind::Gelu: return "gelu";
    case OpKind::AddRows: return "add-rows";
  }
  return "unknown";
}

Status check_op_params(const Graph& graph) {
  const int32_t n_acts = static_cast<int32_t>(graph.activations.size());
  auto cols = [&](int32_t id) { return id >= 0 && id < n_acts ? graph.activations[id].cols : -1; };
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& op = graph.ops[i];
    if (op.kind == OpKind::Rope) {
      const RopeParams& p = op.params.rope;
      if (p.head_dim == 0 || p.head_dim % 2 || p.n_heads == 0 ||
          static_cast<int64_t>(p.n_heads) * p.head_dim != cols(op.a)) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "op %zu (rope): %u heads of head_dim %u do not fill its row of %lld (head_dim must be even)",
                             i, p.n_heads, p.head_dim, static_cast<long long>(cols(op.a)));
      }
      if (p.n_rot % 2 || p.n_rot > p.head_dim) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "op %zu (rope): n_rot = %u must be even and <= head_dim %u", i,
                             p.n_rot, p.head_dim);
      }
      if (!(p.mscale > 0.0f && p.mscale < 1e3f)) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "op %zu (rope): mscale = %g must be in (0, 1e3)", i, p.mscale);
      }
    } else if (op.kind == OpKind::RmsNorm) {
      const uint32_t group = op.params.rmsnorm.group;
      const int64_t width = group ? group : cols(op.a);
      const bool ok = width > 0 && cols(op.a) % width == 0 && cols(op.out) == cols(op.a) && op.weight >= 0 &&
                      op.weight < static_cast<int32_t>(graph.weights.size()) &&
                      graph.weights[op.weight].dtype == DType::F32 &&
                      graph.weights[op.weight].rows * graph.weights[op.weight].cols == width;
      if (!ok) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "op %zu (rmsnorm): group %u does not divide its row of %lld, or the weight is not an f32 "
                             "vector of the group's width",
                             i, group, static_cast<long long>(cols(op.a)));
      }
    } else if (op.kind == OpKind::BiasAdd) {
      const bool ok = op.weight >= 0 && op.weight < static_cast<int32_t>(graph.weights.size()) &&
                      graph.weights[op.weight].dtype == DType::F32 &&
                      graph.weights[op.weight].rows * graph.weights[op.weight].cols == cols(op.a) &&
                      cols(op.out) == cols(op.a);
      if (!ok) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "op %zu (bias-add): the bias is not an f32 vector of its row's %lld",
                             i, static_cast<long long>(cols(op.a)));
      }
    } else if (op.kind == OpKind::LayerNorm) {
      auto f32_vector = [&](int32_t w) {
        return w >= 0 && w < static_cast<int32_t>(graph.weights.size()) && graph.weights[w].dtype == DType::F32 &&
               graph.weights[w].rows * graph.weights[w].cols == cols(op.a);
      };
      if (!f32_vector(op.weight) || !f32_vector(op.bias) || cols(op.out) != cols(op.a) ||
          !(op.params.layernorm.eps > 0.0f)) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "op %zu (layernorm): its weight and bias must be f32 vectors of its row's %lld, eps > 0",
                             i, static_cast<long long>(cols(op.a)));
      }
    } else if (op.kind == OpKind::AddRows) {
      const bool ok = op.weight >= 0 && op.weight < static_cast<int32_t>(graph.weights.size()) &&
                      graph.weights[op.weight].cols == cols(op.a) && cols(op.out) == cols(op.a) &&
                      graph.weights[op.weight].rows >= (op.params.add_rows.by_position ? graph.context : 1);
      if (!ok) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "op %zu (add-rows): its weight must have its row's %lld columns and a row for each of "
                             "the %d positions",
                             i, static_cast<long long>(cols(op.a)), graph.context);
      }
    } else if (op.kind == OpKind::Softcap) {
      if (!(op.params.softcap.cap > 0.0f) || cols(op.out) != cols(op.a)) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "op %zu (softcap): cap = %g must be > 0", i,
                             op.params.softcap.cap);
      }
    } else if (op.kind == OpKind::Attention) {
      const AttentionParams& p = op.params.attention;
      if (!(p.softcap >= 0.0f)) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "op %zu (attention): softcap = %g must be >= 0", i, p.softcap);
      }
      const int64_t q_dim = static_cast<int64_t>(p.n_heads) * p.head_dim;
      const int64_t kv_dim = static_cast<int64_t>(p.n_kv_heads) * p.head_dim;
      if (p.head_dim == 0 || p.n_kv_heads == 0 || p.n_heads % p.n_kv_heads || q_dim != cols(op.a) ||
          q_dim != cols(op.out) || kv_dim != cols(op.b) || kv_dim != cols(op.c) ||
          kv_dim != graph.hparams.kv_dim()) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "op %zu (attention): %u heads, %u kv heads of head_dim %u do not match its rows "
                             "(q %lld, k %lld) or the cache's kv_dim %u",
                             i, p.n_heads, p.n_kv_heads, p.head_dim, static_cast<long long>(cols(op.a)),
                             static_cast<long long>(cols(op.b)), graph.hparams.kv_dim());
      }
    }
  }
  return Status::ok();
}

const Op* rope_table_op(const Graph& graph) {
  for (const Op& op : graph.ops) {
    if (op.kind == OpKind::Rope) return &op;
  }
  return nullptr;
}

namespace {
bool same_table(const RopeParams& a, const RopeParams& b) {
  return a.head_dim == b.head_dim && a.theta == b.theta && a.freq_factors == b.freq_factors &&
         a.freq_scale == b.freq_scale && rope_rotated_dims(a) == rope_rotated_dims(b) && a.mscale == b.mscale;
}
}  // namespace

bool rope_ops_share_table(const Graph& graph) {
  const Op* first = rope_table_op(graph);
  for (const Op& op : graph.ops) {
    if (op.kind == OpKind::Rope && !same_table(op.params.rope, first->params.rope)) return false;
  }
  return true;
}

std::vector<const Op*> rope_tables(const Graph& graph) {
  std::vector<const Op*> tables;
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::Rope) continue;
    bool found = false;
    for (const Op* t : tables) found |= same_table(t->params.rope, op.params.rope);
    if (!found) tables.push_back(&op);
  }
  return tables;
}

int rope_table_index(const Graph& graph, const Op& op) {
  if (op.kind != OpKind::Rope) return -1;
  return rope_table_of(graph, op.params.rope);
}

int rope_table_of(const Graph& graph, const RopeParams& rope) {
  const std::vector<const Op*> tables = rope_tables(graph);
  for (size_t i = 0; i < tables.size(); ++i) {
    if (same_table(tables[i]->params.rope, rope)) return static_cast<int>(i);
  }
  return -1;
}

float rope_inv_freq(const RopeParams& rope, int64_t j) {
  const float f = 1.0f / std::pow(rope.theta, static_cast<float>(2 * j) / static_cast<float>(rope_rotated_dims(rope)));
  const float g = rope.freq_factors != nullptr ? f / rope.freq_factors[j] : f;
  return rope.freq_scale != 1.0f ? g * rope.freq_scale : g;
}

RopeParams key_rope(const Graph& graph, int32_t layer) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& att = graph.ops[i];
    if (att.kind != OpKind::Attention || att.layer != layer) continue;
    // The latest Rope on the keys before this op (layers share activations).
    for (size_t j = i; j-- > 0;) {
      if (graph.ops[j].kind == OpKind::Rope && graph.ops[j].a == att.b) return graph.ops[j].params.rope;
    }
    break;
  }
  return RopeParams{};
}

}  // namespace ember

namespace ember {

Status check_step(const Graph& graph, const StepArgs& step) {
  const int32_t n = step.n_tokens;
  if (n <= 0 || n > graph.max_batch) {
    return Status::error(EMBER_ERR_INTERNAL, "step of %d tokens: the plan holds 1..%d", n, graph.max_batch);
  }
  if (!step.positions && (step.pos < 0 || step.pos + n > graph.context)) {
    return Status::error(EMBER_ERR_INTERNAL, "step of %d tokens at %d outside the context of %d", n, step.pos,
                         graph.context);
  }
  for (int32_t i = 0; i < n; ++i) {
    if (step.positions && (step.positions[i] < 0 || step.positions[i] >= graph.context)) {
      return Status::error(EMBER_ERR_INTERNAL, "step row %d: position %d outside the context of %d", i,
                           step.positions[i], graph.context);
    }
    if (step.seqs && (step.seqs[i] < 0 || step.seqs[i] >= graph.n_seqs)) {
      return Status::error(EMBER_ERR_INTERNAL, "step row %d: sequence %d outside 0..%d", i, step.seqs[i],
                           graph.n_seqs - 1);
    }
  }
  if (step.out_rows) {
    if (step.n_out <= 0 || step.n_out > graph_max_outputs(graph)) {
      return Status::error(EMBER_ERR_INTERNAL, "step with %d output rows: the plan holds 1..%d", step.n_out,
                           graph_max_outputs(graph));
    }
    for (int32_t j = 0; j < step.n_out; ++j) {
      if (step.out_rows[j] < 0 || step.out_rows[j] >= n) {
        return Status::error(EMBER_ERR_INTERNAL, "step output %d: row %d outside 0..%d", j, step.out_rows[j], n - 1);
      }
    }
  } else if (step.n_out != 1) {
    return Status::error(EMBER_ERR_INTERNAL, "step with n_out = %d but no output rows", step.n_out);
  }
  return Status::ok();
}

}  // namespace ember

namespace ember {

int32_t kv_layer_rows(const Graph& graph, int32_t layer) {
  if (graph.kv_rows.empty() || layer < 0 || layer >= static_cast<int32_t>(graph.kv_rows.size())) return graph.context;
  return graph.kv_rows[layer];
}

void set_sliding_kv_rings(Graph* graph) {
  graph->kv_rows.assign(graph->hparams.n_layers, graph->context);
  for (const Op& op : graph->ops) {
    if (op.kind != OpKind::Attention || op.layer < 0 || op.layer >= static_cast<int32_t>(graph->kv_rows.size())) continue;
    const int64_t window = op.params.attention.window;
    if (window == 0) continue;
    const int64_t ring = window + graph->max_batch;
    if (ring < graph->context) graph->kv_rows[op.layer] = static_cast<int32_t>(ring);
  }
}

}  // namespace ember

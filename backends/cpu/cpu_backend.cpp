#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ember {
namespace {

// Sum of a[i] * b[i]. Eight partial sums so the compiler can keep them in
// vector registers; bound by memory bandwidth on decode.
float dot_f32(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  }
  float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  ss /= static_cast<float>(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (ss * x[i]);
}

}  // namespace

uint64_t CpuBackend::scratch_bytes(const Graph& graph) const {
  int64_t max_cols = 0;
  for (const auto& w : graph.weights) max_cols = std::max(max_cols, w.cols);
  const uint64_t half = graph.hparams.head_dim() / 2;
  uint64_t floats = 2 * half * static_cast<uint64_t>(graph.max_batch) + half +
                    cpu_attention_scratch_floats(graph.hparams, graph.context) + static_cast<uint64_t>(max_cols);
  return floats * sizeof(float) + 5 * 64;  // each piece 64-byte aligned
}

Status CpuBackend::prepare(const Graph& graph, const MemoryPlan& plan, uint8_t* arena) {
  graph_ = &graph;
  const HParams& hp = graph.hparams;
  acts_.resize(graph.activations.size());
  for (size_t i = 0; i < acts_.size(); ++i) {
    acts_[i] = reinterpret_cast<float*>(arena + plan.activation_offsets[i]);
  }
  kv_.resize(hp.n_layers);
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    CpuKvLayer& kv = kv_[l];
    kv.k = arena + plan.kv_offset + l * plan.kv_layer_bytes;
    kv.v = kv.k + plan.kv_v_offset;
    kv.k_type = graph.kv_type_k;
    kv.v_type = graph.kv_type_v;
    kv.k_row_bytes = plan.kv_k_row_bytes;
    kv.v_row_bytes = plan.kv_v_row_bytes;
  }
  for (const auto& w : graph.weights) max_cols_ = std::max(max_cols_, w.cols);
  const int64_t half = hp.head_dim() / 2;
  uint8_t* p = arena + plan.scratch_offset;
  auto take = [&p](int64_t floats) {
    float* f = reinterpret_cast<float*>(p);
    p += (floats * sizeof(float) + 63) / 64 * 64;
    return f;
  };
  scratch_.rope_cos = take(half * graph.max_batch);
  scratch_.rope_sin = take(half * graph.max_batch);
  scratch_.rope_freq = take(half);
  scratch_.attention = take(cpu_attention_scratch_floats(hp, graph.context));
  scratch_.row = take(max_cols_);
  if (p > arena + plan.scratch_offset + plan.scratch_bytes) {
    return Status::error(EMBER_ERR_INTERNAL, "cpu scratch layout exceeds the plan");
  }
  // Inverse frequencies, computed as the reference does (float powf) so that
  // f32 logits match it closely.
  const int64_t head_dim = hp.head_dim();
  for (int64_t j = 0; j < half; ++j) {
    scratch_.rope_freq[j] = 1.0f / std::pow(hp.rope_theta, static_cast<float>(2 * j) / static_cast<float>(head_dim));
  }
  return Status::ok();
}

void CpuBackend::run_matmul(const Op& op, int32_t n) {
  const WeightRef& w = graph_->weights[op.weight];
  const float* in = act(op.a);
  float* out = act(op.out);
  const int64_t cols = w.cols;
  uint64_t row_bytes = 0;
  dtype_bytes(w.dtype, static_cast<uint64_t>(cols), &row_bytes);
  for (int64_t r = 0; r < w.rows; ++r) {
    const uint8_t* src = w.data + r * row_bytes;
    const float* row;
    if (w.dtype == DType::F32) {
      row = reinterpret_cast<const float*>(src);
    } else {
      dequantize_row(w.dtype, src, scratch_.row, cols);
      row = scratch_.row;
    }
    for (int32_t i = 0; i < n; ++i) out[i * w.rows + r] = dot_f32(row, in + i * cols, cols);
  }
}

Status CpuBackend::execute(const StepArgs& step) {
  const Graph& g = *graph_;
  const HParams& hp = g.hparams;
  const int32_t n = step.n_tokens;
  if (n <= 0 || n > g.max_batch || step.pos < 0 || step.pos + n > g.context) {
    return Status::error(EMBER_ERR_INTERNAL, "cpu backend: step of %d tokens at %d outside the plan", n, step.pos);
  }
  // RoPE angles for this step's positions, shared by every layer.
  const int64_t half = hp.head_dim() / 2;
  for (int32_t i = 0; i < n; ++i) {
    const float pos = static_cast<float>(step.pos + i);
    for (int64_t j = 0; j < half; ++j) {
      const float angle = pos * scratch_.rope_freq[j];
      scratch_.rope_cos[i * half + j] = std::cos(angle);
      scratch_.rope_sin[i * half + j] = std::sin(angle);
    }
  }
  for (const Op& op : g.ops) {
    switch (op.kind) {
      case OpKind::Embed: {
        const WeightRef& w = g.weights[op.weight];
        uint64_t row_bytes = 0;
        dtype_bytes(w.dtype, static_cast<uint64_t>(w.cols), &row_bytes);
        for (int32_t i = 0; i < n; ++i) {
          dequantize_row(w.dtype, w.data + static_cast<uint64_t>(step.tokens[i]) * row_bytes, act(op.out) + i * w.cols,
                         w.cols);
        }
        break;
      }
      case OpKind::RmsNorm: {
        const WeightRef& w = g.weights[op.weight];
        const float* wf = reinterpret_cast<const float*>(w.data);
        const int64_t cols = g.activations[op.a].cols;
        if (op.last_row) {
          rmsnorm(act(op.out), act(op.a) + (n - 1) * cols, wf, cols, hp.norm_eps);
        } else {
          for (int32_t i = 0; i < n; ++i) rmsnorm(act(op.out) + i * cols, act(op.a) + i * cols, wf, cols, hp.norm_eps);
        }
        break;
      }
      case OpKind::MatMul:
        run_matmul(op, g.activations[op.a].rows == 1 ? 1 : n);
        break;
      case OpKind::Rope:
        cpu_rope(hp, act(op.a), g.activations[op.a].cols, n, scratch_.rope_cos, scratch_.rope_sin);
        break;
      case OpKind::Attention:
        // Keys and values of this step first; the causal bound keeps each
        // row from seeing later ones.
        cpu_kv_store(hp, kv_[op.layer], act(op.b), act(op.c), n, step.pos);
        cpu_attention(hp, kv_[op.layer], act(op.a), act(op.out), step.pos, 0, n, 0, static_cast<int32_t>(hp.n_heads),
                      g.context, scratch_.attention);
        break;
      case OpKind::Add: {
        const int64_t count = g.activations[op.a].cols * n;
        float* o = act(op.out);
        const float* a = act(op.a);
        const float* b = act(op.b);
        for (int64_t i = 0; i < count; ++i) o[i] = a[i] + b[i];
        break;
      }
      case OpKind::SwiGLU: {
        const int64_t count = g.activations[op.a].cols * n;
        float* o = act(op.out);
        const float* a = act(op.a);
        const float* b = act(op.b);
        for (int64_t i = 0; i < count; ++i) o[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
        break;
      }
    }
  }
  if (step.logits) std::memcpy(step.logits, act(g.logits), hp.vocab_size * sizeof(float));
  return Status::ok();
}

}  // namespace ember

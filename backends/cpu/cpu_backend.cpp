#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "platforms/linux/cpu_features.h"

namespace ember {
namespace {

// Element-wise ops smaller than this run on the calling thread: a pool
// round-trip costs more than the work.
constexpr int64_t kParallelElements = 1 << 15;

int64_t round64(int64_t floats) { return (floats * 4 + 63) / 64 * 16; }

// Everything the backend takes from the scratch region, in floats (64-byte
// aligned pieces), for a graph and a thread count.
struct ScratchSizes {
  int64_t half, attention, row, rows, act_q, act_blocks, total;
};

// Quantized activations only for graphs with quantized weights; one
// conversion row per thread only for weights with no direct kernel (BF16,
// the K-quants, ...; thread 0's row always: context shifting uses it).
ScratchSizes scratch_sizes(const Graph& graph, int n_threads) {
  ScratchSizes s{};
  int64_t max_cols = 0, max_qcols = 0;
  bool fallback = false;
  for (const auto& w : graph.weights) {
    max_cols = std::max(max_cols, w.cols);
    if (w.dtype == DType::Q8_0 || w.dtype == DType::Q4_0) max_qcols = std::max(max_qcols, w.cols);
    fallback |= w.dtype != DType::F32 && w.dtype != DType::F16 && w.dtype != DType::Q8_0 && w.dtype != DType::Q4_0;
  }
  const int32_t heads = static_cast<int32_t>((graph.hparams.n_heads + n_threads - 1) / n_threads);
  s.half = graph.hparams.head_dim() / 2;
  s.attention = round64(cpu_attention_scratch_floats(graph.hparams, graph.context, heads));
  s.row = round64(max_cols);
  s.rows = fallback ? n_threads : 1;
  s.act_q = max_qcols ? round64((static_cast<int64_t>(graph.max_batch) * max_qcols + 3) / 4) : 0;
  s.act_blocks = max_qcols ? round64(static_cast<int64_t>(graph.max_batch) * (max_qcols / 32)) : 0;
  s.total = 2 * round64(s.half * graph.max_batch) + round64(s.half) + n_threads * s.attention + s.rows * s.row +
            s.act_q + 2 * s.act_blocks;
  return s;
}

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options)
    : options_(options), selected_(cpu_select_kernels()) {
  n_threads_ = options.n_threads > 0 ? options.n_threads : cpu_features().physical_cores;
  if (n_threads_ < 1) n_threads_ = 1;
  if (selected_.is_ok()) k_ = selected_.value();
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::describe() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "cpu (%s, %d thread%s)", k_ ? k_->name : "no kernels", n_threads_,
                n_threads_ == 1 ? "" : "s");
  return buf;
}

uint64_t CpuBackend::scratch_bytes(const Graph& graph) const {
  return static_cast<uint64_t>(scratch_sizes(graph, n_threads_).total) * sizeof(float);
}

Status CpuBackend::prepare(const Graph& graph, const ArenaLayout& plan, uint8_t* arena) {
  if (!selected_.is_ok()) return selected_.status();
  if (!pool_) {
    EMBER_ASSIGN_OR_RETURN(pool_, ThreadPool::create(n_threads_));
  }
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
  const ScratchSizes s = scratch_sizes(graph, n_threads_);
  attention_floats_ = s.attention;
  float* p = reinterpret_cast<float*>(arena + plan.scratch_offset);
  auto take = [&p](int64_t floats) {
    float* f = p;
    p += floats;
    return f;
  };
  scratch_.rope_cos = take(round64(s.half * graph.max_batch));
  scratch_.rope_sin = take(round64(s.half * graph.max_batch));
  scratch_.rope_freq = take(round64(s.half));
  scratch_.attention = take(n_threads_ * s.attention);
  scratch_.row = take(s.rows * s.row);
  scratch_.act_q = reinterpret_cast<int8_t*>(take(s.act_q));
  scratch_.act_d = take(s.act_blocks);
  scratch_.act_bias = reinterpret_cast<int32_t*>(take(s.act_blocks));
  if (reinterpret_cast<uint8_t*>(p) > arena + plan.scratch_offset + plan.scratch_bytes ||
      (plan.scratch_offset % 64) != 0) {
    return Status::error(EMBER_ERR_INTERNAL, "cpu scratch layout exceeds the plan");
  }
  // Inverse frequencies, computed as the reference does (float powf) so that
  // f32 logits match it closely.
  const int64_t head_dim = hp.head_dim();
  for (int64_t j = 0; j < s.half; ++j) {
    scratch_.rope_freq[j] = 1.0f / std::pow(hp.rope_theta, static_cast<float>(2 * j) / static_cast<float>(head_dim));
  }
  return Status::ok();
}

// Quantizes n rows of activation `id` (cols floats each) into scratch, once
// per value: matmuls reading the same activation (q, k, v; gate, up) share it.
void CpuBackend::quantize_input(int32_t id, int64_t cols, int32_t n) {
  if (quantized_ == id) return;
  const float* in = act(id);
  const int64_t nb = cols / 32;
  auto body = [&](int chunk, int n_chunks, int) {
    int64_t t0, t1;
    split_range(n, 1, chunk, n_chunks, &t0, &t1);
    for (int64_t t = t0; t < t1; ++t) {
      k_->quantize_q8(in + t * cols, cols, scratch_.act_q + t * cols, scratch_.act_d + t * nb,
                      scratch_.act_bias + t * nb);
    }
  };
  pool_->run(std::min<int>(n, pool_->size()), body);
  quantized_ = id;
}

// Runs `count` consecutive matmuls that read the same input (q, k, v; gate,
// up) in one pool dispatch: one wake-up instead of several. Each matmul's
// rows are split over the threads in runs of 16 (whole kernel tiles); each
// output is computed by exactly one thread, whatever the thread count.
void CpuBackend::run_matmuls(const Op* ops, int count, int32_t n) {
  struct Job {
    const WeightRef* w;
    float* out;
    QMatmulFn qfn;
    FMatmulFn ffn;
  };
  Job jobs[kMaxFusedMatmuls];
  const float* in = act(ops[0].a);
  const int64_t cols = graph_->weights[ops[0].weight].cols;
  bool quantized = false;
  for (int m = 0; m < count; ++m) {
    const WeightRef& w = graph_->weights[ops[m].weight];
    Job& j = jobs[m];
    j = {&w, act(ops[m].out), nullptr, nullptr};
    switch (w.dtype) {
      case DType::Q8_0:
        if (w.layout == Layout::Rows16) {
          j.qfn = n == 1 ? k_->q8_0_rows16_gemv : k_->q8_0_rows16_gemm;
        } else {
          j.qfn = n == 1 ? k_->q8_0_gemv : k_->q8_0_gemm;
        }
        break;
      case DType::Q4_0:
        if (w.layout == Layout::Rows16) {
          j.qfn = n == 1 ? k_->q4_0_rows16_gemv : k_->q4_0_rows16_gemm;
        } else {
          j.qfn = n == 1 ? k_->q4_0_gemv : k_->q4_0_gemm;
        }
        break;
      case DType::F32: j.ffn = n == 1 ? k_->f32_gemv : k_->f32_gemm; break;
      case DType::F16: j.ffn = n == 1 ? k_->f16_gemv : k_->f16_gemm; break;
      default: break;  // no direct kernel: the dequantize fallback below
    }
    quantized |= j.qfn != nullptr;
  }
  QuantActs qa;
  if (quantized) {
    quantize_input(ops[0].a, cols, n);
    qa.q = scratch_.act_q;
    qa.d = scratch_.act_d;
    qa.bias = scratch_.act_bias;
    qa.cols = cols;
  }
  // Prefill: four chunks per thread, so that a thread slow to start (or
  // descheduled) is balanced by the others. Decode: one chunk per thread. A
  // decode matmul streams its weights in microseconds, and every claimed
  // chunk costs atomics shared between cores: 8 to 64 chunks per matmul
  // measured 5-12% slower per token than one per thread (0.5b q4_0, 2
  // threads, this machine).
  const int n_chunks = n == 1 ? pool_->size() : 4 * pool_->size();
  pool_->run(n_chunks, [&](int chunk, int n_chunks, int thread) {
    for (int m = 0; m < count; ++m) {
      const Job& j = jobs[m];
      const int64_t rows = j.w->rows;
      int64_t r0, r1;
      split_range(rows, 16, chunk, n_chunks, &r0, &r1);
      if (r0 >= r1) continue;
      if (j.qfn) {
        j.qfn(j.w->data, cols, r0, r1, qa, n, j.out, rows);
      } else if (j.ffn) {
        j.ffn(j.w->data, cols, r0, r1, in, n, j.out, rows);
      } else {
        // No kernel of its own (BF16, K-quants, ...): one row at a time
        // through f32.
        float* row = scratch_.row + thread * round64(max_cols_);
        uint64_t row_bytes = 0;
        dtype_bytes(j.w->dtype, static_cast<uint64_t>(cols), &row_bytes);
        for (int64_t r = r0; r < r1; ++r) {
          dequantize_row(j.w->dtype, j.w->data + r * row_bytes, row, cols);
          for (int32_t i = 0; i < n; ++i) {
            k_->f32_gemv(reinterpret_cast<const uint8_t*>(row), cols, 0, 1, in + i * cols, 1, j.out + i * rows + r,
                         rows);
          }
        }
      }
    }
  });
  for (int m = 0; m < count; ++m) {
    if (ops[m].out == quantized_) quantized_ = -1;
  }
}

Status CpuBackend::execute(const StepArgs& step) {
  const Graph& g = *graph_;
  const HParams& hp = g.hparams;
  const int32_t n = step.n_tokens;
  if (n <= 0 || n > g.max_batch || step.pos < 0 || step.pos + n > g.context) {
    return Status::error(EMBER_ERR_INTERNAL, "cpu backend: step of %d tokens at %d outside the plan", n, step.pos);
  }
  quantized_ = -1;
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
  // Element-wise ops over `count` floats: split in runs of 64 when large.
  auto elementwise = [&](int64_t count, auto&& fn) {
    if (count < kParallelElements) {
      fn(0, count);
      return;
    }
    pool_->run(pool_->size(), [&](int chunk, int n_chunks, int) {
      int64_t b, e;
      split_range(count, 64, chunk, n_chunks, &b, &e);
      if (b < e) fn(b, e);
    });
  };
  for (size_t oi = 0; oi < g.ops.size(); ++oi) {
    const Op& op = g.ops[oi];
    switch (op.kind) {
      case OpKind::Embed: {
        const WeightRef& w = g.weights[op.weight];
        for (int32_t i = 0; i < n; ++i) {
          // A Rows16 row is gathered into the conversion row first.
          const uint8_t* row = layout_row(w.layout, w.dtype, w.data, w.cols, step.tokens[i],
                                          reinterpret_cast<uint8_t*>(scratch_.row));
          dequantize_row(w.dtype, row, act(op.out) + i * w.cols, w.cols);
        }
        break;
      }
      case OpKind::RmsNorm: {
        const WeightRef& w = g.weights[op.weight];
        const float* wf = reinterpret_cast<const float*>(w.data);
        const int64_t cols = g.activations[op.a].cols;
        if (op.last_row) {
          k_->rmsnorm(act(op.out), act(op.a) + (n - 1) * cols, wf, cols, hp.norm_eps);
        } else if (n * cols < kParallelElements) {
          for (int32_t i = 0; i < n; ++i) k_->rmsnorm(act(op.out) + i * cols, act(op.a) + i * cols, wf, cols, hp.norm_eps);
        } else {
          pool_->run(pool_->size(), [&](int chunk, int n_chunks, int) {
            int64_t b, e;
            split_range(n, 1, chunk, n_chunks, &b, &e);
            for (int64_t i = b; i < e; ++i) {
              k_->rmsnorm(act(op.out) + i * cols, act(op.a) + i * cols, wf, cols, hp.norm_eps);
            }
          });
        }
        break;
      }
      case OpKind::MatMul: {
        // Following matmuls of the same input join this dispatch, as long
        // as none of them overwrites that input.
        int count = 1;
        while (count < kMaxFusedMatmuls && oi + count < g.ops.size() && op.out != op.a) {
          const Op& next = g.ops[oi + count];
          if (next.kind != OpKind::MatMul || next.a != op.a || next.out == op.a) break;
          ++count;
        }
        run_matmuls(&op, count, g.activations[op.a].rows == 1 ? 1 : n);
        oi += count - 1;
        break;
      }
      case OpKind::Rope:
        cpu_rope(hp, act(op.a), g.activations[op.a].cols, n, scratch_.rope_cos, scratch_.rope_sin);
        break;
      case OpKind::Attention: {
        // Keys and values of this step first; the causal bound keeps each
        // row from seeing later ones. Heads split over the threads, each
        // with its own scratch.
        cpu_kv_store(hp, kv_[op.layer], act(op.b), act(op.c), n, step.pos);
        const CpuKvLayer& kv = kv_[op.layer];
        const float* q = act(op.a);
        float* out = act(op.out);
        // As many chunks as threads: the per-thread scratch holds
        // ceil(n_heads / threads) heads' scores.
        pool_->run(pool_->size(), [&](int chunk, int n_chunks, int thread) {
          int64_t h0, h1;
          split_range(hp.n_heads, 1, chunk, n_chunks, &h0, &h1);
          if (h0 >= h1) return;
          cpu_attention(hp, kv, q, out, step.pos, 0, n, static_cast<int32_t>(h0), static_cast<int32_t>(h1), g.context,
                        scratch_.attention + thread * attention_floats_,
                        AttentionKernels{k_->dot, k_->axpy, k_->dot_rows, k_->axpy_rows, k_->softmax});
        });
        break;
      }
      case OpKind::Add: {
        float* o = act(op.out);
        const float* a = act(op.a);
        const float* b = act(op.b);
        elementwise(g.activations[op.a].cols * n, [&](int64_t i0, int64_t i1) { k_->add(o + i0, a + i0, b + i0, i1 - i0); });
        break;
      }
      case OpKind::SwiGLU: {
        float* o = act(op.out);
        const float* a = act(op.a);
        const float* b = act(op.b);
        elementwise(g.activations[op.a].cols * n,
                    [&](int64_t i0, int64_t i1) { k_->swiglu(o + i0, a + i0, b + i0, i1 - i0); });
        break;
      }
    }
    // Any op writing the quantized activation makes its copy stale.
    if (op.kind != OpKind::MatMul && (op.out == quantized_ || (op.kind == OpKind::Rope && op.a == quantized_))) {
      quantized_ = -1;
    }
  }
  if (step.logits) std::memcpy(step.logits, act(g.logits), hp.vocab_size * sizeof(float));
  return Status::ok();
}

}  // namespace ember

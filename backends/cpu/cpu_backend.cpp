#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "platforms/linux/cpu_features.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace ember {
namespace {

// Element-wise ops smaller than this run on the calling thread: a pool
// round-trip costs more than the work.
constexpr int64_t kParallelElements = 1 << 15;
// Chunk boundaries: matmul rows in whole kernel tiles; element-wise floats
// in whole cache lines and vectors. Prefill splits rows in runs of 32: the
// AVX-512 rows16 gemms of the 32-element types take two 16-row groups at
// once (quant_matmul_avx512vnni.inc, rows16_tile_groups), a lone group
// the slower one-group tile.
constexpr int32_t kMatmulRowSplit = 16;
constexpr int32_t kMatmulRowSplitPrefill = 32;
constexpr int32_t kElementwiseSplit = 64;

int64_t round64(int64_t floats) { return (floats * 4 + 63) / 64 * 16; }

// One row's layer norm: the mean and variance in double, as ggml sums them.
void cpu_layernorm(float* out, const float* a, const float* w, const float* b, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += a[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = a[i] - mean;
    var += static_cast<double>(d) * d;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(var / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = (a[i] - mean) * scale * w[i] + b[i];
}

// Every Attention op of the graph is causal.
bool graph_causal(const Graph& g) {
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::Attention && !op.params.attention.causal) return false;
  }
  return true;
}

// Everything the backend takes from the scratch region, in floats (64-byte
// aligned pieces), for a graph and a thread count.
struct ScratchSizes {
  int64_t half, tables, attention, partials, row, rows, act_q, act_blocks, act_sum16, act_bf16, total;
};

// The largest attention of a graph: head size, heads, group, cache row.
AttentionShape attention_shape(const Graph& graph) {
  AttentionShape a;
  a.head_dim = static_cast<int32_t>(graph.hparams.head_dim());
  a.n_heads = static_cast<int32_t>(graph.hparams.n_heads);
  a.kv_dim = static_cast<int32_t>(graph.hparams.kv_dim());
  a.context = graph.context;
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::Attention || op.params.attention.n_kv_heads == 0) continue;
    const AttentionParams& p = op.params.attention;
    a.head_dim = std::max<int32_t>(a.head_dim, static_cast<int32_t>(p.head_dim));
    a.n_heads = std::max<int32_t>(a.n_heads, static_cast<int32_t>(p.n_heads));
    a.group = std::max<int32_t>(a.group, static_cast<int32_t>(p.n_heads / p.n_kv_heads));
    a.kv_dim = std::max<int32_t>(a.kv_dim, static_cast<int32_t>(p.head_dim * p.n_kv_heads));
  }
  return a;
}

// Whether BF16 Rows16 matrices run on BF16 dot products in this process
// (dispatch.h, cpu_choose_bf16_dot): their activations need a rounded copy.
bool bf16_dot_selected() {
  Result<CpuFamilies> f = cpu_select_families();
  return f.is_ok() && f.value().bf16_dot;
}

// Quantized activations only for graphs with weights of the int8 family;
// one conversion row (embedding gathers and context shifting use it).
ScratchSizes scratch_sizes(const Graph& graph, int n_threads, bool bf16_dot) {
  ScratchSizes s{};
  int64_t max_cols = 0, max_qcols = 0, max_bcols = 0;
  bool sum16 = false;
  for (const auto& w : graph.weights) {
    max_cols = std::max(max_cols, w.cols);
    if (bf16_dot && w.dtype == DType::BF16 && w.layout == Layout::Rows16) max_bcols = std::max(max_bcols, w.cols);
    const CpuMatmulFamily f = cpu_matmul_family(w.dtype, w.layout);
    if (f == CpuMatmulFamily::Int8) max_qcols = std::max(max_qcols, w.cols);
    sum16 |= f == CpuMatmulFamily::Int8 && cpu_dtype_needs_sum16(w.dtype);
  }
  s.half = graph.hparams.head_dim() / 2;
  // One angle table per distinct Rope (Gemma's sliding and global layers: two).
  s.tables = std::max<int64_t>(1, static_cast<int64_t>(rope_tables(graph).size()));
  const AttentionShape shape = attention_shape(graph);
  s.attention = round64(cpu_attention_thread_floats(shape));
  s.partials = round64(cpu_attention_partial_floats(shape));
  s.row = round64(max_cols);
  // Two with an AddRows op: its gathered bytes, then its floats.
  s.rows = 1;
  for (const Op& op : graph.ops) s.rows = op.kind == OpKind::AddRows ? 2 : s.rows;
  s.act_q = max_qcols ? round64((static_cast<int64_t>(graph.max_batch) * max_qcols + 3) / 4) : 0;
  s.act_blocks = max_qcols ? round64(static_cast<int64_t>(graph.max_batch) * (max_qcols / 32)) : 0;
  // int16 per 16 activations: two per float.
  s.act_sum16 = sum16 ? round64((static_cast<int64_t>(graph.max_batch) * (max_qcols / 16) + 1) / 2) : 0;
  // BF16 per activation: two per float.
  s.act_bf16 = max_bcols ? round64((static_cast<int64_t>(graph.max_batch) * max_bcols + 1) / 2) : 0;
  s.total = s.tables * (2 * round64(s.half * graph.max_batch) + round64(s.half)) + n_threads * s.attention + s.partials + s.rows * s.row +
            s.act_q + 2 * s.act_blocks + s.act_sum16 + s.act_bf16;
  return s;
}


// Each group of 16 activation bytes' sum (cols a multiple of 32). SSE2 and
// aarch64 sum 16 bytes in two instructions; the scalar loop took 0.5-1.1%
// of a 512-token prefill's samples.
void sum16_row(const int8_t* q, int64_t cols, int16_t* s16) {
  for (int64_t g = 0; g < cols / 16; ++g) {
#if defined(__SSE2__)
    // |sum| <= 2048: q + 128 as unsigned bytes, summed by psadbw, less 16 x 128.
    const __m128i u = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + g * 16)), _mm_set1_epi8(-128));
    const __m128i sad = _mm_sad_epu8(u, _mm_setzero_si128());
    s16[g] = static_cast<int16_t>(_mm_cvtsi128_si32(sad) + _mm_extract_epi16(sad, 4) - 16 * 128);
#elif defined(__aarch64__)
    s16[g] = static_cast<int16_t>(vaddlvq_s8(vld1q_s8(q + g * 16)));
#else
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) sum += q[g * 16 + j];
    s16[g] = static_cast<int16_t>(sum);
#endif
  }
}

}  // namespace

CpuMatmulFamily cpu_matmul_family(DType dtype, Layout layout) {
  switch (dtype) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS: return layout == Layout::RowMajor || layout == Layout::Rows16 ? CpuMatmulFamily::Int8
                                                                                       : CpuMatmulFamily::None;
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::IQ4_NL: return layout == Layout::RowMajor ? CpuMatmulFamily::Int8 : CpuMatmulFamily::None;
    case DType::F32:
    case DType::F16:
    case DType::BF16: return layout == Layout::RowMajor || layout == Layout::Rows16 ? CpuMatmulFamily::Float
                                                                                     : CpuMatmulFamily::None;
    default: return CpuMatmulFamily::None;
  }
}

int cpu_threads(const CpuOptions& options) {
  if (options.thread_pool) return thread_pool_threads(*options.thread_pool);
  const int n = options.n_threads > 0 ? options.n_threads : cpu_features().physical_cores;
  return n < 1 ? 1 : n;
}

uint64_t cpu_scratch_bytes(const Graph& graph, const BackendOptions& options) {
  return static_cast<uint64_t>(scratch_sizes(graph, cpu_threads(options.cpu), bf16_dot_selected()).total) * sizeof(float);
}

DeviceInfo cpu_probe() {
  const CpuFeatures& f = cpu_features();
  DeviceInfo d;
  d.type = DeviceType::Cpu;
  d.name = f.model_name;
  d.memory_bytes = f.memory_bytes;
  Result<CpuFamilies> k = cpu_select_families();
  d.available = k.is_ok();
  if (!k.is_ok()) d.reason = k.status().message();
  return d;
}

Status cpu_supports(const Graph& graph) {
  // Every dtype core/dtype.h knows has a kernel family in the layouts the
  // converter writes; anything else is refused here, before any memory.
  for (const WeightRef& w : graph.weights) {
    if (!dtype_is_valid(static_cast<uint8_t>(w.dtype))) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "cpu: weight '%s' has dtype %u, which the cpu backend does not run",
                           w.name, static_cast<unsigned>(w.dtype));
    }
    if (cpu_matmul_family(w.dtype, w.layout) == CpuMatmulFamily::None) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "cpu: weight '%s' (%s, %s) has no matmul kernel", w.name,
                           dtype_name(w.dtype), layout_name(w.layout));
    }
  }
  for (KvType t : {graph.kv_type_k, graph.kv_type_v}) {
    if (t != KvType::F32 && t != KvType::F16 && t != KvType::Q8_0) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "cpu: kv type %u is not supported", static_cast<unsigned>(t));
    }
  }
  // Every OpKind runs on the cpu (the execute switch covers them all), with
  // a few RoPE angle tables.
  EMBER_TRY(check_op_params(graph));
  if (rope_tables(graph).size() > static_cast<size_t>(kMaxRopeTables)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "cpu: rope ops with %zu different theta/scaling in one graph (at most %d)",
                         rope_tables(graph).size(), kMaxRopeTables);
  }
  // The scratch (scratch_sizes) is planned from the model's head_dim and
  // n_heads: the ops may not need more.
  for (const Op& op : graph.ops) {
    if ((op.kind == OpKind::Rope && (op.params.rope.head_dim != graph.hparams.head_dim() ||
                                     rope_rotated_dims(op.params.rope) != rope_rotated_dims(rope_table_op(graph)->params.rope))) ||
        (op.kind == OpKind::Attention && op.params.attention.n_heads > graph.hparams.n_heads)) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "cpu: %s op with other heads than the model's (head_dim %u, %u heads, "
                           "every rope rotating as many dims)",
                           op_name(op.kind), graph.hparams.head_dim(), graph.hparams.n_heads);
    }
  }
  return Status::ok();
}

CpuBackend::CpuBackend(const CpuOptions& options)
    : options_(options), selected_(cpu_select_families()), pool_(options.thread_pool) {
  n_threads_ = cpu_threads(options);
  if (selected_.is_ok()) {
    // The decode prefetch distance for this CPU (dispatch.h), set before
    // any kernel runs; a bad EMBER_DECODE_PREFETCH fails the backend as a
    // bad EMBER_ISA does.
    Result<uint64_t> prefetch = cpu_select_decode_prefetch();
    if (prefetch.is_ok()) {
      decode_prefetch_ = prefetch.value();
    } else {
      selected_ = prefetch.status();
    }
  }
  if (selected_.is_ok()) k_ = cpu_kernels_for(selected_.value());
  select_providers();
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::describe() const {
  char buf[128];
  if (selected_.is_ok()) {
    char prefetch[32];
    if (decode_prefetch_ == 0) {
      std::snprintf(prefetch, sizeof prefetch, "off");
    } else {
      std::snprintf(prefetch, sizeof prefetch, "%llu B", static_cast<unsigned long long>(decode_prefetch_));
    }
    std::snprintf(buf, sizeof buf, "cpu (int8: %s%s, float: %s%s, %d thread%s, decode prefetch %s)",
                  cpu_int8_family_name(selected_.value().int8), selected_.value().amx ? "+amx" : "",
                  cpu_float_family_name(selected_.value().fp), selected_.value().bf16_dot ? "+bf16dot" : "",
                  n_threads_, n_threads_ == 1 ? "" : "s", prefetch);
    // Who runs the float matmuls (kernel_providers.h; chosen at construction).
    if (providers_status_.is_ok()) {
      return std::string(buf, std::strlen(buf) - 1) + ", float matmuls: " + providers_.describe() + ")";
    }
  } else {
    std::snprintf(buf, sizeof buf, "cpu (no kernels, %d thread%s)", n_threads_, n_threads_ == 1 ? "" : "s");
  }
  return buf;
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
  // Ring layers' shifts (graph.h kv_rows): per layer and sequence, 0 until
  // context shifting moves them.
  ring_shift_.assign(static_cast<size_t>(hp.n_layers) * graph.n_seqs, 0);
  if (plan.kv_k_offsets.size() != hp.n_layers || plan.kv_v_offsets.size() != hp.n_layers) {
    return Status::error(EMBER_ERR_INTERNAL, "cpu backend: the plan has no per-layer KV offsets");
  }
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    CpuKvLayer& kv = kv_[l];
    kv.k = arena + plan.kv_k_offsets[l];
    kv.v = arena + plan.kv_v_offsets[l];
    kv.k_type = graph.kv_type_k;
    kv.v_type = graph.kv_type_v;
    kv.k_row_bytes = plan.kv_k_row_bytes;
    kv.v_row_bytes = plan.kv_v_row_bytes;
    kv.rows = kv_layer_rows(graph, static_cast<int32_t>(l));
    kv.ring = kv.rows < graph.context;
    kv.shift = ring_shift_.data() + static_cast<size_t>(l) * graph.n_seqs;
  }
  for (const Op& op : graph.ops) {
    if (op.kind == OpKind::Attention && op.layer >= 0 && op.layer < static_cast<int32_t>(hp.n_layers)) {
      kv_[op.layer].window = static_cast<int32_t>(op.params.attention.window);
    }
  }
  row_pos_.assign(static_cast<size_t>(graph.max_batch), 0);
  row_seq_.assign(static_cast<size_t>(graph.max_batch), 0);
  row_visible_.assign(graph_causal(graph) ? 0 : static_cast<size_t>(graph.max_batch), 0);
  seq_end_.assign(row_visible_.empty() ? 0 : static_cast<size_t>(graph.n_seqs), 0);
  const ScratchSizes s = scratch_sizes(graph, n_threads_, k_.bf16_round != nullptr);
  attention_floats_ = s.attention;
  float* p = reinterpret_cast<float*>(arena + plan.scratch_offset);
  auto take = [&p](int64_t floats) {
    float* f = p;
    p += floats;
    return f;
  };
  rope_tables_ = static_cast<int32_t>(s.tables);
  rope_stride_ = round64(s.half * graph.max_batch);
  rope_freq_stride_ = round64(s.half);
  scratch_.rope_cos = take(s.tables * rope_stride_);
  scratch_.rope_sin = take(s.tables * rope_stride_);
  scratch_.rope_freq = take(s.tables * rope_freq_stride_);
  scratch_.attention = take(n_threads_ * s.attention);
  scratch_.attention_partials = take(s.partials);
  attention_shape_ = attention_shape(graph);
  scratch_.row = take(s.rows * s.row);
  scratch_.act_q = reinterpret_cast<int8_t*>(take(s.act_q));
  scratch_.act_d = take(s.act_blocks);
  scratch_.act_bias = reinterpret_cast<int32_t*>(take(s.act_blocks));
  scratch_.act_sum16 = s.act_sum16 ? reinterpret_cast<int16_t*>(take(s.act_sum16)) : nullptr;
  scratch_.act_bf16 = s.act_bf16 ? reinterpret_cast<uint16_t*>(take(s.act_bf16)) : nullptr;
  if (reinterpret_cast<uint8_t*>(p) > arena + plan.scratch_offset + plan.scratch_bytes ||
      (plan.scratch_offset % 64) != 0) {
    return Status::error(EMBER_ERR_INTERNAL, "cpu scratch layout exceeds the plan");
  }
  // Inverse frequencies, computed as the reference does (float powf) so that
  // f32 logits match it closely; one table per distinct Rope (cpu_supports
  // checks every Rope has the model's head_dim).
  EMBER_TRY(cpu_supports(graph));
  // Angles for the rotated pairs only (n_rot / 2 per position; cpu_supports
  // checks every Rope rotates as many).
  const std::vector<const Op*> tables = rope_tables(graph);
  const int64_t rotated = tables.empty() ? 0 : rope_rotated_dims(tables[0]->params.rope);
  rope_half_ = std::min<int64_t>(rotated / 2, s.half);
  for (size_t t = 0; t < tables.size(); ++t) {
    for (int64_t j = 0; j < rope_half_; ++j) {
      scratch_.rope_freq[t * rope_freq_stride_ + j] = rope_inv_freq(tables[t]->params.rope, j);
    }
  }
  rope_tables_ = static_cast<int32_t>(tables.size());
  EMBER_TRY(prepare_providers(graph));  // XNNPACK's operators, when it runs any family
  return lower(graph);
}

// The graph as a flat list of steps. Matmuls of one input that follow each
// other join one step (one pool dispatch), as long as none of them
// overwrites that input. Which step quantizes its input and which reuses the
// copy in scratch follows the op list alone: a copy stays valid until an op
// writes its activation (a matmul's output, any op's out, RoPE's in-place
// input), and every execute starts with none.
Status CpuBackend::lower(const Graph& g) {
  attention_k_ = AttentionKernels{k_.dot_rows, k_.axpy_rows, k_.exp_sum, k_.f16_widen, k_.attn_scores, k_.attn_scores_f16,
                                  k_.axpy_rows_f16};
  steps_.clear();
  matmuls_.clear();
  steps_.reserve(g.ops.size());
  matmuls_.reserve(g.ops.size());
  int32_t quantized = -1;  // activation whose quantized copy scratch holds
  for (size_t oi = 0; oi < g.ops.size(); ++oi) {
    const Op& op = g.ops[oi];
    CpuStep st;
    st.out = op.out >= 0 ? act(op.out) : nullptr;
    st.a = op.a >= 0 ? act(op.a) : nullptr;
    st.b = op.b >= 0 ? act(op.b) : nullptr;
    st.c = op.c >= 0 ? act(op.c) : nullptr;
    st.cols = op.a >= 0 ? g.activations[op.a].cols : 0;
    switch (op.kind) {
      case OpKind::Embed:
        st.kind = CpuStepKind::Embed;
        st.weight = &g.weights[op.weight];
        st.scale = op.params.embed.scale;
        break;
      case OpKind::Softcap:
        st.kind = CpuStepKind::Softcap;
        st.scale = op.params.softcap.cap;
        st.one_row = g.activations[op.a].rows == 1 || g.activations[op.a].per_output;
        st.split = kElementwiseSplit;
        break;
      case OpKind::GeGLU:
        st.kind = CpuStepKind::GeGLU;
        st.split = kElementwiseSplit;
        break;
      case OpKind::RmsNorm:
        st.kind = CpuStepKind::RmsNorm;
        st.weight = &g.weights[op.weight];
        st.rmsnorm = k_.rmsnorm;
        st.eps = op.params.rmsnorm.eps;
        if (op.params.rmsnorm.group != 0) {  // check_op_params: it divides the row
          st.groups = static_cast<int32_t>(st.cols / op.params.rmsnorm.group);
          st.cols = op.params.rmsnorm.group;
        }
        st.one_row = op.last_row;
        st.split = 1;
        break;
      case OpKind::MatMul: {
        int count = 1;
        while (count < kMaxFusedMatmuls && oi + count < g.ops.size() && op.out != op.a) {
          const Op& next = g.ops[oi + count];
          if (next.kind != OpKind::MatMul || next.a != op.a || next.out == op.a) break;
          ++count;
        }
        st.kind = CpuStepKind::MatMuls;
        st.split = kMatmulRowSplit;
        st.one_row = g.activations[op.a].rows == 1 || g.activations[op.a].per_output;
        st.cols = g.weights[op.weight].cols;
        st.first = static_cast<int32_t>(matmuls_.size());
        st.count = count;
        for (int m = 0; m < count; ++m) {
          const Op& mo = g.ops[oi + m];
          const WeightRef& w = g.weights[mo.weight];
          CpuMatmul mm;
          mm.w = w.data;
          mm.dtype = w.dtype;
          mm.rows = w.rows;
          mm.out = act(mo.out);
          {
            uint64_t rb = 0;
            mm.row_bytes = dtype_bytes(w.dtype, static_cast<uint64_t>(w.cols), &rb) ? static_cast<int64_t>(rb) : 0;
          }
          switch (cpu_matmul_family(w.dtype, w.layout)) {
            case CpuMatmulFamily::Int8: {
              const QMatmulPair fns = cpu_quant_matmuls(k_, w.dtype, w.layout);
              if (fns.gemv == nullptr || fns.gemm == nullptr) {
                return Status::error(EMBER_ERR_INTERNAL, "cpu backend: weight '%s' (%s, %s) has no int8 kernel",
                                     w.name, dtype_name(w.dtype), layout_name(w.layout));
              }
              mm.q_gemv = fns.gemv;
              mm.q_gemm = fns.gemm;
              st.uses_q8 = true;
              break;
            }
            case CpuMatmulFamily::Float: {
              const FMatmulPair fns = cpu_float_matmuls(k_, w.dtype, w.layout);
              if (fns.gemv == nullptr || fns.gemm == nullptr) {
                return Status::error(EMBER_ERR_INTERNAL, "cpu backend: weight '%s' (%s, %s) has no float kernel",
                                     w.name, dtype_name(w.dtype), layout_name(w.layout));
              }
              mm.f_gemv = fns.gemv;
              mm.f_gemm = fns.gemm;
              if (w.dtype == DType::BF16 && w.layout == Layout::Rows16 && k_.bf16_rows16_dot_gemm != nullptr &&
                  scratch_.act_bf16 != nullptr) {
                mm.d_gemv = k_.bf16_rows16_dot_gemv;
                mm.d_gemm = k_.bf16_rows16_dot_gemm;
                st.uses_bf16 = true;
              }
              break;
            }
            case CpuMatmulFamily::None:
              return Status::error(EMBER_ERR_UNSUPPORTED, "cpu backend: weight '%s' (%s, %s) has no matmul kernel",
                                   w.name, dtype_name(w.dtype), layout_name(w.layout));
          }
          attach_providers(mm, mo.weight);
          mm.weight = mo.weight;
          matmuls_.push_back(mm);
        }
        if (st.uses_q8) {
          st.quantize = quantized != op.a;
          quantized = op.a;
        }
        for (int m = 0; m < count; ++m) {
          if (g.ops[oi + m].out == quantized) quantized = -1;
        }
        oi += count - 1;
        steps_.push_back(st);
        continue;
      }
      case OpKind::Rope:
        st.kind = CpuStepKind::Rope;
        st.rope = op.params.rope;
        st.rope_table = rope_table_index(g, op);
        break;
      case OpKind::Attention:
        st.kind = CpuStepKind::Attention;
        st.attn = op.params.attention;
        st.kv = &kv_[op.layer];
        st.n_heads = static_cast<int32_t>(st.attn.n_heads);
        st.split = 1;
        break;
      case OpKind::Add:
        st.kind = CpuStepKind::Add;
        st.binary = k_.add;
        st.split = kElementwiseSplit;
        break;
      case OpKind::SwiGLU:
        st.kind = CpuStepKind::SwiGLU;
        st.binary = k_.swiglu;
        st.split = kElementwiseSplit;
        break;
      case OpKind::BiasAdd:
        st.kind = CpuStepKind::BiasAdd;
        st.binary = k_.add;
        st.weight = &g.weights[op.weight];
        st.split = 1;
        break;
      case OpKind::LayerNorm:
        st.kind = CpuStepKind::LayerNorm;
        st.weight = &g.weights[op.weight];
        st.bias = &g.weights[op.bias];
        st.eps = op.params.layernorm.eps;
        st.one_row = op.last_row;
        st.split = 1;
        break;
      case OpKind::Gelu:
        st.kind = CpuStepKind::Gelu;
        st.split = kElementwiseSplit;
        break;
      case OpKind::AddRows:
        st.kind = CpuStepKind::AddRows;
        st.weight = &g.weights[op.weight];
        st.binary = k_.add;
        st.by_position = op.params.add_rows.by_position;
        break;
    }
    steps_.push_back(st);
    // Any op writing the quantized activation makes its copy stale.
    if (op.out == quantized || (op.kind == OpKind::Rope && op.a == quantized)) quantized = -1;
  }
  // Each MatMuls step's successor (idle prefetch in decode).
  int32_t first_mm = -1, prev_mm = -1;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i].kind != CpuStepKind::MatMuls) continue;
    if (prev_mm >= 0) steps_[prev_mm].next_matmuls = static_cast<int32_t>(i);
    if (first_mm < 0) first_mm = static_cast<int32_t>(i);
    prev_mm = static_cast<int32_t>(i);
  }
  if (prev_mm >= 0) steps_[prev_mm].next_matmuls = first_mm;
  return Status::ok();
}

// Decode: points each thread's idle prefetch at the weights it starts the
// MatMuls step `s` with (its own range's front, ThreadPool::run_ranges),
// at most idle_prefetch_ bytes.
void CpuBackend::set_idle_prefetch(const CpuStep& s) {
  const CpuMatmul* jobs = matmuls_.data() + s.first;
  int64_t units = 0;
  for (int m = 0; m < s.count; ++m) {
    if (jobs[m].xnn >= 0 || jobs[m].row_bytes <= 0) return;
    units += (jobs[m].rows + s.split - 1) / s.split;
  }
  const int n_threads = pool_->size();
  for (int t = 0; t < n_threads; ++t) {
    int64_t u0, u1;
    split_range(units, 1, t, n_threads, &u0, &u1);
    int64_t base = 0;
    for (int m = 0; m < s.count && u0 < u1; ++m) {
      const int64_t ju = (jobs[m].rows + s.split - 1) / s.split;
      if (u0 < base + ju) {
        const int64_t r0 = (u0 - base) * s.split;
        const int64_t r1 = std::min<int64_t>((std::min(u1, base + ju) - base) * s.split, jobs[m].rows);
        const int64_t bytes = std::min<int64_t>((r1 - r0) * jobs[m].row_bytes, idle_prefetch_);
        pool_->set_idle_prefetch(t, jobs[m].w + r0 * jobs[m].row_bytes, static_cast<size_t>(bytes));
        break;
      }
      base += ju;
    }
  }
}

// Quantizes n rows of `in` (cols floats each) into scratch.
void CpuBackend::quantize_input(const float* in, int64_t cols, int32_t n) {
  const int64_t nb = cols / 32;
  auto body = [&](int chunk, int n_chunks, int) {
    int64_t t0, t1;
    split_range(n, 1, chunk, n_chunks, &t0, &t1);
    for (int64_t t = t0; t < t1; ++t) {
      k_.quantize_q8(in + t * cols, cols, scratch_.act_q + t * cols, scratch_.act_d + t * nb,
                     scratch_.act_bias + t * nb);
      if (scratch_.act_sum16 != nullptr) sum16_row(scratch_.act_q + t * cols, cols, scratch_.act_sum16 + t * (cols / 16));
    }
  };
  pool_->run(std::min<int>(n, pool_->size()), body);
}

// Runs a step's matmuls (q, k, v; gate, up) in one pool dispatch: one
// wake-up instead of several. Each matmul's rows are split over the threads
// in runs of 16 or 32 (whole kernel tiles); each output is computed by
// exactly one call, whatever the thread count.
void CpuBackend::run_matmuls(const CpuStep& s, int32_t n) {
  const float* in = s.a;
  const int64_t cols = s.cols;
  QuantActs qa;
  if (s.uses_q8) {
    if (s.quantize) quantize_input(in, cols, n);
    qa.q = scratch_.act_q;
    qa.d = scratch_.act_d;
    qa.bias = scratch_.act_bias;
    qa.sum16 = scratch_.act_sum16;
    qa.cols = cols;
  }
  if (s.uses_bf16) {  // this step's input rounded once for its BF16 dot products
    pool_->run(std::min<int>(n, pool_->size()), [&](int chunk, int n_chunks, int) {
      int64_t t0, t1;
      split_range(n, 1, chunk, n_chunks, &t0, &t1);
      for (int64_t t = t0; t < t1; ++t) k_.bf16_round(in + t * cols, cols, scratch_.act_bf16 + t * cols);
    });
  }
  const CpuMatmul* jobs = matmuls_.data() + s.first;
  const int count = s.count;
  // The matmuls' row runs end to end (runs of 16 rows in decode, 32 in
  // prefill: whole kernel tiles), an equal share per thread run in pieces,
  // the others' leftovers taken by whoever is done first
  // (ThreadPool::run_ranges). Decode: pieces of about a sixteenth of a
  // share; a static split left each thread waiting for the other 8-9% of a
  // 0.5b decode's perf samples (the two vCPUs' speeds differ from moment to
  // moment). Prefill: a thirty-second (its pieces take milliseconds; the
  // pool's waits fell from 3.1% to 2.0% of a 1.1b IQ4_XS 512-token
  // prefill's samples, from eight shared chunks per thread).
  // A small step streams the weights as decode does (kernels.h kStreamTokens).
  const bool stream = n <= kStreamTokens;
  const int64_t split = stream ? s.split : kMatmulRowSplitPrefill;
  // Rows [r0, r1) of matmul j by its int8 or float kernel.
  auto rows_of = [&](const CpuMatmul& j, int64_t r0, int64_t r1) {
    if (j.q_gemv) {
      (n == 1 ? j.q_gemv : j.q_gemm)(j.w, cols, r0, r1, qa, n, j.out, j.rows);
    } else if (j.d_gemv) {
      (n == 1 ? j.d_gemv : j.d_gemm)(j.w, cols, r0, r1, scratch_.act_bf16, n, j.out, j.rows);
    } else {
      (n == 1 ? j.f_gemv : j.f_gemm)(j.w, cols, r0, r1, in, n, j.out, j.rows);
    }
  };
  bool xnn = false;
  int64_t units = 0;
  for (int m = 0; m < count; ++m) {
    xnn = xnn || jobs[m].xnn >= 0;
    units += (jobs[m].rows + split - 1) / split;
  }
  if (!xnn) {
    if (stream && idle_prefetch_ > 0 && s.next_matmuls >= 0) set_idle_prefetch(steps_[s.next_matmuls]);
    const int64_t piece = std::max<int64_t>(1, units / ((stream ? 16 : 32) * pool_->size()));
    pool_->run_ranges(units, piece, [&](int64_t u0, int64_t u1, int) {
      int64_t base = 0;
      for (int m = 0; m < count && u0 < u1; ++m) {
        const CpuMatmul& j = jobs[m];
        const int64_t ju = (j.rows + split - 1) / split;
        if (u0 < base + ju) {
          const int64_t e = std::min(u1, base + ju);
          rows_of(j, (u0 - base) * split, std::min<int64_t>((e - base) * split, j.rows));
          u0 = e;
        }
        base += ju;
      }
    });
    return;
  }
  // With XNNPACK weights: chunks claimed from one shared counter, eight per
  // thread in prefill, one in decode (8 to 64 per matmul measured 5-12%
  // slower per token there, 0.5b q4_0, 2 threads).
  const int n_chunks = n == 1 ? pool_->size() : 8 * pool_->size();
  pool_->run(n_chunks, [&](int chunk, int n_chunks, int) {
    for (int m = 0; m < count; ++m) {
      const CpuMatmul& j = jobs[m];
      if (j.xnn >= 0) {
        // XNNPACK: this chunk's share of the weight's operators, each over
        // its own rows (kernel_providers.h: cpu_xnnpack_slices).
        const int32_t s0 = static_cast<int32_t>(int64_t{chunk} * j.xnn_slices / n_chunks);
        const int32_t s1 = static_cast<int32_t>(int64_t{chunk + 1} * j.xnn_slices / n_chunks);
        for (int32_t sl = s0; sl < s1; ++sl) xnn_->run(j.xnn + sl, in, n, j.out);
        continue;
      }
      int64_t r0, r1;
      split_range(j.rows, split, chunk, n_chunks, &r0, &r1);
      if (r0 < r1) rows_of(j, r0, r1);
    }
  });
}

Status CpuBackend::execute(const StepArgs& step) {
  const Graph& g = *graph_;
  const int32_t n = step.n_tokens;
  {
    Status st = check_step(g, step);
    if (!st.is_ok()) return Status::error(st.code(), "cpu backend: %s", st.message().c_str());
  }
  // Where each row goes: its position and its sequence.
  for (int32_t i = 0; i < n; ++i) {
    row_pos_[i] = step.positions ? step.positions[i] : step.pos + i;
    row_seq_[i] = step.seqs ? step.seqs[i] : 0;
  }
  // Non-causal attention: each row sees what its sequence holds after the step.
  const int32_t* visible = nullptr;
  if (!row_visible_.empty()) {
    for (int32_t i = 0; i < n; ++i) seq_end_[row_seq_[i]] = 0;
    for (int32_t i = 0; i < n; ++i) seq_end_[row_seq_[i]] = std::max(seq_end_[row_seq_[i]], row_pos_[i] + 1);
    for (int32_t i = 0; i < n; ++i) row_visible_[i] = seq_end_[row_seq_[i]];
    visible = row_visible_.data();
  }
  const CpuStepRows rows{row_pos_.data(), row_seq_.data(), visible};
  // The logits head's rows: the step's output rows, or its last row.
  const int32_t last_row = n - 1;
  const int32_t* out_rows = step.out_rows ? step.out_rows : &last_row;
  const int32_t n_out = step.out_rows ? step.n_out : 1;
  // Sessions sharing a host pool take turns, a whole step at a time.
  std::lock_guard<std::mutex> lock(pool_->callers());
  // RoPE angles for this step's positions, one table per distinct Rope.
  const int64_t half = rope_half_;
  for (int32_t t = 0; t < rope_tables_; ++t) {
    const float* freq = scratch_.rope_freq + t * rope_freq_stride_;
    float* cs = scratch_.rope_cos + t * rope_stride_;
    float* sn = scratch_.rope_sin + t * rope_stride_;
    for (int32_t i = 0; i < n; ++i) {
      const float pos = static_cast<float>(row_pos_[i]);
      for (int64_t j = 0; j < half; ++j) {
        const float angle = pos * freq[j];
        cs[i * half + j] = std::cos(angle);
        sn[i * half + j] = std::sin(angle);
      }
    }
  }
  // Element-wise ops over `count` floats: split in runs of `split` when large.
  auto elementwise = [&](int64_t count, int64_t split, auto&& fn) {
    if (count < kParallelElements) {
      fn(0, count);
      return;
    }
    pool_->run(pool_->size(), [&](int chunk, int n_chunks, int) {
      int64_t b, e;
      split_range(count, split, chunk, n_chunks, &b, &e);
      if (b < e) fn(b, e);
    });
  };
  for (const CpuStep& s : steps_) {
    switch (s.kind) {
      case CpuStepKind::Embed: {
        const WeightRef& w = *s.weight;
        for (int32_t i = 0; i < n; ++i) {
          // A Rows16 row is gathered into the conversion row first.
          const uint8_t* row = layout_row(w.layout, w.dtype, w.data, w.cols, step.tokens[i],
                                          reinterpret_cast<uint8_t*>(scratch_.row));
          dequantize_row(w.dtype, row, s.out + i * w.cols, w.cols);
          if (s.scale != 0.0f) {
            float* o = s.out + i * w.cols;
            for (int64_t c = 0; c < w.cols; ++c) o[c] *= s.scale;
          }
        }
        break;
      }
      case CpuStepKind::RmsNorm: {
        // Rows of `cols` floats: the step's rows, or their groups (every
        // group is a row of its own to the kernel).
        const float* wf = reinterpret_cast<const float*>(s.weight->data);
        const int64_t cols = s.cols;
        const int64_t rows = static_cast<int64_t>(n) * s.groups;
        if (s.one_row) {
          // The output rows, gathered: row out_rows[r] of `a` -> row r of out.
          for (int32_t r = 0; r < n_out; ++r) {
            const int64_t from = static_cast<int64_t>(out_rows[r]) * s.groups;
            for (int32_t j = 0; j < s.groups; ++j) {
              s.rmsnorm(s.out + (static_cast<int64_t>(r) * s.groups + j) * cols, s.a + (from + j) * cols, wf, cols,
                        s.eps);
            }
          }
        } else if (rows * cols < kParallelElements) {
          for (int64_t i = 0; i < rows; ++i) s.rmsnorm(s.out + i * cols, s.a + i * cols, wf, cols, s.eps);
        } else {
          pool_->run(pool_->size(), [&](int chunk, int n_chunks, int) {
            int64_t b, e;
            split_range(rows, s.split, chunk, n_chunks, &b, &e);
            for (int64_t i = b; i < e; ++i) s.rmsnorm(s.out + i * cols, s.a + i * cols, wf, cols, s.eps);
          });
        }
        break;
      }
      case CpuStepKind::MatMuls:
        if (activation_stats_ != nullptr) {
          const int32_t rows_in = s.one_row ? n_out : n;
          for (int32_t m = 0; m < s.count; ++m) {
            activation_stats_->add(matmuls_[s.first + m].weight, s.a, rows_in, s.cols, s.cols);
          }
        }
        run_matmuls(s, s.one_row ? n_out : n);
        break;
      case CpuStepKind::Rope:
        cpu_rope(s.rope, s.a, s.cols, n, scratch_.rope_cos + s.rope_table * rope_stride_,
                 scratch_.rope_sin + s.rope_table * rope_stride_);
        break;
      case CpuStepKind::Attention: {
        // Keys and values of this step first; the causal bound keeps each
        // row from seeing later ones. cpu_attention shares the rows and key
        // heads (and at depth the spans) out over the threads.
        cpu_kv_store(static_cast<int64_t>(s.attn.head_dim) * s.attn.n_kv_heads, *s.kv, s.b, s.c, n, rows);
        cpu_attention(*pool_, s.attn, *s.kv, s.a, s.out, rows, n, scratch_.attention, attention_floats_,
                      scratch_.attention_partials, attention_k_, attention_shape_);
        break;
      }
      case CpuStepKind::Add:
      case CpuStepKind::SwiGLU: {
        float* o = s.out;
        const float* a = s.a;
        const float* b = s.b;
        const AddFn fn = s.binary;
        elementwise(s.cols * n, s.split, [&](int64_t i0, int64_t i1) { fn(o + i0, a + i0, b + i0, i1 - i0); });
        break;
      }
      case CpuStepKind::GeGLU: {
        float* o = s.out;
        const float* a = s.a;
        const float* b = s.b;
        elementwise(s.cols * n, s.split, [&](int64_t i0, int64_t i1) { k_.gelu(o + i0, a + i0, b + i0, i1 - i0); });
        break;
      }
      case CpuStepKind::Softcap: {
        // The logits row (or rows): cap * tanh(x / cap).
        float* o = s.out;
        const float* a = s.a;
        const float cap = s.scale;
        const int64_t count = s.cols * (s.one_row ? n_out : n);
        for (int64_t i = 0; i < count; ++i) o[i] = cap * std::tanh(a[i] / cap);
        break;
      }
      case CpuStepKind::BiasAdd: {
        // A few hundred floats per row: one thread, no dispatch.
        const float* bias = reinterpret_cast<const float*>(s.weight->data);
        for (int32_t r = 0; r < n; ++r) s.binary(s.out + r * s.cols, s.a + r * s.cols, bias, s.cols);
        break;
      }
      case CpuStepKind::LayerNorm: {
        const float* w = reinterpret_cast<const float*>(s.weight->data);
        const float* b = reinterpret_cast<const float*>(s.bias->data);
        const int64_t cols = s.cols;
        // The output rows gathered (the last layer's norm), or every row.
        const int32_t rows_out = s.one_row ? n_out : n;
        for (int32_t r = 0; r < rows_out; ++r) {
          const int64_t from = s.one_row ? out_rows[r] : r;
          cpu_layernorm(s.out + r * cols, s.a + from * cols, w, b, cols, s.eps);
        }
        break;
      }
      case CpuStepKind::Gelu: {
        float* o = s.out;
        const float* a = s.a;
        elementwise(s.cols * n, s.split, [&](int64_t i0, int64_t i1) { k_.gelu(o + i0, a + i0, nullptr, i1 - i0); });
        break;
      }
      case CpuStepKind::AddRows: {
        const WeightRef& w = *s.weight;
        // scratch_sizes gave this graph two conversion rows.
        float* row = scratch_.row;
        uint8_t* gathered = reinterpret_cast<uint8_t*>(scratch_.row + round64(w.cols));
        for (int32_t i = 0; i < n; ++i) {
          const int64_t r = s.by_position ? row_pos_[i] : 0;
          const uint8_t* src = layout_row(w.layout, w.dtype, w.data, w.cols, r, gathered);
          dequantize_row(w.dtype, src, row, w.cols);
          s.binary(s.out + i * w.cols, s.a + i * w.cols, row, w.cols);
        }
        break;
      }
    }
  }
  if (step.logits) {
    std::memcpy(step.logits, act(g.logits), static_cast<size_t>(n_out) * graph_output_cols(g) * sizeof(float));
  }
  return Status::ok();
}

}  // namespace ember

// The CPU backend: lowers a Graph once, at prepare, into a flat list of
// steps with their kernels already chosen (dispatch.h: one path per kernel
// family, from the hardware probe or EMBER_ISA), and executes the list on a
// persistent thread pool (thread_pool.h; its own or one the host shares).
// Weights are read in place from the mapping; activations of quantized
// matmuls are quantized once into scratch and shared by every matmul that
// reads them (which step quantizes and which reuse is decided at prepare).
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backends/cpu/cpu_attention.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/kernel_providers.h"
#include "backends/cpu/thread_pool.h"
#include "backends/cpu/xnnpack_provider.h"

namespace ember {

// The cpu registry entry's queries (backend/backend.h BackendEntry), none of
// which makes a backend: the host (model name, physical RAM); what it runs;
// the scratch for options.cpu.n_threads threads (0: the physical cores).
DeviceInfo cpu_probe();
Status cpu_supports(const Graph& graph);
uint64_t cpu_scratch_bytes(const Graph& graph, const BackendOptions& options);
// The threads a backend made with `options` runs on.
int cpu_threads(const CpuOptions& options);

// Which kernels run a matmul over a weight of this dtype and layout: the
// int8 family (activations quantized to Q8), the float family (F32, F16,
// BF16), or none (a layout the kernels do not read: refused at prepare).
enum class CpuMatmulFamily : uint8_t { Int8, Float, None };
CpuMatmulFamily cpu_matmul_family(DType dtype, Layout layout);

// One step of the lowered graph (prepare turns graph.ops into a flat list;
// execute walks it with only n_tokens and pos changing). Everything a step
// needs is here: arena pointers, kernels, sizes and op parameters.
enum class CpuStepKind : uint8_t {
  Embed, RmsNorm, MatMuls, Rope, Attention, Add, SwiGLU, BiasAdd, GeGLU, Softcap, LayerNorm, Gelu, AddRows
};

// One matmul of a fused group. Exactly one of the kernel pairs is set (or
// XNNPACK's operators, xnn >= 0).
struct CpuMatmul {
  const uint8_t* w = nullptr;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t row_bytes = 0;  // bytes of one row (row-major and rows16 alike: a run of 16 rows is 16 rows' bytes)
  float* out = nullptr;
  QMatmulFn q_gemv = nullptr, q_gemm = nullptr;  // 1-row step / n > 1
  FMatmulFn f_gemv = nullptr, f_gemm = nullptr;
  Bf16MatmulFn d_gemv = nullptr, d_gemm = nullptr;  // BF16 dot products: read the step's rounded copy
  // XNNPACK (kernel_providers.h): its first operator (slice 0), or -1, and
  // how many (slices of rows) there are.
  int32_t xnn = -1, xnn_slices = 0;
  int32_t weight = -1;  // Graph::weights index (activation statistics)
};

struct CpuStep {
  CpuStepKind kind = CpuStepKind::Add;
  float* out = nullptr;
  float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  int64_t cols = 0;         // floats per row of `a` (matmuls: the weight's cols)
  // Work split: chunk boundaries are multiples of this many rows (matmuls:
  // weight rows, a kernel tile; rmsnorm: token rows; attention: heads) or
  // floats (add, swiglu).
  int32_t split = 1;
  bool one_row = false;     // matmuls, softcap: `a` holds the output rows; rmsnorm: reads the output rows only
  // Embed / RmsNorm / LayerNorm / AddRows: the weight; LayerNorm: its bias too.
  const WeightRef* weight = nullptr;
  const WeightRef* bias = nullptr;
  bool by_position = false;  // AddRows: the row at each row's position (else row 0)
  // RmsNorm / Add / SwiGLU kernels and parameters.
  RmsNormFn rmsnorm = nullptr;
  AddFn binary = nullptr;   // add or swiglu (same signature)
  float eps = 0.0f;
  // RmsNorm: each row of `a` is `groups` chunks of `cols` floats, normalized
  // one by one with the same weight (1: the whole row; Qwen3's and Gemma 3's
  // Q/K norm: its heads).
  int32_t groups = 1;
  // Embed: scale of the rows (0: none); Softcap: the cap.
  float scale = 0.0f;
  // Rope: which angle table (core/graph.h rope_tables).
  int32_t rope_table = 0;
  // MatMuls: matmuls_[first, first + count), all reading `a`.
  int32_t first = 0;
  int32_t count = 0;
  int32_t next_matmuls = -1;  // the MatMuls step that runs after this one (the last: the first, next token)
  bool quantize = false;    // quantize `a` into scratch (else reuse the copy an earlier step made)
  bool uses_q8 = false;     // some matmul reads the quantized copy
  bool uses_bf16 = false;   // some matmul reads `a` rounded to BF16 (rounded by this step)
  // Rope / Attention: the op's parameters and the layer's cache.
  RopeParams rope{};
  AttentionParams attn{};
  const CpuKvLayer* kv = nullptr;
  int32_t n_heads = 0;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuOptions& options);
  ~CpuBackend() override;
  const char* name() const override { return "cpu"; }
  Status prepare(const Graph& graph, const ArenaLayout& plan, uint8_t* arena) override;
  Status execute(const StepArgs& step) override;
  Status remove_positions(int32_t start, int32_t end, int32_t n_pos) override;  // cpu_kv_shift.cpp
  Status remove_seq_positions(int32_t seq, int32_t start, int32_t end, int32_t n_pos) override;  // cpu_kv_shift.cpp
  Status copy_seq(int32_t src, int32_t dst, int32_t n_pos, int32_t src_positions) override;  // cpu_kv_shift.cpp
  Status read_kv(int32_t layer, bool values, int32_t rows, uint8_t* out) override;       // cpu_kv_rows.cpp
  Status write_kv(int32_t layer, bool values, int32_t rows, const uint8_t* in) override;  // cpu_kv_rows.cpp
  Status set_activation_stats(ActivationStats* stats) override {
    activation_stats_ = stats;
    return Status::ok();
  }
  std::string describe() const override;

  // Threads this backend runs on (the host pool's size, else
  // options.n_threads, or the physical cores for 0).
  int threads() const { return n_threads_; }
  // The lowered graph (after prepare), for tests.
  const std::vector<CpuStep>& steps() const { return steps_; }

 private:
  struct Scratch {
    float* rope_cos = nullptr;   // per angle table: [max_batch, head_dim / 2], rope_stride_ apart
    float* rope_sin = nullptr;
    float* rope_freq = nullptr;  // per angle table: [head_dim / 2], rope_freq_stride_ apart
    float* attention = nullptr;  // per thread: attention_floats_
    float* attention_partials = nullptr;  // a split attention step's (cpu_attention_partial_floats)
    float* row = nullptr;        // [max weight cols]: a gathered embedding row, context shifting
    int8_t* act_q = nullptr;     // [max_batch, max cols]: quantized activations
    float* act_d = nullptr;      // [max_batch, max cols / 32]
    int32_t* act_bias = nullptr; // [max_batch, max cols / 32]
    int16_t* act_sum16 = nullptr; // [max_batch, max cols / 16], when a weight type needs it
    uint16_t* act_bf16 = nullptr; // [max_batch, max cols]: activations rounded to BF16 (BF16 dot products)
  };

  float* act(int32_t id) const { return acts_[id]; }
  // Layer `layer`'s cache of sequence `seq` (its position 0 first).
  CpuKvLayer seq_layer(uint32_t layer, int32_t seq) const;
  static constexpr int kMaxFusedMatmuls = 4;
  Status lower(const Graph& graph);
  void run_matmuls(const CpuStep& s, int32_t n);
  void set_idle_prefetch(const CpuStep& s);
  void quantize_input(const float* in, int64_t cols, int32_t n);
  // The float-matmul providers (cpu_backend_providers.cpp): chosen at
  // construction (so describe() names them) and, for XNNPACK, its operators
  // created at prepare; attached to a matmul in lower().
  void select_providers();  // at construction: EMBER_KERNELS, the table, XNNPACK's probe
  Status prepare_providers(const Graph& graph);
  void attach_providers(CpuMatmul& mm, int32_t weight) const;

  CpuOptions options_;
  int n_threads_ = 1;
  Result<CpuFamilies> selected_;  // from EMBER_ISA or the probe
  uint64_t decode_prefetch_ = 0;  // cpu_select_decode_prefetch()'s, for describe()
  CpuKernels k_;                  // the families' kernels
  // The session's own pool, or the host's (options.thread_pool, shared by
  // sessions: execute holds its lock).
  std::shared_ptr<ThreadPool> pool_;
  // Decode: bytes of its next matmul step's weights each thread warms while
  // it waits (ThreadPool::set_idle_prefetch). 256 KiB measured +3% on the
  // 0.5b Q4_K_M decode (in-process A/B, docs/decisions.md "Thread pool: per-thread ranges with
  // stealing, idle prefetch").
  int64_t idle_prefetch_ = int64_t{256} << 10;
  const Graph* graph_ = nullptr;
  std::vector<float*> acts_;       // into the arena (lifetime: the session)
  std::vector<CpuKvLayer> kv_;     // per layer, into the arena (sequence 0's row 0)
  // Per step row (max_batch each, sized at prepare): its position and its
  // sequence.
  std::vector<int32_t> row_pos_, row_seq_;
  // Non-causal attention (encoders): per row, the positions its sequence
  // holds after the step (CpuStepRows::visible); empty for causal graphs.
  std::vector<int32_t> row_visible_;
  std::vector<int32_t> seq_end_;  // per sequence: its last position in the step + 1
  // Ring layers' slot shifts, n_layers x n_seqs (CpuKvLayer::shift points in).
  std::vector<int32_t> ring_shift_;
  std::vector<CpuStep> steps_;     // the lowered graph (prepare)
  std::vector<CpuMatmul> matmuls_; // the steps' matmuls
  Scratch scratch_;
  AttentionKernels attention_k_{};  // the float family's (prepare)
  int64_t attention_floats_ = 0;   // per thread, rounded to 64 bytes
  AttentionShape attention_shape_{};  // the graph's largest (prepare)
  int64_t rope_half_ = 0;          // angles per position in the rope table (head_dim / 2)
  int32_t rope_tables_ = 0;        // angle tables (one per distinct Rope: core/graph.h rope_tables)
  int64_t rope_stride_ = 0;        // floats between tables' cos (and sin) blocks
  int64_t rope_freq_stride_ = 0;   // floats between tables' frequencies
  CpuProviders providers_;         // who runs each float-matmul family
  Status providers_status_;        // why there are none (a bad EMBER_KERNELS, XNNPACK asked for but missing)
  std::unique_ptr<XnnpackMatmuls> xnn_;  // XNNPACK's operators, when it runs any (lifetime: the backend)
  std::vector<int32_t> xnn_first_; // per graph weight: its first operator, or -1
  std::vector<int32_t> xnn_count_; // per graph weight: its operators
  ActivationStats* activation_stats_ = nullptr;  // filled by each matmul step while set
};

}  // namespace ember

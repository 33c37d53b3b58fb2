// The CPU backend: executes a Graph with the kernels of one instruction-set
// path (dispatch.h, chosen once from the hardware probe or EMBER_ISA) on a
// persistent thread pool (thread_pool.h). Weights are read in place from the
// mapping; activations of quantized matmuls are quantized once per step into
// scratch and shared by every matmul that reads them.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/cpu_attention.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/thread_pool.h"

namespace ember {

// The cpu registry entry's queries (backend.h BackendEntry), none of which
// makes a backend: the host (model name, physical RAM); what it runs; the
// scratch for options.n_threads threads (0: the physical cores).
DeviceInfo cpu_probe();
Status cpu_supports(const Graph& graph);
uint64_t cpu_scratch_bytes(const Graph& graph, const BackendOptions& options);
// The threads a backend made with `options` runs on.
int cpu_threads(const BackendOptions& options);

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  ~CpuBackend() override;
  const char* name() const override { return "cpu"; }
  Status prepare(const Graph& graph, const ArenaLayout& plan, uint8_t* arena) override;
  Status execute(const StepArgs& step) override;
  Status remove_positions(int32_t start, int32_t end, int32_t n_pos) override;  // cpu_kv_shift.cpp
  std::string describe() const override;

  // Threads this backend runs on (options.n_threads, or the physical cores
  // for 0).
  int threads() const { return n_threads_; }

 private:
  struct Scratch {
    float* rope_cos = nullptr;   // [max_batch, head_dim / 2]
    float* rope_sin = nullptr;
    float* rope_freq = nullptr;  // [head_dim / 2]
    float* attention = nullptr;  // per thread: attention_floats_
    float* row = nullptr;        // per thread: [max weight cols], BF16 rows converted
    int8_t* act_q = nullptr;     // [max_batch, max cols]: quantized activations
    float* act_d = nullptr;      // [max_batch, max cols / 32]
    int32_t* act_bias = nullptr; // [max_batch, max cols / 32]
  };

  float* act(int32_t id) const { return acts_[id]; }
  static constexpr int kMaxFusedMatmuls = 4;
  void run_matmuls(const Op* ops, int count, int32_t rows_in);
  void quantize_input(int32_t id, int64_t cols, int32_t n);

  BackendOptions options_;
  int n_threads_ = 1;
  Result<const CpuKernels*> selected_;  // from EMBER_ISA or the probe
  const CpuKernels* k_ = nullptr;
  std::unique_ptr<ThreadPool> pool_;
  const Graph* graph_ = nullptr;
  std::vector<float*> acts_;       // into the arena (lifetime: the session)
  std::vector<CpuKvLayer> kv_;     // per layer, into the arena
  Scratch scratch_;
  int64_t max_cols_ = 0;
  int64_t attention_floats_ = 0;   // per thread, rounded to 64 bytes
  int32_t quantized_ = -1;         // activation whose quantized copy is in scratch
  int64_t rope_half_ = 0;          // angles per position in the rope table (head_dim / 2)
};

}  // namespace ember

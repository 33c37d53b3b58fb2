// The CPU backend: executes a Graph with portable C++ kernels.
// Weights are read in place from the mapping; quantized and half-precision
// rows are converted one row at a time into per-thread scratch (fast
// quantized kernels with ISA dispatch are their own work, issue 7).
#pragma once

#include "backends/backend.h"
#include "backends/cpu/cpu_attention.h"
#include "memory/plan.h"

namespace ember {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options) : options_(options) {}
  const char* name() const override { return "cpu"; }
  uint64_t scratch_bytes(const Graph& graph) const override;
  Status prepare(const Graph& graph, const MemoryPlan& plan, uint8_t* arena) override;
  Status execute(const StepArgs& step) override;
  Status remove_positions(int32_t start, int32_t end, int32_t n_pos) override;  // cpu_kv_shift.cpp

 private:
  struct Scratch {
    float* rope_cos = nullptr;   // [max_batch, head_dim / 2]
    float* rope_sin = nullptr;
    float* rope_freq = nullptr;  // [head_dim / 2]
    float* attention = nullptr;  // cpu_attention_scratch_floats
    float* row = nullptr;        // [max weight cols]: one converted weight row
  };

  float* act(int32_t id) const { return acts_[id]; }
  void run_matmul(const Op& op, int32_t rows_in);

  BackendOptions options_;
  const Graph* graph_ = nullptr;
  std::vector<float*> acts_;       // into the arena (lifetime: the session)
  std::vector<CpuKvLayer> kv_;     // per layer, into the arena
  Scratch scratch_;
  int64_t max_cols_ = 0;
};

}  // namespace ember

// XNNPACK as a float-matmul provider of the CPU backend (docs/decisions.md
// "XNNPACK: operators created once"). Built only where CMake finds
// libxnnpack-dev (EMBER_HAVE_XNNPACK); elsewhere kernel_providers.cpp
// supplies the same functions saying it is not built.
//
// A weight XNNPACK runs becomes, at prepare, a few f32 fully-connected
// operators: one per run of 16 rows, `slices` runs per weight (the CPU
// backend's chunks: 4 per thread), each operator holding its own packed
// copy of its rows (F16 and BF16 weights widened to f32 first). Each step
// sets an operator up for the step's batch (this snapshot's setup takes the
// batch size and the pointers; it packs nothing and allocates nothing) and
// runs it single-threaded on the thread of ember's pool that claimed the
// chunk: no second thread pool, and every output is computed by exactly one
// operator whatever the thread count, so results do not depend on it.
//
// Memory: XNNPACK is initialized, once per process, with an allocator of
// ember's that counts what each operator takes (descriptor and packed
// weights, each with the allocator's 64-byte header). Its sizes are
// learned once from three tiny operators (XnnpackInfo), so the plan counts
// the packed copies exactly before any is made (xnnpack_weight_bytes), and
// prepare checks the count against the plan. If another part of the process
// initialized XNNPACK first (its allocator stays), the provider is not
// usable: ember could not account its memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace ember {

// What the XNNPACK this binary links does, probed once per process.
struct XnnpackInfo {
  bool usable = false;
  std::string reason;       // why not, when !usable
  uint32_t nr = 0;          // output channels per packed tile (f32 fully-connected)
  uint32_t k_round = 1;     // input channels are padded to a multiple of this
  uint64_t descriptor = 0;  // bytes of one operator descriptor, header included
};
const XnnpackInfo& xnnpack_info();

// Bytes the operators of one weight take: rows x cols split into `slices`
// runs of 16 rows (empty runs make no operator). 0 when XNNPACK is not usable.
uint64_t xnnpack_weight_bytes(int64_t rows, int64_t cols, int32_t slices);

// Calls into XNNPACK's allocator so far (any thread): a test holds decode
// and prefill steps to none.
uint64_t xnnpack_allocations();
// Bytes XNNPACK holds from its allocator now (every session's operators,
// and what XNNPACK keeps for itself): a test holds a freed session to
// giving back what it took.
uint64_t xnnpack_live_bytes();

// The operators of one session. Lifetime: the CPU backend's; deleting it
// deletes every operator (and frees the packed copies).
class XnnpackMatmuls {
 public:
  static Result<std::unique_ptr<XnnpackMatmuls>> create();
  ~XnnpackMatmuls();
  XnnpackMatmuls(const XnnpackMatmuls&) = delete;
  XnnpackMatmuls& operator=(const XnnpackMatmuls&) = delete;

  // Packs `w` (F32, F16 or BF16, row-major) as `slices` operators over runs
  // of 16 rows (split_range(rows, 16, s, slices)); returns the index of
  // slice 0 (slice s is that + s). Reads the weight in place; F16/BF16 rows
  // are widened a run at a time into a temporary buffer (freed on return).
  Result<int32_t> add(const WeightRef& w, int32_t slices);
  // Slice `op` for n rows of `in` (cols floats each): out[i * rows + r] for
  // the slice's rows r, where `out` is the whole output (row 0). Runs on the
  // calling thread; allocates nothing. Cannot fail once add() succeeded
  // (setup checks only that XNNPACK is initialized and n > 0; run only
  // that setup succeeded); a failure is reported by failed().
  void run(int32_t op, const float* in, int32_t n, float* out);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Bytes the operators hold, as the allocator counted them.
  uint64_t bytes() const { return bytes_; }
  size_t operators() const { return ops_.size(); }

 private:
  XnnpackMatmuls() = default;
  struct Op {
    void* op = nullptr;  // xnn_operator_t
    int64_t r0 = 0;      // first row of the slice
  };
  std::vector<Op> ops_;
  uint64_t bytes_ = 0;
  std::atomic<bool> failed_{false};  // set by any pool thread
};

}  // namespace ember

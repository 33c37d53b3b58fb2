// The CPU cache's rows copied out and in, for saved sessions: the arena
// holds each layer's rows in the CPU row format already, so these are
// copies.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace ember {
namespace {

Status check_rows(const Graph* graph, const std::vector<CpuKvLayer>& kv, int32_t layer, int32_t rows) {
  if (!graph || layer < 0 || layer >= static_cast<int32_t>(kv.size()) || rows <= 0 || rows > graph->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "cpu: kv rows (layer %d, %d rows) outside the cache", layer,
                         rows);
  }
  return Status::ok();
}

}  // namespace

// Sequence 0's rows in position order. A ring layer (a sliding window)
// holds only its last kv.rows positions: older ones are written as zeros
// (its window never reads them again) and not read back.
Status CpuBackend::read_kv(int32_t layer, bool values, int32_t rows, uint8_t* out) {
  EMBER_TRY(check_rows(graph_, kv_, layer, rows));
  const CpuKvLayer& kv = kv_[layer];
  const uint8_t* base = values ? kv.v : kv.k;
  const uint64_t row_bytes = values ? kv.v_row_bytes : kv.k_row_bytes;
  if (!kv.ring) {
    std::memcpy(out, base, static_cast<size_t>(rows) * row_bytes);
    return Status::ok();
  }
  for (int32_t t = 0; t < rows; ++t) {
    uint8_t* o = out + static_cast<uint64_t>(t) * row_bytes;
    if (t < rows - kv.rows) {
      std::memset(o, 0, row_bytes);
    } else {
      std::memcpy(o, base + cpu_kv_slot(kv, 0, t) * row_bytes, row_bytes);
    }
  }
  return Status::ok();
}

Status CpuBackend::write_kv(int32_t layer, bool values, int32_t rows, const uint8_t* in) {
  EMBER_TRY(check_rows(graph_, kv_, layer, rows));
  const CpuKvLayer& kv = kv_[layer];
  uint8_t* base = values ? kv.v : kv.k;
  const uint64_t row_bytes = values ? kv.v_row_bytes : kv.k_row_bytes;
  if (!kv.ring) {
    std::memcpy(base, in, static_cast<size_t>(rows) * row_bytes);
    return Status::ok();
  }
  ring_shift_[static_cast<size_t>(layer) * graph_->n_seqs] = 0;  // sequence 0 starts its ring afresh
  for (int32_t t = std::max(0, rows - kv.rows); t < rows; ++t) {
    std::memcpy(base + cpu_kv_slot(kv, 0, t) * row_bytes, in + static_cast<uint64_t>(t) * row_bytes, row_bytes);
  }
  return Status::ok();
}

}  // namespace ember

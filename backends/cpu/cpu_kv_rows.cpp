// The CPU cache's rows copied out and in, for saved sessions: the arena
// holds each layer's rows in the CPU row format already, so these are
// copies.
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

Status CpuBackend::read_kv(int32_t layer, bool values, int32_t rows, uint8_t* out) {
  EMBER_TRY(check_rows(graph_, kv_, layer, rows));
  const CpuKvLayer& kv = kv_[layer];
  std::memcpy(out, values ? kv.v : kv.k, static_cast<size_t>(rows) * (values ? kv.v_row_bytes : kv.k_row_bytes));
  return Status::ok();
}

Status CpuBackend::write_kv(int32_t layer, bool values, int32_t rows, const uint8_t* in) {
  EMBER_TRY(check_rows(graph_, kv_, layer, rows));
  const CpuKvLayer& kv = kv_[layer];
  std::memcpy(values ? kv.v : kv.k, in, static_cast<size_t>(rows) * (values ? kv.v_row_bytes : kv.k_row_bytes));
  return Status::ok();
}

}  // namespace ember

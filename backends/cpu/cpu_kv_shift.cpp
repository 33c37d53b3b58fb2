// Context shifting on the CPU: drop a range of cache positions and re-rotate
// the keys that move, so a long generation can continue in a small cache.
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace ember {

Status CpuBackend::remove_positions(int32_t start, int32_t end, int32_t n_pos) {
  return Status::error(EMBER_ERR_UNSUPPORTED, "remove_positions is not implemented yet");
}

}  // namespace ember

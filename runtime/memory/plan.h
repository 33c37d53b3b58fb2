// The memory plan (DESIGN.md principle 1): for a model and a session shape,
// every byte the session will use, computed before anything is allocated.
// The session's arena is exactly arena_bytes; the backend is handed the
// offsets computed here.
#pragma once

#include <cstdint>
#include <vector>

#include "api/status.h"
#include "backends/backend.h"

namespace ember {

constexpr uint64_t kArenaAlignment = 64;

struct MemoryPlan {
  // Weights.
  uint64_t weights_mapped_bytes = 0;    // read in place from the file
  uint64_t weights_resident_bytes = 0;  // copies (none on the CPU yet)
  // Session arena, by purpose.
  uint64_t kv_bytes = 0;
  uint64_t activations_bytes = 0;
  uint64_t scratch_bytes = 0;
  uint64_t arena_bytes = 0;  // kv + activations + scratch, aligned; scratch
                             // only on a device backend (KV and activations
                             // live in device memory there)
  // Layout inside the arena.
  uint64_t kv_offset = 0;       // layer l's keys at kv_offset + l * kv_layer_bytes,
  uint64_t kv_layer_bytes = 0;  // its values kv_v_offset bytes further
  uint64_t kv_v_offset = 0;
  uint64_t kv_k_row_bytes = 0;  // one position's keys (kv_dim elements)
  uint64_t kv_v_row_bytes = 0;
  std::vector<uint64_t> activation_offsets;
  uint64_t scratch_offset = 0;
};

// Lays out the graph's KV cache, activations and the backend's scratch.
// Fails with EMBER_ERR_NO_MEMORY when a size overflows.
Result<MemoryPlan> plan_memory(const Graph& graph, const Backend& backend);

}  // namespace ember

// The memory plan (ARCHITECTURE.md principle 1): for a model and a session shape,
// every byte the session will use, computed before anything is allocated.
// The session's arena is exactly arena_bytes; the backend is handed the
// offsets computed here.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "core/arena_layout.h"
#include "core/graph.h"
#include "core/status.h"

namespace ember {

// The offsets (ArenaLayout, what a backend reads at prepare) plus the
// byte counts `ember plan` reports.
struct MemoryPlan : ArenaLayout {
  // Weights.
  uint64_t weights_mapped_bytes = 0;    // read in place from the file
  uint64_t weights_resident_bytes = 0;  // copies (none on the CPU yet)
  // Session arena, by purpose.
  uint64_t kv_bytes = 0;
  uint64_t activations_bytes = 0;
  // scratch_bytes: ArenaLayout
  uint64_t arena_bytes = 0;  // kv + activations + scratch, aligned; scratch
                             // only on a device backend (KV and activations
                             // live in device memory there)
};

// Lays out the graph's KV cache, activations and the scratch of the backend
// `entry` made with `options` (its planning queries only: no device is
// opened). Fails with EMBER_ERR_NO_MEMORY when a size overflows.
Result<MemoryPlan> plan_memory(const Graph& graph, const BackendEntry& entry, const BackendOptions& options);

}  // namespace ember

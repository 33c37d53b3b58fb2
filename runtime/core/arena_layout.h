// Where a session's KV cache, activations and backend scratch lie inside its
// arena: the part of the memory plan (memory/plan.h, whose MemoryPlan is an
// ArenaLayout plus the byte counts) that a backend reads at prepare. It lives
// in core so that backends never include runtime/memory.
#pragma once

#include <cstdint>
#include <vector>

namespace ember {

constexpr uint64_t kArenaAlignment = 64;

struct ArenaLayout {
  uint64_t kv_offset = 0;       // layer l's keys at kv_offset + l * kv_layer_bytes,
  uint64_t kv_layer_bytes = 0;  // its values kv_v_offset bytes further
  uint64_t kv_v_offset = 0;
  uint64_t kv_k_row_bytes = 0;  // one position's keys (kv_dim elements)
  uint64_t kv_v_row_bytes = 0;
  // Per layer (Graph::kv_rows: a sliding-window layer may hold fewer rows):
  // its keys at kv_k_offsets[l], its values at kv_v_offsets[l] (arena
  // offsets). The scalar fields above describe layer 0 and, when every layer
  // holds the context, all of them.
  std::vector<uint64_t> kv_k_offsets, kv_v_offsets;
  std::vector<uint64_t> activation_offsets;  // one per Graph::activations entry
  uint64_t scratch_offset = 0;
  uint64_t scratch_bytes = 0;   // the backend's scratch, aligned
};

}  // namespace ember

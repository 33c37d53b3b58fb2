#include "memory/plan.h"

namespace ember {
namespace {

// Checked arithmetic: sizes come from a file and options a caller controls.
bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }
uint64_t align(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

}  // namespace

Result<MemoryPlan> plan_memory(const Graph& graph, const BackendEntry& entry, const BackendOptions& options) {
  MemoryPlan plan;
  const Status overflow = Status::error(EMBER_ERR_NO_MEMORY, "session memory size overflows 64 bits");
  for (const auto& w : graph.weights) plan.weights_mapped_bytes += w.size;

  // KV cache: per layer, n_seqs x context rows of keys then as many rows of
  // values (sequence s's position t: row s * context + t), each in its own
  // element type.
  const HParams& hp = graph.hparams;
  EMBER_ASSIGN_OR_RETURN(plan.kv_k_row_bytes, kv_row_bytes(graph.kv_type_k, hp.kv_dim()));
  EMBER_ASSIGN_OR_RETURN(plan.kv_v_row_bytes, kv_row_bytes(graph.kv_type_v, hp.kv_dim()));
  uint64_t k_bytes = 0, v_bytes = 0, kv_total = 0, kv_rows = 0;
  if (graph.n_seqs < 1 || !mul(static_cast<uint64_t>(graph.context), static_cast<uint64_t>(graph.n_seqs), &kv_rows) ||
      !mul(plan.kv_k_row_bytes, kv_rows, &k_bytes) || !mul(plan.kv_v_row_bytes, kv_rows, &v_bytes) ||
      !add(align(k_bytes), align(v_bytes), &plan.kv_layer_bytes) ||
      !mul(plan.kv_layer_bytes, hp.n_layers, &kv_total)) {
    return overflow;
  }
  plan.kv_v_offset = align(k_bytes);
  plan.kv_offset = 0;
  plan.kv_bytes = kv_total;

  // Activations: each its own slot (no reuse between ops yet).
  uint64_t at = plan.kv_bytes;
  plan.activation_offsets.reserve(graph.activations.size());
  for (const auto& a : graph.activations) {
    uint64_t bytes = 0;
    if (!mul(static_cast<uint64_t>(a.cols) * sizeof(float), static_cast<uint64_t>(a.rows), &bytes)) return overflow;
    plan.activation_offsets.push_back(at);
    if (!add(at, align(bytes), &at)) return overflow;
    plan.activations_bytes += align(bytes);
  }
  // A device backend keeps KV and activations in device memory
  // (device_bytes); the host arena then holds only its scratch.
  if (entry.device_bytes(graph, options) > 0) at = 0;
  plan.scratch_offset = at;
  plan.scratch_bytes = align(entry.scratch_bytes(graph, options));
  if (!add(at, plan.scratch_bytes, &at)) return overflow;
  plan.arena_bytes = at;
  return plan;
}

}  // namespace ember

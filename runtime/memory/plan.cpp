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

  // KV cache: per layer, n_seqs x rows (the context, or a sliding-window
  // ring's rows: graph.h kv_rows) of keys then as many rows of values
  // (sequence s's position t: row s * rows + its slot), each in its own
  // element type.
  const HParams& hp = graph.hparams;
  EMBER_ASSIGN_OR_RETURN(plan.kv_k_row_bytes, kv_row_bytes(graph.kv_type_k, hp.kv_dim()));
  EMBER_ASSIGN_OR_RETURN(plan.kv_v_row_bytes, kv_row_bytes(graph.kv_type_v, hp.kv_dim()));
  // Per layer: n_seqs x its rows (Graph::kv_rows: a sliding-window ring
  // may hold fewer than the context).
  if (graph.n_seqs < 1) return overflow;
  uint64_t kv_total = 0;
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    uint64_t rows = 0, k_bytes = 0, v_bytes = 0, layer = 0;
    if (!mul(static_cast<uint64_t>(kv_layer_rows(graph, static_cast<int32_t>(l))), static_cast<uint64_t>(graph.n_seqs),
             &rows) ||
        !mul(plan.kv_k_row_bytes, rows, &k_bytes) || !mul(plan.kv_v_row_bytes, rows, &v_bytes) ||
        !add(align(k_bytes), align(v_bytes), &layer)) {
      return overflow;
    }
    plan.kv_k_offsets.push_back(kv_total);
    plan.kv_v_offsets.push_back(kv_total + align(k_bytes));
    if (l == 0) {
      plan.kv_v_offset = align(k_bytes);
      plan.kv_layer_bytes = layer;
    }
    if (!add(kv_total, layer, &kv_total)) return overflow;
  }
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

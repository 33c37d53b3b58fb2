// Context shifting on the CPU: drop a range of cache positions and re-rotate
// the keys that move, so a long generation can continue in a small cache.
// Keys are stored after RoPE, so moving a key from position p to p - d means
// rotating it by -d positions' angles; values just move.
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_backend.h"

namespace ember {
namespace {

// Rotates every head of one key row by `delta` positions, with the RoPE the
// keys were stored with (graph.h key_rope: head_dim 0 rotates nothing): its
// rotated dims and frequency factors, not its mscale (the stored keys carry
// it already; a rotation keeps their length).
void rotate_row(const RopeParams& rope, float* row, int32_t delta) {
  const int64_t head_dim = rope.head_dim, half = rope_rotated_dims(rope) / 2;
  const bool adjacent = rope.style == RopeStyle::Adjacent;
  for (int64_t j = 0; j < half; ++j) {
    const float freq = rope_inv_freq(rope, j);
    const float angle = static_cast<float>(delta) * freq;
    const float c = std::cos(angle), s = std::sin(angle);
    for (uint32_t h = 0; h < rope.n_heads; ++h) {
      float* v = row + h * head_dim;
      const int64_t a = adjacent ? 2 * j : j;
      const int64_t b = adjacent ? 2 * j + 1 : j + half;
      const float v0 = v[a], v1 = v[b];
      v[a] = v0 * c - v1 * s;
      v[b] = v0 * s + v1 * c;
    }
  }
}

void shift_layer(int64_t kv_dim, const RopeParams& rope, const CpuKvLayer& kv, int32_t start, int32_t end,
                 int32_t n_pos, float* row) {
  const int32_t d = end - start;
  for (int32_t t = end; t < n_pos; ++t) {
    kv_load_row(kv.k_type, kv.k + t * kv.k_row_bytes, row, kv_dim);
    rotate_row(rope, row, -d);
    kv_store_row(kv.k_type, row, kv.k + (t - d) * kv.k_row_bytes, kv_dim);
    std::memcpy(kv.v + (t - d) * kv.v_row_bytes, kv.v + t * kv.v_row_bytes, kv.v_row_bytes);
  }
}

}  // namespace

Status CpuBackend::remove_positions(int32_t start, int32_t end, int32_t n_pos) {
  const HParams& hp = graph_->hparams;
  if (start < 0 || end < start || end > n_pos || n_pos > graph_->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "remove [%d, %d) of %d positions", start, end, n_pos);
  }
  // scratch_.row holds the widest weight row, at least dim >= kv_dim floats.
  // n_layers and kv_dim: the cache layout (per model); the rotation: each
  // layer's key RoPE.
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    shift_layer(hp.kv_dim(), key_rope(*graph_, static_cast<int32_t>(l)), kv_[l], start, end, n_pos, scratch_.row);
  }
  return Status::ok();
}

}  // namespace ember

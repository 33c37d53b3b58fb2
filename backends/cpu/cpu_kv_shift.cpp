// Context shifting on the CPU: drop a range of cache positions and re-rotate
// the keys that move, so a long generation can continue in a small cache.
// Keys are stored after RoPE, so moving a key from position p to p - d means
// rotating it by -d positions' angles; values just move.
#include <algorithm>
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

// A ring layer (cpu_attention.h CpuKvLayer): position p of the sequence in
// slot (p + shift) % rows, positions n_pos - rows .. n_pos - 1 present.
// Removing [start, end) moves every later position down by d = end - start:
// their slots stay and the shift grows by d (their keys re-rotated in
// place); positions before start keep their number, so they move to their
// new slot, highest first (the slot each lands in belonged to position
// q + d < end: already moved, or removed).
void shift_ring(int64_t kv_dim, const RopeParams& rope, const CpuKvLayer& kv, int32_t* shift, int32_t start,
                int32_t end, int32_t n_pos, float* row) {
  const int32_t d = end - start, r = kv.rows;
  const int32_t first = std::max(0, n_pos - r);
  auto slot = [&](int32_t p, int32_t sh) { return static_cast<int64_t>((p + sh) % r); };
  for (int32_t p = std::max(end, first); p < n_pos; ++p) {
    uint8_t* k = kv.k + slot(p, *shift) * kv.k_row_bytes;
    kv_load_row(kv.k_type, k, row, kv_dim);
    rotate_row(rope, row, -d);
    kv_store_row(kv.k_type, row, k, kv_dim);
  }
  const int32_t old = *shift;
  *shift = (old + d) % r;
  for (int32_t q = start - 1; q >= first; --q) {
    const int64_t from = slot(q, old), to = slot(q, *shift);
    std::memcpy(kv.k + to * kv.k_row_bytes, kv.k + from * kv.k_row_bytes, kv.k_row_bytes);
    std::memcpy(kv.v + to * kv.v_row_bytes, kv.v + from * kv.v_row_bytes, kv.v_row_bytes);
  }
}

// The lowest position a query at or after `n_pos` reads in a ring layer of
// this window, and whether the ring still holds the positions below `start`
// it would read (those older than the ring are gone).
bool ring_keeps(const CpuKvLayer& kv, int32_t start, int32_t new_pos, int32_t n_pos) {
  const int32_t lo = std::max(0, new_pos - kv.window + 1);
  return lo >= start || lo >= n_pos - kv.rows;
}

}  // namespace

Status CpuBackend::remove_positions(int32_t start, int32_t end, int32_t n_pos) {
  return remove_seq_positions(0, start, end, n_pos);
}

Status CpuBackend::remove_seq_positions(int32_t seq, int32_t start, int32_t end, int32_t n_pos) {
  const HParams& hp = graph_->hparams;
  if (start < 0 || end < start || end > n_pos || n_pos > graph_->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "remove [%d, %d) of %d positions", start, end, n_pos);
  }
  if (seq < 0 || seq >= graph_->n_seqs) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "remove: sequence %d outside 0..%d", seq, graph_->n_seqs - 1);
  }
  // A ring that no longer holds positions the window would read after the
  // removal cannot do it exactly: refused before anything changes.
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    if (kv_[l].ring && !ring_keeps(kv_[l], start, n_pos - (end - start), n_pos)) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "remove [%d, %d) of %d positions: sliding-window layer %u keeps only the last %d positions, "
                           "and its window would read ones before %d that it no longer holds (a session with "
                           "sliding_window_full keeps them)",
                           start, end, n_pos, l, kv_[l].rows, start);
    }
  }
  // A tail: nothing moves (its slots are written again as the sequence grows).
  if (end == n_pos) return Status::ok();
  // scratch_.row holds the widest weight row, at least dim >= kv_dim floats.
  // n_layers and kv_dim: the cache layout (per model); the rotation: each
  // layer's key RoPE.
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const RopeParams rope = key_rope(*graph_, static_cast<int32_t>(l));
    if (kv_[l].ring) {
      shift_ring(hp.kv_dim(), rope, seq_layer(l, seq), &ring_shift_[static_cast<size_t>(l) * graph_->n_seqs + seq],
                 start, end, n_pos, scratch_.row);
    } else {
      shift_layer(hp.kv_dim(), rope, seq_layer(l, seq), start, end, n_pos, scratch_.row);
    }
  }
  return Status::ok();
}

Status CpuBackend::copy_seq(int32_t src, int32_t dst, int32_t n_pos, int32_t src_positions) {
  if (src < 0 || src >= graph_->n_seqs || dst < 0 || dst >= graph_->n_seqs || n_pos < 0 || n_pos > graph_->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "copy of %d positions from sequence %d to %d (sequences 0..%d)",
                         n_pos, src, dst, graph_->n_seqs - 1);
  }
  if (src == dst || n_pos == 0) return Status::ok();
  const int32_t src_pos = src_positions;
  for (uint32_t l = 0; l < graph_->hparams.n_layers; ++l) {
    if (kv_[l].ring && !ring_keeps(kv_[l], n_pos, n_pos, src_pos)) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "copy of %d positions of sequence %d (at %d): sliding-window layer %u keeps only its last %d "
                           "positions, not the ones before %d the copy's window reads (sliding_window_full keeps them)",
                           n_pos, src, src_pos, l, kv_[l].rows, n_pos);
    }
  }
  for (uint32_t l = 0; l < graph_->hparams.n_layers; ++l) {
    const CpuKvLayer from = seq_layer(l, src), to = seq_layer(l, dst);
    if (kv_[l].ring) {
      // The whole ring and its shift: positions past n_pos are never read
      // (the destination's next positions overwrite their slots first).
      std::memcpy(to.k, from.k, static_cast<size_t>(kv_[l].rows) * from.k_row_bytes);
      std::memcpy(to.v, from.v, static_cast<size_t>(kv_[l].rows) * from.v_row_bytes);
      ring_shift_[static_cast<size_t>(l) * graph_->n_seqs + dst] = ring_shift_[static_cast<size_t>(l) * graph_->n_seqs + src];
    } else {
      std::memcpy(to.k, from.k, static_cast<size_t>(n_pos) * from.k_row_bytes);
      std::memcpy(to.v, from.v, static_cast<size_t>(n_pos) * from.v_row_bytes);
    }
  }
  return Status::ok();
}

CpuKvLayer CpuBackend::seq_layer(uint32_t layer, int32_t seq) const {
  CpuKvLayer kv = kv_[layer];
  const uint64_t first = static_cast<uint64_t>(seq) * static_cast<uint64_t>(kv.rows);
  kv.k += first * kv.k_row_bytes;
  kv.v += first * kv.v_row_bytes;
  return kv;
}

}  // namespace ember

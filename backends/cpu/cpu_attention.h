// RoPE and causal grouped-query attention over a typed KV cache, for the CPU
// backend. Attention is bound by reading the cache (context x kv_dim per
// layer per token); rows are converted once per position and shared by all
// the heads that read them.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/kernels.h"
#include "core/graph.h"
#include "core/hparams.h"
#include "core/kv_type.h"

namespace ember {

// One layer's cache: per sequence `rows` rows of keys (then as many rows of
// values elsewhere). A full layer holds every position p in row p; a ring
// (a sliding-window layer, rows < context) holds position p in slot
// (p + shift[seq]) % rows.
struct CpuKvLayer {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  int32_t rows = 0;
  bool ring = false;
  int32_t window = 0;  // the layer's attention window (0: all positions)
  const int32_t* shift = nullptr;  // ring: per sequence, in 0 .. rows - 1
  KvType k_type = KvType::F32;
  KvType v_type = KvType::F32;
  uint64_t k_row_bytes = 0;
  uint64_t v_row_bytes = 0;
};

// Working memory of one cpu_attention call over at most `heads` heads, in
// floats (each thread of the pool has its own).
int64_t cpu_attention_scratch_floats(const HParams& hp, int32_t context, int32_t heads);

// Rotates n rows of `cols` floats (p.n_heads heads of p.head_dim: graph.h
// check_op_params holds cols to that) in place; cos/sin hold head_dim / 2
// angles per row.
void cpu_rope(const RopeParams& p, float* x, int64_t cols, int32_t n, const float* cos, const float* sin);

// The cache row of sequence seq's position pos in a layer.
inline int64_t cpu_kv_slot(const CpuKvLayer& kv, int32_t seq, int32_t pos) {
  const int64_t base = static_cast<int64_t>(seq) * kv.rows;
  return kv.ring ? base + (pos + kv.shift[seq]) % kv.rows : base + pos;
}

// Where a step's rows go in the cache: row i is at position pos[i] of
// sequence seq[i].
struct CpuStepRows {
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  // Per row, how many positions its query sees (non-causal attention: all
  // its sequence holds after the step); null: pos + 1.
  const int32_t* visible = nullptr;
};

// Stores n rows of keys and values (kv_dim floats each) at their slots.
void cpu_kv_store(int64_t kv_dim, const CpuKvLayer& kv, const float* k, const float* v, int32_t n,
                  const CpuStepRows& rows);

// For query rows i in [row_begin, row_end) of the step (position rows.pos[i]
// of sequence rows.seq[i]) and heads [head_begin,
// head_end): out = softmax(q k^T * p.scale) v over the sequence's positions
// 0 .. rows.pos[i] (the last p.window of them when p.window is set;
// scores soft-capped first when p.softcap is set), with the dispatched f32 kernels (an f32 cache is
// read in place, one kernel call per head and row; other types are
// converted a row at a time and shared by the heads that read it).
struct AttentionKernels {
  DotFn dot;
  AxpyFn axpy;
  DotRowsFn dot_rows;
  AxpyRowsFn axpy_rows;
  SoftmaxFn softmax;
};
void cpu_attention(const AttentionParams& p, const CpuKvLayer& kv, const float* q, float* out, const CpuStepRows& rows,
                   int32_t row_begin, int32_t row_end, int32_t head_begin, int32_t head_end, int32_t context,
                   float* scratch, const AttentionKernels& k);

}  // namespace ember

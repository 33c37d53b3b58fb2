// RoPE and grouped-query attention over a typed KV cache, for the CPU
// backend: tiled, so that a block of a step's rows shares each chunk of
// keys and values it reads (prefill is bound by the arithmetic, decode at
// depth by reading the cache).
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

// Attention in tiles (flash-attention style). Keys are taken in chunks of
// kAttnChunk positions aligned to multiples of it, chunks in spans of
// kAttnSpan positions. A block of rows of one sequence (every head) takes a
// chunk's keys and values once: an f16 cache in place where the kernels
// widen as they read (AttnScoresF16Fn, AxpyRowsF16Fn), an f32 cache in
// place, anything else converted into per-thread scratch. Per row and head,
// a span keeps a running maximum m, sum l and weighted values o: a chunk's
// scores become exp(score - m') with m' the maximum so far (ExpSumFn), l and
// o are rescaled where m' moved, and the chunk's values are added into o
// (AxpyRowsFn); spans fold into the result in position order by (m, l, o)
// rescaling; out = o / l. A row's arithmetic depends on its position, its
// sequence's cache and the positions it sees only: not on the other rows of
// the step, the blocks, the threads, or whether a step of few rows splits a
// row's spans over the threads (the partials fold in span order either way),
// so a row's result is bitwise the same in any step.
constexpr int32_t kAttnChunk = 64;
constexpr int32_t kAttnSpan = 512;
// Steps of at most this many rows split spans over the threads when rows x
// key heads would leave threads idle (decode at depth).
constexpr int32_t kAttnSplitRows = 8;

struct AttentionKernels {
  DotRowsFn dot_rows;
  AxpyRowsFn axpy_rows;
  ExpSumFn exp_sum;
  F16WidenFn f16_widen;
  // Null: scores by dot_rows, a row at a time; else a chunk's scores for
  // every query vector of a block at once, keys in lanes.
  AttnScoresFn scores;
  // With scores: an f16 cache read in place, no converted copy (null: the
  // copy; the same bits either way).
  AttnScoresF16Fn scores_f16;
  AxpyRowsF16Fn axpy_rows_f16;
};

// The largest attention shape of a graph, for the scratch sizes.
struct AttentionShape {
  int32_t head_dim = 0;
  int32_t n_heads = 0;
  int32_t group = 1;   // query heads per key head
  int32_t kv_dim = 0;  // the widest cache row, floats
  int32_t context = 0;
};
// Working memory of one thread, in floats.
int64_t cpu_attention_thread_floats(const AttentionShape& s);
// The partials of a split step (kAttnSplitRows rows), in floats, shared.
int64_t cpu_attention_partial_floats(const AttentionShape& s);

class ThreadPool;

// For the step's n query rows (row i: position rows.pos[i] of sequence
// rows.seq[i]): out = softmax(q k^T * p.scale) v over the positions the row
// sees (0 .. pos, the last p.window of them when p.window is set, all of
// rows.visible[i] when set; scores soft-capped first when p.softcap is set),
// on all the pool's threads. thread_scratch holds pool.size() x
// thread_floats floats, partials cpu_attention_partial_floats.
void cpu_attention(ThreadPool& pool, const AttentionParams& p, const CpuKvLayer& kv, const float* q, float* out,
                   const CpuStepRows& rows, int32_t n, float* thread_scratch, int64_t thread_floats, float* partials,
                   const AttentionKernels& k, const AttentionShape& shape);

}  // namespace ember

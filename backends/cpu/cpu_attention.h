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

// One layer's cache: `context` rows of keys then `context` rows of values.
struct CpuKvLayer {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
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

// Where a step's rows go in the cache: row i is at position pos[i] of its
// sequence, whose position 0 is cache row base[i] (sequence x context).
struct CpuStepRows {
  const int32_t* pos = nullptr;
  const int32_t* base = nullptr;
};

// Stores n rows of keys and values (kv_dim floats each) at cache rows
// base[i] + pos[i].
void cpu_kv_store(int64_t kv_dim, const CpuKvLayer& kv, const float* k, const float* v, int32_t n,
                  const CpuStepRows& rows);

// For query rows i in [row_begin, row_end) of the step (position rows.pos[i]
// of the sequence at cache row rows.base[i]) and heads [head_begin,
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

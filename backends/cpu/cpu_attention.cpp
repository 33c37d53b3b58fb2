#include "backends/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <climits>

#include "backends/cpu/thread_pool.h"
#include "core/dtype.h"

namespace ember {
void cpu_rope(const RopeParams& p, float* x, int64_t cols, int32_t n, const float* cos, const float* sin) {
  // Only the first n_rot elements of a head rotate (partial rotary); the
  // rest stay as they are (in place).
  const int64_t head_dim = p.head_dim, half = rope_rotated_dims(p) / 2;
  const int64_t heads = p.n_heads;
  const bool adjacent = p.style == RopeStyle::Adjacent;
  // LongRoPE's attention factor scales cos and sin (as ggml scales its
  // cache); x * 1.0f is exact, so without one the results are unchanged.
  const float m = p.mscale;
  for (int32_t i = 0; i < n; ++i) {
    const float* cs = cos + i * half;
    const float* sn = sin + i * half;
    for (int64_t hh = 0; hh < heads; ++hh) {
      float* v = x + i * cols + hh * head_dim;
      for (int64_t j = 0; j < half; ++j) {
        // Adjacent: (2j, 2j+1) as llama2.c and GGUF llama; Half: (j, j+half)
        // as Hugging Face checkpoints.
        const int64_t a = adjacent ? 2 * j : j;
        const int64_t b = adjacent ? 2 * j + 1 : j + half;
        const float c = cs[j] * m, s = sn[j] * m;
        const float v0 = v[a], v1 = v[b];
        v[a] = v0 * c - v1 * s;
        v[b] = v0 * s + v1 * c;
      }
    }
  }
}

void cpu_kv_store(int64_t kv_dim, const CpuKvLayer& kv, const float* k, const float* v, int32_t n,
                  const CpuStepRows& rows) {
  for (int32_t i = 0; i < n; ++i) {
    const int64_t r = cpu_kv_slot(kv, rows.seq[i], rows.pos[i]);
    kv_store_row(kv.k_type, k + i * kv_dim, kv.k + r * kv.k_row_bytes, kv_dim);
    kv_store_row(kv.v_type, v + i * kv_dim, kv.v + r * kv.v_row_bytes, kv_dim);
  }
}

namespace {

// Query vectors of one key head a block aims at, and of all heads at most.
constexpr int32_t kBlockQueries = 128;
constexpr int32_t kBlockVectors = 1024;

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// Rows a block takes at most.
int32_t block_rows(const AttentionShape& s) {
  const int32_t by_group = kBlockQueries / std::max<int32_t>(1, s.group);
  const int32_t by_heads = kBlockVectors / std::max<int32_t>(1, s.n_heads);
  return std::max<int32_t>(1, std::min(by_group, by_heads));
}

int64_t max_spans(const AttentionShape& s) { return (static_cast<int64_t>(s.context) + kAttnSpan - 1) / kAttnSpan; }

// An accumulator of one row and head: m, l, then o (head_dim floats);
// l == 0: empty (a chunk's l is at least 1).
inline void fold(float* acc, float m2, float l2, const float* o2, int64_t d) {
  if (acc[1] == 0.0f) {
    acc[0] = m2;
    acc[1] = l2;
    std::memcpy(acc + 2, o2, static_cast<size_t>(d) * sizeof(float));
    return;
  }
  // e^0 = 1 exactly: the exponential only where a maximum moved.
  const float m = std::max(acc[0], m2);
  const float a = acc[0] == m ? 1.0f : std::exp(acc[0] - m), b = m2 == m ? 1.0f : std::exp(m2 - m);
  acc[0] = m;
  acc[1] = acc[1] * a + l2 * b;
  float* o = acc + 2;
  for (int64_t j = 0; j < d; ++j) o[j] = o[j] * a + o2[j] * b;
}

// The positions row i sees: [lo, hi).
inline void row_range(const AttentionParams& p, const CpuStepRows& rows, int32_t i, int32_t* lo, int32_t* hi) {
  const int32_t n_all = rows.visible ? rows.visible[i] : rows.pos[i] + 1;
  *hi = n_all;
  *lo = p.window != 0 && n_all > static_cast<int32_t>(p.window) ? n_all - static_cast<int32_t>(p.window) : 0;
}

// Per-thread scratch: a chunk's converted keys and values (rows of
// kv_dim), one key head's scores of the chunk for the block, the block's
// span and result accumulators (row major, then head), the block's query
// vectors (key head major) and the chunk's keys transposed (AttnScoresFn).
struct ThreadBufs {
  float *kbuf, *vbuf, *scores, *span_acc, *acc, *qbuf, *kt;
};

ThreadBufs thread_bufs(float* base, const AttentionShape& s) {
  const int64_t d = s.head_dim, rows = block_rows(s), vectors = rows * s.n_heads;
  ThreadBufs b{};
  b.kbuf = base;
  b.vbuf = b.kbuf + kAttnChunk * round16(s.kv_dim);
  b.scores = b.vbuf + kAttnChunk * round16(s.kv_dim);
  b.span_acc = b.scores + rows * s.group * kAttnChunk;
  b.acc = b.span_acc + vectors * (d + 2);
  b.qbuf = b.acc + vectors * (d + 2);
  b.kt = b.qbuf + vectors * d;
  return b;
}

struct Job {
  const AttentionParams& p;
  const CpuKvLayer& kv;
  const float* q;
  float* out;
  const CpuStepRows& rows;
  const AttentionKernels& k;
  AttentionShape shape;
  int32_t n;
  int64_t d, g, nh, q_dim, n_kv, kv_dim;
  int32_t block;       // rows per block
  int32_t n_blocks;
  int32_t n_spans;     // split: spans per row; 0: not split
  float* partials;     // split: [row][head][span] (d + 2 floats)
};

// An f16 cache's rows of positions [pa, pb) in place when their slots run
// contiguously and the kernels read f16 (null otherwise). The AVX-512
// kernels prefetch the next chunk's rows as they read these (kernels.h).
const uint16_t* in_place_f16(const Job& j, const uint8_t* base, KvType type, uint64_t row_bytes, int32_t seq,
                             int32_t pa, int32_t pb) {
  if (type != KvType::F16 || j.k.scores_f16 == nullptr || j.k.scores == nullptr) return nullptr;
  const int64_t s0 = cpu_kv_slot(j.kv, seq, pa);
  if (cpu_kv_slot(j.kv, seq, pb - 1) - s0 != pb - 1 - pa) return nullptr;
  return reinterpret_cast<const uint16_t*>(base + s0 * row_bytes);
}

// Keys (or values) of positions [pa, pb) of sequence seq, every key head,
// as f32 rows of kv_dim (key head kh at + kh * d), *stride floats apart: an
// f32 cache in place where its slots run contiguously, else converted into
// buf, in one call where the slots run contiguously (whole cache rows are
// read in order: a key head's slice alone, rows apart, ran at a third of
// the read speed; a call per row and head cost more than the conversion).
const float* gather(const Job& j, const uint8_t* base, KvType type, uint64_t row_bytes, int32_t seq, int32_t pa,
                    int32_t pb, float* buf, int64_t* stride) {
  const int64_t s0 = cpu_kv_slot(j.kv, seq, pa);
  const bool contiguous = cpu_kv_slot(j.kv, seq, pb - 1) - s0 == pb - 1 - pa;
  if (type == KvType::F32 && contiguous) {
    *stride = static_cast<int64_t>(row_bytes / sizeof(float));
    return reinterpret_cast<const float*>(base + s0 * row_bytes);
  }
  *stride = j.kv_dim;
  const DType dt = kv_dtype(type);
  uint64_t packed = 0;
  const bool whole = contiguous && dtype_bytes(dt, static_cast<uint64_t>(j.kv_dim), &packed) && packed == row_bytes;
  const int32_t n = whole ? 1 : pb - pa;
  const int64_t elems = whole ? static_cast<int64_t>(pb - pa) * j.kv_dim : j.kv_dim;
  for (int32_t r = 0; r < n; ++r) {
    const uint8_t* src = base + cpu_kv_slot(j.kv, seq, pa + r) * row_bytes;
    float* dst = buf + r * j.kv_dim;
    if (type == KvType::F16) {
      j.k.f16_widen(reinterpret_cast<const uint16_t*>(src), dst, elems);
    } else {
      dequantize_row(dt, src, dst, elems);
    }
  }
  return buf;
}

// Block rows [i0, i1) of one sequence, every head, spans [sp0, sp1): each
// row's span results fold into acc (whole) or go to the partials (split).
void run_rows(const Job& j, int32_t i0, int32_t i1, int32_t sp0, int32_t sp1, const ThreadBufs& b) {
  const int64_t d = j.d, g = j.g, nh = j.nh, as = d + 2;
  const int32_t seq = j.rows.seq[i0];
  const int64_t nr = i1 - i0;
  int32_t lo = INT32_MAX, hi = 0;
  for (int32_t i = i0; i < i1; ++i) {
    int32_t a, e;
    row_range(j.p, j.rows, i, &a, &e);
    lo = std::min(lo, a);
    hi = std::max(hi, e);
  }
  for (int64_t x = 0; x < nr * nh; ++x) b.acc[x * as + 1] = 0.0f;
  const bool tiled = j.k.scores != nullptr;
  if (tiled) {
    // The block's query vectors, key head major: [kh][row][head of kh].
    for (int64_t kh = 0; kh < j.n_kv; ++kh) {
      for (int64_t r = 0; r < nr; ++r) {
        std::memcpy(b.qbuf + (kh * nr + r) * g * d, j.q + (i0 + r) * j.q_dim + kh * g * d,
                    static_cast<size_t>(g * d) * sizeof(float));
      }
    }
  }
  for (int32_t sp = sp0; sp < sp1; ++sp) {
    for (int64_t x = 0; x < nr * nh; ++x) b.span_acc[x * as + 1] = 0.0f;
    const int32_t span_lo = std::max(lo, sp * kAttnSpan), span_hi = std::min(hi, (sp + 1) * kAttnSpan);
    for (int32_t c0 = span_lo / kAttnChunk * kAttnChunk; c0 < span_hi; c0 += kAttnChunk) {
      const int32_t pa = std::max(span_lo, c0), pb = std::min(span_hi, c0 + kAttnChunk);
      if (pa >= pb) continue;
      int64_t ks = 0, vs = 0;
      const uint16_t* k16 = in_place_f16(j, j.kv.k, j.kv.k_type, j.kv.k_row_bytes, seq, pa, pb);
      const uint16_t* v16 = j.k.axpy_rows_f16 ? in_place_f16(j, j.kv.v, j.kv.v_type, j.kv.v_row_bytes, seq, pa, pb)
                                             : nullptr;
      const float* kc = k16 ? nullptr : gather(j, j.kv.k, j.kv.k_type, j.kv.k_row_bytes, seq, pa, pb, b.kbuf, &ks);
      const float* vc = v16 ? nullptr : gather(j, j.kv.v, j.kv.v_type, j.kv.v_row_bytes, seq, pa, pb, b.vbuf, &vs);
      const int64_t ks16 = static_cast<int64_t>(j.kv.k_row_bytes / 2), vs16 = static_cast<int64_t>(j.kv.v_row_bytes / 2);
      for (int64_t kh = 0; kh < j.n_kv; ++kh) {
        const float* kk = kc ? kc + kh * d : nullptr;
        const float* vv = vc ? vc + kh * d : nullptr;
        if (k16) {
          j.k.scores_f16(b.qbuf + kh * nr * g * d, static_cast<int32_t>(nr * g), d, k16 + kh * d, ks16, pb - pa,
                         j.p.scale, b.scores, kAttnChunk, b.kt);
        } else if (tiled) {
          j.k.scores(b.qbuf + kh * nr * g * d, static_cast<int32_t>(nr * g), d, kk, ks, pb - pa, j.p.scale, b.scores,
                     kAttnChunk, b.kt);
        }
        for (int32_t i = i0; i < i1; ++i) {
          int32_t a, e;
          row_range(j.p, j.rows, i, &a, &e);
          a = std::max(a, pa);
          e = std::min(e, pb);
          if (a >= e) continue;
          const int32_t nk = e - a;
          // The row's scores: sc[h * kAttnChunk + t] for its keys t < nk.
          float* sc = b.scores;
          if (tiled) {
            sc = b.scores + static_cast<int64_t>(i - i0) * g * kAttnChunk + (a - pa);
          } else {
            const float* qi = j.q + static_cast<int64_t>(i) * j.q_dim + kh * g * d;
            j.k.dot_rows(qi, static_cast<int32_t>(g), d, kk + (a - pa) * ks, ks, nk, d, j.p.scale, sc, kAttnChunk);
          }
          if (j.p.softcap != 0.0f) {
            // Gemma 2: scores = cap * tanh(scores / cap) before the softmax.
            for (int64_t h = 0; h < g; ++h) {
              float* sh = sc + h * kAttnChunk;
              for (int32_t t = 0; t < nk; ++t) sh[t] = j.p.softcap * std::tanh(sh[t] / j.p.softcap);
            }
          }
          float* span = b.span_acc + ((i - i0) * nh + kh * g) * as;
          // Into the span's accumulators directly: the running maximum goes
          // into the exponentials, and where it moves, l and o are rescaled
          // first (flash attention's online softmax).
          for (int64_t h = 0; h < g; ++h) {
            float* acc = span + h * as;
            const bool empty = acc[1] == 0.0f;
            float m = empty ? -INFINITY : acc[0];
            const float lc = j.k.exp_sum(sc + h * kAttnChunk, nk, &m);
            if (empty) {
              std::memset(acc + 2, 0, static_cast<size_t>(d) * sizeof(float));
            } else if (m != acc[0]) {
              const float r = std::exp(acc[0] - m);
              acc[1] *= r;
              for (int64_t x = 0; x < d; ++x) acc[2 + x] *= r;
            }
            acc[0] = m;
            acc[1] += lc;
          }
          if (v16) {
            j.k.axpy_rows_f16(span + 2, static_cast<int32_t>(g), as, sc, kAttnChunk, v16 + kh * d + (a - pa) * vs16, vs16,
                              nk, d);
          } else {
            j.k.axpy_rows(span + 2, static_cast<int32_t>(g), as, sc, kAttnChunk, vv + (a - pa) * vs, vs, nk, d);
          }
        }
      }
    }
    for (int32_t i = i0; i < i1; ++i) {
      const float* span = b.span_acc + (i - i0) * nh * as;
      if (j.n_spans > 0) {
        for (int64_t h = 0; h < nh; ++h) {
          float* part = j.partials + ((static_cast<int64_t>(i) * j.shape.n_heads + h) * j.n_spans + sp) * as;
          std::memcpy(part, span + h * as, static_cast<size_t>(as) * sizeof(float));
        }
        continue;
      }
      float* acc = b.acc + (i - i0) * nh * as;
      for (int64_t h = 0; h < nh; ++h) {
        if (span[h * as + 1] != 0.0f) fold(acc + h * as, span[h * as], span[h * as + 1], span + h * as + 2, d);
      }
    }
  }
  if (j.n_spans > 0) return;
  for (int32_t i = i0; i < i1; ++i) {
    const float* acc = b.acc + (i - i0) * nh * as;
    for (int64_t h = 0; h < nh; ++h) {
      float* o = j.out + static_cast<int64_t>(i) * j.q_dim + h * d;
      const float inv = 1.0f / acc[h * as + 1];
      for (int64_t x = 0; x < d; ++x) o[x] = acc[h * as + 2 + x] * inv;
    }
  }
}

// Block `blk`'s rows [blk * block, ...), in runs of one sequence each.
template <typename F>
void block_runs(const Job& j, int32_t blk, F&& fn) {
  const int32_t r0 = blk * j.block, r1 = std::min(j.n, r0 + j.block);
  for (int32_t i0 = r0; i0 < r1;) {
    int32_t i1 = i0 + 1;
    while (i1 < r1 && j.rows.seq[i1] == j.rows.seq[i0]) ++i1;
    fn(i0, i1);
    i0 = i1;
  }
}

}  // namespace

int64_t cpu_attention_thread_floats(const AttentionShape& s) {
  const int64_t d = s.head_dim, rows = block_rows(s), vectors = rows * s.n_heads;
  return 2 * kAttnChunk * round16(s.kv_dim) + rows * s.group * kAttnChunk + 2 * vectors * (d + 2) + vectors * d +
         kAttnChunk * round16(d) + 32;
}

int64_t cpu_attention_partial_floats(const AttentionShape& s) {
  return static_cast<int64_t>(kAttnSplitRows) * s.n_heads * max_spans(s) * (s.head_dim + 2);
}

void cpu_attention(ThreadPool& pool, const AttentionParams& p, const CpuKvLayer& kv, const float* q, float* out,
                   const CpuStepRows& rows, int32_t n, float* thread_scratch, int64_t thread_floats, float* partials,
                   const AttentionKernels& k, const AttentionShape& shape) {
  const int64_t d = p.head_dim, n_kv = p.n_kv_heads, g = p.n_heads / p.n_kv_heads;
  const int threads = pool.size();
  // Blocks: as many rows as the scratch takes, fewer when the step would
  // leave threads without a block.
  int32_t block = block_rows(shape);
  block = std::min<int32_t>(block, std::max<int32_t>(1, n / (4 * threads)));
  const int32_t n_blocks = (n + block - 1) / block;
  int32_t hi = 0;
  for (int32_t i = 0; i < n; ++i) {
    int32_t a, e;
    row_range(p, rows, i, &a, &e);
    hi = std::max(hi, e);
  }
  const int32_t spans = (hi + kAttnSpan - 1) / kAttnSpan;
  const bool split = partials != nullptr && n <= kAttnSplitRows && spans > 1 && n_blocks < 2 * threads &&
                     spans <= max_spans(shape);
  Job j{p,  kv, q, out, rows, k, shape, n, d, g, static_cast<int64_t>(p.n_heads), d * p.n_heads, n_kv, d * n_kv,
        block, n_blocks, split ? spans : 0, partials};
  if (!split) {
    // Later blocks see more positions (causal): they go first.
    pool.run(n_blocks, [&](int u, int, int thread) {
      const ThreadBufs b = thread_bufs(thread_scratch + thread * thread_floats, shape);
      block_runs(j, n_blocks - 1 - u, [&](int32_t i0, int32_t i1) { run_rows(j, i0, i1, 0, spans, b); });
    });
    return;
  }
  pool.run(n_blocks * spans, [&](int u, int, int thread) {
    const ThreadBufs b = thread_bufs(thread_scratch + thread * thread_floats, shape);
    const int32_t sp = u % spans;
    block_runs(j, u / spans, [&](int32_t i0, int32_t i1) { run_rows(j, i0, i1, sp, sp + 1, b); });
  });
  // Each row and head: its spans folded in order, as run_rows folds them.
  const int64_t as = d + 2;
  float* acc = thread_scratch;  // thread 0's, free again
  for (int32_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < p.n_heads; ++h) {
      acc[1] = 0.0f;
      const float* part = partials + (static_cast<int64_t>(i) * shape.n_heads + h) * spans * as;
      for (int32_t sp = 0; sp < spans; ++sp) {
        const float* s = part + sp * as;
        if (s[1] != 0.0f) fold(acc, s[0], s[1], s + 2, d);
      }
      float* o = out + static_cast<int64_t>(i) * d * p.n_heads + h * d;
      const float inv = 1.0f / acc[1];
      for (int64_t x = 0; x < d; ++x) o[x] = acc[2 + x] * inv;
    }
  }
}

}  // namespace ember

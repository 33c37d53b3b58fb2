// Element-wise and reduction kernels on f32 rows with AVX-512F; tails use
// masked loads and stores. Bound by memory (rows of a few thousand floats).
#if defined(__x86_64__)
#include <immintrin.h>

#include <math.h>

#include <algorithm>

// GCC 12 reports its own _mm512_undefined_* placeholders (inside the
// intrinsic headers' shuffles) as uninitialized; nothing here reads them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

inline __mmask16 tail_mask(int64_t left) { return static_cast<__mmask16>((1u << left) - 1); }

// Rows ahead that the attention kernels prefetch: a chunk of keys (the CPU
// backend's kAttnChunk).
constexpr int64_t kAttnAhead = 64;

// e^x, Cephes polynomial (about 1 ulp on the clamped range), 2^n by scalef.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, fx);
}

// The sum of v's 16 lanes, by a fixed tree: lanes j + j + 8, then j + j + 4,
// then j + j + 2, then 0 + 1. reduce16x16 adds 16 vectors by the same tree,
// so a row of f32_dot_rows is f32_dot's sum bit for bit.
inline float reduce16(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 r = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(r, _mm_shuffle_ps(r, r, 1)));
}

// Lane t of the result = reduce16(a[t]). Level 1 pairs vectors (halves:
// lanes j, j + 8), level 2 their quarters (j, j + 4), level 3 and 4 the
// lanes within quarters (j, j + 2; 0, 1); the last permute puts key t in
// lane t (level 4 leaves key 4m + i in lane 4i + m).
inline __m512 reduce16x16(const __m512* a) {
  __m512 b[8], c[4], d[2];
  for (int u = 0; u < 8; ++u) {
    b[u] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * u], a[2 * u + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a[2 * u], a[2 * u + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  for (int v = 0; v < 4; ++v) {
    c[v] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * v], b[2 * v + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(b[2 * v], b[2 * v + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int w = 0; w < 2; ++w) {
    d[w] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * w], c[2 * w + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(c[2 * w], c[2 * w + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  const __m512 e = _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, e);
}

inline __m512 swiglu16(__m512 a, __m512 b) {
  const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), a));
  return _mm512_mul_ps(_mm512_div_ps(a, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), b);
}

}  // namespace

void f32_rmsnorm__avx512(float* out, const float* x, const float* w, int64_t n, float eps) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    acc = _mm512_fmadd_ps(v, v, acc);
  }
  if (i < n) {
    const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
    acc = _mm512_fmadd_ps(v, v, acc);
  }
  float ss = _mm512_reduce_add_ps(acc) / static_cast<float>(n) + eps;
  ss = 1.0f / __builtin_sqrtf(ss);
  const __m512 s = _mm512_set1_ps(ss);
  for (i = 0; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(w + i), _mm512_mul_ps(s, _mm512_loadu_ps(x + i))));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, x + i))));
  }
}

void f32_swiglu__avx512(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, swiglu16(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, m, swiglu16(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void f32_add__avx512(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

float f32_dot__avx512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return reduce16(acc);
}

void f32_axpy__avx512(float* y, float alpha, const float* x, int64_t n) {
  const __m512 va = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

// Attention over many keys in one call (no call per key): the same
// arithmetic as f32_dot / f32_axpy per row, in row order.
// 16 keys at a time: their chains side by side (f32_dot's, one per key) and
// one transposed reduction for all 16 (about 2 shuffles and 1 add per key
// where a reduction of its own takes 4 and 4: the reductions, not the FMAs,
// bounded 512-token attention).
namespace {

// One head's scores, 16 keys at a time.
void dot_rows1(const float* q, const float* k, int64_t k_stride, int32_t n_rows, int64_t n, float scale, float* out) {
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = tail_mask(n - full);
  const __m512 vscale = _mm512_set1_ps(scale);
  int32_t t = 0;
  for (; t + 16 <= n_rows; t += 16) {
    const float* kt = k + t * k_stride;
    __m512 acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < full; i += 16) {
      const __m512 qv = _mm512_loadu_ps(q + i);
      for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kt + j * k_stride + i), acc[j]);
    }
    if (full < n) {
      const __m512 qv = _mm512_maskz_loadu_ps(tail, q + full);
      for (int j = 0; j < 16; ++j) {
        acc[j] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, kt + j * k_stride + full), acc[j]);
      }
    }
    _mm512_storeu_ps(out + t, _mm512_mul_ps(reduce16x16(acc), vscale));
  }
  for (; t < n_rows; ++t) out[t] = f32_dot__avx512(q, k + t * k_stride, n) * scale;
}

// H heads (1-4) x 4 keys at a time (n a multiple of 16): each key's
// vectors are loaded once for the H heads; the 4H chains are f32_dot's,
// reduced together (lane 4h + j: head h, key j; the lanes past 4H reduce
// zeros and are not stored). Keys past the last 4 go to dot_rows1.
template <int H>
void dot_rows_heads(const float* q, int64_t q_stride, const float* k, int64_t k_stride, int32_t n_rows, int64_t n,
                    float scale, float* out, int64_t out_stride) {
  const __m512 vscale = _mm512_set1_ps(scale);
  int32_t t = 0;
  for (; t + 4 <= n_rows; t += 4) {
    const float* kt = k + t * k_stride;
    __m512 acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
      __m512 kv[4];
      for (int j = 0; j < 4; ++j) kv[j] = _mm512_loadu_ps(kt + j * k_stride + i);
      for (int h = 0; h < H; ++h) {
        const __m512 qv = _mm512_loadu_ps(q + h * q_stride + i);
        for (int j = 0; j < 4; ++j) acc[4 * h + j] = _mm512_fmadd_ps(qv, kv[j], acc[4 * h + j]);
      }
    }
    const __m512 r = _mm512_mul_ps(reduce16x16(acc), vscale);
    _mm_storeu_ps(out + t, _mm512_castps512_ps128(r));
    if constexpr (H > 1) _mm_storeu_ps(out + out_stride + t, _mm512_extractf32x4_ps(r, 1));
    if constexpr (H > 2) _mm_storeu_ps(out + 2 * out_stride + t, _mm512_extractf32x4_ps(r, 2));
    if constexpr (H > 3) _mm_storeu_ps(out + 3 * out_stride + t, _mm512_extractf32x4_ps(r, 3));
  }
  if (t < n_rows) {
    for (int h = 0; h < H; ++h) {
      dot_rows1(q + h * q_stride, k + t * k_stride, k_stride, n_rows - t, n, scale, out + h * out_stride + t);
    }
  }
}

// 16 elements of a row as floats: f32, or IEEE half widened (exact).
inline __m512 load16(const float* x) { return _mm512_loadu_ps(x); }
inline __m512 load16(const uint16_t* x) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
}
inline __m512 maskz_load16(__mmask16 m, const float* x) { return _mm512_maskz_loadu_ps(m, x); }
inline __m512 maskz_load16(__mmask16 m, const uint16_t* x) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x)); }

// y kept in V registers across the rows (head sizes 64 and 128), for H
// heads at once (H x V <= 16): each row's vectors are loaded once for them.
// ahead: prefetch the rows kAttnAhead on (the first block of heads only:
// the others read the same rows).
template <int V, int H, typename X>
void axpy_rows_in_registers(float* y, int64_t y_stride, const float* alpha, int64_t alpha_stride, const X* x,
                            int64_t x_stride, int32_t n_rows, bool ahead) {
  __m512 acc[H][V];
  for (int h = 0; h < H; ++h) {
    for (int v = 0; v < V; ++v) acc[h][v] = _mm512_loadu_ps(y + h * y_stride + 16 * v);
  }
  for (int32_t t = 0; t < n_rows; ++t) {
    // The row kAttnAhead on (as transpose16).
    if (ahead) {
      for (int64_t b = 0; b < static_cast<int64_t>(16 * V * sizeof(X)); b += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(x + (t + kAttnAhead) * x_stride) + b, _MM_HINT_T0);
      }
    }
    __m512 xv[V];
    for (int v = 0; v < V; ++v) xv[v] = load16(x + t * x_stride + 16 * v);
    for (int h = 0; h < H; ++h) {
      const __m512 a = _mm512_set1_ps(alpha[h * alpha_stride + t]);
      for (int v = 0; v < V; ++v) acc[h][v] = _mm512_fmadd_ps(a, xv[v], acc[h][v]);
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(y + h * y_stride + 16 * v, acc[h][v]);
  }
}

// Heads from h in blocks of H, then the 1 to H - 1 left in one block (each
// head's arithmetic is the same in any block), with V vectors each.
template <int V, int H, typename X>
void axpy_rows_blocks(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                         const X* x, int64_t x_stride, int32_t n_rows) {
  int32_t h = 0;
  for (; h + H <= n_y; h += H) {
    axpy_rows_in_registers<V, H>(y + h * y_stride, y_stride, alpha + h * alpha_stride, alpha_stride, x, x_stride,
                                 n_rows, h == 0);
  }
  float* yh = y + h * y_stride;
  const float* ah = alpha + h * alpha_stride;
  switch (n_y - h) {
    case 3:
      if constexpr (H > 3) axpy_rows_in_registers<V, 3>(yh, y_stride, ah, alpha_stride, x, x_stride, n_rows, h == 0);
      break;
    case 2:
      if constexpr (H > 2) axpy_rows_in_registers<V, 2>(yh, y_stride, ah, alpha_stride, x, x_stride, n_rows, h == 0);
      break;
    case 1: axpy_rows_in_registers<V, 1>(yh, y_stride, ah, alpha_stride, x, x_stride, n_rows, h == 0); break;
    default: break;
  }
}

}  // namespace

// Grouped-query heads 4 at a time where the head size is whole vectors
// (scores: 4 keys x 4 heads per reduction; values: 4 heads of 64 or 2 of
// 128 in registers), so each key and value row is read once per 4 or 2
// heads instead of once per head; the rest one head at a time.
void f32_dot_rows__avx512(const float* q, int32_t n_q, int64_t q_stride, const float* k, int64_t k_stride,
                          int32_t n_rows, int64_t n, float scale, float* out, int64_t out_stride) {
  int32_t h = 0;
  if (n % 16 == 0) {
    for (; h + 4 <= n_q; h += 4) {
      dot_rows_heads<4>(q + h * q_stride, q_stride, k, k_stride, n_rows, n, scale, out + h * out_stride, out_stride);
    }
    // The 2 or 3 heads left (grouped-query attention with 6 or 7 heads
    // per key head, Qwen2's) in one pass over the keys too.
    const float* qh = q + h * q_stride;
    float* oh = out + h * out_stride;
    switch (n_q - h) {
      case 3: dot_rows_heads<3>(qh, q_stride, k, k_stride, n_rows, n, scale, oh, out_stride); return;
      case 2: dot_rows_heads<2>(qh, q_stride, k, k_stride, n_rows, n, scale, oh, out_stride); return;
      default: break;
    }
  }
  for (; h < n_q; ++h) dot_rows1(q + h * q_stride, k, k_stride, n_rows, n, scale, out + h * out_stride);
}

namespace {

// The head sizes whose rows stay in registers (64: 4 heads at once, 128:
// 2); false for any other, which the caller sums its own way.
template <typename X>
bool axpy_rows_in_blocks(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                         const X* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  if (n == 64) {
    axpy_rows_blocks<4, 4>(y, n_y, y_stride, alpha, alpha_stride, x, x_stride, n_rows);
    return true;
  }
  if (n == 128) {
    axpy_rows_blocks<8, 2>(y, n_y, y_stride, alpha, alpha_stride, x, x_stride, n_rows);
    return true;
  }
  return false;
}

}  // namespace

void f32_axpy_rows__avx512(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                           const float* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  if (axpy_rows_in_blocks(y, n_y, y_stride, alpha, alpha_stride, x, x_stride, n_rows, n)) return;
  for (int32_t h = 0; h < n_y; ++h) {
    for (int32_t t = 0; t < n_rows; ++t) {
      f32_axpy__avx512(y + h * y_stride, alpha[h * alpha_stride + t], x + t * x_stride, n);
    }
  }
}

float f32_exp_sum__avx512(float* x, int64_t n, float* max_inout) {
  __m512 vmax = _mm512_set1_ps(*max_inout);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(x + i));
  if (i < n) vmax = _mm512_mask_max_ps(vmax, tail_mask(n - i), vmax, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  const float mx = _mm512_reduce_max_ps(vmax);
  *max_inout = mx;
  const __m512 m = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
    _mm512_storeu_ps(x + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m));
    _mm512_mask_storeu_ps(x + i, k, e);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

void f32_softmax__avx512(float* x, int64_t n) {
  float mx = -INFINITY;
  const __m512 inv = _mm512_set1_ps(1.0f / f32_exp_sum__avx512(x, n, &mx));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv));
  }
}

namespace {

// Rows [t0, t0 + 16) x columns [j0, j0 + 16) of k (row-major, rows past
// n_keys read as zeros) into kt, transposed: kt[(j0 + c) * 64 + t0 + r].
template <typename K>
inline void transpose16(const K* k, int64_t k_stride, int32_t t0, int32_t n_keys, int64_t j0, __mmask16 cols,
                        float* kt) {
  __m512 r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) {
    r[i] = t0 + i < n_keys ? maskz_load16(cols, k + (t0 + i) * k_stride + j0) : _mm512_setzero_ps();
  }
  // The same bytes kAttnAhead rows on (the next chunk of a cache read in
  // place), one line at a time between the work: issued all at once before
  // a chunk, the prefetches did not overlap it (decode at depth ran at a
  // fifth of the read speed).
  if (j0 % (64 / sizeof(K)) == 0) {
    for (int i = 0; i < 16; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(k + (t0 + i + kAttnAhead) * k_stride + j0), _MM_HINT_T0);
    }
  }
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + c], 128-bit lane L: column 4L + c of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 y0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    _mm512_storeu_ps(kt + (j0 + c) * 64 + t0, _mm512_shuffle_f32x4(x0, y0, 0x88));
    _mm512_storeu_ps(kt + (j0 + 4 + c) * 64 + t0, _mm512_shuffle_f32x4(x1, y1, 0x88));
    _mm512_storeu_ps(kt + (j0 + 8 + c) * 64 + t0, _mm512_shuffle_f32x4(x0, y0, 0xDD));
    _mm512_storeu_ps(kt + (j0 + 12 + c) * 64 + t0, _mm512_shuffle_f32x4(x1, y1, 0xDD));
  }
}

// R query vectors x V vectors of 16 keys: one fused multiply-add chain per
// score over the head's elements in order, keys in lanes.
template <int R, int V>
void scores_tile(const float* q, int64_t d, const float* kt, float scale, float* s, int64_t s_stride,
                 __mmask16 last) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < d; ++j) {
    __m512 kv[V];
    for (int v = 0; v < V; ++v) kv[v] = _mm512_loadu_ps(kt + j * 64 + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512 qb = _mm512_set1_ps(q[r * d + j]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(qb, kv[v], acc[r][v]);
    }
  }
  const __m512 vs = _mm512_set1_ps(scale);
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v + 1 < V; ++v) _mm512_storeu_ps(s + r * s_stride + 16 * v, _mm512_mul_ps(acc[r][v], vs));
    _mm512_mask_storeu_ps(s + r * s_stride + 16 * (V - 1), last, _mm512_mul_ps(acc[r][V - 1], vs));
  }
}

template <int V>
void scores_rows(const float* q, int32_t n_q, int64_t d, const float* kt, float scale, float* s, int64_t s_stride,
                 __mmask16 last) {
  int32_t r = 0;
  for (; r + 6 <= n_q; r += 6) scores_tile<6, V>(q + r * d, d, kt, scale, s + r * s_stride, s_stride, last);
  const float* qr = q + r * d;
  float* sr = s + r * s_stride;
  switch (n_q - r) {
    case 5: scores_tile<5, V>(qr, d, kt, scale, sr, s_stride, last); break;
    case 4: scores_tile<4, V>(qr, d, kt, scale, sr, s_stride, last); break;
    case 3: scores_tile<3, V>(qr, d, kt, scale, sr, s_stride, last); break;
    case 2: scores_tile<2, V>(qr, d, kt, scale, sr, s_stride, last); break;
    case 1: scores_tile<1, V>(qr, d, kt, scale, sr, s_stride, last); break;
    default: break;
  }
}

}  // namespace

namespace {

template <typename K>
void attn_scores(const float* q, int32_t n_q, int64_t d, const K* k, int64_t k_stride, int32_t n_keys, float scale,
                 float* s, int64_t s_stride, float* kt) {
  for (int32_t t0 = 0; t0 < n_keys; t0 += 16) {
    for (int64_t j0 = 0; j0 < d; j0 += 16) {
      const __mmask16 cols = d - j0 >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(d - j0);
      transpose16(k, k_stride, t0, n_keys, j0, cols, kt);
    }
  }
  const __mmask16 last = n_keys % 16 == 0 ? static_cast<__mmask16>(0xffff) : tail_mask(n_keys % 16);
  switch ((n_keys + 15) / 16) {
    case 1: scores_rows<1>(q, n_q, d, kt, scale, s, s_stride, last); break;
    case 2: scores_rows<2>(q, n_q, d, kt, scale, s, s_stride, last); break;
    case 3: scores_rows<3>(q, n_q, d, kt, scale, s, s_stride, last); break;
    case 4: scores_rows<4>(q, n_q, d, kt, scale, s, s_stride, last); break;
    default: break;
  }
}

}  // namespace

void f32_attn_scores__avx512(const float* q, int32_t n_q, int64_t d, const float* k, int64_t k_stride, int32_t n_keys,
                             float scale, float* s, int64_t s_stride, float* kt) {
  attn_scores(q, n_q, d, k, k_stride, n_keys, scale, s, s_stride, kt);
}

// Keys in an f16 cache, widened as they are transposed: the same scores as
// f32_attn_scores__avx512 on the widened keys, bit for bit.
void f16_attn_scores__avx512(const float* q, int32_t n_q, int64_t d, const uint16_t* k, int64_t k_stride,
                             int32_t n_keys, float scale, float* s, int64_t s_stride, float* kt) {
  attn_scores(q, n_q, d, k, k_stride, n_keys, scale, s, s_stride, kt);
}

// Values in an f16 cache, widened as they are read: f32_axpy_rows__avx512 on
// the widened rows, bit for bit.
void f16_axpy_rows__avx512(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                           const uint16_t* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  if (axpy_rows_in_blocks(y, n_y, y_stride, alpha, alpha_stride, x, x_stride, n_rows, n)) return;
  alignas(64) float row[512];
  for (int32_t t = 0; t < n_rows; ++t) {
    for (int64_t j0 = 0; j0 < n; j0 += 512) {
      const int64_t m = std::min<int64_t>(512, n - j0);
      f16_widen__avx512(x + t * x_stride + j0, row, m);
      for (int32_t h = 0; h < n_y; ++h) f32_axpy__avx512(y + h * y_stride + j0, alpha[h * alpha_stride + t], row, m);
    }
  }
}

void f16_widen__avx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, src + i)));
  }
}


void f32_gelu__avx512(float* out, const float* a, const float* b, int64_t n) {
  const __m512 k1 = _mm512_set1_ps(-2.0f * 0.79788456080286535588f);
  const __m512 k3 = _mm512_set1_ps(-2.0f * 0.79788456080286535588f * 0.044715f);
  const __m512 one = _mm512_set1_ps(1.0f);
  auto gelu16 = [&](__m512 x) {
    // -2u = x (k1 + k3 x^2); gelu = x / (1 + e^(-2u))
    const __m512 m2u = _mm512_mul_ps(x, _mm512_fmadd_ps(k3, _mm512_mul_ps(x, x), k1));
    return _mm512_div_ps(x, _mm512_add_ps(one, exp512(m2u)));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 g = gelu16(_mm512_loadu_ps(a + i));
    if (b) g = _mm512_mul_ps(g, _mm512_loadu_ps(b + i));
    _mm512_storeu_ps(out + i, g);
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    __m512 g = gelu16(_mm512_maskz_loadu_ps(m, a + i));
    if (b) g = _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, b + i));
    _mm512_mask_storeu_ps(out + i, m, g);
  }
}

}  // namespace ember
#endif  // __x86_64__

// Element-wise and reduction kernels on f32 rows with AVX2 + FMA; scalar
// tails. Bound by memory (rows of a few thousand floats).
#if defined(__x86_64__)
#include <immintrin.h>

#include <math.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// e^x, Cephes polynomial (about 1 ulp on the clamped range); 2^n built in
// the exponent field.
inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

}  // namespace

void f32_rmsnorm__avx2(float* out, const float* x, const float* w, int64_t n, float eps) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  float ss = hsum(acc);
  for (int64_t k = i; k < n; ++k) ss += x[k] * x[k];
  ss = ss / static_cast<float>(n) + eps;
  ss = 1.0f / __builtin_sqrtf(ss);
  const __m256 s = _mm256_set1_ps(ss);
  for (i = 0; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_mul_ps(s, _mm256_loadu_ps(x + i))));
  }
  for (; i < n; ++i) out[i] = w[i] * (ss * x[i]);
}

void f32_swiglu__avx2(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 av = _mm256_loadu_ps(a + i);
    const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), av));
    _mm256_storeu_ps(out + i,
                     _mm256_mul_ps(_mm256_div_ps(av, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), _mm256_loadu_ps(b + i)));
  }
  if (i < n) {
    float ta[8] = {0}, tb[8] = {0}, to[8];
    for (int64_t k = i; k < n; ++k) {
      ta[k - i] = a[k];
      tb[k - i] = b[k];
    }
    f32_swiglu__avx2(to, ta, tb, 8);
    for (int64_t k = i; k < n; ++k) out[k] = to[k - i];
  }
}

void f32_add__avx2(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

float f32_dot__avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void f32_axpy__avx2(float* y, float alpha, const float* x, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

// Attention over many keys in one call (no call per key): the same
// arithmetic as f32_dot / f32_axpy per row, in row order.
// With n a multiple of 8, 8 keys at a time: their chains side by side
// (f32_dot's, one per key) and one transposed reduction with hsum's tree
// (j + j + 4, j + j + 2, 0 + 1) for all 8; the last permute puts key t in
// lane t (the tree leaves key 2m + h in lane 4h + m).
namespace {

// Lane j of the result = the sum of a[j]'s lanes by hsum's tree.
inline __m256 reduce8x8(const __m256* a) {
  __m256 b[4], c[2];
  for (int u = 0; u < 4; ++u) {
    b[u] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * u], a[2 * u + 1], 0x20),
                         _mm256_permute2f128_ps(a[2 * u], a[2 * u + 1], 0x31));
  }
  for (int v = 0; v < 2; ++v) {
    c[v] = _mm256_add_ps(_mm256_shuffle_ps(b[2 * v], b[2 * v + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(b[2 * v], b[2 * v + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  const __m256 e = _mm256_add_ps(_mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm256_permutevar8x32_ps(e, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void dot_rows1(const float* q, const float* k, int64_t k_stride, int32_t n_rows, int64_t n, float scale, float* out) {
  int32_t t = 0;
  if (n % 8 == 0) {
    const __m256 vscale = _mm256_set1_ps(scale);
    for (; t + 8 <= n_rows; t += 8) {
      const float* kt = k + t * k_stride;
      __m256 a[8];
      for (int j = 0; j < 8; ++j) a[j] = _mm256_setzero_ps();
      for (int64_t i = 0; i < n; i += 8) {
        const __m256 qv = _mm256_loadu_ps(q + i);
        for (int j = 0; j < 8; ++j) a[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kt + j * k_stride + i), a[j]);
      }
      _mm256_storeu_ps(out + t, _mm256_mul_ps(reduce8x8(a), vscale));
    }
  }
  for (; t < n_rows; ++t) out[t] = f32_dot__avx2(q, k + t * k_stride, n) * scale;
}

// 4 heads x 2 keys at a time (n a multiple of 8): each key's vectors loaded
// once for the 4 heads; 8 chains (f32_dot's) reduced together (lane 2h + j:
// head h, key j). A last odd key goes to dot_rows1.
void dot_rows4x2(const float* q, int64_t q_stride, const float* k, int64_t k_stride, int32_t n_rows, int64_t n,
                 float scale, float* out, int64_t out_stride) {
  const __m256 vscale = _mm256_set1_ps(scale);
  int32_t t = 0;
  for (; t + 2 <= n_rows; t += 2) {
    const float* kt = k + t * k_stride;
    __m256 a[8];
    for (int j = 0; j < 8; ++j) a[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
      const __m256 k0 = _mm256_loadu_ps(kt + i), k1 = _mm256_loadu_ps(kt + k_stride + i);
      for (int h = 0; h < 4; ++h) {
        const __m256 qv = _mm256_loadu_ps(q + h * q_stride + i);
        a[2 * h] = _mm256_fmadd_ps(qv, k0, a[2 * h]);
        a[2 * h + 1] = _mm256_fmadd_ps(qv, k1, a[2 * h + 1]);
      }
    }
    alignas(32) float r[8];
    _mm256_store_ps(r, _mm256_mul_ps(reduce8x8(a), vscale));
    for (int h = 0; h < 4; ++h) {
      out[h * out_stride + t] = r[2 * h];
      out[h * out_stride + t + 1] = r[2 * h + 1];
    }
  }
  if (t < n_rows) {
    for (int h = 0; h < 4; ++h) {
      dot_rows1(q + h * q_stride, k + t * k_stride, k_stride, n_rows - t, n, scale, out + h * out_stride + t);
    }
  }
}

// y kept in V registers across the rows (head sizes 64 and 128).
template <int V>
void axpy_rows_in_registers(float* y, const float* alpha, const float* x, int64_t x_stride, int32_t n_rows) {
  __m256 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = _mm256_loadu_ps(y + 8 * v);
  for (int32_t t = 0; t < n_rows; ++t) {
    const __m256 a = _mm256_set1_ps(alpha[t]);
    for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_ps(a, _mm256_loadu_ps(x + t * x_stride + 8 * v), acc[v]);
  }
  for (int v = 0; v < V; ++v) _mm256_storeu_ps(y + 8 * v, acc[v]);
}

void axpy_rows1(float* y, const float* alpha, const float* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  if (n == 32) return axpy_rows_in_registers<4>(y, alpha, x, x_stride, n_rows);
  if (n == 64) return axpy_rows_in_registers<8>(y, alpha, x, x_stride, n_rows);
  for (int32_t t = 0; t < n_rows; ++t) f32_axpy__avx2(y, alpha[t], x + t * x_stride, n);
}

// Two heads, n a multiple of 32: 32 floats of each in registers over all
// the rows, so each piece of a value row is read once for both; f32_axpy's
// operations.
void axpy_rows2(float* y, int64_t y_stride, const float* alpha, int64_t alpha_stride, const float* x,
                int64_t x_stride, int32_t n_rows, int64_t n) {
  for (int64_t i = 0; i < n; i += 32) {
    __m256 acc[2][4];
    for (int h = 0; h < 2; ++h) {
      for (int v = 0; v < 4; ++v) acc[h][v] = _mm256_loadu_ps(y + h * y_stride + i + 8 * v);
    }
    for (int32_t t = 0; t < n_rows; ++t) {
      const __m256 a0 = _mm256_set1_ps(alpha[t]), a1 = _mm256_set1_ps(alpha[alpha_stride + t]);
      for (int v = 0; v < 4; ++v) {
        const __m256 xv = _mm256_loadu_ps(x + t * x_stride + i + 8 * v);
        acc[0][v] = _mm256_fmadd_ps(a0, xv, acc[0][v]);
        acc[1][v] = _mm256_fmadd_ps(a1, xv, acc[1][v]);
      }
    }
    for (int h = 0; h < 2; ++h) {
      for (int v = 0; v < 4; ++v) _mm256_storeu_ps(y + h * y_stride + i + 8 * v, acc[h][v]);
    }
  }
}

}  // namespace

// Grouped-query heads several at a time where n is whole vectors (scores
// 4 heads x 2 keys per reduction, values 2 heads), so each key and value
// row is read once per 4 or 2 heads; the rest one head at a time.
void f32_dot_rows__avx2(const float* q, int32_t n_q, int64_t q_stride, const float* k, int64_t k_stride,
                        int32_t n_rows, int64_t n, float scale, float* out, int64_t out_stride) {
  int32_t h = 0;
  if (n % 8 == 0) {
    for (; h + 4 <= n_q; h += 4) {
      dot_rows4x2(q + h * q_stride, q_stride, k, k_stride, n_rows, n, scale, out + h * out_stride, out_stride);
    }
  }
  for (; h < n_q; ++h) dot_rows1(q + h * q_stride, k, k_stride, n_rows, n, scale, out + h * out_stride);
}

void f32_axpy_rows__avx2(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                         const float* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  int32_t h = 0;
  if (n % 32 == 0) {
    for (; h + 2 <= n_y; h += 2) {
      axpy_rows2(y + h * y_stride, y_stride, alpha + h * alpha_stride, alpha_stride, x, x_stride, n_rows, n);
    }
  }
  for (; h < n_y; ++h) axpy_rows1(y + h * y_stride, alpha + h * alpha_stride, x, x_stride, n_rows, n);
}

float f32_exp_sum__avx2(float* x, int64_t n, float* max_inout) {
  float mx = *max_inout;
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  for (float v : lanes) mx = v > mx ? v : mx;
  for (int64_t k = i; k < n; ++k) mx = x[k] > mx ? x[k] : mx;
  *max_inout = mx;
  const __m256 m = _mm256_set1_ps(mx);
  __m256 vsum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  _mm256_store_ps(lanes, vsum);
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  for (; i < n; ++i) {
    x[i] = expf(x[i] - mx);
    sum += x[i];
  }
  return sum;
}

void f32_softmax__avx2(float* x, int64_t n) {
  float mx = -INFINITY;
  const float inv = 1.0f / f32_exp_sum__avx2(x, n, &mx);
  const __m256 vinv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void f16_widen__avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}


void f32_gelu__avx2(float* out, const float* a, const float* b, int64_t n) {
  const __m256 k1 = _mm256_set1_ps(-2.0f * 0.79788456080286535588f);
  const __m256 k3 = _mm256_set1_ps(-2.0f * 0.79788456080286535588f * 0.044715f);
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i);
    const __m256 m2u = _mm256_mul_ps(x, _mm256_fmadd_ps(k3, _mm256_mul_ps(x, x), k1));
    __m256 g = _mm256_div_ps(x, _mm256_add_ps(one, exp256(m2u)));
    if (b) g = _mm256_mul_ps(g, _mm256_loadu_ps(b + i));
    _mm256_storeu_ps(out + i, g);
  }
  if (i < n) {  // the tail through a padded copy
    float ta[8] = {0}, tb[8] = {0}, to[8];
    for (int64_t j = i; j < n; ++j) {
      ta[j - i] = a[j];
      if (b) tb[j - i] = b[j];
    }
    f32_gelu__avx2(to, ta, b ? tb : nullptr, 8);
    for (int64_t j = i; j < n; ++j) out[j] = to[j - i];
  }
}

}  // namespace ember
#endif  // __x86_64__

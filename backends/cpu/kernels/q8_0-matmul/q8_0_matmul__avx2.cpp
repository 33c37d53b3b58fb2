// Q8_0 weights x 8-bit activations with AVX2: |w| (unsigned) times the
// activation carrying w's sign, by vpmaddubsw then vpmaddwd (no overflow:
// 128 * 127 * 2 < 2^15). Decode is bound by memory bandwidth, prefill by
// the int8 and per-block float work.
#if defined(__x86_64__)
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int R, int T>
void tile(const uint8_t* w, int64_t row_bytes, const QuantActs& x, int64_t r, int32_t t, float* out, int64_t os) {
  const int64_t nb = x.cols / 32;
  const __m256i ones = _mm256_set1_epi16(1);
  const KBlockQ8_0* wr[R];
  for (int i = 0; i < R; ++i) wr[i] = reinterpret_cast<const KBlockQ8_0*>(w + (r + i) * row_bytes);
  const int8_t* aq[T];
  const float* ad[T];
  for (int j = 0; j < T; ++j) {
    aq[j] = x.q + (t + j) * x.cols;
    ad[j] = x.d + (t + j) * nb;
  }
  __m256 acc[R][T];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i a[T];
    for (int j = 0; j < T; ++j) a[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(aq[j] + b * 32));
    for (int i = 0; i < R; ++i) {
      const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[i][b].q));
      const __m256i wabs = _mm256_abs_epi8(wq);
      const __m256 dw = _mm256_set1_ps(_cvtsh_ss(wr[i][b].d));
      for (int j = 0; j < T; ++j) {
        const __m256i p16 = _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(a[j], wq));
        const __m256i p = _mm256_madd_epi16(p16, ones);
        const __m256 s = _mm256_mul_ps(dw, _mm256_broadcast_ss(ad[j] + b));
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, acc[i][j]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) out[(t + j) * os + r + i] = hsum(acc[i][j]);
}

template <int T>
void rows(const uint8_t* w, int64_t row_bytes, const QuantActs& x, int64_t r0, int64_t r1, int32_t t, float* out,
          int64_t os) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) tile<4, T>(w, row_bytes, x, r, t, out, os);
  for (; r < r1; ++r) tile<1, T>(w, row_bytes, x, r, t, out, os);
}

}  // namespace

void q8_0_gemv__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                     float* out, int64_t out_stride) {
  const int64_t row_bytes = cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0));
  // One row at a time: a single weight stream per thread reads at full
  // bandwidth, where interleaving 4 rows' streams measured 3-4x slower.
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; ++r) tile<1, 1>(w, row_bytes, x, r, t, out, out_stride);
  }
}

void q8_0_gemm__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                     float* out, int64_t out_stride) {
  const int64_t row_bytes = cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0));
  // 4 x 2 tiles: 8 accumulators fit the 16 ymm registers with room to spare.
  for (int64_t r = r0; r < r1; r += 4) {
    const int64_t re = r + 4 <= r1 ? r + 4 : r1;
    int32_t t = 0;
    for (; t + 2 <= n; t += 2) rows<2>(w, row_bytes, x, r, re, t, out, out_stride);
    if (t < n) rows<1>(w, row_bytes, x, r, re, t, out, out_stride);
  }
}

}  // namespace ember
#endif  // __x86_64__

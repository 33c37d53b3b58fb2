// Q8_0 weights x 8-bit activations with AVX-512 VNNI on 256-bit vectors
// (vpdpbusd needs AVX512VL for ymm). vpdpbusd multiplies unsigned by signed
// bytes, so the activations are offset by 128 (xor 0x80, once per token and
// block) and 128 * sum(w) — itself one vpdpbusd per weight block, shared by
// every token of the tile — seeds the accumulator negated: the lane sums are
// the exact int32 block dot products. Decode is bound by memory bandwidth
// (4 row streams in flight), prefill by the per-block float work.
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
  const __m256i c128 = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i zero = _mm256_setzero_si256();
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
    __m256i au[T];
    for (int j = 0; j < T; ++j) {
      au[j] = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(aq[j] + b * 32)), c128);
    }
    for (int i = 0; i < R; ++i) {
      const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[i][b].q));
      const __m256i negc = _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, c128, wq));
      const __m256 dw = _mm256_set1_ps(_cvtsh_ss(wr[i][b].d));
      for (int j = 0; j < T; ++j) {
        const __m256i p = _mm256_dpbusd_epi32(negc, au[j], wq);
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

void q8_0_gemv__avx512vnni(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                           float* out, int64_t out_stride) {
  const int64_t row_bytes = cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0));
  // One row at a time: a single weight stream per thread reads at full
  // bandwidth, where interleaving 4 rows' streams measured 3-4x slower.
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; ++r) tile<1, 1>(w, row_bytes, x, r, t, out, out_stride);
  }
}

void q8_0_gemm__avx512vnni(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                           float* out, int64_t out_stride) {
  const int64_t row_bytes = cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0));
  // 4-row panels (their weights stay in L1) against every token, 4 at a time.
  for (int64_t r = r0; r < r1; r += 4) {
    const int64_t re = r + 4 <= r1 ? r + 4 : r1;
    int32_t t = 0;
    for (; t + 4 <= n; t += 4) rows<4>(w, row_bytes, x, r, re, t, out, out_stride);
    switch (n - t) {
      case 3: rows<3>(w, row_bytes, x, r, re, t, out, out_stride); break;
      case 2: rows<2>(w, row_bytes, x, r, re, t, out, out_stride); break;
      case 1: rows<1>(w, row_bytes, x, r, re, t, out, out_stride); break;
      default: break;
    }
  }
}

}  // namespace ember
#endif  // __x86_64__

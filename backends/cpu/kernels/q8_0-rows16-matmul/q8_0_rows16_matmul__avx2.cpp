// Q8_0 weights in the Rows16 layout x 8-bit activations with AVX2. One ymm
// lane per row: each 64-byte chunk of a tile is two ymm (rows 0-7, 8-15) of
// 4 bytes per row, flipped back to signed (xor 0x80) and multiplied by the
// token's 4 activation bytes broadcast to every lane as |w| times the
// activation carrying w's sign (vpmaddubsw, no saturation: 128 * 127 * 2 <
// 2^15), then vpmaddwd by ones: one int32 per row and chunk, so the two
// chains per token give the exact block sums of 16 rows with no seed. Then
// one multiply-add by the 16 row scales (two vcvtph2ps) times the token's
// scale. No horizontal sums; up to 4 tokens per pass over a group.
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

constexpr int64_t kTokenChunk = 32;  // tokens whose activations stay in L2 while the groups stream

// 4 activation bytes as one int32 to broadcast.
inline int32_t word(const int8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

// T tokens from t against the 16 rows of the group at `group`.
template <int T>
void tile(const uint8_t* group, int64_t nb, const QuantActs& x, int64_t t, float* out, int64_t os) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const int8_t* xa[T];
  for (int j = 0; j < T; ++j) xa[j] = x.q + (t + j) * x.cols;
  __m256 acc0[T], acc1[T];
  for (int j = 0; j < T; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = group + b * 544 + 32;
    __m256i s0[T], s1[T];
    for (int j = 0; j < T; ++j) s0[j] = s1[j] = _mm256_setzero_si256();
    // Unrolled by 2, not 8: fully unrolled, the 1-token tile spills.
#pragma GCC unroll 2
    for (int c = 0; c < 8; ++c) {
      const __m256i w0 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * c)), flip);
      const __m256i w1 =
          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * c + 32)), flip);
      const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
      for (int j = 0; j < T; ++j) {
        const __m256i xb = _mm256_set1_epi32(word(xa[j] + b * 32 + 4 * c));
        s0[j] = _mm256_add_epi32(s0[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0)), ones));
        s1[j] = _mm256_add_epi32(s1[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1)), ones));
      }
    }
    const __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + b * 544)));
    const __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + b * 544 + 16)));
    for (int j = 0; j < T; ++j) {
      const __m256 dx = _mm256_set1_ps(x.d[(t + j) * nb + b]);
      acc0[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0[j]), _mm256_mul_ps(dw0, dx), acc0[j]);
      acc1[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1[j]), _mm256_mul_ps(dw1, dx), acc1[j]);
    }
  }
  for (int j = 0; j < T; ++j) {
    _mm256_storeu_ps(out + (t + j) * os, acc0[j]);
    _mm256_storeu_ps(out + (t + j) * os + 8, acc1[j]);
  }
}

}  // namespace

void q8_0_rows16_gemv__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                            float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; r += 16) tile<1>(w + r / 16 * group_bytes, nb, x, t, out + r, out_stride);
  }
}

void q8_0_rows16_gemm__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                            float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int64_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int64_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      int64_t t = t0;
      for (; t + 4 <= t1; t += 4) tile<4>(group, nb, x, t, out + r, out_stride);
      switch (t1 - t) {
        case 3: tile<3>(group, nb, x, t, out + r, out_stride); break;
        case 2: tile<2>(group, nb, x, t, out + r, out_stride); break;
        case 1: tile<1>(group, nb, x, t, out + r, out_stride); break;
        default: break;
      }
    }
  }
}

}  // namespace ember
#endif  // __x86_64__

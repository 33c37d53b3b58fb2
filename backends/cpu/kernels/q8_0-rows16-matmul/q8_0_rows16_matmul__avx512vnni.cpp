// Q8_0 weights in the Rows16 layout x 8-bit activations with AVX-512 VNNI.
// One zmm lane per row: each 64-byte chunk of a tile is 16 rows x 4 bytes,
// multiplied (vpdpbusd, weights u8 = q + 128) by the token's 4 activation
// bytes broadcast to every lane; two accumulator chains per token, seeded
// with -128 * sum(x), give the exact block sums of 16 rows at once. Then one
// multiply-add by the 16 row scales (one vcvtph2ps) times the token's scale.
// No horizontal sums; decode streams the weights at memory speed.
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

// GCC 12 reports its own _mm512_undefined_* placeholders (inside the
// intrinsic headers) as uninitialized; nothing here reads them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

constexpr int64_t kTokenChunk = 32;  // tokens whose activations stay in L2 while the groups stream

// T tokens from t against the 16 rows of the group at `group`.
// 4 activation bytes as one int32 to broadcast.
inline int32_t word(const int8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

template <int T>
void tile(const uint8_t* group, int64_t nb, const QuantActs& x, int64_t t, float* out, int64_t os) {
  const int8_t* xa[T];
  for (int j = 0; j < T; ++j) xa[j] = x.q + (t + j) * x.cols;
  __m512 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = group + b * 544 + 32;
    __m512i s0[T], s1[T];
    for (int j = 0; j < T; ++j) {
      s0[j] = _mm512_set1_epi32(16 * x.bias[(t + j) * nb + b]);
      s1[j] = _mm512_setzero_si512();
    }
    for (int c = 0; c < 8; c += 2) {
      const __m512i w0 = _mm512_loadu_si512(q + 64 * c);
      const __m512i w1 = _mm512_loadu_si512(q + 64 * c + 64);
      for (int j = 0; j < T; ++j) {
        s0[j] = _mm512_dpbusd_epi32(s0[j], w0, _mm512_set1_epi32(word(xa[j] + b * 32 + 4 * (c))));
        s1[j] = _mm512_dpbusd_epi32(s1[j], w1, _mm512_set1_epi32(word(xa[j] + b * 32 + 4 * (c + 1))));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + b * 544)));
    for (int j = 0; j < T; ++j) {
      const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[(t + j) * nb + b]));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0[j], s1[j])), s, acc[j]);
    }
  }
  for (int j = 0; j < T; ++j) _mm512_storeu_ps(out + (t + j) * os, acc[j]);
}

}  // namespace

void q8_0_rows16_gemv__avx512vnni(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                                  int32_t n, float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; r += 16) tile<1>(w + r / 16 * group_bytes, nb, x, t, out + r, out_stride);
  }
}

void q8_0_rows16_gemm__avx512vnni(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                                  int32_t n, float* out, int64_t out_stride) {
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

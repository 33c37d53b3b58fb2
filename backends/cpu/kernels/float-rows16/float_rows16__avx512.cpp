// F32, F16 and BF16 weights in the Rows16 layout (core/layout.h) x f32
// activations with AVX-512F. One load gives 16 rows' weights at one column
// (F16 widened by vcvtph2ps; BF16 holds two columns, split exactly by a
// shift and a mask), multiplied by a token's activation broadcast: no
// horizontal sums. Each output is two fused multiply-add chains, even and
// odd columns in ascending order, added at the end (generic's order), in
// every tile, so gemv and gemm give a token the same bits and the result
// does not depend on the rows, tokens or threads of a call.
//
// Prefill tiles are 32 rows x 6 tokens x 2 chains (24 accumulators; a lone
// group 16 x 12): 4864 x 896 f16, 480 tokens, one thread, about 213 GFLOP/s
// in a stand-alone loop, 94% of the core's measured f32 FMA peak, against
// 150-160 for the row-major dot-product tiles. Decode reads one group at a
// time (one weight stream per thread) with its two chains in flight.
#if defined(__x86_64__)
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

enum class Wt { F32, F16, BF16 };

constexpr int64_t elem_bytes(Wt f) { return f == Wt::F32 ? 4 : 2; }

// 16 rows' weights at column k (F32, F16).
template <Wt F>
inline __m512 col16(const uint8_t* g, int64_t k) {
  if constexpr (F == Wt::F16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 32 * k)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(g) + 16 * k);
  }
}

// G groups of 16 rows (group_bytes apart) x T tokens (x rows `cols` apart);
// out[j * os + 16 g + i] for token j, row 16 g + i.
template <Wt F, int G, int T>
inline void tile(const uint8_t* w, int64_t group_bytes, int64_t cols, const float* x, float* out, int64_t os) {
  __m512 even[G][T], odd[G][T];
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < T; ++j) even[g][j] = odd[g][j] = _mm512_setzero_ps();
  int64_t k = 0;
  if constexpr (F == Wt::BF16) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (; k < cols; k += 2) {
      __m512 w0[G], w1[G];
      for (int g = 0; g < G; ++g) {
        const __m512i v = _mm512_loadu_si512(w + g * group_bytes + 32 * k);
        w0[g] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        w1[g] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
      }
      for (int j = 0; j < T; ++j) {
        const __m512 a = _mm512_set1_ps(x[j * cols + k]), b = _mm512_set1_ps(x[j * cols + k + 1]);
        for (int g = 0; g < G; ++g) {
          even[g][j] = _mm512_fmadd_ps(w0[g], a, even[g][j]);
          odd[g][j] = _mm512_fmadd_ps(w1[g], b, odd[g][j]);
        }
      }
    }
  } else {
    for (; k + 2 <= cols; k += 2) {
      __m512 w0[G], w1[G];
      for (int g = 0; g < G; ++g) {
        w0[g] = col16<F>(w + g * group_bytes, k);
        w1[g] = col16<F>(w + g * group_bytes, k + 1);
      }
      for (int j = 0; j < T; ++j) {
        const __m512 a = _mm512_set1_ps(x[j * cols + k]), b = _mm512_set1_ps(x[j * cols + k + 1]);
        for (int g = 0; g < G; ++g) {
          even[g][j] = _mm512_fmadd_ps(w0[g], a, even[g][j]);
          odd[g][j] = _mm512_fmadd_ps(w1[g], b, odd[g][j]);
        }
      }
    }
    if (k < cols) {  // an odd column count: the last column is even
      for (int g = 0; g < G; ++g) {
        const __m512 w0 = col16<F>(w + g * group_bytes, k);
        for (int j = 0; j < T; ++j) even[g][j] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[j * cols + k]), even[g][j]);
      }
    }
  }
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < T; ++j) _mm512_storeu_ps(out + j * os + 16 * g, _mm512_add_ps(even[g][j], odd[g][j]));
}

// Tokens [0, m) of G groups: tiles of 12 / G, then 4, 2, 1.
template <Wt F, int G>
void tokens(const uint8_t* w, int64_t group_bytes, int64_t cols, const float* x, int32_t m, float* out, int64_t os) {
  constexpr int kT = 12 / G;
  int32_t t = 0;
  for (; t + kT <= m; t += kT) tile<F, G, kT>(w, group_bytes, cols, x + t * cols, out + t * os, os);
  if (kT > 8 && t + 8 <= m) tile<F, G, 8>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 8;
  if (t + 4 <= m) tile<F, G, 4>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 4;
  if (t + 2 <= m) tile<F, G, 2>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 2;
  if (t < m) tile<F, G, 1>(w, group_bytes, cols, x + t * cols, out + t * os, os);
}

template <Wt F>
void gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out, int64_t os) {
  const int64_t gb = 16 * cols * elem_bytes(F);
  for (int32_t t = 0; t < n; ++t)
    for (int64_t r = r0; r < r1; r += 16) tile<F, 1, 1>(w + r / 16 * gb, gb, cols, x + t * cols, out + t * os + r, os);
}

// Prefill: tokens in blocks whose activations fit kFloatGemmBlockBytes (in
// L2 while the rows pass over them), 32 rows at a time within a block.
template <Wt F>
void gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out, int64_t os) {
  const int64_t gb = 16 * cols * elem_bytes(F);
  int64_t tb = kFloatGemmBlockBytes / (cols * 4) / 12 * 12;
  if (tb < 12) tb = 12;
  for (int32_t t0 = 0; t0 < n; t0 += static_cast<int32_t>(tb)) {
    const int32_t m = n - t0 < tb ? n - t0 : static_cast<int32_t>(tb);
    const float* xb = x + t0 * cols;
    int64_t r = r0;
    for (; r + 32 <= r1; r += 32) tokens<F, 2>(w + r / 16 * gb, gb, cols, xb, m, out + t0 * os + r, os);
    if (r < r1) tokens<F, 1>(w + r / 16 * gb, gb, cols, xb, m, out + t0 * os + r, os);
  }
}

}  // namespace

#define EMBER_FLOAT_ROWS16_AVX512_(name, impl, wt)                                                               \
  void name##__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,        \
                      float* out, int64_t os) {                                                                  \
    impl<wt>(w, cols, r0, r1, x, n, out, os);                                                                    \
  }
EMBER_FLOAT_ROWS16_AVX512_(f32_rows16_gemv, gemv, Wt::F32)
EMBER_FLOAT_ROWS16_AVX512_(f32_rows16_gemm, gemm, Wt::F32)
EMBER_FLOAT_ROWS16_AVX512_(f16_rows16_gemv, gemv, Wt::F16)
EMBER_FLOAT_ROWS16_AVX512_(f16_rows16_gemm, gemm, Wt::F16)
EMBER_FLOAT_ROWS16_AVX512_(bf16_rows16_gemv, gemv, Wt::BF16)
EMBER_FLOAT_ROWS16_AVX512_(bf16_rows16_gemm, gemm, Wt::BF16)

}  // namespace ember
#endif  // __x86_64__

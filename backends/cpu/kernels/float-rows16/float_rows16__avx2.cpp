// F32, F16 and BF16 weights in the Rows16 layout (core/layout.h) x f32
// activations with AVX2 + FMA + F16C: a group's 16 rows at one column are two
// 8-lane vectors (BF16: two vectors of 8 rows x 2 columns, split by a shift
// and a mask), times a token's activation broadcast; tiles of 16 rows x 3
// tokens x the two chains (12 accumulators; 2 tokens for BF16, whose column
// pairs take more registers). Each output is two fused multiply-add chains,
// even and odd columns in ascending order, added at the end, as on the other
// paths, whatever the tile.
#if defined(__x86_64__)
#include <immintrin.h>

#include <type_traits>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

enum class Wt { F32, F16, BF16 };

constexpr int64_t elem_bytes(Wt f) { return f == Wt::F32 ? 4 : 2; }

// Rows 8h..8h+7 of a group at column k (F32, F16).
template <Wt F>
inline __m256 col8(const uint8_t* g, int64_t k, int h) {
  if constexpr (F == Wt::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 32 * k + 16 * h)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(g) + 16 * k + 8 * h);
  }
}

// One group of 16 rows x T tokens; acc[c][h][j]: chain c, rows 8h.., token j.
template <Wt F, int T>
inline void tile(const uint8_t* g, int64_t cols, const float* x, float* out, int64_t os) {
  __m256 acc[2][2][T];
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < T; ++j) acc[c][h][j] = _mm256_setzero_ps();
  int64_t k = 0;
  if constexpr (F == Wt::BF16) {
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (; k < cols; k += 2) {
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 32 * k + 32 * h));
        const __m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        const __m256 w1 = _mm256_castsi256_ps(_mm256_and_si256(v, high));
        for (int j = 0; j < T; ++j) {
          acc[0][h][j] = _mm256_fmadd_ps(w0, _mm256_broadcast_ss(x + j * cols + k), acc[0][h][j]);
          acc[1][h][j] = _mm256_fmadd_ps(w1, _mm256_broadcast_ss(x + j * cols + k + 1), acc[1][h][j]);
        }
      }
    }
  } else {
    // Column k into chain C (k even: 0, odd: 1).
    auto column = [&](int64_t kk, auto chain) {
      constexpr int C = decltype(chain)::value;
      const __m256 w0 = col8<F>(g, kk, 0), w1 = col8<F>(g, kk, 1);
      for (int j = 0; j < T; ++j) {
        const __m256 a = _mm256_broadcast_ss(x + j * cols + kk);
        acc[C][0][j] = _mm256_fmadd_ps(w0, a, acc[C][0][j]);
        acc[C][1][j] = _mm256_fmadd_ps(w1, a, acc[C][1][j]);
      }
    };
    for (; k + 2 <= cols; k += 2) {
      column(k, std::integral_constant<int, 0>{});
      column(k + 1, std::integral_constant<int, 1>{});
    }
    if (k < cols) column(k, std::integral_constant<int, 0>{});
  }
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < T; ++j) _mm256_storeu_ps(out + j * os + 8 * h, _mm256_add_ps(acc[0][h][j], acc[1][h][j]));
}

template <Wt F>
void tokens(const uint8_t* g, int64_t cols, const float* x, int32_t m, float* out, int64_t os) {
  constexpr int kT = F == Wt::BF16 ? 2 : 3;
  int32_t t = 0;
  for (; t + kT <= m; t += kT) tile<F, kT>(g, cols, x + t * cols, out + t * os, os);
  if (kT == 3 && t + 2 <= m) tile<F, 2>(g, cols, x + t * cols, out + t * os, os), t += 2;
  if (t < m) tile<F, 1>(g, cols, x + t * cols, out + t * os, os);
}

template <Wt F>
void gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out, int64_t os) {
  const int64_t gb = 16 * cols * elem_bytes(F);
  for (int32_t t = 0; t < n; ++t)
    for (int64_t r = r0; r < r1; r += 16) tile<F, 1>(w + r / 16 * gb, cols, x + t * cols, out + t * os + r, os);
}

template <Wt F>
void gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out, int64_t os) {
  const int64_t gb = 16 * cols * elem_bytes(F);
  int64_t tb = kFloatGemmBlockBytes / (cols * 4) / 6 * 6;
  if (tb < 6) tb = 6;
  for (int32_t t0 = 0; t0 < n; t0 += static_cast<int32_t>(tb)) {
    const int32_t m = n - t0 < tb ? n - t0 : static_cast<int32_t>(tb);
    for (int64_t r = r0; r < r1; r += 16) tokens<F>(w + r / 16 * gb, cols, x + t0 * cols, m, out + t0 * os + r, os);
  }
}

}  // namespace

#define EMBER_FLOAT_ROWS16_AVX2_(name, impl, wt)                                                                 \
  void name##__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,          \
                    float* out, int64_t os) {                                                                    \
    impl<wt>(w, cols, r0, r1, x, n, out, os);                                                                    \
  }
EMBER_FLOAT_ROWS16_AVX2_(f32_rows16_gemv, gemv, Wt::F32)
EMBER_FLOAT_ROWS16_AVX2_(f32_rows16_gemm, gemm, Wt::F32)
EMBER_FLOAT_ROWS16_AVX2_(f16_rows16_gemv, gemv, Wt::F16)
EMBER_FLOAT_ROWS16_AVX2_(f16_rows16_gemm, gemm, Wt::F16)
EMBER_FLOAT_ROWS16_AVX2_(bf16_rows16_gemv, gemv, Wt::BF16)
EMBER_FLOAT_ROWS16_AVX2_(bf16_rows16_gemm, gemm, Wt::BF16)

}  // namespace ember
#endif  // __x86_64__

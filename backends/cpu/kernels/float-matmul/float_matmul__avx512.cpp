// F32, F16 and BF16 weights x f32 activations with AVX-512F (F16 rows widened
// by vcvtph2ps, BF16 by a 16-bit shift). Tiles of R rows x T tokens; decode is
// bound by memory bandwidth, prefill by FMA throughput. Column tails use
// masked loads, so every output follows one fixed order of operations.
#if defined(__x86_64__)
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

enum class Wt { F32, F16, BF16 };  // the weight type

// Tokens per block (kernels.h, kFloatGemmBlockBytes): a multiple of 4, at least 4.
int32_t token_block(int64_t cols, int32_t n) {
  int64_t tb = kFloatGemmBlockBytes / (cols * 4) / 4 * 4;
  if (tb < 4) tb = 4;
  return tb < n ? static_cast<int32_t>(tb) : n;
}

template <Wt F>
inline __m512 load_w(const uint8_t* row, int64_t k) {
  if constexpr (F == Wt::F16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  } else if constexpr (F == Wt::BF16) {
    // bf16 is the top half of an f32: widen and shift, exact.
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k);
  }
}

template <Wt F>
inline __m512 load_w_tail(const uint8_t* row, int64_t k, __mmask16 m) {
  if constexpr (F == Wt::F16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * k));
  } else if constexpr (F == Wt::BF16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row + 2 * k)), 16));
  } else {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k);
  }
}

template <Wt F, int R, int T>
void tile(const uint8_t* w, int64_t cols, const float* x, int64_t r, int32_t t, float* out, int64_t os) {
  const int64_t row_bytes = cols * (F == Wt::F32 ? 4 : 2);
  const uint8_t* wr[R];
  for (int i = 0; i < R; ++i) wr[i] = w + (r + i) * row_bytes;
  const float* xr[T];
  for (int j = 0; j < T; ++j) xr[j] = x + (t + j) * cols;
  __m512 acc[R][T];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= cols; k += 16) {
    __m512 xv[T];
    for (int j = 0; j < T; ++j) xv[j] = _mm512_loadu_ps(xr[j] + k);
    for (int i = 0; i < R; ++i) {
      const __m512 wv = load_w<F>(wr[i], k);
      for (int j = 0; j < T; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  if (k < cols) {
    const __mmask16 m = static_cast<__mmask16>((1u << (cols - k)) - 1);
    __m512 xv[T];
    for (int j = 0; j < T; ++j) xv[j] = _mm512_maskz_loadu_ps(m, xr[j] + k);
    for (int i = 0; i < R; ++i) {
      const __m512 wv = load_w_tail<F>(wr[i], k, m);
      for (int j = 0; j < T; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) out[(t + j) * os + r + i] = _mm512_reduce_add_ps(acc[i][j]);
}

template <Wt F, int T>
void rows(const uint8_t* w, int64_t cols, const float* x, int64_t r0, int64_t r1, int32_t t, float* out, int64_t os) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) tile<F, 4, T>(w, cols, x, r, t, out, os);
  for (; r < r1; ++r) tile<F, 1, T>(w, cols, x, r, t, out, os);
}

// Decode: one row at a time, so each thread reads one sequential stream of
// weights. Four rows side by side (four streams, 32 bytes each per step for
// 16-bit weights) ran f16/bf16 decode at 50-55% of the read probe, one row
// at 70-90% (0.5b, 2 threads); f32 the same either way.
template <Wt F>
void gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out, int64_t os) {
  for (int32_t t = 0; t < n; ++t)
    for (int64_t r = r0; r < r1; ++r) tile<F, 1, 1>(w, cols, x, r, t, out, os);
}

template <Wt F>
void gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out, int64_t os) {
  const int32_t tb = token_block(cols, n);
  for (int32_t t0 = 0; t0 < n; t0 += tb) {
    const int32_t te = t0 + tb < n ? t0 + tb : n;
    for (int64_t r = r0; r < r1; r += 4) {
      const int64_t re = r + 4 <= r1 ? r + 4 : r1;
      int32_t t = t0;
      for (; t + 4 <= te; t += 4) rows<F, 4>(w, cols, x, r, re, t, out, os);
      switch (te - t) {
        case 3: rows<F, 3>(w, cols, x, r, re, t, out, os); break;
        case 2: rows<F, 2>(w, cols, x, r, re, t, out, os); break;
        case 1: rows<F, 1>(w, cols, x, r, re, t, out, os); break;
        default: break;
      }
    }
  }
}

}  // namespace

void f32_gemv__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                      int64_t out_stride) {
  gemv<Wt::F32>(w, cols, r0, r1, x, n, out, out_stride);
}
void f32_gemm__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                      int64_t out_stride) {
  gemm<Wt::F32>(w, cols, r0, r1, x, n, out, out_stride);
}
void f16_gemv__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                      int64_t out_stride) {
  gemv<Wt::F16>(w, cols, r0, r1, x, n, out, out_stride);
}
void f16_gemm__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                      int64_t out_stride) {
  gemm<Wt::F16>(w, cols, r0, r1, x, n, out, out_stride);
}
void bf16_gemv__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                       int64_t out_stride) {
  gemv<Wt::BF16>(w, cols, r0, r1, x, n, out, out_stride);
}
void bf16_gemm__avx512(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                       int64_t out_stride) {
  gemm<Wt::BF16>(w, cols, r0, r1, x, n, out, out_stride);
}

}  // namespace ember
#endif  // __x86_64__

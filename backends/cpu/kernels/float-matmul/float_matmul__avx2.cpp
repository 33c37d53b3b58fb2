// F32, F16 and BF16 weights x f32 activations with AVX2 + FMA (+ F16C to widen
// F16 rows; BF16 by a 16-bit shift). Tiles of R rows x T tokens; column tails
// are a scalar loop appended after the vector sum, the same for every tile
// shape. Decode is bound by memory bandwidth, prefill by FMA throughput.
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

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <Wt F>
inline __m256 load_w(const uint8_t* row, int64_t k) {
  if constexpr (F == Wt::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  } else if constexpr (F == Wt::BF16) {
    // bf16 is the top half of an f32: widen and shift, exact.
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  }
}

template <Wt F>
inline float load_w1(const uint8_t* row, int64_t k) {
  if constexpr (F == Wt::F16) {
    uint16_t h;
    __builtin_memcpy(&h, row + 2 * k, 2);
    return _cvtsh_ss(h);
  } else if constexpr (F == Wt::BF16) {
    uint16_t h;
    __builtin_memcpy(&h, row + 2 * k, 2);
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  } else {
    return reinterpret_cast<const float*>(row)[k];
  }
}

template <Wt F, int R, int T>
void tile(const uint8_t* w, int64_t cols, const float* x, int64_t r, int32_t t, float* out, int64_t os) {
  const int64_t row_bytes = cols * (F == Wt::F32 ? 4 : 2);
  const uint8_t* wr[R];
  for (int i = 0; i < R; ++i) wr[i] = w + (r + i) * row_bytes;
  const float* xr[T];
  for (int j = 0; j < T; ++j) xr[j] = x + (t + j) * cols;
  __m256 acc[R][T];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= cols; k += 8) {
    __m256 xv[T];
    for (int j = 0; j < T; ++j) xv[j] = _mm256_loadu_ps(xr[j] + k);
    for (int i = 0; i < R; ++i) {
      const __m256 wv = load_w<F>(wr[i], k);
      for (int j = 0; j < T; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) {
      float s = hsum(acc[i][j]);
      for (int64_t kk = k; kk < cols; ++kk) s += load_w1<F>(wr[i], kk) * xr[j][kk];
      out[(t + j) * os + r + i] = s;
    }
  }
}

template <Wt F, int T>
void rows(const uint8_t* w, int64_t cols, const float* x, int64_t r0, int64_t r1, int32_t t, float* out, int64_t os) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) tile<F, 4, T>(w, cols, x, r, t, out, os);
  for (; r < r1; ++r) tile<F, 1, T>(w, cols, x, r, t, out, os);
}

// Decode: one row at a time, so each thread reads one sequential stream of
// weights (as the AVX-512 path; four streams ran 16-bit decode slower).
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
      for (; t + 2 <= te; t += 2) rows<F, 2>(w, cols, x, r, re, t, out, os);
      if (t < te) rows<F, 1>(w, cols, x, r, re, t, out, os);
    }
  }
}

}  // namespace

void f32_gemv__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t out_stride) {
  gemv<Wt::F32>(w, cols, r0, r1, x, n, out, out_stride);
}
void f32_gemm__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t out_stride) {
  gemm<Wt::F32>(w, cols, r0, r1, x, n, out, out_stride);
}
void f16_gemv__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t out_stride) {
  gemv<Wt::F16>(w, cols, r0, r1, x, n, out, out_stride);
}
void f16_gemm__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t out_stride) {
  gemm<Wt::F16>(w, cols, r0, r1, x, n, out, out_stride);
}
void bf16_gemv__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                     int64_t out_stride) {
  gemv<Wt::BF16>(w, cols, r0, r1, x, n, out, out_stride);
}
void bf16_gemm__avx2(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                     int64_t out_stride) {
  gemm<Wt::BF16>(w, cols, r0, r1, x, n, out, out_stride);
}

}  // namespace ember
#endif  // __x86_64__

// F32, F16 and BF16 weights in the Rows16 layout (core/layout.h) x f32
// activations with NEON (baseline aarch64): a group's 16 rows at one column
// are four 4-lane vectors (F16 widened by FCVTL; BF16 holds two columns, split
// exactly by a shift and a mask), times a token's activation broadcast
// (LD1R); tiles of 16 rows x 3 tokens x the two chains (24 accumulators).
// Each output is two fused multiply-add chains, even and odd columns in
// ascending order, added at the end, as on the other paths, whatever the
// tile.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <type_traits>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

enum class Wt { F32, F16, BF16 };

constexpr int64_t elem_bytes(Wt f) { return f == Wt::F32 ? 4 : 2; }

// One group of 16 rows x T tokens; acc[c][q][j]: chain c (even / odd
// columns), rows 4q.., token j.
template <Wt F, int T>
inline void tile(const uint8_t* g, int64_t cols, const float* x, float* out, int64_t os) {
  float32x4_t acc[2][4][T];
  for (int c = 0; c < 2; ++c)
    for (int q = 0; q < 4; ++q)
      for (int j = 0; j < T; ++j) acc[c][q][j] = vdupq_n_f32(0.0f);
  if constexpr (F == Wt::BF16) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(g);
    for (int64_t k = 0; k < cols; k += 2) {
      for (int q = 0; q < 4; ++q) {
        const uint32x4_t v = vreinterpretq_u32_u16(vld1q_u16(p + 16 * k + 8 * q));
        const float32x4_t w0 = vreinterpretq_f32_u32(vshlq_n_u32(v, 16));
        const float32x4_t w1 = vreinterpretq_f32_u32(vandq_u32(v, vdupq_n_u32(0xFFFF0000u)));
        for (int j = 0; j < T; ++j) {
          acc[0][q][j] = vfmaq_f32(acc[0][q][j], w0, vld1q_dup_f32(x + j * cols + k));
          acc[1][q][j] = vfmaq_f32(acc[1][q][j], w1, vld1q_dup_f32(x + j * cols + k + 1));
        }
      }
    }
  } else {
    // Column k into chain C (k even: 0, odd: 1).
    auto column = [&](int64_t k, auto chain) {
      constexpr int c = decltype(chain)::value;
      float32x4_t wv[4];
      if constexpr (F == Wt::F16) {
        const uint16_t* p = reinterpret_cast<const uint16_t*>(g) + 16 * k;
        const float16x8_t lo = vreinterpretq_f16_u16(vld1q_u16(p)), hi = vreinterpretq_f16_u16(vld1q_u16(p + 8));
        wv[0] = vcvt_f32_f16(vget_low_f16(lo));
        wv[1] = vcvt_high_f32_f16(lo);
        wv[2] = vcvt_f32_f16(vget_low_f16(hi));
        wv[3] = vcvt_high_f32_f16(hi);
      } else {
        const float* p = reinterpret_cast<const float*>(g) + 16 * k;
        for (int q = 0; q < 4; ++q) wv[q] = vld1q_f32(p + 4 * q);
      }
      for (int j = 0; j < T; ++j) {
        const float32x4_t a = vld1q_dup_f32(x + j * cols + k);
        for (int q = 0; q < 4; ++q) acc[c][q][j] = vfmaq_f32(acc[c][q][j], wv[q], a);
      }
    };
    int64_t k = 0;
    for (; k + 2 <= cols; k += 2) {
      column(k, std::integral_constant<int, 0>{});
      column(k + 1, std::integral_constant<int, 1>{});
    }
    if (k < cols) column(k, std::integral_constant<int, 0>{});
  }
  for (int q = 0; q < 4; ++q)
    for (int j = 0; j < T; ++j) vst1q_f32(out + j * os + 4 * q, vaddq_f32(acc[0][q][j], acc[1][q][j]));
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
  int64_t tb = kFloatGemmBlockBytes / (cols * 4) / 3 * 3;
  if (tb < 3) tb = 3;
  for (int32_t t0 = 0; t0 < n; t0 += static_cast<int32_t>(tb)) {
    const int32_t m = n - t0 < tb ? n - t0 : static_cast<int32_t>(tb);
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* g = w + r / 16 * gb;
      const float* xb = x + t0 * cols;
      float* ob = out + t0 * os + r;
      int32_t t = 0;
      for (; t + 3 <= m; t += 3) tile<F, 3>(g, cols, xb + t * cols, ob + t * os, os);
      if (t + 2 <= m) tile<F, 2>(g, cols, xb + t * cols, ob + t * os, os), t += 2;
      if (t < m) tile<F, 1>(g, cols, xb + t * cols, ob + t * os, os);
    }
  }
}

}  // namespace

#define EMBER_FLOAT_ROWS16_NEON_(name, impl, wt)                                                                 \
  void name##__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,          \
                    float* out, int64_t os) {                                                                    \
    impl<wt>(w, cols, r0, r1, x, n, out, os);                                                                    \
  }
EMBER_FLOAT_ROWS16_NEON_(f32_rows16_gemv, gemv, Wt::F32)
EMBER_FLOAT_ROWS16_NEON_(f32_rows16_gemm, gemm, Wt::F32)
EMBER_FLOAT_ROWS16_NEON_(f16_rows16_gemv, gemv, Wt::F16)
EMBER_FLOAT_ROWS16_NEON_(f16_rows16_gemm, gemm, Wt::F16)
EMBER_FLOAT_ROWS16_NEON_(bf16_rows16_gemv, gemv, Wt::BF16)
EMBER_FLOAT_ROWS16_NEON_(bf16_rows16_gemm, gemm, Wt::BF16)

}  // namespace ember
#endif  // __aarch64__

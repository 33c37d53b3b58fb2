// F32, F16 and BF16 weights x f32 activations with NEON (F16 rows widened by
// FCVTL, BF16 by a 16-bit shift; baseline on aarch64). Tiles of up to 4 rows x
// 1 token; column tails are a scalar loop after the vector sum. Decode is
// bound by memory bandwidth, prefill by FMA throughput.
#if defined(__aarch64__)
#include <arm_neon.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

enum class Wt { F32, F16, BF16 };  // the weight type

template <Wt F>
inline float32x4_t load_w(const uint8_t* row, int64_t k) {
  if constexpr (F == Wt::F16) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(row) + k)));
  } else if constexpr (F == Wt::BF16) {
    // bf16 is the top half of an f32: widen by a 16-bit shift, exact.
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(row) + k), 16));
  } else {
    return vld1q_f32(reinterpret_cast<const float*>(row) + k);
  }
}

template <Wt F>
inline float load_w1(const uint8_t* row, int64_t k) {
  if constexpr (F == Wt::BF16) {
    const uint32_t u = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(row)[k]) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  } else if constexpr (F == Wt::F16) {
    const uint16_t h = reinterpret_cast<const uint16_t*>(row)[k];
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
  } else {
    return reinterpret_cast<const float*>(row)[k];
  }
}

template <Wt F, int R>
void tile(const uint8_t* w, int64_t cols, const float* x, int64_t r, int32_t t, float* out, int64_t os) {
  const int64_t row_bytes = cols * (F == Wt::F32 ? 4 : 2);
  const float* xr = x + t * cols;
  float32x4_t acc[R];
  for (int i = 0; i < R; ++i) acc[i] = vdupq_n_f32(0.0f);
  int64_t k = 0;
  for (; k + 4 <= cols; k += 4) {
    const float32x4_t xv = vld1q_f32(xr + k);
    for (int i = 0; i < R; ++i) acc[i] = vfmaq_f32(acc[i], load_w<F>(w + (r + i) * row_bytes, k), xv);
  }
  for (int i = 0; i < R; ++i) {
    float s = vaddvq_f32(acc[i]);
    for (int64_t kk = k; kk < cols; ++kk) s += load_w1<F>(w + (r + i) * row_bytes, kk) * xr[kk];
    out[t * os + r + i] = s;
  }
}

template <Wt F>
void matmul(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
            int64_t os) {
  for (int32_t t = 0; t < n; ++t) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) tile<F, 4>(w, cols, x, r, t, out, os);
    for (; r < r1; ++r) tile<F, 1>(w, cols, x, r, t, out, os);
  }
}

}  // namespace

void f32_gemv__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t os) {
  matmul<Wt::F32>(w, cols, r0, r1, x, n, out, os);
}
void f32_gemm__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t os) {
  matmul<Wt::F32>(w, cols, r0, r1, x, n, out, os);
}
void f16_gemv__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t os) {
  matmul<Wt::F16>(w, cols, r0, r1, x, n, out, os);
}
void f16_gemm__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                    int64_t os) {
  matmul<Wt::F16>(w, cols, r0, r1, x, n, out, os);
}
void bf16_gemv__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                     int64_t os) {
  matmul<Wt::BF16>(w, cols, r0, r1, x, n, out, os);
}
void bf16_gemm__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                     int64_t os) {
  matmul<Wt::BF16>(w, cols, r0, r1, x, n, out, os);
}

}  // namespace ember
#endif

// Element-wise and reduction kernels on f32 rows with NEON; scalar tails.
// swiglu keeps libm's expf (no vector exp on ARM yet). Bound by memory.
#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {

void f32_rmsnorm__neon(float* out, const float* x, const float* w, int64_t n, float eps) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    acc = vfmaq_f32(acc, v, v);
  }
  float ss = vaddvq_f32(acc);
  for (int64_t k = i; k < n; ++k) ss += x[k] * x[k];
  ss = ss / static_cast<float>(n) + eps;
  ss = 1.0f / sqrtf(ss);
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vld1q_f32(w + i), vmulq_n_f32(vld1q_f32(x + i), ss)));
  for (; i < n; ++i) out[i] = w[i] * (ss * x[i]);
}

void f32_swiglu__neon(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

void f32_add__neon(float* out, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

float f32_dot__neon(const float* a, const float* b, int64_t n) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) acc = vfmaq_f32(acc, vld1q_f32(a + i), vld1q_f32(b + i));
  float s = vaddvq_f32(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void f32_axpy__neon(float* y, float alpha, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), alpha));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace ember
#endif

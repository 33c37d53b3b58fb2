// Element-wise and reduction kernels on f32 rows, portable C++. The order of
// operations is the one the golden logits were produced with.
#include <cmath>

#include <math.h>

#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {

void f32_rmsnorm__generic(float* out, const float* x, const float* w, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  ss /= static_cast<float>(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (ss * x[i]);
}

void f32_swiglu__generic(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

void f32_add__generic(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

float f32_dot__generic(const float* a, const float* b, int64_t n) {
  float s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) s[j] += a[i + j] * b[i + j];
  }
  float sum = (s[0] + s[1]) + (s[2] + s[3]);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void f32_axpy__generic(float* y, float alpha, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// Attention over many keys in one call (no call per key): the same
// arithmetic as f32_dot / f32_axpy per row, in row order.
void f32_dot_rows__generic(const float* q, int32_t n_q, int64_t q_stride, const float* k, int64_t k_stride,
                           int32_t n_rows, int64_t n, float scale, float* out, int64_t out_stride) {
  for (int32_t h = 0; h < n_q; ++h) {
    for (int32_t t = 0; t < n_rows; ++t) {
      out[h * out_stride + t] = f32_dot__generic(q + h * q_stride, k + t * k_stride, n) * scale;
    }
  }
}

void f32_axpy_rows__generic(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                            const float* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  for (int32_t h = 0; h < n_y; ++h) {
    for (int32_t t = 0; t < n_rows; ++t) {
      f32_axpy__generic(y + h * y_stride, alpha[h * alpha_stride + t], x + t * x_stride, n);
    }
  }
}

float f32_exp_sum__generic(float* x, int64_t n, float* max_inout) {
  float mx = *max_inout;
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  *max_inout = mx;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = expf(x[i] - mx);
    sum += x[i];
  }
  return sum;
}

void f32_softmax__generic(float* x, int64_t n) {
  float mx = -INFINITY;
  const float inv = 1.0f / f32_exp_sum__generic(x, n, &mx);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void f16_widen__generic(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}


void f32_gelu__generic(float* out, const float* a, const float* b, int64_t n) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  constexpr float kCoef = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = a[i];
    const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
    out[i] = b ? g * b[i] : g;
  }
}

}  // namespace ember

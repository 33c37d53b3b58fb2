// Element-wise and reduction kernels on f32 rows with NEON; scalar tails.
// swiglu, gelu and softmax take e^x from exp4 (the AVX paths' polynomial);
// their scalar tails from libm.
#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

// e^x, Cephes polynomial (about 1 ulp on the clamped range), as exp512 and
// exp256 compute it; 2^n built in the exponent field.
inline float32x4_t exp4(float32x4_t x) {
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
  const float32x4_t fx = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, fx, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, fx, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500E-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507E-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073E-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894E-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459E-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201E-1f), p, r);
  const float32x4_t y = vaddq_f32(vfmaq_f32(r, vmulq_f32(p, r), r), vdupq_n_f32(1.0f));
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(fx), vdupq_n_s32(127)), 23);
  return vmulq_f32(y, vreinterpretq_f32_s32(e));
}

}  // namespace

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
  const float32x4_t one = vdupq_n_f32(1.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t x = vld1q_f32(a + i);
    vst1q_f32(out + i, vmulq_f32(vdivq_f32(x, vaddq_f32(one, exp4(vnegq_f32(x)))), vld1q_f32(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
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

// Attention over many keys in one call (no call per key): the same
// arithmetic as f32_dot / f32_axpy per row, in row order.
// With n a multiple of 4, 4 keys at a time: their chains side by side
// (f32_dot's) and two pairwise adds for all 4, the tree vaddvq_f32 uses
// ((0 + 1) + (2 + 3)).
namespace {

// One head's scores.
void dot_rows1(const float* q, const float* k, int64_t k_stride, int32_t n_rows, int64_t n, float scale, float* out) {
  int32_t t = 0;
  if (n % 4 == 0) {
    for (; t + 4 <= n_rows; t += 4) {
      const float* kt = k + t * k_stride;
      float32x4_t a[4];
      for (int j = 0; j < 4; ++j) a[j] = vdupq_n_f32(0.0f);
      for (int64_t i = 0; i < n; i += 4) {
        const float32x4_t qv = vld1q_f32(q + i);
        for (int j = 0; j < 4; ++j) a[j] = vfmaq_f32(a[j], qv, vld1q_f32(kt + j * k_stride + i));
      }
      const float32x4_t s = vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
      vst1q_f32(out + t, vmulq_n_f32(s, scale));
    }
  }
  for (; t < n_rows; ++t) out[t] = f32_dot__neon(q, k + t * k_stride, n) * scale;
}

// 4 heads x 4 keys at a time (n a multiple of 4): each key's vectors loaded
// once for the 4 heads, 16 chains (f32_dot's), each head's 4 keys reduced
// by dot_rows1's tree. Keys past the last 4 go to dot_rows1.
void dot_rows4x4(const float* q, int64_t q_stride, const float* k, int64_t k_stride, int32_t n_rows, int64_t n,
                 float scale, float* out, int64_t out_stride) {
  int32_t t = 0;
  for (; t + 4 <= n_rows; t += 4) {
    const float* kt = k + t * k_stride;
    float32x4_t a[4][4];  // [head][key]
    for (int h = 0; h < 4; ++h) {
      for (int j = 0; j < 4; ++j) a[h][j] = vdupq_n_f32(0.0f);
    }
    for (int64_t i = 0; i < n; i += 4) {
      float32x4_t kv[4];
      for (int j = 0; j < 4; ++j) kv[j] = vld1q_f32(kt + j * k_stride + i);
      for (int h = 0; h < 4; ++h) {
        const float32x4_t qv = vld1q_f32(q + h * q_stride + i);
        for (int j = 0; j < 4; ++j) a[h][j] = vfmaq_f32(a[h][j], qv, kv[j]);
      }
    }
    for (int h = 0; h < 4; ++h) {
      const float32x4_t s = vpaddq_f32(vpaddq_f32(a[h][0], a[h][1]), vpaddq_f32(a[h][2], a[h][3]));
      vst1q_f32(out + h * out_stride + t, vmulq_n_f32(s, scale));
    }
  }
  if (t < n_rows) {
    for (int h = 0; h < 4; ++h) {
      dot_rows1(q + h * q_stride, k + t * k_stride, k_stride, n_rows - t, n, scale, out + h * out_stride + t);
    }
  }
}

// H heads, n a multiple of 16: 16 floats of each head at a time in
// registers (4 x H accumulators) over all the rows, so each 64-byte piece of
// a value row is read once for the H heads; f32_axpy's operations.
template <int H>
void axpy_rows_heads(float* y, int64_t y_stride, const float* alpha, int64_t alpha_stride, const float* x,
                     int64_t x_stride, int32_t n_rows, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    float32x4_t acc[H][4];
    for (int h = 0; h < H; ++h) {
      for (int v = 0; v < 4; ++v) acc[h][v] = vld1q_f32(y + h * y_stride + i + 4 * v);
    }
    for (int32_t t = 0; t < n_rows; ++t) {
      float32x4_t xv[4];
      for (int v = 0; v < 4; ++v) xv[v] = vld1q_f32(x + t * x_stride + i + 4 * v);
      for (int h = 0; h < H; ++h) {
        const float a = alpha[h * alpha_stride + t];
        for (int v = 0; v < 4; ++v) acc[h][v] = vfmaq_n_f32(acc[h][v], xv[v], a);
      }
    }
    for (int h = 0; h < H; ++h) {
      for (int v = 0; v < 4; ++v) vst1q_f32(y + h * y_stride + i + 4 * v, acc[h][v]);
    }
  }
}

}  // namespace

// Grouped-query heads 4 at a time (scores) where n is whole vectors, so
// each key and value row is read once per 4 heads; the rest one head at a
// time.
void f32_dot_rows__neon(const float* q, int32_t n_q, int64_t q_stride, const float* k, int64_t k_stride,
                        int32_t n_rows, int64_t n, float scale, float* out, int64_t out_stride) {
  int32_t h = 0;
  if (n % 4 == 0) {
    for (; h + 4 <= n_q; h += 4) {
      dot_rows4x4(q + h * q_stride, q_stride, k, k_stride, n_rows, n, scale, out + h * out_stride, out_stride);
    }
  }
  for (; h < n_q; ++h) dot_rows1(q + h * q_stride, k, k_stride, n_rows, n, scale, out + h * out_stride);
}

void f32_axpy_rows__neon(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                         const float* x, int64_t x_stride, int32_t n_rows, int64_t n) {
  int32_t h = 0;
  if (n % 16 == 0) {
    for (; h + 4 <= n_y; h += 4) {
      axpy_rows_heads<4>(y + h * y_stride, y_stride, alpha + h * alpha_stride, alpha_stride, x, x_stride, n_rows, n);
    }
    for (; h < n_y; ++h) {
      axpy_rows_heads<1>(y + h * y_stride, y_stride, alpha + h * alpha_stride, alpha_stride, x, x_stride, n_rows, n);
    }
    return;
  }
  for (; h < n_y; ++h) {
    for (int32_t t = 0; t < n_rows; ++t) {
      f32_axpy__neon(y + h * y_stride, alpha[h * alpha_stride + t], x + t * x_stride, n);
    }
  }
}

float f32_exp_sum__neon(float* x, int64_t n, float* max_inout) {
  float mx = *max_inout;
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  *max_inout = mx;
  const float32x4_t m = vdupq_n_f32(mx);
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), m));
    vst1q_f32(x + i, e);
    acc = vaddq_f32(acc, e);
  }
  float sum = vaddvq_f32(acc);
  for (; i < n; ++i) {
    x[i] = expf(x[i] - mx);
    sum += x[i];
  }
  return sum;
}

void f32_softmax__neon(float* x, int64_t n) {
  float mx = -INFINITY;
  const float inv = 1.0f / f32_exp_sum__neon(x, n, &mx);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
  for (; i < n; ++i) x[i] *= inv;
}

void f16_widen__neon(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
  for (; i < n; ++i) dst[i] = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(src[i]))), 0);
}


void f32_gelu__neon(float* out, const float* a, const float* b, int64_t n) {
  const float32x4_t k1 = vdupq_n_f32(-2.0f * 0.79788456080286535588f);
  const float32x4_t k3 = vdupq_n_f32(-2.0f * 0.79788456080286535588f * 0.044715f);
  const float32x4_t one = vdupq_n_f32(1.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    // -2u = x (k1 + k3 x^2); gelu = x / (1 + e^(-2u))
    const float32x4_t x = vld1q_f32(a + i);
    const float32x4_t m2u = vmulq_f32(x, vfmaq_f32(k1, k3, vmulq_f32(x, x)));
    float32x4_t g = vdivq_f32(x, vaddq_f32(one, exp4(m2u)));
    if (b) g = vmulq_f32(g, vld1q_f32(b + i));
    vst1q_f32(out + i, g);
  }
  if (i < n) f32_gelu__generic(out + i, a + i, b ? b + i : nullptr, n - i);
}

}  // namespace ember
#endif

// F32, F16 and BF16 weights x f32 activations, portable C++. Eight partial
// sums so the compiler can keep them in vector registers (the order the golden
// logits were first produced with).
#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {
namespace {

template <typename Load>
float dot8(const Load& w, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += w(i + j) * b[i + j];
  }
  float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) sum += w(i) * b[i];
  return sum;
}

// 16-bit weights (f16, bf16), widened by Widen one at a time.
template <float (*Widen)(uint16_t)>
void gemv16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
            int64_t out_stride) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* row = reinterpret_cast<const uint16_t*>(w) + r * cols;
    auto load = [row](int64_t i) { return Widen(row[i]); };
    for (int32_t t = 0; t < n; ++t) out[t * out_stride + r] = dot8(load, x + t * cols, cols);
  }
}

}  // namespace

void f32_gemv__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                       int64_t out_stride) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = reinterpret_cast<const float*>(w) + r * cols;
    auto load = [row](int64_t i) { return row[i]; };
    for (int32_t t = 0; t < n; ++t) out[t * out_stride + r] = dot8(load, x + t * cols, cols);
  }
}

void f32_gemm__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                       int64_t out_stride) {
  f32_gemv__generic(w, cols, r0, r1, x, n, out, out_stride);
}

void f16_gemv__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                       int64_t out_stride) {
  gemv16<f16_to_f32>(w, cols, r0, r1, x, n, out, out_stride);
}

void f16_gemm__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                       int64_t out_stride) {
  f16_gemv__generic(w, cols, r0, r1, x, n, out, out_stride);
}

void bf16_gemv__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                        int64_t out_stride) {
  gemv16<bf16_to_f32>(w, cols, r0, r1, x, n, out, out_stride);
}

void bf16_gemm__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
                        int64_t out_stride) {
  bf16_gemv__generic(w, cols, r0, r1, x, n, out, out_stride);
}

}  // namespace ember

// Q8_0 weights x 8-bit activations, portable C++: exact int32 block sums,
// one float multiply-add per block. Bound by memory on decode.
#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {
namespace {

float row_dot(const KBlockQ8_0* w, const QuantActs& x, int32_t t) {
  const int64_t nb = x.cols / 32;
  const int8_t* q = x.q + t * x.cols;
  const float* d = x.d + t * nb;
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += static_cast<int32_t>(w[b].q[j]) * q[b * 32 + j];
    acc += static_cast<float>(s) * (f16_to_f32(w[b].d) * d[b]);
  }
  return acc;
}

}  // namespace

void q8_0_gemv__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                        float* out, int64_t out_stride) {
  const int64_t row_bytes = cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = reinterpret_cast<const KBlockQ8_0*>(w + r * row_bytes);
    for (int32_t t = 0; t < n; ++t) out[t * out_stride + r] = row_dot(row, x, t);
  }
}

void q8_0_gemm__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                        float* out, int64_t out_stride) {
  q8_0_gemv__generic(w, cols, r0, r1, x, n, out, out_stride);
}

}  // namespace ember

// Q8_0 weights in the Rows16 layout (format/layout.h) x 8-bit activations,
// portable C++: the reference the vector paths are tested against. Weights
// are stored as q + 128 (u8), so sum(u8 * x) - 128 * sum(x) is the exact
// block dot product; -128 * sum(x) is 16 * the activation's bias.
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {

void q8_0_rows16_gemv__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                               int32_t n, float* out, int64_t out_stride) {
  const int64_t nb = cols / 32;
  const int64_t group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int64_t r = r0; r < r1; r += 16) {
    const uint8_t* group = w + r / 16 * group_bytes;
    for (int32_t t = 0; t < n; ++t) {
      const int8_t* q = x.q + t * cols;
      float acc[16] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const float dx = x.d[t * nb + b];
        const uint8_t* tile = group + b * 544 + 32;
        for (int i = 0; i < 16; ++i) {
          int32_t s = 16 * x.bias[t * nb + b];
          for (int c = 0; c < 8; ++c) {
            for (int k = 0; k < 4; ++k) s += static_cast<int32_t>(tile[64 * c + 4 * i + k]) * q[b * 32 + 4 * c + k];
          }
          uint16_t h;
          std::memcpy(&h, group + b * 544 + 2 * i, 2);
          acc[i] += static_cast<float>(s) * (f16_to_f32(h) * dx);
        }
      }
      for (int i = 0; i < 16; ++i) out[t * out_stride + r + i] = acc[i];
    }
  }
}

void q8_0_rows16_gemm__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                               int32_t n, float* out, int64_t out_stride) {
  q8_0_rows16_gemv__generic(w, cols, r0, r1, x, n, out, out_stride);
}

}  // namespace ember

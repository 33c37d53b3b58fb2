// Q4_0 weights in the Rows16 layout (format/layout.h) x 8-bit activations,
// portable C++: the reference the vector paths are tested against. Chunk c
// of a tile holds each row's nibble bytes 4c..4c+3: low nibbles are
// elements 4c+k, high nibbles 16+4c+k; the activation's bias (-8 * sum(x))
// turns the unsigned nibble sums into the exact block dot product.
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {

void q4_0_rows16_gemv__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                               int32_t n, float* out, int64_t out_stride) {
  const int64_t nb = cols / 32;
  const int64_t group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ4_0));
  for (int64_t r = r0; r < r1; r += 16) {
    const uint8_t* group = w + r / 16 * group_bytes;
    for (int32_t t = 0; t < n; ++t) {
      const int8_t* q = x.q + t * cols;
      float acc[16] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const float dx = x.d[t * nb + b];
        const uint8_t* tile = group + b * 288 + 32;
        for (int i = 0; i < 16; ++i) {
          int32_t s = x.bias[t * nb + b];
          for (int c = 0; c < 4; ++c) {
            for (int k = 0; k < 4; ++k) {
              const uint8_t v = tile[64 * c + 4 * i + k];
              s += static_cast<int32_t>(v & 0x0f) * q[b * 32 + 4 * c + k] +
                   static_cast<int32_t>(v >> 4) * q[b * 32 + 16 + 4 * c + k];
            }
          }
          uint16_t h;
          std::memcpy(&h, group + b * 288 + 2 * i, 2);
          acc[i] += static_cast<float>(s) * (f16_to_f32(h) * dx);
        }
      }
      for (int i = 0; i < 16; ++i) out[t * out_stride + r + i] = acc[i];
    }
  }
}

void q4_0_rows16_gemm__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                               int32_t n, float* out, int64_t out_stride) {
  q4_0_rows16_gemv__generic(w, cols, r0, r1, x, n, out, out_stride);
}

}  // namespace ember

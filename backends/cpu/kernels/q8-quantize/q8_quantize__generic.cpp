// Activation quantization to 8-bit blocks, portable C++. Nearest-even
// rounding by the 1.5 * 2^23 trick (exact for |v| < 2^22, here |v| <= 127),
// the same result as cvtps2dq / vcvtnq under the default rounding mode.
#include <cmath>

#include "backends/cpu/kernels/kernels.h"

namespace ember {

void q8_quantize__generic(const float* x, int64_t cols, int8_t* q, float* d, int32_t* bias) {
  for (int64_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      volatile float v = xb[j] * id + 12582912.0f;  // volatile: keep the rounding step
      const int32_t r = static_cast<int32_t>(v - 12582912.0f);
      q[b * 32 + j] = static_cast<int8_t>(r);
      sum += r;
    }
    d[b] = amax / 127.0f;
    bias[b] = -8 * sum;
  }
}

}  // namespace ember

// Activation quantization to 8-bit blocks with NEON: the same arithmetic as
// the generic kernel (vcvtnq: nearest-even), so the bytes are identical.
#if defined(__aarch64__)
#include <arm_neon.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {

void q8_quantize__neon(const float* x, int64_t cols, int8_t* q, float* d, int32_t* bias) {
  for (int64_t b = 0; b < cols / 32; ++b) {
    float32x4_t v[8];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < 8; ++k) {
      v[k] = vld1q_f32(x + b * 32 + 4 * k);
      m = vmaxq_f32(m, vabsq_f32(v[k]));
    }
    const float amax = vmaxvq_f32(m);
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32x4_t sum = vdupq_n_s32(0);
    int32x4_t i[8];
    for (int k = 0; k < 8; ++k) {
      i[k] = vcvtnq_s32_f32(vmulq_n_f32(v[k], id));
      sum = vaddq_s32(sum, i[k]);
    }
    for (int k = 0; k < 8; k += 2) {
      const int16x8_t s16 = vcombine_s16(vqmovn_s32(i[k]), vqmovn_s32(i[k + 1]));
      vst1_s8(q + b * 32 + 4 * k, vqmovn_s16(s16));
    }
    d[b] = amax / 127.0f;
    bias[b] = -8 * vaddvq_s32(sum);
  }
}

}  // namespace ember
#endif

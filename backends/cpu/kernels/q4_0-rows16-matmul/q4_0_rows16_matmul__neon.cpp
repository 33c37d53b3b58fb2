// Q4_0 weights in the Rows16 layout x 8-bit activations on plain NEON (no
// dot product). Each 64-byte chunk c of a tile is four 16-byte vectors of 4
// rows x 4 nibble bytes; the low nibbles (and 0x0f) meet the token's
// activation bytes 4c..4c+3 and the high nibbles (ushr 4) bytes
// 16+4c..16+4c+3, duplicated to every lane, by vmull_s8 / vmlal_s8. A
// block's eight products per int16 lane stay in int16 (at most 8 * 15 * 127
// < 2^15); vpaddl and one vpaddq per 4 rows, plus the activation's bias (-8 *
// sum(x)), give the exact block sums. Then one multiply-add by the 16 row
// scales (FCVTL) times the token's scale. One token per pass: the
// multiplies, not the weight stream, bound this path.
#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

constexpr int64_t kTokenChunk = 32;  // tokens whose activations stay in L2 while the groups stream

// 4 activation bytes duplicated to every int32 lane.
inline int8x16_t word(const int8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Token t against the 16 rows of the group at `group`.
void tile(const uint8_t* group, int64_t nb, const QuantActs& x, int64_t t, float* out) {
  const uint8x16_t m0f = vdupq_n_u8(0x0f);
  const int8_t* xa = x.q + t * x.cols;
  float32x4_t acc[4];
  for (int k = 0; k < 4; ++k) acc[k] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = group + b * 288 + 32;
    // Rows 4k, 4k+1 in pl[k], rows 4k+2, 4k+3 in ph[k], four int16 lanes each.
    int16x8_t pl[4], ph[4];
    for (int k = 0; k < 4; ++k) pl[k] = ph[k] = vdupq_n_s16(0);
    // Rolled: fully unrolled, the scheduler hoists a whole block's loads and spills.
#pragma GCC unroll 1
    for (int c = 0; c < 4; ++c) {
      const int8x16_t xl = word(xa + b * 32 + 4 * c), xh = word(xa + b * 32 + 16 + 4 * c);
      for (int k = 0; k < 4; ++k) {
        const uint8x16_t v = vld1q_u8(q + 64 * c + 16 * k);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, m0f));
        const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        pl[k] = vmlal_s8(pl[k], vget_low_s8(lo), vget_low_s8(xl));
        pl[k] = vmlal_s8(pl[k], vget_low_s8(hi), vget_low_s8(xh));
        ph[k] = vmlal_high_s8(ph[k], lo, xl);
        ph[k] = vmlal_high_s8(ph[k], hi, xh);
      }
    }
    const uint16_t* h = reinterpret_cast<const uint16_t*>(group + b * 288);
    const int32x4_t seed = vdupq_n_s32(x.bias[t * nb + b]);
    const float dx = x.d[t * nb + b];
    for (int k = 0; k < 4; ++k) {
      const int32x4_t s = vaddq_s32(vpaddq_s32(vpaddlq_s16(pl[k]), vpaddlq_s16(ph[k])), seed);
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + 4 * k)));
      acc[k] = vfmaq_f32(acc[k], vcvtq_f32_s32(s), vmulq_n_f32(dw, dx));
    }
  }
  for (int k = 0; k < 4; ++k) vst1q_f32(out + 4 * k, acc[k]);
}

}  // namespace

void q4_0_rows16_gemv__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                            float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ4_0));
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; r += 16) tile(w + r / 16 * group_bytes, nb, x, t, out + t * out_stride + r);
  }
}

void q4_0_rows16_gemm__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                            float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ4_0));
  for (int64_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int64_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      for (int64_t t = t0; t < t1; ++t) tile(group, nb, x, t, out + t * out_stride + r);
    }
  }
}

}  // namespace ember
#endif  // __aarch64__

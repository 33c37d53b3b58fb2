// Q8_0 weights in the Rows16 layout x 8-bit activations on plain NEON (no
// dot product). Each 64-byte chunk of a tile is four 16-byte vectors of 4
// rows x 4 bytes, flipped back to signed (eor 0x80); the products with the
// token's 4 activation bytes duplicated to every lane come from vmull_s8 /
// vmlal_s8 over two chunks at a time (|q| <= 128 times |x| <= 127, two
// products per int16 lane: no overflow), added pairwise into int32 by
// vpadal; one vpaddq per 4 rows then gives the exact block sums. Then one
// multiply-add by the 16 row scales (FCVTL) times the token's scale. One
// token per pass: the multiplies, not the weight stream, bound this path.
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
  const uint8x16_t flip = vdupq_n_u8(0x80);
  const int8_t* xa = x.q + t * x.cols;
  float32x4_t acc[4];
  for (int k = 0; k < 4; ++k) acc[k] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = group + b * 544 + 32;
    // Rows 4k, 4k+1 in sl[k], rows 4k+2, 4k+3 in sh[k], two int32 lanes each.
    int32x4_t sl[4], sh[4];
    for (int k = 0; k < 4; ++k) sl[k] = sh[k] = vdupq_n_s32(0);
    // Rolled: fully unrolled, the scheduler hoists a whole block's loads and spills.
#pragma GCC unroll 1
    for (int c = 0; c < 8; c += 2) {
      const int8x16_t x0 = word(xa + b * 32 + 4 * c), x1 = word(xa + b * 32 + 4 * c + 4);
      for (int k = 0; k < 4; ++k) {
        const int8x16_t w0 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(q + 64 * c + 16 * k), flip));
        const int8x16_t w1 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(q + 64 * c + 64 + 16 * k), flip));
        const int16x8_t pl = vmlal_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), vget_low_s8(w1), vget_low_s8(x1));
        const int16x8_t ph = vmlal_high_s8(vmull_high_s8(w0, x0), w1, x1);
        sl[k] = vpadalq_s16(sl[k], pl);
        sh[k] = vpadalq_s16(sh[k], ph);
      }
    }
    const uint16_t* h = reinterpret_cast<const uint16_t*>(group + b * 544);
    const float dx = x.d[t * nb + b];
    for (int k = 0; k < 4; ++k) {
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + 4 * k)));
      acc[k] = vfmaq_f32(acc[k], vcvtq_f32_s32(vpaddq_s32(sl[k], sh[k])), vmulq_n_f32(dw, dx));
    }
  }
  for (int k = 0; k < 4; ++k) vst1q_f32(out + 4 * k, acc[k]);
}

}  // namespace

void q8_0_rows16_gemv__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                            float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; r += 16) tile(w + r / 16 * group_bytes, nb, x, t, out + t * out_stride + r);
  }
}

void q8_0_rows16_gemm__neon(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                            float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
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

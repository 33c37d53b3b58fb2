// Q8_0 weights in the Rows16 layout x 8-bit activations on NEON with the
// dot-product extension. One int32 lane per row: each 64-byte chunk c of a
// tile is four 16-byte vectors of 4 rows x 4 bytes, flipped back to signed
// (eor 0x80) and dotted with the token's activation bytes 4c..4c+3 (SDOT by
// element, from the token's 16 bytes in one register); four accumulators per
// token give the exact block sums of 16 rows with no seed. Then one
// multiply-add by the 16 row scales (FCVTL) times the token's scale. No
// horizontal sums; up to 4 tokens per pass over a group.
#if defined(__aarch64__)
#include <arm_neon.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

constexpr int64_t kTokenChunk = 32;  // tokens whose activations stay in L2 while the groups stream

// Chunk L of the half tile at q (4 chunks) for T tokens; xv[j] holds token
// j's 16 activation bytes for that half.
template <int T, int L>
inline void chunk(const uint8_t* q, const int8x16_t* xv, int32x4_t (*s)[4]) {
  int8x16_t w[4];
  for (int k = 0; k < 4; ++k) w[k] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(q + 64 * L + 16 * k), vdupq_n_u8(0x80)));
  for (int j = 0; j < T; ++j)
    for (int k = 0; k < 4; ++k) s[j][k] = vdotq_laneq_s32(s[j][k], w[k], xv[j], L);
}

// T tokens from t against the 16 rows of the group at `group`.
template <int T>
void tile(const uint8_t* group, int64_t nb, const QuantActs& x, int64_t t, float* out, int64_t os) {
  const int8_t* xa[T];
  for (int j = 0; j < T; ++j) xa[j] = x.q + (t + j) * x.cols;
  float32x4_t acc[T][4];
  int32x4_t s[T][4];
  for (int j = 0; j < T; ++j) {
    for (int k = 0; k < 4; ++k) {
      acc[j][k] = vdupq_n_f32(0.0f);
      s[j][k] = vdupq_n_s32(0);
    }
  }
  // Half a block (4 chunks, 16 activation bytes) per iteration: a whole
  // block in one would let the scheduler hoist its 32 loads and spill.
  for (int64_t hb = 0; hb < 2 * nb; ++hb) {
    const uint8_t* q = group + (hb >> 1) * 544 + 32 + 256 * (hb & 1);
    int8x16_t xv[T];
    for (int j = 0; j < T; ++j) xv[j] = vld1q_s8(xa[j] + 16 * hb);
    chunk<T, 0>(q, xv, s);
    chunk<T, 1>(q, xv, s);
    chunk<T, 2>(q, xv, s);
    chunk<T, 3>(q, xv, s);
    if (hb & 1) {  // block b complete
      const int64_t b = hb >> 1;
      const uint16_t* h = reinterpret_cast<const uint16_t*>(group + b * 544);
      float32x4_t dw[4];
      for (int k = 0; k < 4; ++k) dw[k] = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + 4 * k)));
      for (int j = 0; j < T; ++j) {
        const float dx = x.d[(t + j) * nb + b];
        for (int k = 0; k < 4; ++k) {
          acc[j][k] = vfmaq_f32(acc[j][k], vcvtq_f32_s32(s[j][k]), vmulq_n_f32(dw[k], dx));
          s[j][k] = vdupq_n_s32(0);
        }
      }
    }
  }
  for (int j = 0; j < T; ++j)
    for (int k = 0; k < 4; ++k) vst1q_f32(out + (t + j) * os + 4 * k, acc[j][k]);
}

}  // namespace

void q8_0_rows16_gemv__neondot(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                               int32_t n, float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; r += 16) tile<1>(w + r / 16 * group_bytes, nb, x, t, out + r, out_stride);
  }
}

void q8_0_rows16_gemm__neondot(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,
                               int32_t n, float* out, int64_t out_stride) {
  const int64_t nb = cols / 32, group_bytes = 16 * nb * static_cast<int64_t>(sizeof(KBlockQ8_0));
  for (int64_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int64_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      int64_t t = t0;
      for (; t + 4 <= t1; t += 4) tile<4>(group, nb, x, t, out + r, out_stride);
      switch (t1 - t) {
        case 3: tile<3>(group, nb, x, t, out + r, out_stride); break;
        case 2: tile<2>(group, nb, x, t, out + r, out_stride); break;
        case 1: tile<1>(group, nb, x, t, out + r, out_stride); break;
        default: break;
      }
    }
  }
}

}  // namespace ember
#endif  // __aarch64__

// The K-quant super-block types in the Rows16 layout (core/layout.h) x 8-bit
// activations, AVX2. kquant_rows16__avx512vnni.cpp's tile on ymm, one
// group half (rows 0..7 or 8..15, one int32 lane per row) at a time: a half
// of a 64-byte chunk is 8 rows x 4 quant bytes; vpmaddubsw (unsigned quants x the token's
// 4 activation bytes broadcast) gives each row two int16 lanes, summed in
// int16 over the sub-block's 8 chunks (16 products of at most 15 x 127 per
// lane: 30480, no overflow), then one vpmaddwd by ones to int32. The float
// work per sub-block is the VNNI file's, so both give the same per-output
// sequence of float operations. One template for the shape, a traits struct
// per type:
//   W::scales(tile, h, sc, mn)  half h's float scale and min of each
//                            sub-block
//   W::quants(tile, h, p, c, lo, hi)  half h of chunk c of sub-block pair
//                            p: sub-block 2p's unsigned bytes in lo, 2p+1's in hi
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

inline int32_t word(const int8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256 u8_to_ps(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }
inline __m256 f16x8(const uint8_t* p) { return _mm256_cvtph_ps(load16(p)); }

// Q4_K: tile = d[16] f16, dmin[16] f16, the 12 scale bytes transposed
// (byte k of the 16 rows at 64 + 16k), the quant words at 256.
struct Q4_KRows16 {
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ4_K);
  static constexpr bool kHasMin = true;
  // Half h (rows 8h .. 8h + 7).
  static void scales(const uint8_t* tile, int h, __m256* sc, __m256* mn) {
    __m128i b[12];
    for (int k = 0; k < 12; ++k) b[k] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + 64 + 16 * k + 8 * h));
    const __m256 d = f16x8(tile + 16 * h), dmin = f16x8(tile + 32 + 16 * h);
    const __m128i m3f = _mm_set1_epi8(0x3f), m0f = _mm_set1_epi8(0x0f), m30 = _mm_set1_epi8(0x30);
    for (int s = 0; s < 8; ++s) {
      __m128i u, v;
      if (s < 4) {
        u = _mm_and_si128(b[s], m3f);
        v = _mm_and_si128(b[s + 4], m3f);
      } else {
        u = _mm_or_si128(_mm_and_si128(b[s + 4], m0f), _mm_and_si128(_mm_srli_epi16(b[s - 4], 2), m30));
        v = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(b[s + 4], 4), m0f), _mm_and_si128(_mm_srli_epi16(b[s], 2), m30));
      }
      sc[s] = _mm256_mul_ps(d, u8_to_ps(u));
      mn[s] = _mm256_mul_ps(dmin, u8_to_ps(v));
    }
  }
  static void quants(const uint8_t* tile, int h, int p, int c, __m256i* lo, __m256i* hi) {
    const __m256i v = load32(tile + 256 + 64 * (8 * p + c) + 32 * h);
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    *lo = _mm256_and_si256(v, m0f);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m0f);
  }
};

constexpr int64_t kTokenChunk = 32;  // tokens whose activations stay in L2 while the groups stream

// T tokens from t against H halves (8 rows each) from half h0 of the group
// at `group` (per output lane the operation sequence of the VNNI file's
// tile16, whatever T and H).
template <class W, int T, int H>
void tile(const uint8_t* group, int h0, int64_t nsb, const QuantActs& x, int64_t t, float* out, int64_t os) {
  const int64_t nb = nsb * 8;
  const int8_t* xa[T];
  const float* xd[T];
  const int32_t* xb[T];
  for (int j = 0; j < T; ++j) {
    xa[j] = x.q + (t + j) * x.cols;
    xd[j] = x.d + (t + j) * nb;
    xb[j] = x.bias + (t + j) * nb;
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[H][T];
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < T; ++j) acc[h][j] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* tl = group + sb * W::kTileBytes;
    __m256 sc[H][8], mn[H][8];
    for (int h = 0; h < H; ++h) W::scales(tl, h0 + h, sc[h], mn[h]);
    for (int p = 0; p < 4; ++p) {
      __m256i s0[H][T], s1[H][T];  // int16 sums
      for (int h = 0; h < H; ++h)
        for (int j = 0; j < T; ++j) s0[h][j] = s1[h][j] = _mm256_setzero_si256();
      const int64_t e = sb * 256 + 64 * p;
      for (int c = 0; c < 8; ++c) {
        for (int h = 0; h < H; ++h) {
          __m256i lo, hi;
          W::quants(tl, h0 + h, p, c, &lo, &hi);
          for (int j = 0; j < T; ++j) {
            s0[h][j] = _mm256_add_epi16(s0[h][j], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(word(xa[j] + e + 4 * c))));
            s1[h][j] =
                _mm256_add_epi16(s1[h][j], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(word(xa[j] + e + 32 + 4 * c))));
          }
        }
      }
      const int64_t b = sb * 8 + 2 * p;
      for (int h = 0; h < H; ++h) {
        for (int j = 0; j < T; ++j) {
          __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s0[h][j], ones)), sc[h][2 * p]);
          __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s1[h][j], ones)), sc[h][2 * p + 1]);
          if constexpr (W::kHasMin) {
            f0 = _mm256_fnmadd_ps(mn[h][2 * p], _mm256_set1_ps(static_cast<float>(-(xb[j][b] / 8))), f0);
            f1 = _mm256_fnmadd_ps(mn[h][2 * p + 1], _mm256_set1_ps(static_cast<float>(-(xb[j][b + 1] / 8))), f1);
          }
          acc[h][j] = _mm256_fmadd_ps(f0, _mm256_set1_ps(xd[j][b]), acc[h][j]);
          acc[h][j] = _mm256_fmadd_ps(f1, _mm256_set1_ps(xd[j][b + 1]), acc[h][j]);
        }
      }
    }
  }
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < T; ++j) _mm256_storeu_ps(out + (t + j) * os + 8 * (h0 + h), acc[h][j]);
}

template <class W>
void rows16_gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes;
  for (int32_t t = 0; t < n; ++t) {
    // Both halves per pass: one read of the group.
    for (int64_t r = r0; r < r1; r += 16) tile<W, 1, 2>(w + r / 16 * group_bytes, 0, nsb, x, t, out + r, out_stride);
  }
}

// Prefill: 8 rows x 4 tokens per tile (8 int16 accumulators, 4 float ones,
// the chunk's two parts: the 16 ymm registers).
template <class W>
void rows16_gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes;
  for (int64_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int64_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      for (int h = 0; h < 2; ++h) {
        int64_t t = t0;
        for (; t + 4 <= t1; t += 4) tile<W, 4, 1>(group, h, nsb, x, t, out + r, out_stride);
        switch (t1 - t) {
          case 3: tile<W, 3, 1>(group, h, nsb, x, t, out + r, out_stride); break;
          case 2: tile<W, 2, 1>(group, h, nsb, x, t, out + r, out_stride); break;
          case 1: tile<W, 1, 1>(group, h, nsb, x, t, out + r, out_stride); break;
          default: break;
        }
      }
    }
  }
}

}  // namespace

EMBER_DEFINE_QMATMUL(q4_k_rows16_gemv, avx2, rows16_gemv<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemm, avx2, rows16_gemm<Q4_KRows16>)

}  // namespace ember
#endif  // __x86_64__

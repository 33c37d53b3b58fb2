// The K-quant super-block types (Q2_K-Q6_K) and IQ4_XS in the Rows16 layout (core/layout.h) x 8-bit
// activations, AVX2. kquant_rows16__avx512vnni.cpp's tile on ymm, one
// group half (rows 0..7 or 8..15, one int32 lane per row) at a time: a half
// of a 64-byte chunk is 8 rows x 4 quant bytes; vpmaddubsw (unsigned quants x the token's
// 4 activation bytes broadcast) gives each row two int16 lanes, summed in
// int16 over the sub-block's 8 chunks (16 products of at most 15 x 127 per
// lane: 30480, no overflow), then one vpmaddwd by ones to int32. The float
// work per sub-block is the VNNI file's, so both give the same per-output
// sequence of float operations. One template for the shape, a traits struct
// per type:
//   W::sub(p, k)             the sub-block of pair p's part k (Q4_K: 2p + k)
//   W::scales(tile, h, sc, mn)  half h's float scale and min of each
//                            sub-block
//   W::quants(tile, h, p, c, lo, hi)  half h of chunk c of sub-block pair
//                            p: sub(p, 0)'s unsigned bytes in lo, sub(p, 1)'s in hi
//   kPer16 (Q2_K, Q3_K, Q6_K: int8 scales per 16, W::scales8(tile, buf) as
//                            [group][row]; quants q + W::kOffset, Q6_K's up
//                            to 63, Q3_K's to 7, Q2_K's to 3): the int16 sums take 2
//                            chunks (4 products of 63 x 127 = 32004 per
//                            lane), then vpmaddwd by the group's scale
//                            (scale16: the row's scale in both int16 halves
//                            of its dword) into int32, seeded with vpmaddwd
//                            of offset16 (the row's -kOffset x scale of the
//                            sub-block's two groups) by the token's two
//                            sum16: exact, one int32 per sub-block as Q4_K's
//                            (no seed where kOffset is 0).
//   kGroupMin (optional, false if absent; Q2_K): a min per group of 16,
//                            W::mins16(tile, h, u) giving sub-block u's two
//                            group mins per row as an int16 pair; one
//                            vpmaddwd by the token's two sum16 (exact), so
//                            f = float(isum) x d - float(imin) x dmin.
//   kSigned (optional, false if absent; IQ4_XS): W::quants gives signed
//                            bytes, multiplied by the sign trick
//                            (vpmaddubsw of |q| by the activations with q's
//                            sign: products of at most 127 x 127, so with
//                            kInt16Chunks 1 each vpmaddubsw goes to int32).
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
  static constexpr int sub(int p, int k) { return 2 * p + k; }
  static constexpr bool kPer16 = false;
  static constexpr int kInt16Chunks = 8;  // chunks an int16 sum takes: 16 products of 15 x 127
};

// Q5_K: Q4_K's d, dmin and scales; from 256 nibble chunk j and qh chunk j
// (bit s = sub-block s's fifth bit) side by side for j = 0..7, then nibble
// chunks 8..31 (core/layout.h). Quants up to 31: the int16 sums
// take 4 chunks (8 products of 31 x 127 = 31496 per lane).
struct Q5_KRows16 : Q4_KRows16 {
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ5_K);
  static constexpr int kInt16Chunks = 4;
  static void quants(const uint8_t* tile, int h, int p, int c, __m256i* lo, __m256i* hi) {
    const __m256i v = load32(tile + q5_k_rows16_qs(8 * p + c) + 32 * h);
    const __m256i q = load32(tile + q5_k_rows16_qh(c) + 32 * h);
    const __m256i m0f = _mm256_set1_epi8(0x0f), m01 = _mm256_set1_epi8(0x01);
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * p)), m01), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * p + 1)), m01), 4);
    *lo = _mm256_or_si256(_mm256_and_si256(v, m0f), h0);
    *hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m0f), h1);
  }
};

// Q6_K: tile = d[16] f16 at 0, the 16 int8 scales transposed at 32, then
// 16 units of 192 bytes from 288 (unit 8h + j: ql chunks 16h + j and
// 16h + 8 + j, qh chunk 8h + j; core/layout.h); pairs as in
// kquant_rows16__avx512vnni.cpp.
struct Q6_KRows16 {
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ6_K);
  static constexpr bool kHasMin = false;
  static constexpr bool kPer16 = true;
  static constexpr int kOffset = 32;
  static constexpr int sub(int p, int k) { return 4 * (p / 2) + p % 2 + 2 * k; }
  static void scales(const uint8_t* tile, int h, __m256* sc, __m256*) {
    const __m256 d = f16x8(tile + 16 * h);
    for (int s = 0; s < 8; ++s) sc[s] = d;
  }
  static const int8_t* scales8(const uint8_t* tile, int8_t*) { return reinterpret_cast<const int8_t*>(tile + 32); }
  static void quants(const uint8_t* tile, int h, int p, int c, __m256i* lo, __m256i* hi) {
    const __m256i l = load32(tile + q6_k_rows16_ql(8 * p + c) + 32 * h);
    const __m256i q = load32(tile + q6_k_rows16_qh(8 * (p / 2) + c) + 32 * h);
    const __m256i m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    const __m256i ql = p % 2 ? _mm256_slli_epi16(q, 2) : _mm256_slli_epi16(q, 4);
    const __m256i qh = p % 2 ? _mm256_srli_epi16(q, 2) : q;
    *lo = _mm256_or_si256(_mm256_and_si256(l, m0f), _mm256_and_si256(ql, m30));
    *hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m0f), _mm256_and_si256(qh, m30));
  }
};

// Q2_K: tile = d[16] f16 at 0, dmin[16] f16 at 32, the 16 scale bytes
// transposed at 64 (low nibble the scale, high the min), the 16 q chunks at
// 320 (core/layout.h); pairs and quants (0..3) as in
// kquant_rows16__avx512vnni.cpp.
struct Q2_KRows16 {
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ2_K);
  static constexpr bool kHasMin = false;
  static constexpr bool kPer16 = true;
  static constexpr int kOffset = 0;
  static constexpr bool kGroupMin = true;
  static constexpr int sub(int p, int k) { return 2 * p + k; }
  static void scales(const uint8_t* tile, int h, __m256* sc, __m256* mn) {
    const __m256 d = f16x8(tile + 16 * h), dmin = f16x8(tile + 32 + 16 * h);
    for (int s = 0; s < 8; ++s) {
      sc[s] = d;
      mn[s] = dmin;
    }
  }
  static const int8_t* scales8(const uint8_t* tile, int8_t* buf) {
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    for (int q = 0; q < 8; ++q) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(buf + 32 * q), _mm256_and_si256(load32(tile + 64 + 32 * q), m0f));
    }
    return buf;
  }
  // Half h's (min of group 2u, min of group 2u + 1) per row, int16.
  static __m256i mins16(const uint8_t* tile, int h, int u) {
    const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + 64 + 32 * u + 8 * h));
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + 80 + 32 * u + 8 * h));
    return _mm256_srli_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)), 4);
  }
  static void quants(const uint8_t* tile, int h, int p, int c, __m256i* lo, __m256i* hi) {
    const __m256i v = load32(tile + q2_k_rows16_qs(8 * (p / 2) + c) + 32 * h);
    const __m256i m03 = _mm256_set1_epi8(0x03);
    const __m256i q = _mm256_srl_epi16(v, _mm_cvtsi32_si128(4 * (p % 2)));
    *lo = _mm256_and_si256(q, m03);
    *hi = _mm256_and_si256(_mm256_srli_epi16(q, 2), m03);
  }
};

// Q3_K: tile = d[16] f16 at 0, the 12 scale bytes transposed at 32, then
// q chunk j and hmask chunk j side by side for j = 0..7, then q chunks
// 8..15 (core/layout.h); pairs, quants (q + 4, 0..7) and scales as in
// kquant_rows16__avx512vnni.cpp.
struct Q3_KRows16 {
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ3_K);
  static constexpr bool kHasMin = false;
  static constexpr bool kPer16 = true;
  static constexpr int kOffset = 4;
  static constexpr int sub(int p, int k) { return 2 * p + k; }
  static void scales(const uint8_t* tile, int h, __m256* sc, __m256* mn) { Q6_KRows16::scales(tile, h, sc, mn); }  // d
  // Group g = 4k + i: the low nibble of scale byte g % 8, bits 2 (g / 4)..
  // of byte 8 + g % 4 as bits 4-5, minus 32; 32 bytes (two groups) at a time.
  static const int8_t* scales8(const uint8_t* tile, int8_t* buf) {
    const __m256i m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30), k32 = _mm256_set1_epi8(32);
    for (int q = 0; q < 2; ++q) {
      const __m256i l0 = load32(tile + 32 + 32 * q), l1 = load32(tile + 96 + 32 * q), h = load32(tile + 160 + 32 * q);
      const __m256i z[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, m0f), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30)),
          _mm256_or_si256(_mm256_and_si256(l1, m0f), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m0f), _mm256_and_si256(h, m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m0f), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30))};
      for (int k = 0; k < 4; ++k) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(buf + 64 * k + 32 * q), _mm256_sub_epi8(z[k], k32));
      }
    }
    return buf;
  }
  // Bit `from` of each byte to bit 2, the rest cleared.
  static __m256i bit2(__m256i v, int from) {
    const __m256i m04 = _mm256_set1_epi8(0x04);
    if (from >= 2) return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(from - 2)), m04);
    return _mm256_and_si256(_mm256_sll_epi16(v, _mm_cvtsi32_si128(2 - from)), m04);
  }
  static void quants(const uint8_t* tile, int h, int p, int c, __m256i* lo, __m256i* hi) {
    const __m256i v = load32(tile + q3_k_rows16_qs(8 * (p / 2) + c) + 32 * h);
    const __m256i hm = load32(tile + q3_k_rows16_hm(c) + 32 * h);
    const __m256i m03 = _mm256_set1_epi8(0x03);
    const __m256i q = _mm256_srl_epi16(v, _mm_cvtsi32_si128(4 * (p % 2)));
    *lo = _mm256_or_si256(_mm256_and_si256(q, m03), bit2(hm, 2 * p));
    *hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2), m03), bit2(hm, 2 * p + 1));
  }
};

// IQ4_XS: tile = d[16] f16, scales_h transposed (low bytes at 32, high at
// 48), the 4 scales_l bytes transposed at 64, the quant words at 128 (chunk
// 4s + j: sub-block s's elements 4j.. in the low nibbles, 16 + 4j.. in the
// high). The nibbles index the signed kKIq4Levels (vpshufb), multiplied
// by the sign trick (kSigned); two products of 127 x 127 fill an int16
// lane, so every vpmaddubsw goes to int32 (kInt16Chunks 1).
struct IQ4_XSRows16 {
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockIQ4_XS);
  static constexpr bool kHasMin = false;
  static constexpr bool kPer16 = false;
  static constexpr bool kSigned = true;
  static constexpr int kInt16Chunks = 1;
  static constexpr int sub(int p, int k) { return 2 * p + k; }
  static void scales(const uint8_t* tile, int h, __m256* sc, __m256*) {
    const __m256 d = f16x8(tile + 16 * h);
    const __m128i hb[2] = {_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + 32 + 8 * h)),
                           _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + 48 + 8 * h))};
    const __m128i m0f = _mm_set1_epi8(0x0f), m03 = _mm_set1_epi8(0x03);
    for (int s = 0; s < 8; ++s) {
      const __m128i l = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + 64 + 16 * (s / 2) + 8 * h));
      const __m128i lo = s % 2 ? _mm_and_si128(_mm_srli_epi16(l, 4), m0f) : _mm_and_si128(l, m0f);
      const __m128i hi = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(hb[s / 4], _mm_cvtsi32_si128(2 * (s % 4))), m03), 4);
      const __m256i ls = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_or_si128(lo, hi)), _mm256_set1_epi32(32));
      sc[s] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(ls));
    }
  }
  // Half h of chunk c of pair p: sub-block 2p's elements 4c.. are chunk
  // 8p + c % 4's low (c < 4) or high nibbles, sub-block 2p + 1's chunk 8p + 4 + c % 4's.
  static void quants(const uint8_t* tile, int h, int p, int c, __m256i* lo, __m256i* hi) {
    const __m256i a = load32(tile + 128 + 64 * (8 * p + c % 4) + 32 * h);
    const __m256i b = load32(tile + 128 + 64 * (8 * p + 4 + c % 4) + 32 * h);
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kKIq4Levels)));
    const __m256i ia = c < 4 ? _mm256_and_si256(a, m0f) : _mm256_and_si256(_mm256_srli_epi16(a, 4), m0f);
    const __m256i ib = c < 4 ? _mm256_and_si256(b, m0f) : _mm256_and_si256(_mm256_srli_epi16(b, 4), m0f);
    *lo = _mm256_shuffle_epi8(levels, ia);
    *hi = _mm256_shuffle_epi8(levels, ib);
  }
};

// kPer16: half h's int8 scales of group g (s8: W::scales8's [group][row]),
// each row's in both int16 halves of its dword.
inline __m256i scale16(const int8_t* s8, int h, int g) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8 + 16 * g + 8 * h)));
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16));
}
// kPer16: half h's (-kOffset x scale of group 2s, -kOffset x scale of group
// 2s + 1) per row, int16.
template <class W>
inline __m256i offset16(const int8_t* s8, int h, int s) {
  const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8 + 16 * (2 * s) + 8 * h));
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8 + 16 * (2 * s + 1) + 8 * h));
  const __m256i v = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
  return _mm256_mullo_epi16(v, _mm256_set1_epi16(static_cast<int16_t>(-W::kOffset)));
}

// W::kGroupMin, false for the types without it.
template <class W>
constexpr bool group_min() {
  if constexpr (requires { W::kGroupMin; }) {
    return W::kGroupMin;
  } else {
    return false;
  }
}

// vpmaddubsw of quants q by activations a: W's unsigned quants as they are,
// kSigned's by the sign trick.
template <class W>
inline __m256i quant_madd(__m256i q, __m256i a) {
  if constexpr (requires { W::kSigned; }) {
    if constexpr (W::kSigned) return _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(a, q));
  }
  return _mm256_maddubs_epi16(q, a);
}

constexpr int64_t kTokenChunk = 32;  // tokens whose activations stay in L2 while the groups stream

// Part P (0: lo, 1: hi) of pair p, T tokens, H halves: the exact int32
// sums of W::kInt16Chunks-chunk runs of int16 sums (vpmaddubsw), added.
template <class W, int T, int H, int P>
inline void part_sums(const uint8_t* tl, int h0, int p, const int8_t* const* xa, int64_t e, __m256i (&out)[H][T]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int c0 = 0; c0 < 8; c0 += W::kInt16Chunks) {
    __m256i s[H][T];
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < T; ++j) s[h][j] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int c = c0; c < c0 + W::kInt16Chunks; ++c) {
      for (int h = 0; h < H; ++h) {
        __m256i lo, hi;
        W::quants(tl, h0 + h, p, c, &lo, &hi);
        for (int j = 0; j < T; ++j) {
          s[h][j] = _mm256_add_epi16(s[h][j], quant_madd<W>(P ? hi : lo, _mm256_set1_epi32(word(xa[j] + e + 4 * c))));
        }
      }
    }
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j < T; ++j) {
        const __m256i w = _mm256_madd_epi16(s[h][j], ones);
        out[h][j] = c0 == 0 ? w : _mm256_add_epi32(out[h][j], w);
      }
    }
  }
}

// T tokens from t against H halves (8 rows each) from half h0 of the group
// at `group` (per output lane the operation sequence of the VNNI file's
// tile16, whatever T and H). stream: prefetch ahead (decode, small steps).
template <class W, int T, int H>
void tile(const uint8_t* group, int h0, int64_t nsb, const QuantActs& x, int64_t t, float* out, int64_t os,
          bool stream) {
  const int64_t nb = nsb * 8;
  const int8_t* xa[T];
  const float* xd[T];
  const int32_t* xb[T];
  const int16_t* xs[T];
  for (int j = 0; j < T; ++j) {
    xa[j] = x.q + (t + j) * x.cols;
    xd[j] = x.d + (t + j) * nb;
    xb[j] = x.bias + (t + j) * nb;
    xs[j] = W::kPer16 ? x.sum16 + (t + j) * (x.cols / 16) : nullptr;
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[H][T];
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < T; ++j) acc[h][j] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* tl = group + sb * W::kTileBytes;
    if (stream) prefetch_ahead(tl, W::kTileBytes);  // decode and small steps: kernels.h
    __m256 sc[H][8], mn[H][8];
    for (int h = 0; h < H; ++h) W::scales(tl, h0 + h, sc[h], mn[h]);
    alignas(32) int8_t buf[W::kPer16 ? 256 : 1];
    const int8_t* s8 = nullptr;
    if constexpr (W::kPer16) s8 = W::scales8(tl, buf);
    // The activation blocks' sums as floats (bias = -8 x sum, so the shift
    // is exact), 8 per token at once: the min FMAs broadcast them from here.
    alignas(32) float xsum[W::kHasMin ? T : 1][8];
    if constexpr (W::kHasMin) {
      for (int j = 0; j < T; ++j) {
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[j] + sb * 8));
        _mm256_store_ps(xsum[j], _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_srai_epi32(b, 3))));
      }
    }
    for (int p = 0; p < 4; ++p) {
      const int u0 = W::sub(p, 0), u1 = W::sub(p, 1);
      const int64_t e0 = sb * 256 + 32 * u0, e1 = sb * 256 + 32 * u1;
      __m256i i0[H][T], i1[H][T];  // the two sub-blocks' exact int32 sums (scaled, kPer16)
      if constexpr (W::kPer16) {
        for (int h = 0; h < H; ++h) {
          if constexpr (W::kOffset == 0) {
            for (int j = 0; j < T; ++j) i0[h][j] = i1[h][j] = _mm256_setzero_si256();
            continue;
          }
          const __m256i o0 = offset16<W>(s8, h0 + h, u0), o1 = offset16<W>(s8, h0 + h, u1);
          for (int j = 0; j < T; ++j) {
            int32_t w0, w1;  // the token's sum16 of the sub-block's two groups
            memcpy(&w0, xs[j] + sb * 16 + 2 * u0, 4);
            memcpy(&w1, xs[j] + sb * 16 + 2 * u1, 4);
            i0[h][j] = _mm256_madd_epi16(o0, _mm256_set1_epi32(w0));
            i1[h][j] = _mm256_madd_epi16(o1, _mm256_set1_epi32(w1));
          }
        }
#pragma GCC unroll 4
        for (int c = 0; c < 8; c += 2) {
          for (int h = 0; h < H; ++h) {
            __m256i lo0, hi0, lo1, hi1;
            W::quants(tl, h0 + h, p, c, &lo0, &hi0);
            W::quants(tl, h0 + h, p, c + 1, &lo1, &hi1);
            const __m256i m0 = scale16(s8, h0 + h, 2 * u0 + c / 4), m1 = scale16(s8, h0 + h, 2 * u1 + c / 4);
            for (int j = 0; j < T; ++j) {
              const __m256i p0 =
                  _mm256_add_epi16(_mm256_maddubs_epi16(lo0, _mm256_set1_epi32(word(xa[j] + e0 + 4 * c))),
                                   _mm256_maddubs_epi16(lo1, _mm256_set1_epi32(word(xa[j] + e0 + 4 * c + 4))));
              const __m256i p1 =
                  _mm256_add_epi16(_mm256_maddubs_epi16(hi0, _mm256_set1_epi32(word(xa[j] + e1 + 4 * c))),
                                   _mm256_maddubs_epi16(hi1, _mm256_set1_epi32(word(xa[j] + e1 + 4 * c + 4))));
              i0[h][j] = _mm256_add_epi32(i0[h][j], _mm256_madd_epi16(p0, m0));
              i1[h][j] = _mm256_add_epi32(i1[h][j], _mm256_madd_epi16(p1, m1));
            }
          }
        }
      } else {
        // int16 sums over W::kInt16Chunks chunks at a time, then int32.
        constexpr int kRun = W::kInt16Chunks;
        if constexpr (kRun < 8) {
          // Runs of chunks would keep both parts' int32 sums live beside
          // the int16 ones (more than the 16 ymm registers): one part at a time.
          part_sums<W, T, H, 0>(tl, h0, p, xa, e0, i0);
          part_sums<W, T, H, 1>(tl, h0, p, xa, e1, i1);
        } else
        for (int c0 = 0; c0 < 8; c0 += kRun) {
          __m256i s0[H][T], s1[H][T];  // int16 sums
          for (int h = 0; h < H; ++h)
            for (int j = 0; j < T; ++j) s0[h][j] = s1[h][j] = _mm256_setzero_si256();
          for (int c = c0; c < c0 + kRun; ++c) {
            for (int h = 0; h < H; ++h) {
              __m256i lo, hi;
              W::quants(tl, h0 + h, p, c, &lo, &hi);
              for (int j = 0; j < T; ++j) {
                s0[h][j] =
                    _mm256_add_epi16(s0[h][j], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(word(xa[j] + e0 + 4 * c))));
                s1[h][j] =
                    _mm256_add_epi16(s1[h][j], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(word(xa[j] + e1 + 4 * c))));
              }
            }
          }
          for (int h = 0; h < H; ++h) {
            for (int j = 0; j < T; ++j) {
              const __m256i w0 = _mm256_madd_epi16(s0[h][j], ones), w1 = _mm256_madd_epi16(s1[h][j], ones);
              i0[h][j] = c0 == 0 ? w0 : _mm256_add_epi32(i0[h][j], w0);
              i1[h][j] = c0 == 0 ? w1 : _mm256_add_epi32(i1[h][j], w1);
            }
          }
        }
      }
      const int64_t b0 = sb * 8 + u0, b1 = sb * 8 + u1;
      for (int h = 0; h < H; ++h) {
        // kGroupMin: the two sub-blocks' group mins, once for all T tokens.
        __m256i gm0 = _mm256_setzero_si256(), gm1 = _mm256_setzero_si256();
        if constexpr (group_min<W>()) {
          gm0 = W::mins16(tl, h0 + h, u0);
          gm1 = W::mins16(tl, h0 + h, u1);
        }
        for (int j = 0; j < T; ++j) {
          __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(i0[h][j]), sc[h][u0]);
          __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(i1[h][j]), sc[h][u1]);
          if constexpr (W::kHasMin) {
            f0 = _mm256_fnmadd_ps(mn[h][u0], _mm256_set1_ps(xsum[j][u0]), f0);
            f1 = _mm256_fnmadd_ps(mn[h][u1], _mm256_set1_ps(xsum[j][u1]), f1);
          }
          if constexpr (group_min<W>()) {
            int32_t w0, w1;  // the token's sum16 of the sub-block's two groups
            memcpy(&w0, xs[j] + sb * 16 + 2 * u0, 4);
            memcpy(&w1, xs[j] + sb * 16 + 2 * u1, 4);
            const __m256i m0 = _mm256_madd_epi16(gm0, _mm256_set1_epi32(w0));
            const __m256i m1 = _mm256_madd_epi16(gm1, _mm256_set1_epi32(w1));
            f0 = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m0), mn[h][u0], f0);
            f1 = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m1), mn[h][u1], f1);
          }
          acc[h][j] = _mm256_fmadd_ps(f0, _mm256_set1_ps(xd[j][b0]), acc[h][j]);
          acc[h][j] = _mm256_fmadd_ps(f1, _mm256_set1_ps(xd[j][b1]), acc[h][j]);
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
    for (int64_t r = r0; r < r1; r += 16) tile<W, 1, 2>(w + r / 16 * group_bytes, 0, nsb, x, t, out + r, out_stride, true);
  }
}

// Prefill: 8 rows x 4 tokens per tile (8 int16 accumulators, 4 float ones,
// the chunk's two parts: the 16 ymm registers).
template <class W>
void rows16_gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes;
  const bool small = n <= kStreamTokens;  // the group's first pass streams it from memory
  for (int64_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int64_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      for (int h = 0; h < 2; ++h) {
        int64_t t = t0;
        for (; t + 4 <= t1; t += 4) tile<W, 4, 1>(group, h, nsb, x, t, out + r, out_stride, small && h == 0 && t == t0);
        const bool stream = small && h == 0 && t == t0;
        switch (t1 - t) {
          case 3: tile<W, 3, 1>(group, h, nsb, x, t, out + r, out_stride, stream); break;
          case 2: tile<W, 2, 1>(group, h, nsb, x, t, out + r, out_stride, stream); break;
          case 1: tile<W, 1, 1>(group, h, nsb, x, t, out + r, out_stride, stream); break;
          default: break;
        }
      }
    }
  }
}

}  // namespace

EMBER_DEFINE_QMATMUL(q2_k_rows16_gemv, avx2, rows16_gemv<Q2_KRows16>)
EMBER_DEFINE_QMATMUL(q2_k_rows16_gemm, avx2, rows16_gemm<Q2_KRows16>)
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemv, avx2, rows16_gemv<Q3_KRows16>)
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemm, avx2, rows16_gemm<Q3_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemv, avx2, rows16_gemv<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemm, avx2, rows16_gemm<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemv, avx2, rows16_gemv<Q5_KRows16>)
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemm, avx2, rows16_gemm<Q5_KRows16>)
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemv, avx2, rows16_gemv<Q6_KRows16>)
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemm, avx2, rows16_gemm<Q6_KRows16>)
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemv, avx2, rows16_gemv<IQ4_XSRows16>)
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemm, avx2, rows16_gemm<IQ4_XSRows16>)

}  // namespace ember
#endif  // __x86_64__

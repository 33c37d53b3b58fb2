// The GGUF super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) x 8-bit
// activations with AVX-512 (F/BW/VL; compiled with VNNI too). The shape and
// the arithmetic are kquant_matmul__avx2.cpp's, on 512-bit vectors: a zmm
// holds two sub-blocks (64 elements, the two activation blocks 2k, 2k + 1
// side by side), so per (row, token) and pair: vpmaddubsw, vpmaddwd by the
// scales (int16 multipliers, exact int32), one FMA by the pair's two
// activation scales. vpmaddubsw + vpmaddwd rather than vpdpbusd: the scale
// must multiply each sub-block's int32 sum before the per-32 float scale,
// and vpmaddwd applies it for free where vpdpbusd would need a multiply.
// Per super-block the mins/offsets: one vpmaddwd of 16 int16 multipliers by
// the token's 16 sum16, one FMA by the 8 activation scales; the super-block
// sum is scaled by d (the mins by dmin) with one FMA. See docs/decisions.md
// "K-quant kernels on AVX2 / AVX-512".
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

// GCC 12 reports its own _mm512_undefined_* placeholders (inside the
// intrinsic headers) as uninitialized; nothing here reads them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

inline uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
// 32 bytes in both halves of a zmm.
inline __m512i load32x2(const uint8_t* p) { return _mm512_broadcast_i64x4(load32(p)); }
// v's halves (the pair's two sub-blocks) shifted right by kLo and kHi bits
// per 16-bit lane (left where negative).
template <int kLo, int kHi>
inline __m512i shift2(__m512i v) {
  if constexpr (kLo == 0 && kHi == 0) {
    return v;
  } else if constexpr (kLo >= 0 && kHi >= 0) {
    return _mm512_srlv_epi16(v, _mm512_inserti64x4(_mm512_set1_epi16(kLo), _mm256_set1_epi16(kHi), 1));
  } else {
    static_assert(kLo <= 0 && kHi <= 0, "one direction per pair");
    return _mm512_sllv_epi16(v, _mm512_inserti64x4(_mm512_set1_epi16(-kLo), _mm256_set1_epi16(-kHi), 1));
  }
}
inline __m512i bytes(int v) { return _mm512_set1_epi8(static_cast<char>(v)); }

// 8 int32 in int16 range -> each dword holding the value in both int16
// halves (a vpmaddwd multiplier).
inline __m256i dup16(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16));
}

struct Scales {
  // vpmaddwd multipliers as dwords: kHalves ? one per 16 elements (16) :
  // one per sub-block (the low 8).
  __m512i m;
  __m256i off16;  // int16 per 16 elements: times the activation's sum16 (kMin 1, 2)
  __m256 mnf;     // kMin 3: min x dmin / 8 per sub-block, times the activation's bias x d_x
  float d, dmin;
};

// Q4_K / Q5_K: 8 6-bit scales and mins packed in 12 bytes (core/dtype.h).
template <class B>
void k4_scales(const B& b, Scales* o) {
  const uint32_t u0 = u32_at(b.scales), u1 = u32_at(b.scales + 4), u2 = u32_at(b.scales + 8);
  const uint32_t sc_lo = u0 & 0x3f3f3f3f, mn_lo = u1 & 0x3f3f3f3f;
  const uint32_t sc_hi = (u2 & 0x0f0f0f0f) | (((u0 >> 6) & 0x03030303) << 4);
  const uint32_t mn_hi = ((u2 >> 4) & 0x0f0f0f0f) | (((u1 >> 6) & 0x03030303) << 4);
  o->m = _mm512_castsi256_si512(
      dup16(_mm256_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), 0, 0))));
  const __m128i mn = _mm_setr_epi32(static_cast<int>(mn_lo), static_cast<int>(mn_hi), 0, 0);
  o->d = _cvtsh_ss(b.d);
  o->dmin = _cvtsh_ss(b.dmin);
  // -dmin * min * sum(x) = dmin / 8 * min * bias (bias = -8 sum(x)).
  o->mnf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn)), _mm256_set1_ps(o->dmin * 0.125f));
}

// The low then the high nibbles of 32 bytes (Q4_K / Q5_K sub-blocks 2K, 2K + 1).
inline __m512i nibbles(const uint8_t* q) {
  const __m256i v = load32(q);
  return _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), bytes(0x0f));
}

// kMin: 0 none; 1 offsets in units of d (added to the super-block sum);
// 2 mins per 16 in units of dmin; 3 mins per 32 (mnf, with the bias). quants<K>(block): sub-blocks 2K, 2K + 1 as 64
// bytes in element order, unsigned (kSigned: signed levels).
struct Q4_K {
  using Block = KBlockQ4_K;
  static constexpr int kMin = 3;
  static constexpr bool kHalves = false, kSigned = false;
  static void scales(const Block& b, Scales* o) { k4_scales(b, o); }
  template <int K>
  static __m512i quants(const Block& b) {
    return nibbles(b.q + 32 * K);
  }
};

// Q5_K: Q4_K's nibbles plus a fifth bit, bit s of qh[l].
struct Q5_K {
  using Block = KBlockQ5_K;
  static constexpr int kMin = 3;
  static constexpr bool kHalves = false, kSigned = false;
  static void scales(const Block& b, Scales* o) { k4_scales(b, o); }
  template <int K>
  static __m512i quants(const Block& b) {
    const __m512i hi = _mm512_slli_epi16(_mm512_and_si512(shift2<2 * K, 2 * K + 1>(load32x2(b.qh)), bytes(1)), 4);
    return _mm512_or_si512(nibbles(b.q + 32 * K), hi);
  }
};

// Q6_K: 6-bit quants (ql nibble | 2 bits of qh) - 32, a signed 8-bit scale
// per 16; the -32 is the offset, -32 * scale per 16, in units of d.
struct Q6_K {
  using Block = KBlockQ6_K;
  static constexpr int kMin = 1;
  static constexpr bool kHalves = true, kSigned = false;
  static void scales(const Block& b, Scales* o) {
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m512i s32 = _mm512_cvtepi8_epi32(s8);
    o->m = _mm512_or_si512(_mm512_and_si512(s32, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(s32, 16));
    o->off16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 5));
    o->d = _cvtsh_ss(b.d);
    o->dmin = 0.0f;
  }
  // Sub-blocks p = 2K, 2K + 1: half h = K / 2; low nibbles of
  // ql[64 h .. + 64] shifted by 4 (K % 2); bits 4-5 from bits 2 (p % 4) of
  // qh[32 h + l].
  template <int K>
  static __m512i quants(const Block& b) {
    constexpr int h = K / 2, k0 = 2 * (K % 2);
    const __m512i v = _mm512_loadu_si512(b.ql + 64 * h);
    const __m512i lo = _mm512_and_si512(K % 2 ? _mm512_srli_epi16(v, 4) : v, bytes(0x0f));
    const __m512i hi = _mm512_and_si512(shift2<2 * k0 - 4, 2 * k0 - 2>(load32x2(b.qh + 32 * h)), bytes(0x30));
    return _mm512_or_si512(lo, hi);
  }
};

// Q3_K: 2 low bits from q, the third from hmask, minus 4; 16 6-bit scales
// (minus 32) per 16; the -4 is the offset, -4 * scale per 16, in units of d.
struct Q3_K {
  using Block = KBlockQ3_K;
  static constexpr int kMin = 1;
  static constexpr bool kHalves = true, kSigned = false;
  static void scales(const Block& b, Scales* o) {
    uint64_t lo;
    memcpy(&lo, b.scales, 8);
    const uint64_t hi = u32_at(b.scales + 8);
    const uint64_t m3 = 0x0303030303030303ull, m4 = 0x0f0f0f0f0f0f0f0full;
    // Scales 0-7: low nibbles of bytes 0-7, bits 4-5 from bit pairs 0 (0-3)
    // and 2 (4-7) of bytes 8-11; 8-15: high nibbles, bit pairs 4 and 6.
    const uint64_t s0 = (lo & m4) | (((hi & m3) | (((hi >> 2) & m3) << 32)) << 4);
    const uint64_t s1 = ((lo >> 4) & m4) | ((((hi >> 4) & m3) | (((hi >> 6) & m3) << 32)) << 4);
    const __m128i s8 = _mm_sub_epi8(_mm_set_epi64x(static_cast<int64_t>(s1), static_cast<int64_t>(s0)),
                                    _mm_set1_epi8(32));
    const __m512i s32 = _mm512_cvtepi8_epi32(s8);
    o->m = _mm512_or_si512(_mm512_and_si512(s32, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(s32, 16));
    o->off16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 2));
    o->d = _cvtsh_ss(b.d);
    o->dmin = 0.0f;
  }
  // Element 32 p + l: bits 2 (p % 4) of q[32 (p / 4) + l], bit p of hmask[l].
  template <int K>
  static __m512i quants(const Block& b) {
    constexpr int p = 2 * K;
    const __m512i lo = _mm512_and_si512(shift2<2 * (p % 4), 2 * (p % 4) + 2>(load32x2(b.q + 32 * (p / 4))), bytes(3));
    const __m512i hi = _mm512_slli_epi16(_mm512_and_si512(shift2<p, p + 1>(load32x2(b.hmask)), bytes(1)), 2);
    return _mm512_or_si512(lo, hi);
  }
};

// Q2_K: 2-bit quants, a 4-bit scale (units of d) and 4-bit min (dmin) per 16.
struct Q2_K {
  using Block = KBlockQ2_K;
  static constexpr int kMin = 2;
  static constexpr bool kHalves = true, kSigned = false;
  static void scales(const Block& b, Scales* o) {
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m512i s32 = _mm512_cvtepu8_epi32(_mm_and_si128(s8, _mm_set1_epi8(0x0f)));
    o->m = _mm512_or_si512(s32, _mm512_slli_epi32(s32, 16));
    const __m128i mn = _mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0f));
    o->off16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cvtepu8_epi16(mn));
    o->d = _cvtsh_ss(b.d);
    o->dmin = _cvtsh_ss(b.dmin);
  }
  template <int K>
  static __m512i quants(const Block& b) {
    constexpr int p = 2 * K;
    return _mm512_and_si512(shift2<2 * (p % 4), 2 * (p % 4) + 2>(load32x2(b.q + 32 * (p / 4))), bytes(3));
  }
};

// IQ4_XS: nibbles index the signed levels kKIq4Levels (vpshufb); a 6-bit
// scale minus 32 per sub-block, no min.
struct IQ4_XS {
  using Block = KBlockIQ4_XS;
  static constexpr int kMin = 0;
  static constexpr bool kHalves = false, kSigned = true;
  static void scales(const Block& b, Scales* o) {
    const __m256i lo = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(u32_at(b.scales_l))),
                                         _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    const __m256i hi = _mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    const __m256i ls = _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(0x0f)),
                                       _mm256_slli_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(3)), 4));
    o->m = _mm512_castsi256_si512(dup16(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
    o->off16 = _mm256_setzero_si256();
    o->d = _cvtsh_ss(b.d);
    o->dmin = 0.0f;
  }
  // Sub-block s: q[16 s ..], low nibbles elements 0-15, high 16-31; the
  // pair's 32 bytes as 128-bit lanes (lo0, lo0, hi0... ): bytes 0-15 twice,
  // bytes 16-31 twice, then nibbles 0, 4, 0, 4.
  template <int K>
  static __m512i quants(const Block& b) {
    const __m512i v = _mm512_castsi256_si512(load32(b.q + 32 * K));
    const __m512i twice = _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(1, 1, 0, 0));
    const __m512i shifts = _mm512_setr_epi64(0, 0, 0x0004000400040004ll, 0x0004000400040004ll, 0, 0,
                                             0x0004000400040004ll, 0x0004000400040004ll);
    const __m512i idx = _mm512_and_si512(_mm512_srlv_epi16(twice, shifts), bytes(0x0f));
    const __m512i levels =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kKIq4Levels)));
    return _mm512_shuffle_epi8(levels, idx);
  }
};

// Pair K's vpmaddwd multipliers: 8 int16 lanes per 16 elements.
template <class W, int K>
inline __m512i mult(const Scales& sc) {
  __m512i idx;
  if constexpr (W::kHalves) {
    idx = _mm512_setr_epi32(4 * K, 4 * K, 4 * K, 4 * K, 4 * K + 1, 4 * K + 1, 4 * K + 1, 4 * K + 1, 4 * K + 2,
                            4 * K + 2, 4 * K + 2, 4 * K + 2, 4 * K + 3, 4 * K + 3, 4 * K + 3, 4 * K + 3);
  } else {
    idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * K), _mm256_set1_epi32(2 * K + 1), 1);
  }
  return _mm512_permutexvar_epi32(idx, sc.m);
}

// A row's super-block unpacked: the pairs' quants (kSigned: |levels| and
// the negative lanes' mask), their vpmaddwd multipliers and the scales.
template <class W>
struct Unpacked {
  __m512i q[4], m[4];
  __mmask64 neg[4];
  Scales sc;
};

template <class W, int K>
inline void unpack_pair(const typename W::Block& blk, Unpacked<W>* u) {
  __m512i q = W::template quants<K>(blk);
  u->m[K] = mult<W, K>(u->sc);
  u->neg[K] = 0;
  if constexpr (W::kSigned) {
    u->neg[K] = _mm512_movepi8_mask(q);
    q = _mm512_abs_epi8(q);
  }
  u->q[K] = q;
}

template <class W>
inline void unpack(const typename W::Block& blk, Unpacked<W>* u) {
  W::scales(blk, &u->sc);
  unpack_pair<W, 0>(blk, u);
  unpack_pair<W, 1>(blk, u);
  unpack_pair<W, 2>(blk, u);
  unpack_pair<W, 3>(blk, u);
}

// A super-block's activations of T tokens, as every row of a tile uses them.
template <int T>
struct Acts {
  const int8_t* aq[T];
  __m256 ad[T];
  __m512 adp[T][4];  // pair k's activation scales: d[2k] x 8, d[2k + 1] x 8
  __m256i s16[T];    // kMin 1, 2
  __m512 fb[T];      // kMin 3: the activation's bias x its scale per sub-block (low 8 lanes)
};

template <class W, int T>
inline void acts(const QuantActs& x, int32_t t, int64_t sb, Acts<T>* a) {
  const int64_t nb = x.cols / 32, n16 = x.cols / 16;
  for (int j = 0; j < T; ++j) {
    a->aq[j] = x.q + (t + j) * x.cols + sb * 256;
    a->ad[j] = _mm256_loadu_ps(x.d + (t + j) * nb + sb * 8);
    if constexpr (W::kMin == 1 || W::kMin == 2) {
      a->s16[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum16 + (t + j) * n16 + sb * 16));
    }
    if constexpr (W::kMin == 3) {
      const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias + (t + j) * nb + sb * 8));
      a->fb[j] = _mm512_zextps256_ps512(_mm256_mul_ps(_mm256_cvtepi32_ps(bias), a->ad[j]));
    }
    const __m512 a512 = _mm512_castps256_ps512(a->ad[j]);
    for (int k = 0; k < 4; ++k) {
      a->adp[j][k] = _mm512_permutexvar_ps(
          _mm512_inserti64x4(_mm512_set1_epi32(2 * k), _mm256_set1_epi32(2 * k + 1), 1), a512);
    }
  }
}

template <class W, int T, int K>
inline void pair(const Unpacked<W>& u, const Acts<T>& a, __m512* tmp) {
  const __m512i q = u.q[K];
  for (int j = 0; j < T; ++j) {
    __m512i v = _mm512_loadu_si512(a.aq[j] + 64 * K);
    if constexpr (W::kSigned) v = _mm512_mask_sub_epi8(v, u.neg[K], _mm512_setzero_si512(), v);
    const __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(q, v), u.m[K]);
    tmp[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), a.adp[j][K], tmp[j]);
  }
}

// acc[j] += one row's super-block against token j. Per (row, token), in this
// order: the 4 pairs' FMAs into tmp (zero), the offsets' FMA (kMin 1), acc
// += tmp * d, then the mins' (kMin 2, 3): gemv and gemm run this same
// sequence for every output, whatever the tile.
template <class W, int T>
inline void row_super_block(const Unpacked<W>& u, const Acts<T>& a, __m512* acc) {
  __m512 tmp[T];
  for (int j = 0; j < T; ++j) tmp[j] = _mm512_setzero_ps();
  pair<W, T, 0>(u, a, tmp);
  pair<W, T, 1>(u, a, tmp);
  pair<W, T, 2>(u, a, tmp);
  pair<W, T, 3>(u, a, tmp);
  for (int j = 0; j < T; ++j) {
    __m256 mins = _mm256_setzero_ps();
    if constexpr (W::kMin == 1 || W::kMin == 2) {
      mins = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(u.sc.off16, a.s16[j])), a.ad[j]);
    }
    if constexpr (W::kMin == 1) tmp[j] = _mm512_add_ps(tmp[j], _mm512_zextps256_ps512(mins));
    acc[j] = _mm512_fmadd_ps(tmp[j], _mm512_set1_ps(u.sc.d), acc[j]);
    if constexpr (W::kMin == 2) acc[j] = _mm512_fmadd_ps(_mm512_zextps256_ps512(mins), _mm512_set1_ps(u.sc.dmin), acc[j]);
    if constexpr (W::kMin == 3) acc[j] = _mm512_fmadd_ps(_mm512_zextps256_ps512(u.sc.mnf), a.fb[j], acc[j]);
  }
}

template <class W>
int64_t row_bytes_of(int64_t cols) {
  return cols / 256 * static_cast<int64_t>(sizeof(typename W::Block));
}

template <class W>
void gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
          int64_t out_stride) {
  using B = typename W::Block;
  const int64_t row_bytes = row_bytes_of<W>(cols), nsb = cols / 256;
  // One row at a time: a single weight stream per thread.
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; ++r) {
      const B* row = reinterpret_cast<const B*>(w + r * row_bytes);
      __m512 acc = _mm512_setzero_ps();
      for (int64_t sb = 0; sb < nsb; ++sb) {
        Acts<1> a;
        acts<W, 1>(x, t, sb, &a);
        Unpacked<W> u;
        unpack(row[sb], &u);
        row_super_block<W, 1>(u, a, &acc);
      }
      out[t * out_stride + r] = _mm512_reduce_add_ps(acc);
    }
  }
}

constexpr int kRows = 4, kTokens = 4;
constexpr int32_t kTokenChunk = 64;  // tokens whose activations stay in L2 while the rows stream

// T tokens from t (column jt of the accumulators) against the panel's rows,
// already unpacked for this super-block.
template <class W, int T>
void panel_tokens(const Unpacked<W>* up, int rows, const QuantActs& x, int32_t t, int64_t sb,
                  __m512 (*accb)[kTokenChunk], int jt) {
  Acts<T> a;
  acts<W, T>(x, t, sb, &a);
  for (int i = 0; i < rows; ++i) {
    __m512 acc[T];
    for (int j = 0; j < T; ++j) acc[j] = accb[i][jt + j];
    row_super_block<W, T>(up[i], a, acc);
    for (int j = 0; j < T; ++j) accb[i][jt + j] = acc[j];
  }
}

// Panels of kRows rows against chunks of tokens, super-block by
// super-block: each row's super-block is unpacked once for the whole chunk,
// the panel's accumulators wait in L1 between super-blocks.
template <class W>
void gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
          int64_t out_stride) {
  using B = typename W::Block;
  const int64_t row_bytes = row_bytes_of<W>(cols), nsb = cols / 256;
  __m512 accb[kRows][kTokenChunk];
  Unpacked<W> up[kRows];
  for (int32_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int32_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += kRows) {
      const int rows = r + kRows <= r1 ? kRows : static_cast<int>(r1 - r);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < t1 - t0; ++j) accb[i][j] = _mm512_setzero_ps();
      for (int64_t sb = 0; sb < nsb; ++sb) {
        for (int i = 0; i < rows; ++i) unpack(reinterpret_cast<const B*>(w + (r + i) * row_bytes)[sb], &up[i]);
        int32_t t = t0;
        for (; t + kTokens <= t1; t += kTokens) panel_tokens<W, kTokens>(up, rows, x, t, sb, accb, t - t0);
        switch (t1 - t) {
          case 3: panel_tokens<W, 3>(up, rows, x, t, sb, accb, t - t0); break;
          case 2: panel_tokens<W, 2>(up, rows, x, t, sb, accb, t - t0); break;
          case 1: panel_tokens<W, 1>(up, rows, x, t, sb, accb, t - t0); break;
          default: break;
        }
      }
      for (int i = 0; i < rows; ++i)
        for (int32_t j = 0; j < t1 - t0; ++j) out[(t0 + j) * out_stride + r + i] = _mm512_reduce_add_ps(accb[i][j]);
    }
  }
}

}  // namespace

#define EMBER_KQUANT_AVX512VNNI(t, W)               \
  EMBER_DEFINE_QMATMUL(t##_gemv, avx512vnni, gemv<W>) \
  EMBER_DEFINE_QMATMUL(t##_gemm, avx512vnni, gemm<W>)
EMBER_KQUANT_AVX512VNNI(q2_k, Q2_K)
EMBER_KQUANT_AVX512VNNI(q3_k, Q3_K)
EMBER_KQUANT_AVX512VNNI(q4_k, Q4_K)
EMBER_KQUANT_AVX512VNNI(q5_k, Q5_K)
EMBER_KQUANT_AVX512VNNI(q6_k, Q6_K)
EMBER_KQUANT_AVX512VNNI(iq4_xs, IQ4_XS)
#undef EMBER_KQUANT_AVX512VNNI

}  // namespace ember
#endif  // __x86_64__

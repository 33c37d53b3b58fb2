// The GGUF super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) x 8-bit
// activations with AVX2 + FMA + F16C. All six share one shape: 256-element
// super-blocks of 8 sub-blocks of 32, each sub-block meeting one activation
// block. One tile template; a traits struct per type gives
//   scales(block, &Scales): the super-block's scales decoded once, as the
//     int16 multipliers of vpmaddwd (one per sub-block, or one per 16
//     elements), the int16 multipliers of the activations' sum16 (mins and
//     offsets) and the float d / dmin;
//   quants(block, s): sub-block s's 32 quants as bytes in element order,
//     unsigned for vpmaddubsw (kSigned: signed, multiplied by the sign trick).
// Per (row, token) and sub-block s: vpmaddubsw, vpmaddwd by the scale (exact
// int32), then one float FMA by the activation's scale d_x[s] into the
// super-block's sum; per super-block the mins/offsets are one vpmaddwd of
// 16 int16 multipliers by the token's 16 sum16 (lane s = sub-block s), one
// FMA by the 8 activation scales, and the super-block sum is scaled by d
// (and the mins by dmin) with one FMA each. See docs/decisions.md "K-quant
// kernels on AVX2 / AVX-512".
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 8 int32 in int16 range -> each dword holding the value in both int16
// halves (a vpmaddwd multiplier).
inline __m256i dup16(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16));
}

// The bits of each byte of v selected by kMask (bit kTo upwards), taken
// from bit kFrom upwards of the same byte.
template <int kFrom, int kTo, int kMask>
inline __m256i move_bits(__m256i v) {
  const __m256i mask = _mm256_set1_epi8(static_cast<char>(kMask));
  if constexpr (kFrom < kTo) return _mm256_and_si256(_mm256_slli_epi16(v, kTo - kFrom), mask);
  if constexpr (kFrom > kTo) return _mm256_and_si256(_mm256_srli_epi16(v, kFrom - kTo), mask);
  return _mm256_and_si256(v, mask);
}
template <int kFrom, int kTo>
inline __m256i move_bit(__m256i v) {
  return move_bits<kFrom, kTo, 1 << kTo>(v);
}

struct Scales {
  // vpmaddwd multipliers: kHalves ? dwords of halves 0-7 and 8-15 : m[0]'s
  // dword s for sub-block s.
  __m256i m[2];
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
  o->m[0] = dup16(_mm256_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), 0, 0)));
  const __m128i mn = _mm_setr_epi32(static_cast<int>(mn_lo), static_cast<int>(mn_hi), 0, 0);
  o->d = _cvtsh_ss(b.d);
  o->dmin = _cvtsh_ss(b.dmin);
  // -dmin * min * sum(x) = dmin / 8 * min * bias (bias = -8 sum(x)).
  o->mnf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn)), _mm256_set1_ps(o->dmin * 0.125f));
}

// kMin: 0 none; 1 offsets in units of d (added to the super-block sum);
// 2 mins per 16 in units of dmin; 3 mins per 32 (mnf, with the bias).
struct Q4_K {
  using Block = KBlockQ4_K;
  static constexpr int kMin = 3;
  static constexpr bool kHalves = false, kSigned = false;
  static void scales(const Block& b, Scales* o) { k4_scales(b, o); }
  // Sub-block s: the low (s even) or high nibbles of q[32 (s / 2) ..].
  template <int S>
  static __m256i quants(const Block& b) {
    const __m256i v = load32(b.q + 32 * (S / 2));
    return _mm256_and_si256(S % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
  }
};

// Q5_K: Q4_K's nibbles plus a fifth bit, bit s of qh[l].
struct Q5_K {
  using Block = KBlockQ5_K;
  static constexpr int kMin = 3;
  static constexpr bool kHalves = false, kSigned = false;
  static void scales(const Block& b, Scales* o) { k4_scales(b, o); }
  template <int S>
  static __m256i quants(const Block& b) {
    const __m256i v = load32(b.q + 32 * (S / 2));
    const __m256i lo = _mm256_and_si256(S % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
    return _mm256_or_si256(lo, move_bit<S, 4>(load32(b.qh)));
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
    o->m[0] = dup16(_mm256_cvtepi8_epi32(s8));
    o->m[1] = dup16(_mm256_cvtepi8_epi32(_mm_srli_si128(s8, 8)));
    o->off16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 5));
    o->d = _cvtsh_ss(b.d);
    o->dmin = 0.0f;
  }
  // Element 32 p + l: half h = p / 4, k = p % 4: low nibble from
  // ql[64 h + 32 (k % 2) + l] (shifted by 4 (k / 2)), bits 4-5 from bits
  // 2k, 2k + 1 of qh[32 h + l].
  template <int P>
  static __m256i quants(const Block& b) {
    constexpr int h = P / 4, k = P % 4;
    const __m256i v = load32(b.ql + 64 * h + 32 * (k % 2));
    const __m256i lo = _mm256_and_si256(k / 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
    const __m256i qh = load32(b.qh + 32 * h);
    return _mm256_or_si256(lo, move_bits<2 * k, 4, 0x30>(qh));
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
    const uint64_t s0 = (lo & m4) | ((((hi & m3) | (((hi >> 2) & m3) << 32)) & m3) << 4);
    const uint64_t s1 = ((lo >> 4) & m4) | (((((hi >> 4) & m3) | (((hi >> 6) & m3) << 32)) & m3) << 4);
    const __m128i s8 = _mm_sub_epi8(_mm_set_epi64x(static_cast<int64_t>(s1), static_cast<int64_t>(s0)),
                                    _mm_set1_epi8(32));
    o->m[0] = dup16(_mm256_cvtepi8_epi32(s8));
    o->m[1] = dup16(_mm256_cvtepi8_epi32(_mm_srli_si128(s8, 8)));
    o->off16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 2));
    o->d = _cvtsh_ss(b.d);
    o->dmin = 0.0f;
  }
  // Element 32 p + l: bits 2 (p % 4) of q[32 (p / 4) + l], bit p of hmask[l].
  template <int P>
  static __m256i quants(const Block& b) {
    const __m256i v = load32(b.q + 32 * (P / 4));
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (P % 4)), _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, move_bit<P, 2>(load32(b.hmask)));
  }
};

// Q2_K: 2-bit quants, a 4-bit scale (units of d) and 4-bit min (dmin) per 16.
struct Q2_K {
  using Block = KBlockQ2_K;
  static constexpr int kMin = 2;
  static constexpr bool kHalves = true, kSigned = false;
  static void scales(const Block& b, Scales* o) {
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i sc = _mm_and_si128(s8, _mm_set1_epi8(0x0f));
    o->m[0] = dup16(_mm256_cvtepu8_epi32(sc));
    o->m[1] = dup16(_mm256_cvtepu8_epi32(_mm_srli_si128(sc, 8)));
    const __m128i mn = _mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0f));
    o->off16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cvtepu8_epi16(mn));
    o->d = _cvtsh_ss(b.d);
    o->dmin = _cvtsh_ss(b.dmin);
  }
  template <int P>
  static __m256i quants(const Block& b) {
    const __m256i v = load32(b.q + 32 * (P / 4));
    return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (P % 4)), _mm256_set1_epi8(3));
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
    o->m[0] = dup16(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)));
    o->off16 = _mm256_setzero_si256();
    o->d = _cvtsh_ss(b.d);
    o->dmin = 0.0f;
  }
  // Sub-block s: q[16 s ..], low nibbles elements 0-15, high 16-31.
  template <int S>
  static __m256i quants(const Block& b) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.q + 16 * S));
    const __m256i idx = _mm256_and_si256(
        _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1), _mm256_set1_epi8(0x0f));
    const __m256i levels =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kKIq4Levels)));
    return _mm256_shuffle_epi8(levels, idx);
  }
};

// Sub-block s's vpmaddwd multiplier: one int16 per 16 elements.
template <class W, int S>
inline __m256i mult(const Scales& sc) {
  if constexpr (W::kHalves) {
    constexpr int k = 2 * (S % 4);
    return _mm256_permutevar8x32_epi32(sc.m[S / 4], _mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1));
  } else {
    return _mm256_permutevar8x32_epi32(sc.m[0], _mm256_set1_epi32(S));
  }
}

template <class W, int T, int S>
inline void sub_block(const typename W::Block& blk, const Scales& sc, const int8_t* const* aq, const float* const* ad,
                      __m256* tmp) {
  const __m256i q = W::template quants<S>(blk);
  const __m256i m = mult<W, S>(sc);
  const __m256i qu = W::kSigned ? _mm256_abs_epi8(q) : q;
  for (int j = 0; j < T; ++j) {
    __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(aq[j] + 32 * S));
    if constexpr (W::kSigned) a = _mm256_sign_epi8(a, q);
    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(qu, a), m);
    tmp[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(ad[j] + S), tmp[j]);
  }
}

template <class W, int T, int S = 0>
inline void sub_blocks(const typename W::Block& blk, const Scales& sc, const int8_t* const* aq,
                       const float* const* ad, __m256* tmp) {
  if constexpr (S < 8) {
    sub_block<W, T, S>(blk, sc, aq, ad, tmp);
    sub_blocks<W, T, S + 1>(blk, sc, aq, ad, tmp);
  }
}

// R rows x T tokens. Per (row, token), in this order for every super-block:
// the 8 sub-blocks' FMAs into tmp (zero), the offsets' FMA (kMin 1),
// acc += tmp * d, then the mins' (kMin 2, 3): the same sequence whatever R, T.
template <class W, int R, int T>
void tile(const uint8_t* w, int64_t row_bytes, const QuantActs& x, int64_t r, int32_t t, float* out, int64_t os) {
  using B = typename W::Block;
  const int64_t nsb = x.cols / 256, nb = x.cols / 32, n16 = x.cols / 16;
  const B* wr[R];
  for (int i = 0; i < R; ++i) wr[i] = reinterpret_cast<const B*>(w + (r + i) * row_bytes);
  __m256 acc[R][T];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const int8_t* aq[T];
    const float* ad[T];
    const int16_t* as[T];
    for (int j = 0; j < T; ++j) {
      aq[j] = x.q + (t + j) * x.cols + sb * 256;
      ad[j] = x.d + (t + j) * nb + sb * 8;
      as[j] = x.sum16 + (t + j) * n16 + sb * 16;
    }
    __m256 fb[T];  // kMin 3: the activation's bias x its scale per sub-block
    if constexpr (W::kMin == 3) {
      for (int j = 0; j < T; ++j) {
        const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias + (t + j) * nb + sb * 8));
        fb[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(bias), _mm256_loadu_ps(ad[j]));
      }
    }
    for (int i = 0; i < R; ++i) {
      const B& blk = wr[i][sb];
      Scales sc;
      W::scales(blk, &sc);
      __m256 tmp[T];
      for (int j = 0; j < T; ++j) tmp[j] = _mm256_setzero_ps();
      sub_blocks<W, T>(blk, sc, aq, ad, tmp);
      for (int j = 0; j < T; ++j) {
        __m256 mins = _mm256_setzero_ps();
        if constexpr (W::kMin == 1 || W::kMin == 2) {
          const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(as[j]));
          mins = _mm256_cvtepi32_ps(_mm256_madd_epi16(sc.off16, s16));
        }
        if constexpr (W::kMin == 1) tmp[j] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(ad[j]), tmp[j]);
        acc[i][j] = _mm256_fmadd_ps(tmp[j], _mm256_set1_ps(sc.d), acc[i][j]);
        if constexpr (W::kMin == 2) {
          acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(mins, _mm256_loadu_ps(ad[j])), _mm256_set1_ps(sc.dmin), acc[i][j]);
        }
        if constexpr (W::kMin == 3) acc[i][j] = _mm256_fmadd_ps(sc.mnf, fb[j], acc[i][j]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) out[(t + j) * os + r + i] = hsum(acc[i][j]);
}

constexpr int kRows = 4, kTokens = 4;
constexpr int32_t kTokenChunk = 64;  // tokens whose activations stay in L2 while the rows stream

template <class W>
int64_t row_bytes_of(int64_t cols) {
  return cols / 256 * static_cast<int64_t>(sizeof(typename W::Block));
}

template <class W>
void gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
          int64_t out_stride) {
  const int64_t row_bytes = row_bytes_of<W>(cols);
  // One row at a time: a single weight stream per thread.
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; ++r) tile<W, 1, 1>(w, row_bytes, x, r, t, out, out_stride);
  }
}

// ---- gemm: panels of kRows rows against chunks of tokens, super-block by
// super-block: each row's super-block is unpacked once for the whole chunk
// (Unpacked, in L1), the panel's accumulators wait in L1 between
// super-blocks. Per output, exactly tile()'s sequence (gemv's).
template <class W>
struct Unpacked {
  __m256i q[8];  // sub-blocks' quants for vpmaddubsw (kSigned: |levels|)
  __m256i s[8];  // kSigned: the signed levels, for vpsignb
  __m256i m[8];  // vpmaddwd multipliers
  Scales sc;
};

template <class W, int S = 0>
inline void unpack_sub_blocks(const typename W::Block& blk, Unpacked<W>* u) {
  if constexpr (S < 8) {
    const __m256i q = W::template quants<S>(blk);
    u->m[S] = mult<W, S>(u->sc);
    if constexpr (W::kSigned) {
      u->s[S] = q;
      u->q[S] = _mm256_abs_epi8(q);
    } else {
      u->q[S] = q;
    }
    unpack_sub_blocks<W, S + 1>(blk, u);
  }
}

// T tokens from t (column jt of the accumulators) against the panel's rows,
// already unpacked for super-block sb.
template <class W, int T>
void panel_tokens(const Unpacked<W>* up, int rows, const QuantActs& x, int32_t t, int64_t sb,
                  __m256 (*accb)[kTokenChunk], int jt) {
  const int64_t nb = x.cols / 32, n16 = x.cols / 16;
  const int8_t* aq[T];
  const float* ad[T];
  const int16_t* as[T];
  __m256 fb[T];
  for (int j = 0; j < T; ++j) {
    aq[j] = x.q + (t + j) * x.cols + sb * 256;
    ad[j] = x.d + (t + j) * nb + sb * 8;
    as[j] = x.sum16 + (t + j) * n16 + sb * 16;
    if constexpr (W::kMin == 3) {
      const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias + (t + j) * nb + sb * 8));
      fb[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(bias), _mm256_loadu_ps(ad[j]));
    }
  }
  for (int i = 0; i < rows; ++i) {
    const Unpacked<W>& u = up[i];
    __m256 tmp[T];
    for (int j = 0; j < T; ++j) tmp[j] = _mm256_setzero_ps();
    for (int s = 0; s < 8; ++s) {
      for (int j = 0; j < T; ++j) {
        __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(aq[j] + 32 * s));
        if constexpr (W::kSigned) a = _mm256_sign_epi8(a, u.s[s]);
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[s], a), u.m[s]);
        tmp[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(ad[j] + s), tmp[j]);
      }
    }
    for (int j = 0; j < T; ++j) {
      __m256 acc = accb[i][jt + j];
      __m256 mins = _mm256_setzero_ps();
      if constexpr (W::kMin == 1 || W::kMin == 2) {
        const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(as[j]));
        mins = _mm256_cvtepi32_ps(_mm256_madd_epi16(u.sc.off16, s16));
      }
      if constexpr (W::kMin == 1) tmp[j] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(ad[j]), tmp[j]);
      acc = _mm256_fmadd_ps(tmp[j], _mm256_set1_ps(u.sc.d), acc);
      if constexpr (W::kMin == 2) {
        acc = _mm256_fmadd_ps(_mm256_mul_ps(mins, _mm256_loadu_ps(ad[j])), _mm256_set1_ps(u.sc.dmin), acc);
      }
      if constexpr (W::kMin == 3) acc = _mm256_fmadd_ps(u.sc.mnf, fb[j], acc);
      accb[i][jt + j] = acc;
    }
  }
}

template <class W>
void gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
          int64_t out_stride) {
  using B = typename W::Block;
  const int64_t row_bytes = row_bytes_of<W>(cols), nsb = cols / 256;
  __m256 accb[kRows][kTokenChunk];
  Unpacked<W> up[kRows];
  for (int32_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const int32_t t1 = t0 + kTokenChunk < n ? t0 + kTokenChunk : n;
    for (int64_t r = r0; r < r1; r += kRows) {
      const int rows = r + kRows <= r1 ? kRows : static_cast<int>(r1 - r);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < t1 - t0; ++j) accb[i][j] = _mm256_setzero_ps();
      for (int64_t sb = 0; sb < nsb; ++sb) {
        for (int i = 0; i < rows; ++i) {
          const B& blk = reinterpret_cast<const B*>(w + (r + i) * row_bytes)[sb];
          W::scales(blk, &up[i].sc);
          unpack_sub_blocks<W>(blk, &up[i]);
        }
        int32_t t = t0;
        for (; t + kTokens <= t1; t += kTokens) panel_tokens<W, kTokens>(up, rows, x, t, sb, accb, t - t0);
        for (; t < t1; ++t) panel_tokens<W, 1>(up, rows, x, t, sb, accb, t - t0);
      }
      for (int i = 0; i < rows; ++i)
        for (int32_t j = 0; j < t1 - t0; ++j) out[(t0 + j) * out_stride + r + i] = hsum(accb[i][j]);
    }
  }
}

}  // namespace

#define EMBER_KQUANT_AVX2(t, W)               \
  EMBER_DEFINE_QMATMUL(t##_gemv, avx2, gemv<W>) \
  EMBER_DEFINE_QMATMUL(t##_gemm, avx2, gemm<W>)
EMBER_KQUANT_AVX2(q2_k, Q2_K)
EMBER_KQUANT_AVX2(q3_k, Q3_K)
EMBER_KQUANT_AVX2(q4_k, Q4_K)
EMBER_KQUANT_AVX2(q5_k, Q5_K)
EMBER_KQUANT_AVX2(q6_k, Q6_K)
EMBER_KQUANT_AVX2(iq4_xs, IQ4_XS)
#undef EMBER_KQUANT_AVX2

}  // namespace ember
#endif  // __x86_64__

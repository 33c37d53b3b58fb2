// The K-quant super-block types (Q2_K-Q6_K) and IQ4_XS in the Rows16 layout x
// 8-bit activations, AVX-512 VNNI: the templates over the traits of
// kquant_rows16_avx512.inc (which documents them and the per-lane scheme).
// Prefill of 16 tokens or more of IQ4_XS, Q4_K, Q5_K and Q6_K runs over int8
// panels (rows16_gemm_panels, at the end); rows16_gemm's tiles (and its
// unpack-once path) serve Q2_K, Q3_K and the shorter prompts.
#if defined(__x86_64__)
#include "backends/cpu/kernels/quant-matmul/kquant_rows16_avx512.inc"
#include "backends/cpu/kernels/quant-matmul/avx512_gemm_tiles.h"

namespace ember {
namespace {

// Tokens per chunk in gemm. Each chunk streams the weights once more; the
// unpack-once types also unpack each super-block once per chunk, so they
// take as many tokens as keep 768 KiB of activations (cols bytes each) in
// L2 (Zen 4: 1 MiB), 32 to 128, a multiple of 8; the others take 32 below
// 4096 columns and the same above. ember_rows16_probe --tokens 512, one
// thread, 32 -> 128 tokens: 2048 x 5632, Q6_K 54.1 -> 47.3 ms, IQ4_XS 43.3
// -> 38.6, Q4_K 43.1 -> 42.1; 2048 x 2048, Q6_K 18.4 -> 15.4 (Q3_K), Q4_K
// 16.2 -> 15.6, but IQ4_XS 14.3 -> 17.5.
constexpr int64_t kMaxTokenChunk = 128;
// As many tokens as keep 768 KiB of activations (cols bytes each) in L2, a
// multiple of 8 from 32 to max.
inline int64_t l2_token_chunk(int64_t cols, int64_t max) {
  const int64_t c = (int64_t{768} << 10) / cols / 8 * 8;
  return c < 32 ? 32 : c > max ? max : c;
}
template <class W>
int64_t token_chunk(int64_t cols) {
  if (!unpack_once<W>() && cols < 4096) return 32;
  return l2_token_chunk(cols, kMaxTokenChunk);
}

// The activations of T tokens from t.
template <int T>
struct Acts {
  const int8_t* a[T];
  const float* d[T];
  const int32_t* bias[T];
  const int16_t* s16[T];
  Acts(const QuantActs& x, int64_t t, bool per16) {
    const int64_t nb = x.cols / 32;
    for (int j = 0; j < T; ++j) {
      a[j] = x.q + (t + j) * x.cols;
      d[j] = x.d + (t + j) * nb;
      bias[j] = x.bias + (t + j) * nb;
      s16[j] = per16 ? x.sum16 + (t + j) * (x.cols / 16) : nullptr;
    }
  }
};

// kPer16 with an offset: -kOffset x each group of 16's activation sum, the
// chains' seeds of super-block sb for T tokens.
template <class W, int T>
__attribute__((always_inline)) inline void group_seeds(const Acts<T>& x, int64_t sb, int32_t (*seed)[16]) {
  for (int j = 0; j < T; ++j) {
    const __m512i v = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.s16[j] + sb * 16)));
    _mm512_store_si512(seed[j], _mm512_mullo_epi32(v, _mm512_set1_epi32(-quant_offset<W>())));
  }
}

// Super-block sb of the 16 rows against T tokens, added to acc: the scales
// decoded (sc, mn; kPer16 also s8, W::scales8's; kGroupMin gm, W::mins16's), the quants from quants(p, c, lo, hi) (W::quants on the
// tile, or gemm's copy of them). Each output lane: per sub-block, in
// order, f = float(isum) * sc - mn * sum(a), then acc += f * d_act; the same
// whatever T and wherever the quants come from, so gemv and gemm agree bit
// for bit. Premul (gemm of a kPremulBias type): the quants are W::premul's,
// one chain per sub-block; the integer sums are kPer16's, so are the floats.
template <class W, int T, class Quants, bool Premul = false>
__attribute__((always_inline)) inline void superblock(const __m512* sc, const __m512* mn, const int8_t* s8,
                                                      const __m512i* gm, int64_t sb, const Acts<T>& x,
                                                      const Quants& quants, __m512* acc) {
  // The activation blocks' sums as floats (bias = -8 x sum, so the shift
  // is exact), 8 per token at once: the min FMAs broadcast them from here.
  alignas(32) float xsum[W::kHasMin ? T : 1][8];
  if constexpr (W::kHasMin) {
    for (int j = 0; j < T; ++j) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias[j] + sb * 8));
      _mm256_store_ps(xsum[j], _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_srai_epi32(b, 3))));
    }
  }
  // The chains' seeds, computed for the super-block with vector ops and
  // broadcast from memory below (a broadcast from a general register takes
  // a vector pipe slot; from memory it is a load): kPer16, -kOffset x each
  // group's sum; kBiasSeed, kBiasSeed x each block's bias; Premul,
  // kPremulBias x bias / 8 (bias is -8 x the sum: exact).
  constexpr bool kGroups = W::kPer16 && !Premul;  // a chain per group of 16
  constexpr bool kGroupSeeds = kGroups && quant_offset<W>() != 0;
  constexpr bool kBlockSeeds = bias_seed<W>() != 0 || (Premul && premul_bias<W>() != 0);
  constexpr int kSeeds = kGroupSeeds ? 16 : kBlockSeeds ? 8 : 1;
  alignas(64) int32_t seed[kSeeds > 1 ? T : 1][kSeeds];
  if constexpr (Premul && premul_bias<W>() != 0) {
    for (int j = 0; j < T; ++j) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias[j] + sb * 8));
      _mm256_store_si256(reinterpret_cast<__m256i*>(seed[j]),
                         _mm256_mullo_epi32(_mm256_srai_epi32(b, 3), _mm256_set1_epi32(premul_bias<W>())));
    }
  } else if constexpr (kGroupSeeds) {
    group_seeds<W>(x, sb, seed);
  } else if constexpr (bias_seed<W>() != 0) {
    for (int j = 0; j < T; ++j) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias[j] + sb * 8));
      _mm256_store_si256(reinterpret_cast<__m256i*>(seed[j]), _mm256_mullo_epi32(b, _mm256_set1_epi32(bias_seed<W>())));
    }
  }
  // Keep GCC from taking the seeds apart in registers (it would extract and
  // broadcast each one): they are read back from memory.
  if constexpr (kSeeds > 1) asm volatile("" : : "r"(&seed[0][0]) : "memory");
  __m512 part[W::kPer16 ? T : 1];  // kPer16: the super-block's sum before d
  __m512 mpart[group_min<W>() ? T : 1];  // kGroupMin: its mins' sum before dmin
  if constexpr (W::kPer16) {
    for (int j = 0; j < T; ++j) part[j] = _mm512_setzero_ps();
  }
  if constexpr (group_min<W>()) {
    for (int j = 0; j < T; ++j) mpart[j] = _mm512_setzero_ps();
  }
  // One sub-block pair; Q6_K's pair loop is unrolled (its chunk offsets and
  // shifts depend on p: rolled, they were computed and branched on at run
  // time), the others' stays rolled (unrolled, Q4_K's 8-token tile spilled).
  auto pair = [&](int p) __attribute__((always_inline)) {
    const int u0 = W::sub(p, 0), u1 = W::sub(p, 1);
    const int64_t e0 = sb * 256 + 32 * u0, e1 = sb * 256 + 32 * u1;
    __m512i i0[T], i1[T];  // the two sub-blocks' exact int32 sums (scaled, kPer16)
    if constexpr (kGroups) {
      // Groups of 16 (chunks 0-3 and 4-7, met side by side: four chains
      // per token) each in its own chain, seeded with -kOffset x the
      // group's activation sum (the quants are q + kOffset), then scaled
      // in int32.
      __m512i a0[T], b0[T], a1[T], b1[T];  // sub-block u0's groups, u1's
      for (int j = 0; j < T; ++j) {
        if constexpr (kGroupSeeds) {
          a0[j] = _mm512_set1_epi32(seed[j][2 * u0]);
          b0[j] = _mm512_set1_epi32(seed[j][2 * u0 + 1]);
          a1[j] = _mm512_set1_epi32(seed[j][2 * u1]);
          b1[j] = _mm512_set1_epi32(seed[j][2 * u1 + 1]);
        } else {
          a0[j] = b0[j] = a1[j] = b1[j] = _mm512_setzero_si512();
        }
      }
      // Decode's path (T = 1): the gemm of these types (Q6_K) runs
      // superblock_per16, of the premultiplied ones (Q2_K, Q3_K) the chains
      // below.
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        __m512i lo, hi, lo4, hi4;
        quants(p, c, &lo, &hi);
        quants(p, c + 4, &lo4, &hi4);
        for (int j = 0; j < T; ++j) {
          a0[j] = _mm512_dpbusd_epi32(a0[j], lo, _mm512_set1_epi32(word(x.a[j] + e0 + 4 * c)));
          b0[j] = _mm512_dpbusd_epi32(b0[j], lo4, _mm512_set1_epi32(word(x.a[j] + e0 + 16 + 4 * c)));
          a1[j] = _mm512_dpbusd_epi32(a1[j], hi, _mm512_set1_epi32(word(x.a[j] + e1 + 4 * c)));
          b1[j] = _mm512_dpbusd_epi32(b1[j], hi4, _mm512_set1_epi32(word(x.a[j] + e1 + 16 + 4 * c)));
        }
      }
      const __m512i ma0 = scale16(s8, 2 * u0), mb0 = scale16(s8, 2 * u0 + 1);
      const __m512i ma1 = scale16(s8, 2 * u1), mb1 = scale16(s8, 2 * u1 + 1);
      for (int j = 0; j < T; ++j) {
        i0[j] = _mm512_add_epi32(_mm512_mullo_epi32(a0[j], ma0), _mm512_mullo_epi32(b0[j], mb0));
        i1[j] = _mm512_add_epi32(_mm512_mullo_epi32(a1[j], ma1), _mm512_mullo_epi32(b1[j], mb1));
      }
    } else {
      // Decode (T = 1): even and odd chunks in separate chains, halving the
      // dependency chains (exact int32 sums: no result changes). More
      // tokens are enough chains, and registers.
      constexpr int kChains = T == 1 ? 2 : 1;
      __m512i s0[2][T], s1[2][T];
      for (int j = 0; j < T; ++j) s0[0][j] = s1[0][j] = s0[1][j] = s1[1][j] = _mm512_setzero_si512();
      if constexpr (kBlockSeeds) {
        for (int j = 0; j < T; ++j) {
          s0[0][j] = _mm512_set1_epi32(seed[j][u0]);
          s1[0][j] = _mm512_set1_epi32(seed[j][u1]);
        }
      }
      // One chunk of the pair; the loop over chunks is unrolled for the
      // types that ask (the others' loops stay as they were).
      // Gemm of the unrolled types: the words by word_of, u0's alone in
      // 8-token tiles (both would spill).
      // Premul (Q2_K/Q3_K gemm over unpacked quants) the same way: its
      // rolled loop's broadcast loads bound it (docs/decisions.md "AVX-512 rows16 gemm: tiles,
      // activation words and int8 panels").
      constexpr bool kUnroll = unroll_chunks<W>() || Premul;
      constexpr bool kShuffle = kUnroll && T > 1;
      constexpr bool kShuffle1 = kShuffle && T <= 4;
      __m512i v0[kShuffle ? T : 1], v1[kShuffle1 ? T : 1];
      auto chunk = [&](int c) __attribute__((always_inline)) {
        __m512i lo, hi;
        quants(p, c, &lo, &hi);
        if constexpr (kShuffle) {
          if (c % 4 == 0) {
            for (int j = 0; j < T; ++j) {
              v0[j] = block16(x.a[j] + e0 + 4 * c);
              if constexpr (kShuffle1) v1[j] = block16(x.a[j] + e1 + 4 * c);
            }
          }
        }
        for (int j = 0; j < T; ++j) {
          const int k = c % kChains;
          if constexpr (kShuffle) {
            s0[k][j] = _mm512_dpbusd_epi32(s0[k][j], lo, word_of(v0[j], c % 4));
          } else {
            s0[k][j] = _mm512_dpbusd_epi32(s0[k][j], lo, _mm512_set1_epi32(word(x.a[j] + e0 + 4 * c)));
          }
          if constexpr (kShuffle1) {
            s1[k][j] = _mm512_dpbusd_epi32(s1[k][j], hi, word_of(v1[j], c % 4));
          } else {
            s1[k][j] = _mm512_dpbusd_epi32(s1[k][j], hi, _mm512_set1_epi32(word(x.a[j] + e1 + 4 * c)));
          }
        }
      };
      if constexpr (kUnroll) {
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) chunk(c);
      } else {
        for (int c = 0; c < 8; ++c) chunk(c);
      }
      for (int j = 0; j < T; ++j) {
        i0[j] = kChains == 2 ? _mm512_add_epi32(s0[0][j], s0[1][j]) : s0[0][j];
        i1[j] = kChains == 2 ? _mm512_add_epi32(s1[0][j], s1[1][j]) : s1[0][j];
      }
    }
    const int64_t b0 = sb * 8 + u0, b1 = sb * 8 + u1;
    if constexpr (W::kPer16) {
      // One d per row and super-block: the sub-blocks' sums times the
      // activations' scales first, times d once per super-block below.
      for (int j = 0; j < T; ++j) {
        part[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i0[j]), _mm512_set1_ps(x.d[j][b0]), part[j]);
        part[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i1[j]), _mm512_set1_ps(x.d[j][b1]), part[j]);
      }
      if constexpr (group_min<W>()) {
        // The two groups' mins times the token's two sum16 (adjacent int16).
        for (int j = 0; j < T; ++j) {
          int32_t w0, w1;
          memcpy(&w0, x.s16[j] + sb * 16 + 2 * u0, 4);
          memcpy(&w1, x.s16[j] + sb * 16 + 2 * u1, 4);
          const __m512i m0 = _mm512_madd_epi16(gm[u0], _mm512_set1_epi32(w0));
          const __m512i m1 = _mm512_madd_epi16(gm[u1], _mm512_set1_epi32(w1));
          mpart[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m0), _mm512_set1_ps(x.d[j][b0]), mpart[j]);
          mpart[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m1), _mm512_set1_ps(x.d[j][b1]), mpart[j]);
        }
      }
      return;
    }
    for (int j = 0; j < T; ++j) {
      __m512 f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(i0[j]), sc[u0]);
      __m512 f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(i1[j]), sc[u1]);
      if constexpr (W::kHasMin) {
        f0 = _mm512_fnmadd_ps(mn[u0], _mm512_set1_ps(xsum[j][u0]), f0);
        f1 = _mm512_fnmadd_ps(mn[u1], _mm512_set1_ps(xsum[j][u1]), f1);
      }
      acc[j] = _mm512_fmadd_ps(f0, _mm512_set1_ps(x.d[j][b0]), acc[j]);
      acc[j] = _mm512_fmadd_ps(f1, _mm512_set1_ps(x.d[j][b1]), acc[j]);
    }
  };
  if constexpr (W::kPer16) {
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) pair(p);
    for (int j = 0; j < T; ++j) acc[j] = _mm512_fmadd_ps(part[j], sc[0], acc[j]);
    if constexpr (group_min<W>()) {
      for (int j = 0; j < T; ++j) acc[j] = _mm512_fnmadd_ps(mpart[j], mn[0], acc[j]);
    }
  } else {
    for (int p = 0; p < 4; ++p) pair(p);
  }
}

// Gemm (T > 1) of the kPer16 types without premultiplied quants (Q6_K):
// superblock()'s arithmetic one sub-block at a time, in its order (pair p's
// W::sub(p, 0), then W::sub(p, 1)): per token a chain per group of 16,
// seeded with -kOffset x the group's activation sum, scaled by the group's
// int8 scale in int32, the sub-block's sum times the activation's scale
// into part, part times d once per super-block. The same int32 and float
// steps per output as superblock(), so gemv's results bit for bit. Every
// activation word comes from a vpshufd of a 16-byte load (two per token and
// sub-block): superblock()'s pair at a time holds four chains per token,
// whose words did not fit the registers and were broadcast from memory,
// which bound the loop on Zen 5's two load ports (docs/decisions.md
// "AVX-512 rows16 gemm: tiles, activation words and int8 panels").
template <class W, int T, class Quants>
__attribute__((always_inline)) inline void superblock_per16(const __m512* sc, const int8_t* s8, int64_t sb,
                                                            const Acts<T>& x, const Quants& quants, __m512* acc) {
  static_assert(W::kPer16 && quant_offset<W>() != 0, "groups of 16 seeded with the offset");
  alignas(64) int32_t seed[T][16];
  group_seeds<W>(x, sb, seed);
  asm volatile("" : : "r"(&seed[0][0]) : "memory");
  __m512 part[T];
  for (int j = 0; j < T; ++j) part[j] = _mm512_setzero_ps();
  auto sub_block = [&]<int H>(int p) __attribute__((always_inline)) {
    const int u = W::sub(p, H);
    const int64_t e = sb * 256 + 32 * u;
    __m512i ga[T], gb[T], va[T], vb[T];
    for (int j = 0; j < T; ++j) {
      ga[j] = _mm512_set1_epi32(seed[j][2 * u]);
      gb[j] = _mm512_set1_epi32(seed[j][2 * u + 1]);
      va[j] = block16(x.a[j] + e);
      vb[j] = block16(x.a[j] + e + 16);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i lo, hi, lo4, hi4;
      quants(p, c, &lo, &hi);
      quants(p, c + 4, &lo4, &hi4);
      const __m512i q = H ? hi : lo, q4 = H ? hi4 : lo4;
      for (int j = 0; j < T; ++j) {
        ga[j] = _mm512_dpbusd_epi32(ga[j], q, word_of(va[j], c));
        gb[j] = _mm512_dpbusd_epi32(gb[j], q4, word_of(vb[j], c));
      }
    }
    const __m512i ma = scale16(s8, 2 * u), mb = scale16(s8, 2 * u + 1);
    for (int j = 0; j < T; ++j) {
      const __m512i is = _mm512_add_epi32(_mm512_mullo_epi32(ga[j], ma), _mm512_mullo_epi32(gb[j], mb));
      part[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_set1_ps(x.d[j][sb * 8 + u]), part[j]);
    }
  };
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    sub_block.template operator()<0>(p);
    sub_block.template operator()<1>(p);
  }
  for (int j = 0; j < T; ++j) acc[j] = _mm512_fmadd_ps(part[j], sc[0], acc[j]);
}

// Q6_K's decode of one super-block: each 192-byte unit read once, in order
// (core/layout.h): unit 8h + j feeds chunk j of pairs 2h and 2h + 1, so the
// 4 sub-blocks 4h..4h + 3 times 2 groups of 16 are 8 chains, seeded as in
// superblock(). The floats are added in its pair loop's order (4h, 4h + 2,
// 4h + 1, 4h + 3): the same sums as gemm's, bit for bit.
template <class W, int T>
__attribute__((always_inline)) inline void q6_k_decode_superblock(const uint8_t* tile, const __m512* sc, int64_t sb,
                                                                  const Acts<T>& x, __m512* acc) {
  static_assert(T <= 2, "8 chains per token: two tokens fill the registers");
  const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  const int8_t* s8 = W::scales8(tile, nullptr);
  __m512 part[T];  // as superblock(): times d at the end
  for (int t = 0; t < T; ++t) part[t] = _mm512_setzero_ps();
  for (int h = 0; h < 2; ++h) {
    __m512i ch[T][4][2];  // token t, sub-block 4h + k, group g
    const int8_t* a[T];   // sub-block 4h + k's elements at a + 32k
    for (int t = 0; t < T; ++t) {
      const int16_t* s16 = x.s16[t] + sb * 16;
      for (int k = 0; k < 4; ++k) {
        for (int g = 0; g < 2; ++g) ch[t][k][g] = _mm512_set1_epi32(-32 * s16[2 * (4 * h + k) + g]);
      }
      a[t] = x.a[t] + sb * 256 + 128 * h;
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const uint8_t* u = tile + q6_k_rows16_unit(8 * h + j);
      const __m512i l0 = _mm512_loadu_si512(u), l1 = _mm512_loadu_si512(u + 64);
      const __m512i q = _mm512_loadu_si512(u + 128);
      // Pair 2h: sub-blocks 4h (low nibbles, bit pair 0) and 4h + 2 (high,
      // bit pair 2); pair 2h + 1: 4h + 1 (bit pair 1) and 4h + 3 (bit pair 3).
      const __m512i q0 = _mm512_or_si512(_mm512_and_si512(l0, m0f), _mm512_and_si512(_mm512_slli_epi16(q, 4), m30));
      const __m512i q2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m0f), _mm512_and_si512(q, m30));
      const __m512i q1 = _mm512_or_si512(_mm512_and_si512(l1, m0f), _mm512_and_si512(_mm512_slli_epi16(q, 2), m30));
      const __m512i q3 =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m0f), _mm512_and_si512(_mm512_srli_epi16(q, 2), m30));
      const int g = j / 4;
      for (int t = 0; t < T; ++t) {
        ch[t][0][g] = _mm512_dpbusd_epi32(ch[t][0][g], q0, _mm512_set1_epi32(word(a[t] + 4 * j)));
        ch[t][1][g] = _mm512_dpbusd_epi32(ch[t][1][g], q1, _mm512_set1_epi32(word(a[t] + 32 + 4 * j)));
        ch[t][2][g] = _mm512_dpbusd_epi32(ch[t][2][g], q2, _mm512_set1_epi32(word(a[t] + 64 + 4 * j)));
        ch[t][3][g] = _mm512_dpbusd_epi32(ch[t][3][g], q3, _mm512_set1_epi32(word(a[t] + 96 + 4 * j)));
      }
    }
    for (int i = 0; i < 4; ++i) {
      const int k = (i % 2) * 2 + i / 2;  // 0, 2, 1, 3
      const int s = 4 * h + k;
      const __m512i m0 = scale16(s8, 2 * s), m1 = scale16(s8, 2 * s + 1);
      for (int t = 0; t < T; ++t) {
        const __m512i is = _mm512_add_epi32(_mm512_mullo_epi32(ch[t][k][0], m0), _mm512_mullo_epi32(ch[t][k][1], m1));
        part[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_set1_ps(x.d[t][sb * 8 + s]), part[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) acc[t] = _mm512_fmadd_ps(part[t], sc[0], acc[t]);
}

// T tokens from t against the 16 rows of the group at `group`, over all
// super-blocks (the sums in registers).
// stream: prefetch ahead (decode, and small steps: kStreamTokens).
template <class W, int T>
void tile16(const uint8_t* group, int64_t nsb, const QuantActs& x, int64_t t, float* out, int64_t os,
            bool stream = T == 1) {
  const Acts<T> xt(x, t, W::kPer16);
  __m512 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* tile = group + sb * W::kTileBytes;
    if (stream) prefetch_ahead(tile, W::kTileBytes);  // decode and small steps: kernels.h
    __m512 sc[8], mn[8];
    W::scales(tile, sc, mn);
    if constexpr (unit_decode<W>() && T <= 2) {
      q6_k_decode_superblock<W, T>(tile, sc, sb, xt, acc);
    } else {
      alignas(64) int8_t buf[W::kPer16 ? 256 : 1];
      const int8_t* s8 = nullptr;
      if constexpr (W::kPer16) s8 = W::scales8(tile, buf);
      __m512i gm[group_min<W>() ? 8 : 1];
      if constexpr (group_min<W>()) W::mins16(tile, gm);
      auto quants = [tile](int p, int c, __m512i* lo, __m512i* hi)
                        __attribute__((always_inline)) { W::quants(tile, p, c, lo, hi); };
      superblock<W, T>(sc, mn, s8, gm, sb, xt, quants, acc);
    }
  }
  for (int j = 0; j < T; ++j) _mm512_storeu_ps(out + (t + j) * os, acc[j]);
}

template <class W>
void rows16_gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes;
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; r += 16) tile16<W, 1>(w + r / 16 * group_bytes, nsb, x, t, out + r, out_stride);
  }
}

// T tokens from t of the current super-block, their sums kept in acc16
// (16 floats per token) between super-blocks.
template <class W, int T, class Quants>
void gemm_tile(const __m512* sc, const __m512* mn, const int8_t* s8, const __m512i* gm, int64_t sb,
               const QuantActs& x, int64_t t, const Quants& quants, float* acc16) {
  constexpr bool kPremul = premul_quants<W>();
  const Acts<T> xt(x, t, W::kPer16 && (!kPremul || group_min<W>()));
  __m512 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm512_load_ps(acc16 + 16 * j);
  if constexpr (W::kPer16 && !kPremul && T > 1) {
    superblock_per16<W, T>(sc, s8, sb, xt, quants, acc);
  } else {
    superblock<W, T, Quants, kPremul>(sc, mn, s8, gm, sb, xt, quants, acc);
  }
  for (int j = 0; j < T; ++j) _mm512_store_ps(acc16 + 16 * j, acc[j]);
}

// Prefill: per 16-row group and super-block, the quants are unpacked once
// (4 KiB, W::quants' vectors in order, premul()'s for kPremul) and every token of the chunk runs
// over that copy, in tiles of tile_tokens<W>(); the sums stay in a small
// buffer between super-blocks. Each output's operations are superblock()'s,
// in the same order as gemv's.
template <class W>
void rows16_gemm(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes, chunk = token_chunk<W>(cols);
  constexpr int kTile = tile_tokens<W>();
  const bool stream = n <= kStreamTokens;
  if constexpr (!unpack_once<W>()) {
    // Each tile of tokens over all super-blocks, unpacking as it goes.
    for (int64_t t0 = 0; t0 < n; t0 += chunk) {
      const int64_t t1 = t0 + chunk < n ? t0 + chunk : n;
      for (int64_t r = r0; r < r1; r += 16) {
        const uint8_t* group = w + r / 16 * group_bytes;
        token_tiles<kTile>(t0, t1, [&]<int T>(int64_t t) __attribute__((always_inline)) {
          tile16<W, T>(group, nsb, x, t, out + r, out_stride, stream && t == t0);
        });
      }
    }
    return;
  }
  if constexpr (unit_decode<W>()) {
    // Two tokens (Q6_K): decoded unit by unit as decode does for one, no
    // unpacked copy stored and read back (ember_rows16_probe, 5632 x 2048,
    // one thread: 314 -> 254 us; one token 197-221). From three tokens on
    // the copy pays: pairs of tokens cost more (3: 425 against 381 us).
    if (n <= 2) {
      for (int64_t r = r0; r < r1; r += 16) {
        const uint8_t* group = w + r / 16 * group_bytes;
        if (n == 2) {
          tile16<W, 2>(group, nsb, x, 0, out + r, out_stride, true);
        } else {
          tile16<W, 1>(group, nsb, x, 0, out + r, out_stride, true);
        }
      }
      return;
    }
  }
  alignas(64) __m512i unpacked[64];                // [pair][chunk][lo, hi]
  alignas(64) float sums[kMaxTokenChunk * 16];     // [token][row]
  const auto quants = [&unpacked](int p, int c, __m512i* lo, __m512i* hi) __attribute__((always_inline)) {
    *lo = unpacked[2 * (8 * p + c)];
    *hi = unpacked[2 * (8 * p + c) + 1];
  };
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = t0 + chunk < n ? t0 + chunk : n;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      for (int64_t i = 0; i < (t1 - t0) * 16; i += 16) _mm512_store_ps(sums + i, _mm512_setzero_ps());
      for (int64_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* tile = group + sb * W::kTileBytes;
        if (stream) prefetch_ahead(tile, W::kTileBytes);
        __m512 sc[8], mn[8];
        W::scales(tile, sc, mn);
        alignas(64) int8_t buf[W::kPer16 ? 256 : 1];
        const int8_t* s8 = nullptr;
        if constexpr (W::kPer16) s8 = W::scales8(tile, buf);
        alignas(64) __m512i gm[group_min<W>() ? 8 : 1];
        if constexpr (group_min<W>()) W::mins16(tile, gm);
        for (int p = 0; p < 4; ++p) {
          for (int c = 0; c < 8; ++c) {
            __m512i* u = &unpacked[2 * (8 * p + c)];
            if constexpr (premul_quants<W>()) {
              premul<W>(tile, s8, p, c, u, u + 1);
            } else {
              W::quants(tile, p, c, u, u + 1);
            }
          }
        }
        token_tiles<kTile>(t0, t1, [&]<int T>(int64_t t) __attribute__((always_inline)) {
          gemm_tile<W, T>(sc, mn, s8, gm, sb, x, t, quants, sums + 16 * (t - t0));
        });
      }
      for (int64_t t = t0; t < t1; ++t) _mm512_storeu_ps(out + t * out_stride + r, _mm512_load_ps(sums + 16 * (t - t0)));
    }
  }
}

// Prefill through int8 panels (IQ4_XS, Q4_K, Q5_K: one float scale per
// sub-block of 32, panel_tile; Q6_K: panel_tile_per16). The 8-token tile above unpacks each quant vector as it
// goes (IQ4_XS: two vpshufb, the level lookup, per 16 vpdpbusd) and spills;
// here the quants of a slice of kPanelSb super-blocks of one or two 16-row
// groups are unpacked once per chunk of tokens into an int8 panel (the
// bytes W::quants gives: IQ4_XS level + 128, Q4_K/Q5_K q) beside their
// float scales and mins (W::scales'), and the chunk's tokens run over that
// L1-resident panel in tiles of two groups x 4 tokens, each activation word
// feeding both groups, as the Q8_0 gemm's tile (quant_matmul_avx512vnni.inc).
// Per output the steps are superblock()'s for T = 1, in its order: per
// sub-block the exact int32 sum (IQ4_XS: seeded with 16 x the block's bias),
// f = float(sum) x scale (minus min x sum(a)), acc += f x d_act, sub-blocks
// 0..7 of each super-block in turn; the sums wait in a buffer between
// slices. So the results are gemv's, bit for bit.
// ember_rows16_probe, 512 tokens, one thread, Zen 5, best of four
// interleaved passes, IQ4_XS: 1024 x 2048 263-272 -> 280-296 GMAC/s, 1024 x
// 5632 234-251 -> 268-290, 2816 x 2048 250 -> 290.
constexpr int64_t kPanelSb = 4;  // super-blocks per slice: 2 x 4 x 4 KiB of quants
template <class W>
struct Panel {
  __m512i q[kPanelSb][8][2][8];                 // [super-block][sub-block][group][elements 4c..4c+3]
  __m512 sc[W::kPer16 ? 1 : kPanelSb][8][2];    // [super-block][sub-block][group]: the 16 rows' scales
  __m512 mn[W::kHasMin ? kPanelSb : 1][8][2];  // and mins (d x scale, dmin x min)
  // kPer16 (Q6_K): the int8 scales of the 16 groups of 16 as int32 lanes,
  // [super-block][group of 16][group], and d.
  __m512i s16[W::kPer16 ? kPanelSb : 1][16][2];
  __m512 d[W::kPer16 ? kPanelSb : 1][2];
};

// Super-blocks sb0.. (ns of them) of the R groups from `group` into p.
template <class W, int R>
void panel_fill(const uint8_t* group, int64_t group_bytes, int64_t sb0, int64_t ns, Panel<W>* p) {
  for (int r = 0; r < R; ++r) {
    for (int64_t k = 0; k < ns; ++k) {
      const uint8_t* tile = group + r * group_bytes + (sb0 + k) * W::kTileBytes;
      __m512 sc[8], mn[8];
      W::scales(tile, sc, mn);
      if constexpr (W::kPer16) {
        p->d[k][r] = sc[0];
        alignas(64) int8_t buf[256];
        const int8_t* s8 = W::scales8(tile, buf);
        for (int g = 0; g < 16; ++g) p->s16[k][g][r] = scale16(s8, g);
      } else {
        for (int u = 0; u < 8; ++u) {
          p->sc[k][u][r] = sc[u];
          if constexpr (W::kHasMin) p->mn[k][u][r] = mn[u];
        }
      }
      for (int pr = 0; pr < 4; ++pr) {
        for (int c = 0; c < 8; ++c) W::quants(tile, pr, c, &p->q[k][W::sub(pr, 0)][r][c], &p->q[k][W::sub(pr, 1)][r][c]);
      }
    }
  }
}

// T tokens from t over the panel's ns super-blocks (the first sb0), R
// groups; sums: the tokens' running sums, R x 16 floats each.
template <class W, int R, int T>
void panel_tile(const Panel<W>& p, int64_t sb0, int64_t ns, const QuantActs& x, int64_t t, float* sums) {
  const int64_t nb = x.cols / 32;
  const int8_t* xa[T];
  const float* xd[T];
  const int32_t* xb[T];
  for (int j = 0; j < T; ++j) {
    xa[j] = x.q + (t + j) * x.cols;
    xd[j] = x.d + (t + j) * nb;
    xb[j] = x.bias + (t + j) * nb;
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < T; ++j) acc[r][j] = _mm512_load_ps(sums + 16 * (R * j + r));
  for (int64_t k = 0; k < ns; ++k) {
    const int64_t sb = sb0 + k;
    // kHasMin: the activation blocks' sums as floats (bias = -8 x sum: the
    // shift is exact), superblock()'s xsum.
    alignas(32) float xsum[W::kHasMin ? T : 1][8];
    if constexpr (W::kHasMin) {
      for (int j = 0; j < T; ++j) {
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[j] + sb * 8));
        _mm256_store_ps(xsum[j], _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_srai_epi32(b, 3))));
      }
    }
    for (int u = 0; u < 8; ++u) {
      const int64_t b = sb * 8 + u;
      __m512i s[R][T], blk[T];
      for (int j = 0; j < T; ++j) {
        __m512i seed = _mm512_setzero_si512();
        if constexpr (bias_seed<W>() != 0) {
          // 16 x bias: a broadcast load and a shift (GCC's scalar multiply
          // and broadcast from a general register take a vpdpbusd pipe slot).
          static_assert(bias_seed<W>() == 16, "the seed's shift");
          seed = _mm512_slli_epi32(_mm512_broadcastd_epi32(_mm_loadu_si32(xb[j] + b)), 4);
        }
        for (int r = 0; r < R; ++r) s[r][j] = seed;
        blk[j] = block16(xa[j] + 32 * b);
      }
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        for (int j = 0; j < T; ++j) {
          // Elements 0-15's words by vpshufd, 16-31's by broadcast loads:
          // all by vpshufd crowd the vector pipes, all by loads the two load
          // ports (beside the panel's).
          const __m512i a = c < 4 ? word_of(blk[j], c) : _mm512_set1_epi32(word(xa[j] + 32 * b + 4 * c));
          for (int r = 0; r < R; ++r) s[r][j] = _mm512_dpbusd_epi32(s[r][j], p.q[k][u][r][c], a);
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int j = 0; j < T; ++j) {
          __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(s[r][j]), p.sc[k][u][r]);
          if constexpr (W::kHasMin) f = _mm512_fnmadd_ps(p.mn[k][u][r], _mm512_set1_ps(xsum[j][u]), f);
          acc[r][j] = _mm512_fmadd_ps(f, _mm512_set1_ps(xd[j][b]), acc[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < T; ++j) _mm512_store_ps(sums + 16 * (R * j + r), acc[r][j]);
}

// kPer16 without premultiplied quants (Q6_K): T tokens from t over the
// panel, superblock_per16()'s steps per output in its sub-block order
// (W::sub(p, 0), W::sub(p, 1) for p = 0..3): per group of 16 a chain seeded
// with -kOffset x the group's activation sum, times the group's int8 scale
// in int32, the sub-block's two added, its float times the activation's
// scale into the super-block's part, part times d into the sums. Both
// groups of 16 of R x T outputs are chains at once (R x T x 2): 2 groups x
// 4 tokens measured faster than 2 x 2 and 2 x 3 (ember_rows16_probe, 512
// tokens, best of three interleaved passes, against superblock_per16()'s
// one group x 4 tokens: 1024 x 2048 229 -> 242 GMAC/s, 1024 x 5632 182 ->
// 222, 2816 x 2048 230 -> 248; 2 x 2 231, 204, 231; 2 x 3 205, 181, 201).
template <class W, int R, int T>
void panel_tile_per16(const Panel<W>& p, int64_t sb0, int64_t ns, const QuantActs& x, int64_t t, float* sums) {
  static_assert(W::kPer16 && !premul_quants<W>() && quant_offset<W>() != 0, "Q6_K's groups of 16");
  const Acts<T> xt(x, t, true);
  for (int64_t k = 0; k < ns; ++k) {
    const int64_t sb = sb0 + k;
    alignas(64) int32_t seed[T][16];
    group_seeds<W>(xt, sb, seed);
    asm volatile("" : : "r"(&seed[0][0]) : "memory");
    __m512 part[R][T];
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < T; ++j) part[r][j] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int pr = 0; pr < 4; ++pr) {
      for (int h = 0; h < 2; ++h) {
        const int u = W::sub(pr, h);
        const int64_t b = sb * 8 + u;
        __m512i ga[R][T], gb[R][T], blk[T];
        for (int j = 0; j < T; ++j) {
          const __m512i sa = _mm512_set1_epi32(seed[j][2 * u]), sd = _mm512_set1_epi32(seed[j][2 * u + 1]);
          for (int r = 0; r < R; ++r) {
            ga[r][j] = sa;
            gb[r][j] = sd;
          }
          blk[j] = block16(xt.a[j] + 32 * b);
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          for (int j = 0; j < T; ++j) {
            // The first group's words by vpshufd, the second's by broadcast
            // loads (panel_tile()'s balance).
            const __m512i a0 = word_of(blk[j], c), a1 = _mm512_set1_epi32(word(xt.a[j] + 32 * b + 16 + 4 * c));
            for (int r = 0; r < R; ++r) {
              ga[r][j] = _mm512_dpbusd_epi32(ga[r][j], p.q[k][u][r][c], a0);
              gb[r][j] = _mm512_dpbusd_epi32(gb[r][j], p.q[k][u][r][c + 4], a1);
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          for (int j = 0; j < T; ++j) {
            const __m512i is = _mm512_add_epi32(_mm512_mullo_epi32(ga[r][j], p.s16[k][2 * u][r]),
                                                _mm512_mullo_epi32(gb[r][j], p.s16[k][2 * u + 1][r]));
            part[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_set1_ps(xt.d[j][b]), part[r][j]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < T; ++j) {
        float* a = sums + 16 * (R * j + r);
        _mm512_store_ps(a, _mm512_fmadd_ps(part[r][j], p.d[k][r], _mm512_load_ps(a)));
      }
    }
  }
}

// Below this many tokens the panels' unpacking is not paid back: the
// 8-token tile unpacks as it goes. A step of kStreamTokens rows or fewer
// (speculative verification, a few batched streams) streams the weights
// through the tiles: 16 rows through the panels cost more than 15 through
// the tiles (1.1b Q4_K_M, 2 threads: 75.8 ms against 58.3).
constexpr int32_t kPanelMinTokens = kStreamTokens + 1;
// Tokens per chunk: l2_token_chunk's, up to 256 (each chunk unpacks the
// panels once more; 128 -> 256 at 2048 columns: +3-9%, ember_rows16_probe).
constexpr int64_t kPanelMaxTokens = 256;

template <class W>
void rows16_gemm_panels(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                        float* out, int64_t out_stride) {
  if (n < kPanelMinTokens) {
    rows16_gemm<W>(w, cols, r0, r1, x, n, out, out_stride);
    return;
  }
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes;
  const int64_t chunk = l2_token_chunk(cols, kPanelMaxTokens);
  Panel<W> panel;                                // 36 KiB (Q4_K, Q5_K: 40)
  alignas(64) float sums[kPanelMaxTokens * 32];  // [token][group][row], 32 KiB
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = t0 + chunk < n ? t0 + chunk : n;
    for (int64_t r = r0; r < r1;) {
      const uint8_t* group = w + r / 16 * group_bytes;
      const auto run = [&]<int R>() __attribute__((always_inline)) {
        for (int64_t i = 0; i < (t1 - t0) * R * 16; i += 16) _mm512_store_ps(sums + i, _mm512_setzero_ps());
        for (int64_t sb0 = 0; sb0 < nsb; sb0 += kPanelSb) {
          const int64_t ns = nsb - sb0 < kPanelSb ? nsb - sb0 : kPanelSb;
          panel_fill<W, R>(group, group_bytes, sb0, ns, &panel);
          if constexpr (W::kPer16) {
            token_tiles<4>(t0, t1, [&]<int T>(int64_t t) __attribute__((always_inline)) {
              panel_tile_per16<W, R, T>(panel, sb0, ns, x, t, sums + R * 16 * (t - t0));
            });
          } else {
            token_tiles<4>(t0, t1, [&]<int T>(int64_t t) __attribute__((always_inline)) {
              panel_tile<W, R, T>(panel, sb0, ns, x, t, sums + R * 16 * (t - t0));
            });
          }
        }
        for (int64_t t = t0; t < t1; ++t) {
          for (int g = 0; g < R; ++g) {
            _mm512_storeu_ps(out + t * out_stride + r + 16 * g, _mm512_load_ps(sums + 16 * (R * (t - t0) + g)));
          }
        }
        r += 16 * R;
      };
      if (r + 32 <= r1) {
        run.template operator()<2>();
      } else {
        run.template operator()<1>();
      }
    }
  }
}

}  // namespace

EMBER_DEFINE_QMATMUL(q2_k_rows16_gemv, avx512vnni, rows16_gemv<Q2_KRows16>)
EMBER_DEFINE_QMATMUL(q2_k_rows16_gemm, avx512vnni, rows16_gemm<Q2_KRows16>)
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemv, avx512vnni, rows16_gemv<Q3_KRows16>)
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemm, avx512vnni, rows16_gemm<Q3_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemv, avx512vnni, rows16_gemv<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemm, avx512vnni, rows16_gemm_panels<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemv, avx512vnni, rows16_gemv<Q5_KRows16>)
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemm, avx512vnni, rows16_gemm_panels<Q5_KRows16>)
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemv, avx512vnni, rows16_gemv<Q6_KRows16>)
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemm, avx512vnni, rows16_gemm_panels<Q6_KRows16>)
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemv, avx512vnni, rows16_gemv<IQ4_XSRows16>)
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemm, avx512vnni, rows16_gemm_panels<IQ4_XSRows16>)

}  // namespace ember
#endif  // __x86_64__

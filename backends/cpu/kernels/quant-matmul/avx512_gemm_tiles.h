// What the AVX-512 VNNI rows16 gemms (K-quants and the 32-element types)
// share: the tokens' tile ladder and the activation words. A vpdpbusd takes one
// token's 4 activation bytes broadcast to every lane. A broadcast load per
// vpdpbusd bound the gemm loops on Zen 5 (two 512-bit loads per cycle, a
// zmm broadcast from memory counting as one; docs/decisions.md "AVX-512
// rows16 gemm: tiles, activation words and int8 panels"), so gemm tiles
// load 16 bytes once (block16) and pick each of their four words with one
// vpshufd (word_of). The same words as a broadcast
// load's, so the same sums, bit for bit. Include only from files compiled
// for AVX-512; include inside nothing: it opens ember's anonymous namespace.
#pragma once

#include <immintrin.h>
#include <stdint.h>

namespace ember {
namespace {

// 16 activation bytes in each 128-bit lane.
inline __m512i block16(const int8_t* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Word k (0-3) of block16's bytes in every lane (k a constant once the
// caller's loop is unrolled).
inline __m512i word_of(__m512i v, int k) {
  switch (k) {
    case 0: return _mm512_shuffle_epi32(v, _MM_PERM_AAAA);
    case 1: return _mm512_shuffle_epi32(v, _MM_PERM_BBBB);
    case 2: return _mm512_shuffle_epi32(v, _MM_PERM_CCCC);
    default: return _mm512_shuffle_epi32(v, _MM_PERM_DDDD);
  }
}

// Tokens [t0, t1) in tiles: kTile at a time, then 4 (when kTile > 4), then
// the 1-3 left; f.template operator()<T>(t) runs the tile of T from t.
template <int kTile, class F>
__attribute__((always_inline)) inline void token_tiles(int64_t t0, int64_t t1, const F& f) {
  int64_t t = t0;
  for (; t + kTile <= t1; t += kTile) f.template operator()<kTile>(t);
  if constexpr (kTile > 4) {
    for (; t + 4 <= t1; t += 4) f.template operator()<4>(t);
  }
  switch (t1 - t) {
    case 3: f.template operator()<3>(t); break;
    case 2: f.template operator()<2>(t); break;
    case 1: f.template operator()<1>(t); break;
    default: break;
  }
}

}  // namespace
}  // namespace ember

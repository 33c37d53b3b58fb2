// BF16 weights in the Rows16 layout (core/layout.h: per 16 rows, column pairs)
// x activations rounded to BF16, with AVX512-BF16: one vdpbf16ps multiplies
// 16 rows x 2 columns by a token's broadcast activation pair and adds both
// products into the rows' sums, twice the exact path's multiply-adds per
// instruction. The backend rounds a step's activations once
// (bf16_round__avx512bf16: nearest even, vcvtne2ps2bf16) into its scratch,
// and every matmul of the step reads that copy. Each output is two chains,
// over the even and the odd column pairs in ascending order, added at the
// end, in every tile: gemv and gemm give a token the same bits, whatever
// the rows, tokens or threads of a call. Not the exact path's bits: the
// activation's rounding moves each product by up to 2^-9 relative
// (llama.cpp rounds its BF16 matmuls' activations the same way).
#if defined(__x86_64__)
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

template <int G, int T>
inline void tile(const uint8_t* w, int64_t group_bytes, int64_t cols, const uint16_t* x, float* out, int64_t os) {
  __m512 even[G][T], odd[G][T];
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < T; ++j) even[g][j] = odd[g][j] = _mm512_setzero_ps();
  const int64_t pairs = cols / 2;
  int64_t q = 0;
  for (; q + 2 <= pairs; q += 2) {
    __m512bh w0[G], w1[G];
    for (int g = 0; g < G; ++g) {
      w0[g] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + g * group_bytes + 64 * q));
      w1[g] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + g * group_bytes + 64 * q + 64));
    }
    for (int j = 0; j < T; ++j) {
      const uint32_t* xp = reinterpret_cast<const uint32_t*>(x + j * cols) + q;
      const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[0])));
      const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[1])));
      for (int g = 0; g < G; ++g) {
        even[g][j] = _mm512_dpbf16_ps(even[g][j], w0[g], a);
        odd[g][j] = _mm512_dpbf16_ps(odd[g][j], w1[g], b);
      }
    }
  }
  if (q < pairs) {  // an odd pair count: the last pair is an even one
    for (int g = 0; g < G; ++g) {
      const __m512bh w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + g * group_bytes + 64 * q));
      for (int j = 0; j < T; ++j) {
        const uint32_t* xp = reinterpret_cast<const uint32_t*>(x + j * cols) + q;
        even[g][j] = _mm512_dpbf16_ps(even[g][j], w0, reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[0]))));
      }
    }
  }
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < T; ++j) _mm512_storeu_ps(out + j * os + 16 * g, _mm512_add_ps(even[g][j], odd[g][j]));
}

template <int G>
void tokens(const uint8_t* w, int64_t group_bytes, int64_t cols, const uint16_t* x, int32_t m, float* out,
            int64_t os) {
  constexpr int kT = 12 / G;
  int32_t t = 0;
  for (; t + kT <= m; t += kT) tile<G, kT>(w, group_bytes, cols, x + t * cols, out + t * os, os);
  if (kT > 8 && t + 8 <= m) tile<G, 8>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 8;
  if (t + 4 <= m) tile<G, 4>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 4;
  if (t + 2 <= m) tile<G, 2>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 2;
  if (t < m) tile<G, 1>(w, group_bytes, cols, x + t * cols, out + t * os, os);
}

}  // namespace

void bf16_round__avx512bf16(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i)));
    _mm512_storeu_si512(out + i, v);
  }
  if (i < n) {
    const int64_t r = n - i;
    const __mmask16 lo = r >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << r) - 1);
    const __mmask16 hi = r <= 16 ? 0 : static_cast<__mmask16>((1u << (r - 16)) - 1);
    const __m512i v = reinterpret_cast<__m512i>(
        _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + i + 16), _mm512_maskz_loadu_ps(lo, x + i)));
    _mm512_mask_storeu_epi16(out + i, static_cast<__mmask32>((1ull << r) - 1), v);
  }
}

void bf16_rows16_gemv__avx512bf16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const uint16_t* x,
                                  int32_t n, float* out, int64_t os) {
  const int64_t gb = 32 * cols;
  for (int32_t t = 0; t < n; ++t)
    for (int64_t r = r0; r < r1; r += 16) tile<1, 1>(w + r / 16 * gb, gb, cols, x + t * cols, out + t * os + r, os);
}

// Prefill: tokens in blocks whose activations (as f32) fit
// kFloatGemmBlockBytes, 32 rows at a time within a block.
void bf16_rows16_gemm__avx512bf16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const uint16_t* x,
                                  int32_t n, float* out, int64_t os) {
  const int64_t gb = 32 * cols;
  int64_t tb = kFloatGemmBlockBytes / (cols * 4) / 12 * 12;
  if (tb < 12) tb = 12;
  for (int32_t t0 = 0; t0 < n; t0 += static_cast<int32_t>(tb)) {
    const int32_t m = n - t0 < tb ? n - t0 : static_cast<int32_t>(tb);
    const uint16_t* xb = x + t0 * cols;
    int64_t r = r0;
    for (; r + 32 <= r1; r += 32) tokens<2>(w + r / 16 * gb, gb, cols, xb, m, out + t0 * os + r, os);
    if (r < r1) tokens<1>(w + r / 16 * gb, gb, cols, xb, m, out + t0 * os + r, os);
  }
}

}  // namespace ember
#endif  // __x86_64__

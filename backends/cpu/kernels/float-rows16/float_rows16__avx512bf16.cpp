// BF16 weights in the Rows16 layout (core/layout.h: per 16 rows, column pairs)
// x activations rounded to BF16, with AVX512-BF16: one vdpbf16ps multiplies
// 16 rows x 2 columns by a token's broadcast activation pair and adds both
// products into the rows' sums, twice the exact path's multiply-adds per
// instruction. Activations are rounded to BF16 (nearest even,
// vcvtne2ps2bf16) a chunk of columns at a time into a small buffer on the
// stack, so the kernel needs no scratch. Each output is two chains, over the
// even and the odd column pairs in ascending order, added at the end, in
// every tile: gemv and gemm give a token the same bits, whatever the rows,
// tokens or threads of a call. Not the exact path's bits: the activation's
// rounding moves each product by up to 2^-9 relative (llama.cpp rounds its
// BF16 matmuls' activations the same way).
#if defined(__x86_64__)
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {
namespace {

constexpr int64_t kChunk = 256;  // columns rounded per step (even: pair parity holds across chunks)

// Columns [c0, c0 + cn) of T tokens' activations as BF16 pairs: xb[j][p] =
// pair p of the chunk (column c0 + 2p in the low half).
template <int T>
inline void round_chunk(const float* x, int64_t cols, int64_t c0, int64_t cn, uint32_t (*xb)[kChunk / 2]) {
  for (int j = 0; j < T; ++j) {
    const float* src = x + j * cols + c0;
    for (int64_t p = 0; p < cn; p += 32) {
      const int64_t n = cn - p < 32 ? cn - p : 32;
      const __mmask16 lo = n >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << n) - 1);
      const __mmask16 hi = n <= 16 ? 0 : n >= 32 ? 0xFFFF : static_cast<__mmask16>((1u << (n - 16)) - 1);
      const __m512 a = _mm512_maskz_loadu_ps(lo, src + p);
      const __m512 b = _mm512_maskz_loadu_ps(hi, src + p + 16);
      const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a));
      _mm512_mask_storeu_epi32(&xb[j][p / 2], static_cast<__mmask16>(n >= 32 ? 0xFFFF : (1u << (n / 2)) - 1), v);
    }
  }
}

template <int G, int T>
inline void tile(const uint8_t* w, int64_t group_bytes, int64_t cols, const float* x, float* out, int64_t os) {
  __m512 even[G][T], odd[G][T];
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < T; ++j) even[g][j] = odd[g][j] = _mm512_setzero_ps();
  alignas(64) uint32_t xb[T][kChunk / 2];
  for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const int64_t cn = cols - c0 < kChunk ? cols - c0 : kChunk;
    round_chunk<T>(x, cols, c0, cn, xb);
    const uint8_t* wc = w + c0 * 32;  // 16 rows x 2 bytes per column
    const int64_t pairs = cn / 2;
    int64_t q = 0;
    for (; q + 2 <= pairs; q += 2) {
      __m512bh w0[G], w1[G];
      for (int g = 0; g < G; ++g) {
        w0[g] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wc + g * group_bytes + 64 * q));
        w1[g] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wc + g * group_bytes + 64 * q + 64));
      }
      for (int j = 0; j < T; ++j) {
        const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xb[j][q])));
        const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xb[j][q + 1])));
        for (int g = 0; g < G; ++g) {
          even[g][j] = _mm512_dpbf16_ps(even[g][j], w0[g], a);
          odd[g][j] = _mm512_dpbf16_ps(odd[g][j], w1[g], b);
        }
      }
    }
    if (q < pairs) {  // the last chunk's last pair, an even one
      for (int g = 0; g < G; ++g) {
        const __m512bh w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wc + g * group_bytes + 64 * q));
        for (int j = 0; j < T; ++j) {
          const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xb[j][q])));
          even[g][j] = _mm512_dpbf16_ps(even[g][j], w0, a);
        }
      }
    }
  }
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < T; ++j) _mm512_storeu_ps(out + j * os + 16 * g, _mm512_add_ps(even[g][j], odd[g][j]));
}

template <int G>
void tokens(const uint8_t* w, int64_t group_bytes, int64_t cols, const float* x, int32_t m, float* out, int64_t os) {
  constexpr int kT = 12 / G;
  int32_t t = 0;
  for (; t + kT <= m; t += kT) tile<G, kT>(w, group_bytes, cols, x + t * cols, out + t * os, os);
  if (kT > 8 && t + 8 <= m) tile<G, 8>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 8;
  if (t + 4 <= m) tile<G, 4>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 4;
  if (t + 2 <= m) tile<G, 2>(w, group_bytes, cols, x + t * cols, out + t * os, os), t += 2;
  if (t < m) tile<G, 1>(w, group_bytes, cols, x + t * cols, out + t * os, os);
}

}  // namespace

void bf16_rows16_gemv__avx512bf16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,
                                  float* out, int64_t os) {
  const int64_t gb = 32 * cols;
  for (int32_t t = 0; t < n; ++t)
    for (int64_t r = r0; r < r1; r += 16) tile<1, 1>(w + r / 16 * gb, gb, cols, x + t * cols, out + t * os + r, os);
}

void bf16_rows16_gemm__avx512bf16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,
                                  float* out, int64_t os) {
  const int64_t gb = 32 * cols;
  int64_t tb = kFloatGemmBlockBytes / (cols * 4) / 12 * 12;
  if (tb < 12) tb = 12;
  for (int32_t t0 = 0; t0 < n; t0 += static_cast<int32_t>(tb)) {
    const int32_t m = n - t0 < tb ? n - t0 : static_cast<int32_t>(tb);
    const float* xb = x + t0 * cols;
    int64_t r = r0;
    for (; r + 32 <= r1; r += 32) tokens<2>(w + r / 16 * gb, gb, cols, xb, m, out + t0 * os + r, os);
    if (r < r1) tokens<1>(w + r / 16 * gb, gb, cols, xb, m, out + t0 * os + r, os);
  }
}

}  // namespace ember
#endif  // __x86_64__

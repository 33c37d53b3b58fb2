// Activation quantization to 8-bit blocks with AVX-512F/BW: the same
// arithmetic as the generic kernel (one multiply by 127 / amax, nearest-even
// conversion), so the bytes are identical on every path.
#if defined(__x86_64__)
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

namespace ember {

void q8_quantize__avx512(const float* x, int64_t cols, int8_t* q, float* d, int32_t* bias) {
  for (int64_t b = 0; b < cols / 32; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + b * 32), x1 = _mm512_loadu_ps(x + b * 32 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, vid));  // nearest-even (MXCSR default)
    const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * 32), _mm512_cvtsepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * 32 + 16), _mm512_cvtsepi32_epi8(i1));
    d[b] = amax / 127.0f;
    bias[b] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
  }
}

}  // namespace ember
#endif  // __x86_64__

// F32, F16 and BF16 weights in the Rows16 layout (core/layout.h: per group of
// 16 rows the values k-major; BF16 in column pairs) x f32 activations,
// portable C++: the reference the vector paths are tested against. Every
// output is, on every path, two running sums in ascending column order, one
// over the even columns and one over the odd, added at the end (the vector
// paths fuse each multiply-add), whatever the rows, tokens or threads of the
// call. Two chains, not one: a decode step of one group of 16 rows then
// has two multiply-adds in flight instead of waiting on one's latency
// (0.5b f16, one thread: 30 GB/s with one chain, 42 with two).
#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {
namespace {

enum class Wt { F32, F16, BF16 };

template <Wt F>
inline float weight(const uint8_t* group, int64_t k, int i) {
  if constexpr (F == Wt::F32) {
    return reinterpret_cast<const float*>(group)[k * 16 + i];
  } else if constexpr (F == Wt::F16) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(group)[k * 16 + i]);
  } else {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(group)[k / 2 * 32 + 2 * i + k % 2]);
  }
}

template <Wt F>
void matmul(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, float* out,
            int64_t os) {
  const int64_t group_bytes = 16 * cols * (F == Wt::F32 ? 4 : 2);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* group = w + r / 16 * group_bytes;
    const int i = static_cast<int>(r % 16);
    for (int32_t t = 0; t < n; ++t) {
      const float* xt = x + t * cols;
      float even = 0.0f, odd = 0.0f;
      for (int64_t k = 0; k < cols; ++k) (k % 2 == 0 ? even : odd) += weight<F>(group, k, i) * xt[k];
      out[t * os + r] = even + odd;
    }
  }
}

}  // namespace

#define EMBER_FLOAT_ROWS16_GENERIC_(name, wt)                                                                    \
  void name##__generic(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,       \
                       float* out, int64_t os) {                                                                 \
    matmul<wt>(w, cols, r0, r1, x, n, out, os);                                                                  \
  }
EMBER_FLOAT_ROWS16_GENERIC_(f32_rows16_gemv, Wt::F32)
EMBER_FLOAT_ROWS16_GENERIC_(f32_rows16_gemm, Wt::F32)
EMBER_FLOAT_ROWS16_GENERIC_(f16_rows16_gemv, Wt::F16)
EMBER_FLOAT_ROWS16_GENERIC_(f16_rows16_gemm, Wt::F16)
EMBER_FLOAT_ROWS16_GENERIC_(bf16_rows16_gemv, Wt::BF16)
EMBER_FLOAT_ROWS16_GENERIC_(bf16_rows16_gemm, Wt::BF16)

}  // namespace ember

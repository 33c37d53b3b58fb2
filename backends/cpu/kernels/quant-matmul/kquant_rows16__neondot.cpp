// The K-quant super-block types (and IQ4_XS) in the Rows16 layout x 8-bit activations on
// NEON with the dot-product extension (SDOT): the tile of
// kquant_rows16_neon.inc, instantiated per type.
#if defined(__aarch64__)
#define EMBER_NEON_DOT 1
#include "backends/cpu/kernels/quant-matmul/kquant_rows16_neon.inc"

namespace ember {

EMBER_DEFINE_QMATMUL(q2_k_rows16_gemv, neondot, rows16_gemv<Q2_KRows16>)
EMBER_DEFINE_QMATMUL(q2_k_rows16_gemm, neondot, rows16_gemm<Q2_KRows16>)
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemv, neondot, rows16_gemv<Q3_KRows16>)
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemm, neondot, rows16_gemm<Q3_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemv, neondot, rows16_gemv<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemm, neondot, rows16_gemm<Q4_KRows16>)
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemv, neondot, rows16_gemv<Q5_KRows16>)
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemm, neondot, rows16_gemm<Q5_KRows16>)
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemv, neondot, rows16_gemv<Q6_KRows16>)
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemm, neondot, rows16_gemm<Q6_KRows16>)
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemv, neondot, rows16_gemv<IQ4_XSRows16>)
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemm, neondot, rows16_gemm<IQ4_XSRows16>)

}  // namespace ember
#endif  // __aarch64__

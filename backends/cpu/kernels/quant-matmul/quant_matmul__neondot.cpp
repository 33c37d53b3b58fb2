// Quantized weights x 8-bit activations on NEON with the dot-product extension (SDOT): the tiling of
// quant_matmul_neon.inc instantiated per weight type
// (quant_matmul_neon_types.inc).
#if defined(__aarch64__)
#define EMBER_NEON_DOT 1
#include "backends/cpu/kernels/quant-matmul/quant_matmul_neon.inc"
#include "backends/cpu/kernels/quant-matmul/quant_matmul_neon_types.inc"

namespace ember {

EMBER_DEFINE_QMATMUL(q8_0_gemv, neondot, gemv<Q8_0>)
EMBER_DEFINE_QMATMUL(q8_0_gemm, neondot, gemv<Q8_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemv, neondot, gemv<Q4_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemm, neondot, gemv<Q4_0>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemv, neondot, rows16_gemv<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemm, neondot, rows16_gemm<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemv, neondot, rows16_gemv<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemm, neondot, rows16_gemm<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemv, neondot, rows16_gemv<Q5_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemm, neondot, rows16_gemm<Q5_0Rows16>)

}  // namespace ember
#endif  // __aarch64__

// Q4_0 weights x 8-bit activations on neon (body: ../quant_matmul_neon.inc).
#if defined(__aarch64__)
#define EMBER_NEON_DOT 0
#include "backends/cpu/kernels/quant_matmul_neon.inc"
EMBER_DEFINE_NEON_QMATMUL(q4_0, neon, true)
#endif

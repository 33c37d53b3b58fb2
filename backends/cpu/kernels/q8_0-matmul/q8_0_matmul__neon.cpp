// Q8_0 weights x 8-bit activations on neon (body: ../quant_matmul_neon.inc).
#if defined(__aarch64__)
#define EMBER_NEON_DOT 0
#include "backends/cpu/kernels/quant_matmul_neon.inc"
EMBER_DEFINE_NEON_QMATMUL(q8_0, neon, false)
#endif

// The GGUF block types (Q4_1 .. IQ4_XS) x 8-bit activations on NEON with the
// dot-product extension (SDOT):
// 32-element blocks by the row-major tiles of quant_matmul_neon.inc, the
// 256-element super-blocks by quant_matmul_neon_superblock.inc, one traits
// struct per type. gguf_matmul__generic.cpp is the reference.
#if defined(__aarch64__)
#define EMBER_NEON_DOT 1
#include "backends/cpu/kernels/quant-matmul/quant_matmul_neon.inc"
#include "backends/cpu/kernels/quant-matmul/quant_matmul_neon_types.inc"
#include "backends/cpu/kernels/quant-matmul/quant_matmul_neon_superblock.inc"
#include "backends/cpu/kernels/quant-matmul/quant_matmul_neon_superblock_types.inc"

namespace ember {

EMBER_DEFINE_GGUF_NEON_KERNELS(neondot)

}  // namespace ember
#endif  // __aarch64__

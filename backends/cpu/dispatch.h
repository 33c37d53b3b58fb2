// Run-time kernel selection (ARCHITECTURE.md principle 5): one table of kernels
// per instruction-set path, and two families chosen independently from the
// hardware probe (platforms/linux/cpu_features.h): the int8 family
// (activation quantization and the Q8_0/Q4_0 matmuls) and the float family
// (f32/f16 matmuls and the vector ops), so that a CPU with AVX-512 but no
// VNNI runs the 512-bit float kernels beside the avx2 int8 ones.
// EMBER_ISA=generic|avx2|avx512|neon|neondot forces one path for every family
// (capped to what the family has: neondot's float kernels are neon's) and
// must be a path the CPU supports; anything else is an error, never a SIGILL.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"
#include "core/layout.h"
#include "core/status.h"

namespace ember {
struct CpuFeatures;
}

namespace ember {

enum class CpuIsa : uint8_t { Generic = 0, Avx2 = 1, Avx512 = 2, Neon = 3, NeonDot = 4 };
constexpr int kCpuIsaCount = 5;

// The kernels of one path. Every entry is set (a path without its own kernel
// for a family uses the best one it can run, e.g. neondot's float kernels are
// neon's). Immutable; lifetime: the process.
struct CpuKernels {
  CpuIsa isa = CpuIsa::Generic;
  const char* name = "generic";  // as describe() shows it: "avx512vnni"
  QuantizeQ8Fn quantize_q8 = nullptr;
  QMatmulFn q8_0_gemv = nullptr;  // n == 1 (decode)
  QMatmulFn q8_0_gemm = nullptr;  // n > 1 (prefill)
  QMatmulFn q4_0_gemv = nullptr;
  QMatmulFn q4_0_gemm = nullptr;
  QMatmulFn q8_0_rows16_gemv = nullptr;  // weights in the Rows16 layout
  QMatmulFn q8_0_rows16_gemm = nullptr;
  QMatmulFn q4_0_rows16_gemv = nullptr;
  QMatmulFn q4_0_rows16_gemm = nullptr;
  FMatmulFn f32_gemv = nullptr;
  FMatmulFn f32_gemm = nullptr;
  FMatmulFn f16_gemv = nullptr;
  FMatmulFn f16_gemm = nullptr;
  FMatmulFn bf16_gemv = nullptr;
  FMatmulFn bf16_gemm = nullptr;
  FMatmulFn f32_rows16_gemv = nullptr;  // weights in the Rows16 layout
  FMatmulFn f32_rows16_gemm = nullptr;
  FMatmulFn f16_rows16_gemv = nullptr;
  FMatmulFn f16_rows16_gemm = nullptr;
  FMatmulFn bf16_rows16_gemv = nullptr;
  FMatmulFn bf16_rows16_gemm = nullptr;
  RmsNormFn rmsnorm = nullptr;
  SwigluFn swiglu = nullptr;
  AddFn add = nullptr;
  DotFn dot = nullptr;
  AxpyFn axpy = nullptr;
  DotRowsFn dot_rows = nullptr;
  AxpyRowsFn axpy_rows = nullptr;
  SoftmaxFn softmax = nullptr;
  GeluFn gelu = nullptr;
  ExpSumFn exp_sum = nullptr;
  F16WidenFn f16_widen = nullptr;
  // The GGUF block types' row-major matmuls (EMBER_GGUF_QUANT_TYPES:
  // q4_1_gemv, q4_1_gemm, ... iq4_xs_gemm), int8 family.
#define EMBER_GGUF_KERNEL_MEMBERS_(t) \
  QMatmulFn t##_gemv = nullptr;       \
  QMatmulFn t##_gemm = nullptr;
  EMBER_GGUF_QUANT_TYPES(EMBER_GGUF_KERNEL_MEMBERS_)
#undef EMBER_GGUF_KERNEL_MEMBERS_
  // The GGUF types' matmuls in the Rows16 layout (EMBER_GGUF_ROWS16_TYPES:
  // q5_0_rows16_gemv, ... iq4_xs_rows16_gemm).
#define EMBER_GGUF_ROWS16_MEMBERS_(t)    \
  QMatmulFn t##_rows16_gemv = nullptr; \
  QMatmulFn t##_rows16_gemm = nullptr;
  EMBER_GGUF_ROWS16_TYPES(EMBER_GGUF_ROWS16_MEMBERS_)
#undef EMBER_GGUF_ROWS16_MEMBERS_
  // BF16 Rows16 matmuls on BF16 dot products (CpuFamilies::bf16_dot): set
  // only then, and they take over from bf16_rows16_gemv/gemm; the backend
  // rounds a step's activations once with bf16_round.
  Bf16RoundFn bf16_round = nullptr;
  Bf16MatmulFn bf16_rows16_dot_gemv = nullptr;
  Bf16MatmulFn bf16_rows16_dot_gemm = nullptr;
  // Attention scores with keys in lanes (kernels.h AttnScoresFn): the
  // avx512 float family's (set by cpu_kernels_for(families)); null: the
  // attention takes its scores from dot_rows.
  AttnScoresFn attn_scores = nullptr;
  // The same over an f16 cache in place, and the values' sums likewise
  // (set with attn_scores).
  AttnScoresF16Fn attn_scores_f16 = nullptr;
  AxpyRowsF16Fn axpy_rows_f16 = nullptr;
};

// A weight's int8-family matmuls on table k (decode, prefill), or nulls when
// (dtype, layout) has none: cpu_matmul_family(dtype, layout) != Int8.
struct QMatmulPair {
  QMatmulFn gemv = nullptr;
  QMatmulFn gemm = nullptr;
};
QMatmulPair cpu_quant_matmuls(const CpuKernels& k, DType dtype, Layout layout);
// A weight's float-family matmuls on table k, or nulls when (dtype, layout)
// has none: cpu_matmul_family(dtype, layout) != Float.
struct FMatmulPair {
  FMatmulFn gemv = nullptr;
  FMatmulFn gemm = nullptr;
};
FMatmulPair cpu_float_matmuls(const CpuKernels& k, DType dtype, Layout layout);
// Whether a weight type's kernels use QuantActs::sum16.
bool cpu_dtype_needs_sum16(DType dtype);

// "generic", "avx2", "avx512", "neon", "neondot" (the EMBER_ISA spellings).
const char* cpu_isa_name(CpuIsa isa);
bool cpu_isa_from_name(const char* name, CpuIsa* out);
// Built into this binary and runnable on this CPU.
bool cpu_isa_supported(CpuIsa isa);
// The fastest supported path.
CpuIsa cpu_best_isa();
// The table of a supported path (for an unsupported one: generic's).
const CpuKernels& cpu_kernels_for(CpuIsa isa);

// The path each family runs. int8: generic, avx2, avx512 (named
// "avx512vnni": it needs VNNI), neon, neondot. float: generic, avx2, avx512,
// neon (never neondot).
struct CpuFamilies {
  CpuIsa int8 = CpuIsa::Generic;
  CpuIsa fp = CpuIsa::Generic;
  // The avx512vnni int8 family's prefill of the AMX types
  // (EMBER_GGUF_ROWS16_AMX_TYPES) on AMX tiles: same results, faster.
  bool amx = false;
  // The avx512 float family's BF16 rows16 matmuls by vdpbf16ps, activations
  // rounded to BF16 (kernels.h): about twice the exact kernels' prefill,
  // not their bits.
  bool bf16_dot = false;
};
// As describe() names a family's path: "avx512vnni" / "avx512".
const char* cpu_int8_family_name(CpuIsa isa);
const char* cpu_float_family_name(CpuIsa isa);

// The choice as a pure function of a CPU's features and an EMBER_ISA value
// (null or "" : none): without one, each family's fastest path that `f` runs
// and this binary has; with one, that path in every family, capped to the
// family. Fails with EMBER_ERR_UNSUPPORTED (naming the value and what `f`
// supports) for an unknown path or one `f` does not run in full.
Result<CpuFamilies> cpu_choose_families(const CpuFeatures& f, const char* isa);
// Whether the int8 family `int8` runs its AMX prefill kernels, as a pure
// function of a CPU's features and an EMBER_AMX value (null or "": none).
// Without one, or "0": no (not yet faster where measured: docs/decisions.md,
// "AMX prefill: built, off by default"). "1": yes where the family is avx512 and the CPU has
// AMX-INT8 granted (CpuFeatures::amx_int8); no for another family (it has
// no AMX kernels); EMBER_ERR_UNSUPPORTED on a CPU without it. Anything
// else: EMBER_ERR_INVALID_ARGUMENT naming the value.
Result<bool> cpu_choose_amx(const CpuFeatures& f, CpuIsa int8, const char* value);
// Whether the float family `fp` runs BF16 rows16 matmuls by AVX512-BF16 dot
// products, as a pure function of a CPU's features and an EMBER_BF16_DOT
// value (null or "": none). Without one: yes where fp is avx512 and the CPU
// has AVX512-BF16 (as llama.cpp rounds its BF16 matmuls' activations). "0":
// no (the exact kernels: f32 activations). "1": yes, EMBER_ERR_UNSUPPORTED
// on a CPU without it; another family simply runs its own. Anything else:
// EMBER_ERR_INVALID_ARGUMENT naming the value.
Result<bool> cpu_choose_bf16_dot(const CpuFeatures& f, CpuIsa fp, const char* value);
// The choice for a new backend: cpu_choose_families(cpu_features(),
// EMBER_ISA), its amx from cpu_choose_amx(cpu_features(), int8, EMBER_AMX).
Result<CpuFamilies> cpu_select_families();
// One table with each family's kernels (int8 entries from families.int8's
// table, float and vector entries from families.fp's); name: the int8
// family's.
CpuKernels cpu_kernels_for(const CpuFamilies& families);

// How far ahead (bytes) the decode gemv tiles prefetch their weight stream
// (kernels.h: prefetch_ahead; 0: not at all), as a pure function of a CPU's
// features and an EMBER_DECODE_PREFETCH value (null or "": none). Without
// one: 0 on AMD family 0x19 (Zen 3/Zen 4), whose hardware prefetchers keep
// one stream per thread fed and where the software prefetch cost decode
// 10-35% (sessions 9 and 13); 8192 elsewhere (Zen 5: 1.1-1.9x faster decode,
// session 12; ARM's PRFM the same distance). With one: that many bytes, a
// multiple of 64 up to 65536, else EMBER_ERR_INVALID_ARGUMENT naming it.
Result<uint64_t> cpu_choose_decode_prefetch(const CpuFeatures& f, const char* value);
// cpu_choose_decode_prefetch(cpu_features(), EMBER_DECODE_PREFETCH), stored
// where the kernels read it (g_decode_prefetch_bytes) when it is valid.
Result<uint64_t> cpu_select_decode_prefetch();

}  // namespace ember

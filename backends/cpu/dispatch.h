// Run-time kernel selection (DESIGN.md principle 5): one table of kernels
// per instruction-set path, chosen once from the hardware probe
// (platforms/linux/cpu_features.h). EMBER_ISA=generic|avx2|avx512|neon|neondot
// forces a path the CPU supports; anything else is an error, never a SIGILL.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/kernels.h"
#include "core/status.h"

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
  RmsNormFn rmsnorm = nullptr;
  SwigluFn swiglu = nullptr;
  AddFn add = nullptr;
  DotFn dot = nullptr;
  AxpyFn axpy = nullptr;
  DotRowsFn dot_rows = nullptr;
  AxpyRowsFn axpy_rows = nullptr;
  SoftmaxFn softmax = nullptr;
};

// "generic", "avx2", "avx512", "neon", "neondot" (the EMBER_ISA spellings).
const char* cpu_isa_name(CpuIsa isa);
bool cpu_isa_from_name(const char* name, CpuIsa* out);
// Built into this binary and runnable on this CPU.
bool cpu_isa_supported(CpuIsa isa);
// The fastest supported path.
CpuIsa cpu_best_isa();
// The table of a supported path (for an unsupported one: generic's).
const CpuKernels& cpu_kernels_for(CpuIsa isa);
// The path for a new backend: EMBER_ISA when set, else the best. Fails with
// EMBER_ERR_UNSUPPORTED (naming the value and what this CPU supports) for an
// unknown or unsupported EMBER_ISA.
Result<const CpuKernels*> cpu_select_kernels();

}  // namespace ember

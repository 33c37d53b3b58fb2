#include "backends/cpu/dispatch.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "platforms/linux/cpu_features.h"

namespace ember {
namespace {

constexpr const char* kIsaNames[kCpuIsaCount] = {"generic", "avx2", "avx512", "neon", "neondot"};

#define EMBER_QUANT_ENTRIES(isa) q8_0_gemv__##isa, q8_0_gemm__##isa, q4_0_gemv__##isa, q4_0_gemm__##isa
#define EMBER_ROWS16_ENTRIES(isa) \
  q8_0_rows16_gemv__##isa, q8_0_rows16_gemm__##isa, q4_0_rows16_gemv__##isa, q4_0_rows16_gemm__##isa
#define EMBER_FLOAT_MATMUL_ENTRIES(isa) f32_gemv__##isa, f32_gemm__##isa, f16_gemv__##isa, f16_gemm__##isa
#define EMBER_VECTOR_ENTRIES(isa) \
  f32_rmsnorm__##isa, f32_swiglu__##isa, f32_add__##isa, f32_dot__##isa, f32_axpy__##isa, f32_dot_rows__##isa, \
      f32_axpy_rows__##isa, f32_softmax__##isa

// Constant-initialized tables, one per path built into this binary.
constexpr CpuKernels kGeneric = {CpuIsa::Generic, "generic", q8_quantize__generic, EMBER_QUANT_ENTRIES(generic), EMBER_ROWS16_ENTRIES(generic),
                                 EMBER_FLOAT_MATMUL_ENTRIES(generic), EMBER_VECTOR_ENTRIES(generic)};
#if defined(__x86_64__)
constexpr CpuKernels kAvx2 = {CpuIsa::Avx2, "avx2", q8_quantize__avx2, EMBER_QUANT_ENTRIES(avx2), EMBER_ROWS16_ENTRIES(avx2),
                              EMBER_FLOAT_MATMUL_ENTRIES(avx2), EMBER_VECTOR_ENTRIES(avx2)};
constexpr CpuKernels kAvx512 = {CpuIsa::Avx512, "avx512vnni", q8_quantize__avx512, EMBER_QUANT_ENTRIES(avx512vnni), EMBER_ROWS16_ENTRIES(avx512vnni),
                                EMBER_FLOAT_MATMUL_ENTRIES(avx512), EMBER_VECTOR_ENTRIES(avx512)};
#endif
#if defined(__aarch64__)
constexpr CpuKernels kNeon = {CpuIsa::Neon, "neon", q8_quantize__neon, EMBER_QUANT_ENTRIES(neon), EMBER_ROWS16_ENTRIES(neon),
                              EMBER_FLOAT_MATMUL_ENTRIES(neon), EMBER_VECTOR_ENTRIES(neon)};
constexpr CpuKernels kNeonDot = {CpuIsa::NeonDot, "neondot", q8_quantize__neon, EMBER_QUANT_ENTRIES(neondot), EMBER_ROWS16_ENTRIES(neondot),
                                 EMBER_FLOAT_MATMUL_ENTRIES(neon), EMBER_VECTOR_ENTRIES(neon)};
#endif

const CpuKernels* table(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Generic: return &kGeneric;
#if defined(__x86_64__)
    case CpuIsa::Avx2: return &kAvx2;
    case CpuIsa::Avx512: return &kAvx512;
#endif
#if defined(__aarch64__)
    case CpuIsa::Neon: return &kNeon;
    case CpuIsa::NeonDot: return &kNeonDot;
#endif
    default: return nullptr;
  }
}

bool runnable(CpuIsa isa, const CpuFeatures& f) {
  switch (isa) {
    case CpuIsa::Generic: return true;
    case CpuIsa::Avx2: return f.avx2 && f.fma && f.f16c;
    case CpuIsa::Avx512:
      return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
    case CpuIsa::Neon: return f.asimd;
    case CpuIsa::NeonDot: return f.asimd && f.asimddp;
  }
  return false;
}

std::string supported_list() {
  std::string s;
  for (int i = 0; i < kCpuIsaCount; ++i) {
    if (!cpu_isa_supported(static_cast<CpuIsa>(i))) continue;
    if (!s.empty()) s += ", ";
    s += kIsaNames[i];
  }
  return s;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  const int i = static_cast<int>(isa);
  return i >= 0 && i < kCpuIsaCount ? kIsaNames[i] : "unknown";
}

bool cpu_isa_from_name(const char* name, CpuIsa* out) {
  for (int i = 0; i < kCpuIsaCount; ++i) {
    if (std::strcmp(name, kIsaNames[i]) == 0) {
      *out = static_cast<CpuIsa>(i);
      return true;
    }
  }
  return false;
}

bool cpu_isa_supported(CpuIsa isa) { return table(isa) != nullptr && runnable(isa, cpu_features()); }

CpuIsa cpu_best_isa() {
  for (CpuIsa isa : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::NeonDot, CpuIsa::Neon}) {
    if (cpu_isa_supported(isa)) return isa;
  }
  return CpuIsa::Generic;
}

const CpuKernels& cpu_kernels_for(CpuIsa isa) { return cpu_isa_supported(isa) ? *table(isa) : kGeneric; }

Result<const CpuKernels*> cpu_select_kernels() {
  const char* env = std::getenv("EMBER_ISA");
  if (env == nullptr || env[0] == '\0') return &cpu_kernels_for(cpu_best_isa());
  CpuIsa isa;
  if (!cpu_isa_from_name(env, &isa)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "EMBER_ISA='%s' is not a kernel path (generic, avx2, avx512, neon, neondot)",
                         env);
  }
  if (!cpu_isa_supported(isa)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "EMBER_ISA='%s': this CPU or build does not support it (supported: %s)",
                         env, supported_list().c_str());
  }
  return table(isa);
}

}  // namespace ember

// The hardware probe (ARCHITECTURE.md principle 5): what this CPU can execute, how
// many cores and how much RAM it has. Probed once, on first use; read-only
// afterwards.
// Kernels never test features themselves: backends/cpu/dispatch.cpp reads
// this once and fills its table.
#pragma once

#include <cstdint>
#include <string>

namespace ember {

struct CpuFeatures {
  // x86-64 (each one only when the OS also saves the registers it needs).
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  // AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16): CPUID.7.1 EAX bit 5.
  bool avx512bf16 = false;
  // AMX-TILE and AMX-INT8 (tdpbsud and the tile loads), with the tile state
  // enabled in XCR0 and granted to this process by the kernel (Linux asks
  // for it: arch_prctl ARCH_REQ_XCOMP_PERM, once, by this probe).
  bool amx_int8 = false;
  // The x86 vendor and display family (CPUID leaf 0 and leaf 1's family +
  // extended family): AMD 0x19 is Zen 3/Zen 4, 0x1a Zen 5. Read only for
  // tuning choices that measured differently on them (dispatch.h:
  // cpu_choose_decode_prefetch), never for what may run.
  bool amd = false;
  int x86_family = 0;
  // aarch64.
  bool asimd = false;     // NEON
  bool asimddp = false;   // SDOT/UDOT (ARMv8.2 dot product)
  bool fphp = false;      // half-precision arithmetic (FP16 and ASIMDHP)

  std::string model_name;   // "AMD EPYC", "Cortex-A76", or "unknown"
  int physical_cores = 1;   // at least 1
  int logical_threads = 1;  // online CPUs, at least 1
  uint64_t memory_bytes = 0;  // physical RAM; 0 when the OS does not say
};

// The probe's result for the CPU this process runs on. Thread-safe; the
// reference stays valid for the life of the process.
const CpuFeatures& cpu_features();

}  // namespace ember

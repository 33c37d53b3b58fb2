#include "platforms/linux/cpu_features.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace ember {
namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t xgetbv0() {
  uint32_t eax = 0, edx = 0;
  // xgetbv with ecx = 0 (XCR0); encoded as bytes so no -mxsave is needed.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

void probe_x86(CpuFeatures* f) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  f->amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  const int base_family = (a >> 8) & 0xf;
  f->x86_family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  const bool fma = c & (1u << 12);
  const bool f16c = c & (1u << 29);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;           // SSE and AVX state
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;         // plus opmask, ZMM_Hi256, Hi16_ZMM
  if (!avx || !ymm_saved) return;
  f->fma = fma;
  f->f16c = f16c;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = b & (1u << 5);
    if (zmm_saved) {
      f->avx512f = b & (1u << 16);
      f->avx512bw = b & (1u << 30);
      f->avx512vl = b & (1u << 31);
      f->avx512vnni = c & (1u << 11);
      unsigned a1, b1, c1, d1;
      __cpuid_count(7, 0, a1, b1, c1, d1);
      if (a1 >= 1) {  // leaf 7's highest subleaf
        __cpuid_count(7, 1, a1, b1, c1, d1);
        f->avx512bf16 = f->avx512f && f->avx512bw && f->avx512vl && (a1 & (1u << 5));
      }
    }
    // AMX: CPUID.7.0 EDX bits 24 (TILE) and 25 (INT8), XCR0 bits 17-18
    // (XTILECFG, XTILEDATA), then the kernel's permission for the 8 KiB of
    // tile data per thread (ARCH_REQ_XCOMP_PERM = 0x1023, feature 18).
    if ((d & (1u << 24)) && (d & (1u << 25)) && (xcr0 & 0x60000) == 0x60000 && f->avx512vnni) {
#if defined(__linux__)
      f->amx_int8 = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#endif
    }
  }
}
#endif

#if defined(__aarch64__)
void probe_arm(CpuFeatures* f) {
  const unsigned long hw = getauxval(AT_HWCAP);
  // Bit numbers from the kernel's uapi asm/hwcap.h, spelled out so an old
  // libc header does not hide them.
  f->asimd = hw & (1ul << 1);     // HWCAP_ASIMD
  f->fphp = (hw & (1ul << 9)) && (hw & (1ul << 10));  // HWCAP_FPHP, HWCAP_ASIMDHP
  f->asimddp = hw & (1ul << 20);  // HWCAP_ASIMDDP
}
#endif

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// Reads /proc/cpuinfo: the model name, and distinct (physical id, core id)
// pairs for the physical core count. Missing fields leave the defaults.
void read_cpuinfo(CpuFeatures* f) {
  FILE* file = std::fopen("/proc/cpuinfo", "r");
  if (!file) return;
  char line[512];
  std::set<std::pair<int, int>> cores;
  int physical = 0;
  std::string arm_part;
  while (std::fgets(line, sizeof line, file)) {
    const char* colon = std::strchr(line, ':');
    if (!colon) continue;
    std::string key = trim(std::string(line, colon - line));
    std::string value = trim(colon + 1);
    if (f->model_name.empty() && (key == "model name" || key == "Model" || key == "Hardware")) f->model_name = value;
    if (key == "CPU part" && arm_part.empty()) arm_part = value;
    if (key == "physical id") physical = std::atoi(value.c_str());
    if (key == "core id") cores.insert({physical, std::atoi(value.c_str())});
  }
  std::fclose(file);
  if (f->model_name.empty() && !arm_part.empty()) f->model_name = "arm part " + arm_part;
  if (!cores.empty()) f->physical_cores = static_cast<int>(cores.size());
}

CpuFeatures probe() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  probe_x86(&f);
#endif
#if defined(__aarch64__)
  probe_arm(&f);
#endif
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  f.logical_threads = online > 0 ? static_cast<int>(online) : 1;
  f.physical_cores = 0;
  read_cpuinfo(&f);
  // No core ids (most ARM kernels, some VMs): count logical CPUs.
  if (f.physical_cores <= 0 || f.physical_cores > f.logical_threads) f.physical_cores = f.logical_threads;
  if (f.model_name.empty()) f.model_name = "unknown";
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) f.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = probe();
  return features;
}

}  // namespace ember

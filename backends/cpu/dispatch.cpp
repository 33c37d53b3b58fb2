#include "backends/cpu/dispatch.h"

#include <cerrno>
#include <cstddef>
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
// The GGUF types' Rows16 matmuls (EMBER_GGUF_ROWS16_TYPES), last in CpuKernels.
#define EMBER_GGUF_ROWS16_PAIR_(t, isa) t##_rows16_gemv__##isa, t##_rows16_gemm__##isa,
#define EMBER_GGUF_ROWS16_generic_(t) EMBER_GGUF_ROWS16_PAIR_(t, generic)
#define EMBER_GGUF_ROWS16_avx2_(t) EMBER_GGUF_ROWS16_PAIR_(t, avx2)
#define EMBER_GGUF_ROWS16_avx512vnni_(t) EMBER_GGUF_ROWS16_PAIR_(t, avx512vnni)
#define EMBER_GGUF_ROWS16_neon_(t) EMBER_GGUF_ROWS16_PAIR_(t, neon)
#define EMBER_GGUF_ROWS16_neondot_(t) EMBER_GGUF_ROWS16_PAIR_(t, neondot)
#define EMBER_GGUF_ROWS16_ENTRIES(isa) EMBER_GGUF_ROWS16_TYPES(EMBER_GGUF_ROWS16_##isa##_)
#define EMBER_FLOAT_MATMUL_ENTRIES(isa) \
  f32_gemv__##isa, f32_gemm__##isa, f16_gemv__##isa, f16_gemm__##isa, bf16_gemv__##isa, bf16_gemm__##isa, \
      f32_rows16_gemv__##isa, f32_rows16_gemm__##isa, f16_rows16_gemv__##isa, f16_rows16_gemm__##isa,        \
      bf16_rows16_gemv__##isa, bf16_rows16_gemm__##isa
#define EMBER_VECTOR_ENTRIES(isa) \
  f32_rmsnorm__##isa, f32_swiglu__##isa, f32_add__##isa, f32_dot__##isa, f32_axpy__##isa, f32_dot_rows__##isa, \
      f32_axpy_rows__##isa, f32_softmax__##isa, f32_gelu__##isa, f32_exp_sum__##isa, f16_widen__##isa

// The GGUF block types' kernels of a path, in EMBER_GGUF_QUANT_TYPES order
// (every path has its own kernel for every type; a new path without one
// would name generic's for that type here).
#define EMBER_GGUF_PAIR_(t, isa) t##_gemv__##isa, t##_gemm__##isa,
#define EMBER_GGUF_GENERIC_(t) EMBER_GGUF_PAIR_(t, generic)
#define EMBER_GGUF_AVX2_(t) EMBER_GGUF_PAIR_(t, avx2)
#define EMBER_GGUF_AVX512VNNI_(t) EMBER_GGUF_PAIR_(t, avx512vnni)
#define EMBER_GGUF_NEON_(t) EMBER_GGUF_PAIR_(t, neon)
#define EMBER_GGUF_NEONDOT_(t) EMBER_GGUF_PAIR_(t, neondot)

// Constant-initialized tables, one per path built into this binary.
constexpr CpuKernels kGeneric = {CpuIsa::Generic, "generic", q8_quantize__generic, EMBER_QUANT_ENTRIES(generic), EMBER_ROWS16_ENTRIES(generic),
                                 EMBER_FLOAT_MATMUL_ENTRIES(generic), EMBER_VECTOR_ENTRIES(generic),
                                 EMBER_GGUF_QUANT_TYPES(EMBER_GGUF_GENERIC_)
                                 EMBER_GGUF_ROWS16_ENTRIES(generic)};
#if defined(__x86_64__)
constexpr CpuKernels kAvx2 = {CpuIsa::Avx2, "avx2", q8_quantize__avx2, EMBER_QUANT_ENTRIES(avx2), EMBER_ROWS16_ENTRIES(avx2),
                              EMBER_FLOAT_MATMUL_ENTRIES(avx2), EMBER_VECTOR_ENTRIES(avx2), EMBER_GGUF_QUANT_TYPES(EMBER_GGUF_AVX2_) EMBER_GGUF_ROWS16_ENTRIES(avx2)};
constexpr CpuKernels kAvx512 = {CpuIsa::Avx512, "avx512vnni", q8_quantize__avx512, EMBER_QUANT_ENTRIES(avx512vnni), EMBER_ROWS16_ENTRIES(avx512vnni),
                                EMBER_FLOAT_MATMUL_ENTRIES(avx512), EMBER_VECTOR_ENTRIES(avx512), EMBER_GGUF_QUANT_TYPES(EMBER_GGUF_AVX512VNNI_) EMBER_GGUF_ROWS16_ENTRIES(avx512vnni)};
#endif
#if defined(__aarch64__)
constexpr CpuKernels kNeon = {CpuIsa::Neon, "neon", q8_quantize__neon, EMBER_QUANT_ENTRIES(neon), EMBER_ROWS16_ENTRIES(neon),
                              EMBER_FLOAT_MATMUL_ENTRIES(neon), EMBER_VECTOR_ENTRIES(neon), EMBER_GGUF_QUANT_TYPES(EMBER_GGUF_NEON_) EMBER_GGUF_ROWS16_ENTRIES(neon)};
constexpr CpuKernels kNeonDot = {CpuIsa::NeonDot, "neondot", q8_quantize__neon, EMBER_QUANT_ENTRIES(neondot), EMBER_ROWS16_ENTRIES(neondot),
                                 EMBER_FLOAT_MATMUL_ENTRIES(neon), EMBER_VECTOR_ENTRIES(neon), EMBER_GGUF_QUANT_TYPES(EMBER_GGUF_NEONDOT_) EMBER_GGUF_ROWS16_ENTRIES(neondot)};
#endif

// The kernels' block mirrors are core/dtype.h's structs, field by field.
#define EMBER_SAME_BLOCK(T)                                            \
  static_assert(sizeof(KBlock##T) == sizeof(Block##T), #T " size");   \
  static_assert(alignof(KBlock##T) == alignof(Block##T), #T " align");
EMBER_SAME_BLOCK(Q4_1)
EMBER_SAME_BLOCK(Q5_0)
EMBER_SAME_BLOCK(Q5_1)
EMBER_SAME_BLOCK(Q2_K)
EMBER_SAME_BLOCK(Q3_K)
EMBER_SAME_BLOCK(Q4_K)
EMBER_SAME_BLOCK(Q5_K)
EMBER_SAME_BLOCK(Q6_K)
EMBER_SAME_BLOCK(IQ4_NL)
EMBER_SAME_BLOCK(IQ4_XS)
static_assert(offsetof(KBlockQ5_1, qh) == offsetof(BlockQ5_1, qh) && offsetof(KBlockQ5_0, q) == offsetof(BlockQ5_0, q) &&
              offsetof(KBlockQ2_K, d) == offsetof(BlockQ2_K, d) && offsetof(KBlockQ3_K, scales) == offsetof(BlockQ3_K, scales) &&
              offsetof(KBlockQ3_K, d) == offsetof(BlockQ3_K, d) && offsetof(KBlockQ4_K, q) == offsetof(BlockQ4_K, q) &&
              offsetof(KBlockQ5_K, qh) == offsetof(BlockQ5_K, qh) && offsetof(KBlockQ5_K, q) == offsetof(BlockQ5_K, q) &&
              offsetof(KBlockQ6_K, qh) == offsetof(BlockQ6_K, qh) && offsetof(KBlockQ6_K, scales) == offsetof(BlockQ6_K, scales) &&
              offsetof(KBlockQ6_K, d) == offsetof(BlockQ6_K, d) && offsetof(KBlockIQ4_XS, scales_h) == offsetof(BlockIQ4_XS, scales_h) &&
              offsetof(KBlockIQ4_XS, scales_l) == offsetof(BlockIQ4_XS, scales_l) && offsetof(KBlockIQ4_XS, q) == offsetof(BlockIQ4_XS, q),
              "kernel block mirrors differ from core/dtype.h");

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

// Whether `f` runs every kernel of the path (its int8 family needs the most).
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

// The float family's own paths: avx512 without VNNI; neondot is neon's.
CpuIsa float_cap(CpuIsa isa) { return isa == CpuIsa::NeonDot ? CpuIsa::Neon : isa; }

bool float_runnable(CpuIsa isa, const CpuFeatures& f) {
  if (isa == CpuIsa::Avx512) return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl;
  return runnable(float_cap(isa), f);
}

std::string supported_list(const CpuFeatures& f) {
  std::string s;
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const CpuIsa isa = static_cast<CpuIsa>(i);
    if (table(isa) == nullptr || !runnable(isa, f)) continue;
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

const char* cpu_int8_family_name(CpuIsa isa) { return isa == CpuIsa::Avx512 ? "avx512vnni" : cpu_isa_name(isa); }
const char* cpu_float_family_name(CpuIsa isa) { return cpu_isa_name(float_cap(isa)); }

CpuIsa cpu_best_isa() {
  for (CpuIsa isa : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::NeonDot, CpuIsa::Neon}) {
    if (cpu_isa_supported(isa)) return isa;
  }
  return CpuIsa::Generic;
}

const CpuKernels& cpu_kernels_for(CpuIsa isa) { return cpu_isa_supported(isa) ? *table(isa) : kGeneric; }

Result<CpuFamilies> cpu_choose_families(const CpuFeatures& f, const char* isa) {
  CpuFamilies out;
  if (isa == nullptr || isa[0] == '\0') {
    // Fastest first; each family independently.
    constexpr CpuIsa kOrder[] = {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::NeonDot, CpuIsa::Neon};
    for (CpuIsa p : kOrder) {
      if (table(p) != nullptr && runnable(p, f)) {
        out.int8 = p;
        break;
      }
    }
    for (CpuIsa p : kOrder) {
      if (table(p) != nullptr && float_runnable(p, f)) {
        out.fp = float_cap(p);
        break;
      }
    }
    return out;
  }
  CpuIsa forced;
  if (!cpu_isa_from_name(isa, &forced)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "EMBER_ISA='%s' is not a kernel path (generic, avx2, avx512, neon, neondot)",
                         isa);
  }
  if (table(forced) == nullptr || !runnable(forced, f)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "EMBER_ISA='%s': this CPU or build does not support it (supported: %s)",
                         isa, supported_list(f).c_str());
  }
  out.int8 = forced;
  out.fp = float_cap(forced);
  return out;
}

std::atomic<uint64_t> g_decode_prefetch_bytes{8192};

Result<uint64_t> cpu_choose_decode_prefetch(const CpuFeatures& f, const char* value) {
  if (value == nullptr || value[0] == '\0') return uint64_t{f.amd && f.x86_family == 0x19 ? 0u : 8192u};
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || value[0] == '-' || v > 65536 || v % 64 != 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "EMBER_DECODE_PREFETCH='%s' is not a prefetch distance (bytes: 0, or a multiple of 64 up to 65536)",
                         value);
  }
  return uint64_t{v};
}

Result<uint64_t> cpu_select_decode_prefetch() {
  Result<uint64_t> r = cpu_choose_decode_prefetch(cpu_features(), std::getenv("EMBER_DECODE_PREFETCH"));
  if (r.is_ok()) g_decode_prefetch_bytes.store(r.value(), std::memory_order_relaxed);
  return r;
}

Result<bool> cpu_choose_amx(const CpuFeatures& f, CpuIsa int8, const char* value) {
#if defined(__x86_64__)
  const bool can = int8 == CpuIsa::Avx512 && f.amx_int8;
#else
  const bool can = false;
  (void)int8;
#endif
  // Off unless asked for: on the one AMX host measured so far (session 14,
  // a 2-vCPU Sapphire Rapids VM) the tile gemm was 0.9-1.2x the VNNI one
  // (docs/decisions.md, "AMX prefill: built, off by default"), so it is not the default yet.
  if (value == nullptr || value[0] == '\0') return false;
  if (std::strcmp(value, "0") == 0) return false;
  if (std::strcmp(value, "1") == 0) {
    // A CPU without AMX is an error; an int8 family other than avx512
    // (EMBER_ISA=avx2, ...) has no AMX kernels and simply runs its own.
    if (!f.amx_int8) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "EMBER_AMX=1: this CPU has no AMX-INT8 that the kernel grants to this process "
                           "(Intel Sapphire Rapids or later, Linux 5.16 or later)");
    }
    return can;
  }
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "EMBER_AMX='%s' is not 0 or 1", value);
}

Result<bool> cpu_choose_bf16_dot(const CpuFeatures& f, CpuIsa fp, const char* value) {
#if defined(__x86_64__)
  const bool can = fp == CpuIsa::Avx512 && f.avx512bf16;
#else
  const bool can = false;
  (void)fp;
#endif
  if (value == nullptr || value[0] == '\0') return can;
  if (std::strcmp(value, "0") == 0) return false;
  if (std::strcmp(value, "1") == 0) {
    if (!f.avx512bf16) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "EMBER_BF16_DOT=1: this CPU has no AVX512-BF16 (Intel Cooper Lake / Sapphire Rapids, "
                           "AMD Zen 4 or later)");
    }
    return can;
  }
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "EMBER_BF16_DOT='%s' is not 0 or 1", value);
}

Result<CpuFamilies> cpu_select_families() {
  EMBER_ASSIGN_OR_RETURN(CpuFamilies families, cpu_choose_families(cpu_features(), std::getenv("EMBER_ISA")));
  EMBER_ASSIGN_OR_RETURN(families.amx, cpu_choose_amx(cpu_features(), families.int8, std::getenv("EMBER_AMX")));
  EMBER_ASSIGN_OR_RETURN(families.bf16_dot,
                         cpu_choose_bf16_dot(cpu_features(), families.fp, std::getenv("EMBER_BF16_DOT")));
  return families;
}

CpuKernels cpu_kernels_for(const CpuFamilies& families) {
  // Not cpu_kernels_for(isa): that wants the whole path runnable, and the
  // float family may run avx512 where the int8 one cannot.
  const CpuKernels& i = table(families.int8) ? *table(families.int8) : kGeneric;
  CpuKernels k = table(families.fp) ? *table(families.fp) : kGeneric;
  k.isa = i.isa;
  k.name = i.name;
  k.quantize_q8 = i.quantize_q8;
  k.q8_0_gemv = i.q8_0_gemv;
  k.q8_0_gemm = i.q8_0_gemm;
  k.q4_0_gemv = i.q4_0_gemv;
  k.q4_0_gemm = i.q4_0_gemm;
  k.q8_0_rows16_gemv = i.q8_0_rows16_gemv;
  k.q8_0_rows16_gemm = i.q8_0_rows16_gemm;
  k.q4_0_rows16_gemv = i.q4_0_rows16_gemv;
  k.q4_0_rows16_gemm = i.q4_0_rows16_gemm;
#define EMBER_COPY_GGUF_(t) \
  k.t##_gemv = i.t##_gemv;  \
  k.t##_gemm = i.t##_gemm;
  EMBER_GGUF_QUANT_TYPES(EMBER_COPY_GGUF_)
#undef EMBER_COPY_GGUF_
#define EMBER_COPY_GGUF_ROWS16_(t)          \
  k.t##_rows16_gemv = i.t##_rows16_gemv; \
  k.t##_rows16_gemm = i.t##_rows16_gemm;
  EMBER_GGUF_ROWS16_TYPES(EMBER_COPY_GGUF_ROWS16_)
#undef EMBER_COPY_GGUF_ROWS16_
#if defined(__x86_64__)
  if (families.amx && families.int8 == CpuIsa::Avx512) {
#define EMBER_AMX_GEMM_(t) k.t##_rows16_gemm = t##_rows16_gemm__amx;
    EMBER_GGUF_ROWS16_AMX_TYPES(EMBER_AMX_GEMM_)
#undef EMBER_AMX_GEMM_
  }
  if (families.fp == CpuIsa::Avx512) {
    k.attn_scores = f32_attn_scores__avx512;
    k.attn_scores_f16 = f16_attn_scores__avx512;
    k.axpy_rows_f16 = f16_axpy_rows__avx512;
  }
  if (families.bf16_dot && families.fp == CpuIsa::Avx512) {
    k.bf16_round = bf16_round__avx512bf16;
    k.bf16_rows16_dot_gemv = bf16_rows16_gemv__avx512bf16;
    k.bf16_rows16_dot_gemm = bf16_rows16_gemm__avx512bf16;
  }
#endif
  return k;
}

FMatmulPair cpu_float_matmuls(const CpuKernels& k, DType dtype, Layout layout) {
  const bool r16 = layout == Layout::Rows16;
  if (!r16 && layout != Layout::RowMajor) return {};
  switch (dtype) {
    case DType::F32: return r16 ? FMatmulPair{k.f32_rows16_gemv, k.f32_rows16_gemm} : FMatmulPair{k.f32_gemv, k.f32_gemm};
    case DType::F16: return r16 ? FMatmulPair{k.f16_rows16_gemv, k.f16_rows16_gemm} : FMatmulPair{k.f16_gemv, k.f16_gemm};
    case DType::BF16:
      return r16 ? FMatmulPair{k.bf16_rows16_gemv, k.bf16_rows16_gemm} : FMatmulPair{k.bf16_gemv, k.bf16_gemm};
    default: return {};
  }
}

QMatmulPair cpu_quant_matmuls(const CpuKernels& k, DType dtype, Layout layout) {
  if (layout == Layout::Rows16) {
    switch (dtype) {
      case DType::Q8_0: return {k.q8_0_rows16_gemv, k.q8_0_rows16_gemm};
      case DType::Q4_0: return {k.q4_0_rows16_gemv, k.q4_0_rows16_gemm};
      case DType::Q5_0: return {k.q5_0_rows16_gemv, k.q5_0_rows16_gemm};
      case DType::Q2_K: return {k.q2_k_rows16_gemv, k.q2_k_rows16_gemm};
      case DType::Q3_K: return {k.q3_k_rows16_gemv, k.q3_k_rows16_gemm};
      case DType::Q4_K: return {k.q4_k_rows16_gemv, k.q4_k_rows16_gemm};
      case DType::Q5_K: return {k.q5_k_rows16_gemv, k.q5_k_rows16_gemm};
      case DType::Q6_K: return {k.q6_k_rows16_gemv, k.q6_k_rows16_gemm};
      case DType::IQ4_XS: return {k.iq4_xs_rows16_gemv, k.iq4_xs_rows16_gemm};
      default: return {};
    }
  }
  if (layout != Layout::RowMajor) return {};
  switch (dtype) {
    case DType::Q8_0: return {k.q8_0_gemv, k.q8_0_gemm};
    case DType::Q4_0: return {k.q4_0_gemv, k.q4_0_gemm};
    case DType::Q4_1: return {k.q4_1_gemv, k.q4_1_gemm};
    case DType::Q5_0: return {k.q5_0_gemv, k.q5_0_gemm};
    case DType::Q5_1: return {k.q5_1_gemv, k.q5_1_gemm};
    case DType::Q2_K: return {k.q2_k_gemv, k.q2_k_gemm};
    case DType::Q3_K: return {k.q3_k_gemv, k.q3_k_gemm};
    case DType::Q4_K: return {k.q4_k_gemv, k.q4_k_gemm};
    case DType::Q5_K: return {k.q5_k_gemv, k.q5_k_gemm};
    case DType::Q6_K: return {k.q6_k_gemv, k.q6_k_gemm};
    case DType::IQ4_NL: return {k.iq4_nl_gemv, k.iq4_nl_gemm};
    case DType::IQ4_XS: return {k.iq4_xs_gemv, k.iq4_xs_gemm};
    default: return {};
  }
}

bool cpu_dtype_needs_sum16(DType dtype) {
  switch (dtype) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::F32:
    case DType::F16:
    case DType::BF16: return false;
    default: return dtype_is_quantized(dtype);
  }
}

}  // namespace ember

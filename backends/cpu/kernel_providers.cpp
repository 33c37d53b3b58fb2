#include "backends/cpu/kernel_providers.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/xnnpack_provider.h"

namespace ember {

Result<CpuKernelsChoice> cpu_kernels_choice(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return CpuKernelsChoice::Auto;
  if (std::strcmp(value, "ember") == 0) return CpuKernelsChoice::Ember;
  if (std::strcmp(value, "xnnpack") == 0) return CpuKernelsChoice::Xnnpack;
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "EMBER_KERNELS='%s' is not ember, xnnpack or auto", value);
}

const char* cpu_kernels_choice_name(CpuKernelsChoice c) {
  switch (c) {
    case CpuKernelsChoice::Ember: return "ember";
    case CpuKernelsChoice::Xnnpack: return "xnnpack";
    case CpuKernelsChoice::Auto: break;
  }
  return "auto";
}

const char* float_matmul_family_name(FloatMatmulFamily f) {
  static const char* const names[kFloatMatmulFamilies] = {"f32", "f16", "bf16"};
  return names[static_cast<int>(f)];
}

bool float_matmul_family(DType dtype, FloatMatmulFamily* out) {
  switch (dtype) {
    case DType::F32: *out = FloatMatmulFamily::F32; return true;
    case DType::F16: *out = FloatMatmulFamily::F16; return true;
    case DType::BF16: *out = FloatMatmulFamily::Bf16; return true;
    default: return false;
  }
}

MatmulProvider CpuProviders::of(DType dtype) const {
  FloatMatmulFamily f;
  return float_matmul_family(dtype, &f) ? family[static_cast<int>(f)] : MatmulProvider::Ember;
}

bool CpuProviders::any_xnnpack() const {
  for (MatmulProvider p : family) {
    if (p == MatmulProvider::Xnnpack) return true;
  }
  return false;
}

std::string CpuProviders::describe() const {
  std::string x;
  int n = 0;
  for (int i = 0; i < kFloatMatmulFamilies; ++i) {
    if (family[i] != MatmulProvider::Xnnpack) continue;
    x += (n++ ? ", " : "") + std::string(float_matmul_family_name(static_cast<FloatMatmulFamily>(i)));
  }
  if (n == 0) return "ember";
  if (n == kFloatMatmulFamilies) return "xnnpack";
  return "xnnpack for " + x + ", else ember";
}

CpuProviders cpu_auto_providers(CpuIsa float_isa) {
  // The table, from tools/dev/xnnpack_gemm_probe.cpp on the 0.5b shape's
  // matrices and `ember bench` on whole 0.5b models (docs/decisions.md
  // "XNNPACK: operators created once"), on avx512 (the only path measured):
  //  - prefill: XNNPACK's f32 operators reach 160-350 GFLOP/s on the
  //    attention matrices (up to 3.7x ember's f32 gemm at 512 rows) but
  //    lose on the FFN matrices at 64 rows; whole models: f32 prefill 512
  //    1-1.5x, 64 slower; bf16 (no kernel of ember's) 2.4x.
  //  - decode: 0.5-0.9x ember's speed for f32, f16 and bf16 alike.
  // A family is a weight type, decode and prefill together (the header
  // says why), and decode is most of a generation's time: ember's kernels
  // for every family, on every path, until a board measures otherwise. The
  // f16 family would also need its weights widened to f32 (this snapshot's
  // x86 f16 operator takes f16 activations and rounds its sums to f16 at
  // every step: 1-3% off), doubling what decode reads.
  CpuProviders p;
  p.choice = CpuKernelsChoice::Auto;
  (void)float_isa;
  return p;
}

Result<CpuProviders> cpu_choose_providers(CpuKernelsChoice choice, CpuIsa float_isa, bool xnnpack_usable,
                                          const std::string& why_not) {
  CpuProviders p;
  p.choice = choice;
  switch (choice) {
    case CpuKernelsChoice::Ember: return p;
    case CpuKernelsChoice::Xnnpack:
      if (!xnnpack_usable) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "EMBER_KERNELS=xnnpack: %s", why_not.c_str());
      }
      for (MatmulProvider& f : p.family) f = MatmulProvider::Xnnpack;
      return p;
    case CpuKernelsChoice::Auto:
      if (!xnnpack_usable) return p;
      return cpu_auto_providers(float_isa);
  }
  return p;
}

Result<CpuProviders> cpu_select_providers(CpuIsa float_isa) {
  EMBER_ASSIGN_OR_RETURN(CpuKernelsChoice choice, cpu_kernels_choice(std::getenv("EMBER_KERNELS")));
  if (choice == CpuKernelsChoice::Ember) return cpu_choose_providers(choice, float_isa, false, "");
  // auto with a table that gives XNNPACK nothing on this path: not even probed.
  if (choice == CpuKernelsChoice::Auto && !cpu_auto_providers(float_isa).any_xnnpack()) {
    return cpu_choose_providers(choice, float_isa, false, "");
  }
  const XnnpackInfo& info = xnnpack_info();
  return cpu_choose_providers(choice, float_isa, info.usable, info.reason);
}

int32_t cpu_xnnpack_slices(int64_t rows, int64_t cols, int n_threads) {
  const int64_t groups = (rows + 15) / 16;
  const int64_t group_bytes = 16 * (cols + 1) * static_cast<int64_t>(sizeof(float));
  const int64_t per_slice = std::max<int64_t>(1, kXnnpackSliceBytes / group_bytes);  // groups
  const int64_t slices = std::max<int64_t>(4 * static_cast<int64_t>(n_threads), (groups + per_slice - 1) / per_slice);
  return static_cast<int32_t>(std::min<int64_t>(slices, groups > 0 ? groups : 1));
}

std::vector<bool> cpu_xnnpack_weights(const Graph& graph, const CpuProviders& providers) {
  std::vector<bool> use(graph.weights.size(), false);
  if (!providers.any_xnnpack()) return use;
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::MatMul || op.weight < 0) continue;
    const WeightRef& w = graph.weights[op.weight];
    if (cpu_matmul_family(w.dtype, w.layout) == CpuMatmulFamily::Float && providers.of(w.dtype) == MatmulProvider::Xnnpack) {
      use[op.weight] = true;
    }
  }
  return use;
}

uint64_t cpu_resident_weight_bytes(const Graph& graph, const BackendOptions& options) {
  // Only a graph with float weights asks about XNNPACK at all.
  bool any_float = false;
  for (const WeightRef& w : graph.weights) {
    FloatMatmulFamily f;
    any_float |= cpu_matmul_family(w.dtype, w.layout) == CpuMatmulFamily::Float && float_matmul_family(w.dtype, &f);
  }
  if (!any_float) return 0;
  Result<CpuFamilies> fam = cpu_select_families();
  if (!fam.is_ok()) return 0;
  Result<CpuProviders> p = cpu_select_providers(fam.value().fp);
  if (!p.is_ok()) return 0;  // the session's prepare fails with the reason
  const std::vector<bool> use = cpu_xnnpack_weights(graph, p.value());
  const int threads = cpu_threads(options.cpu);
  uint64_t total = 0;
  for (size_t i = 0; i < use.size(); ++i) {
    if (!use[i]) continue;
    const WeightRef& w = graph.weights[i];
    total += xnnpack_weight_bytes(w.rows, w.cols, cpu_xnnpack_slices(w.rows, w.cols, threads));
  }
  return total;
}

// --- Without XNNPACK (EMBER_HAVE_XNNPACK unset): the same functions, saying so.
#if !EMBER_HAVE_XNNPACK
const XnnpackInfo& xnnpack_info() {
  static const XnnpackInfo info = [] {
    XnnpackInfo i;
    i.reason = "this build has no XNNPACK (" EMBER_XNNPACK_MISSING ")";
    return i;
  }();
  return info;
}
uint64_t xnnpack_weight_bytes(int64_t, int64_t, int32_t) { return 0; }
uint64_t xnnpack_allocations() { return 0; }
uint64_t xnnpack_live_bytes() { return 0; }
Result<std::unique_ptr<XnnpackMatmuls>> XnnpackMatmuls::create() {
  return Status::error(EMBER_ERR_UNSUPPORTED, "xnnpack: %s", xnnpack_info().reason.c_str());
}
XnnpackMatmuls::~XnnpackMatmuls() = default;
Result<int32_t> XnnpackMatmuls::add(const WeightRef&, int32_t) {
  return Status::error(EMBER_ERR_UNSUPPORTED, "xnnpack: %s", xnnpack_info().reason.c_str());
}
void XnnpackMatmuls::run(int32_t, const float*, int32_t, float*) {}
#endif

}  // namespace ember

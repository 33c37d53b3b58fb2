// Who runs the CPU backend's float matmuls: ember's own kernels or XNNPACK
// (xnnpack_provider.h), per op family, from EMBER_KERNELS and a table
// shipped per float ISA path from measurement (docs/decisions.md "XNNPACK:
// operators created once"). The integer families always run ember's
// kernels (XNNPACK has no block-quantized matmul).
//
//   EMBER_KERNELS=ember    ember's kernels for every family
//   EMBER_KERNELS=xnnpack  XNNPACK for every float family (F32, F16, BF16
//                          weights); an error where
//                          XNNPACK is not built or not usable, never a
//                          silent fallback
//   EMBER_KERNELS=auto     (or unset) the table: XNNPACK only for the
//                          families where it measured faster on this path
//                          (none today: decode is slower through it; see
//                          cpu_auto_providers), XNNPACK not even probed
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backends/cpu/dispatch.h"
#include "core/graph.h"
#include "core/status.h"

namespace ember {

enum class CpuKernelsChoice : uint8_t { Auto, Ember, Xnnpack };
// An EMBER_KERNELS value: null or "" is auto; anything but auto, ember and
// xnnpack is EMBER_ERR_INVALID_ARGUMENT naming the value.
Result<CpuKernelsChoice> cpu_kernels_choice(const char* value);
const char* cpu_kernels_choice_name(CpuKernelsChoice c);  // "auto", "ember", "xnnpack"

// The float matmul families a provider is chosen for: one per weight type.
// Not per decode / prefill: a session must compute a token's logits with
// the same bits whether it came in a prefill or one at a time (saved
// conversations, turns prefilled piecewise: tests/api/test_sessions.cpp),
// and each provider is consistent only with itself (XNNPACK's 1-row and
// 7-row tiles give the same sums; ember's gemv and gemm too; not across).
enum class FloatMatmulFamily : uint8_t { F32, F16, Bf16 };
constexpr int kFloatMatmulFamilies = 3;
const char* float_matmul_family_name(FloatMatmulFamily f);  // "f32", "f16", "bf16"
// The family of a matmul over a weight of `dtype`; false for a dtype no
// provider but ember's has (the integer types).
bool float_matmul_family(DType dtype, FloatMatmulFamily* out);

enum class MatmulProvider : uint8_t { Ember, Xnnpack };

struct CpuProviders {
  CpuKernelsChoice choice = CpuKernelsChoice::Auto;
  MatmulProvider family[kFloatMatmulFamilies] = {};
  // Ember for every dtype without a float family.
  MatmulProvider of(DType dtype) const;
  bool any_xnnpack() const;
  // "ember", "xnnpack" (every family) or "xnnpack for f32, bf16, else ember".
  std::string describe() const;
};

// The shipped table: the families XNNPACK runs under auto on this float
// path, where it measured faster than ember's kernel (tools/dev/
// xnnpack_gemm_probe.cpp; the numbers are in docs/decisions.md "XNNPACK: operators created once,
// measured again").
CpuProviders cpu_auto_providers(CpuIsa float_isa);
// The providers for a choice, as a pure function: ember everywhere;
// XNNPACK everywhere (EMBER_ERR_UNSUPPORTED with `why_not` when it is not
// usable); or the table, with ember wherever XNNPACK is not usable.
Result<CpuProviders> cpu_choose_providers(CpuKernelsChoice choice, CpuIsa float_isa, bool xnnpack_usable,
                                          const std::string& why_not);
// For a backend: EMBER_KERNELS, this float path and this build's XNNPACK
// (probed, and so initialized, only when the choice may use it).
Result<CpuProviders> cpu_select_providers(CpuIsa float_isa);

// XNNPACK operators over a rows x cols weight: runs of whole 16-row groups,
// at least as many as the backend's prefill chunks (4 per thread), and
// small enough that a run's packed rows (kXnnpackSliceBytes) stay in a
// core's L2 while XNNPACK streams them once per 7 activation rows (its
// operator has no blocking of its own when run on one thread).
constexpr int64_t kXnnpackSliceBytes = 256 << 10;
int32_t cpu_xnnpack_slices(int64_t rows, int64_t cols, int n_threads);
// Per graph weight: whether XNNPACK runs the matmuls over it. The plan and
// prepare both use this, so they agree.
std::vector<bool> cpu_xnnpack_weights(const Graph& graph, const CpuProviders& providers);
// The cpu entry's resident_weight_bytes: XNNPACK's packed copies (and
// operator descriptors) of those weights; 0 with EMBER_KERNELS=ember, for a
// graph without float weights, or where XNNPACK is not usable.
uint64_t cpu_resident_weight_bytes(const Graph& graph, const BackendOptions& options);

}  // namespace ember

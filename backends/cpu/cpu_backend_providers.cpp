// The CPU backend's float-matmul providers at prepare (kernel_providers.h):
// which families XNNPACK runs, its operators created once per weight, and
// their bytes held to the plan's resident figure.
#include "backends/cpu/cpu_backend.h"

namespace ember {

void CpuBackend::select_providers() {
  if (!selected_.is_ok()) return;
  Result<CpuProviders> p = cpu_select_providers(selected_.value().fp);
  providers_status_ = p.status();
  if (p.is_ok()) providers_ = p.value();
}

Status CpuBackend::prepare_providers(const Graph& graph) {
  EMBER_TRY(providers_status_);
  xnn_first_.assign(graph.weights.size(), -1);
  xnn_count_.assign(graph.weights.size(), 0);
  const std::vector<bool> use = cpu_xnnpack_weights(graph, providers_);
  bool any = false;
  for (bool u : use) any |= u;
  if (!any) return Status::ok();
  EMBER_ASSIGN_OR_RETURN(xnn_, XnnpackMatmuls::create());
  uint64_t planned = 0;
  for (size_t i = 0; i < use.size(); ++i) {
    if (!use[i]) continue;
    const WeightRef& w = graph.weights[i];
    xnn_count_[i] = cpu_xnnpack_slices(w.rows, w.cols, n_threads_);
    EMBER_ASSIGN_OR_RETURN(xnn_first_[i], xnn_->add(w, xnn_count_[i]));
    planned += xnnpack_weight_bytes(w.rows, w.cols, xnn_count_[i]);
  }
  // What the operators took is what the plan counted (cpu_resident_weight_bytes).
  if (xnn_->bytes() != planned) {
    return Status::error(EMBER_ERR_INTERNAL, "xnnpack: the operators took %llu bytes, the plan counted %llu",
                         static_cast<unsigned long long>(xnn_->bytes()), static_cast<unsigned long long>(planned));
  }
  return Status::ok();
}

void CpuBackend::attach_providers(CpuMatmul& mm, int32_t weight) const {
  if (weight < 0 || static_cast<size_t>(weight) >= xnn_first_.size() || xnn_first_[weight] < 0) return;
  mm.xnn = xnn_first_[weight];
  mm.xnn_slices = xnn_count_[weight];
}

}  // namespace ember

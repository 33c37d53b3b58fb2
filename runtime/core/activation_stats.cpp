#include "core/activation_stats.h"

namespace ember {

ActivationStats ActivationStats::for_graph(const Graph& graph, bool include_output) {
  ActivationStats s;
  s.by_weight.assign(graph.weights.size(), -1);
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::MatMul || op.weight < 0) continue;
    if (!include_output && op.out == graph.logits) continue;
    if (s.by_weight[op.weight] >= 0) continue;  // one entry per weight, whatever multiplies it
    const WeightRef& w = graph.weights[op.weight];
    Entry e;
    e.weight = op.weight;
    e.name = w.name;
    e.cols = w.cols;
    e.sum_sq.assign(static_cast<size_t>(w.cols), 0.0);
    s.by_weight[op.weight] = static_cast<int32_t>(s.entries.size());
    s.entries.push_back(std::move(e));
  }
  return s;
}

void ActivationStats::add(int32_t weight, const float* a, int64_t rows, int64_t cols, int64_t stride) {
  if (weight < 0 || static_cast<size_t>(weight) >= by_weight.size() || by_weight[weight] < 0) return;
  Entry& e = entries[by_weight[weight]];
  if (cols != e.cols) return;  // not this weight's input (cannot happen for a checked graph)
  double* acc = e.sum_sq.data();
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a + r * stride;
    for (int64_t c = 0; c < cols; ++c) acc[c] += static_cast<double>(x[c]) * x[c];
  }
  e.rows += rows;
}

}  // namespace ember

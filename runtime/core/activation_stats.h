// Activation statistics for an importance matrix (issue 45, `ember imatrix`):
// for every matrix the graph multiplies an activation by, the sum over the
// rows seen of each input column's square, and the rows counted. A
// quantizer weighs a column's rounding error by its mean square (the
// expected squared input that error is multiplied by), so the columns that
// carry large activations are kept closer.
//
// Filled by a backend while a session collects them (Backend::
// set_activation_stats; the CPU backend adds each matmul step's input
// rows), read through the C API (ember_session_activation_stats).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"

namespace ember {

struct ActivationStats {
  struct Entry {
    int32_t weight = -1;   // index into Graph::weights
    std::string name;      // the weight's tensor name (GGUF's)
    int64_t cols = 0;      // input columns
    int64_t rows = 0;      // input rows added so far
    std::vector<double> sum_sq;  // cols sums of squares
  };
  std::vector<Entry> entries;     // in the graph's op order
  std::vector<int32_t> by_weight;  // Graph::weights index -> entry, or -1

  // An entry per weight some MatMul op multiplies, zeroed; the logits head
  // (the matmul writing Graph::logits) only when include_output (its rows
  // are the step's output rows, not every row).
  static ActivationStats for_graph(const Graph& graph, bool include_output);
  // Adds `rows` rows of `cols` floats (row stride `stride`) to the entry of
  // graph weight `weight`, if it has one.
  void add(int32_t weight, const float* a, int64_t rows, int64_t cols, int64_t stride);
};

}  // namespace ember

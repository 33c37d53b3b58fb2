// Importance matrices (issue 45): per weight matrix, the sum over calibration
// rows of each input column's square and the rows counted, as `ember
// imatrix` collects them (ember_session_collect_activations) and `ember
// quantize --imatrix` weighs each column's rounding error by (the mean
// square: core/dtype.h quantize_row_weighted).
//
// Files are llama.cpp's, so each side reads the other's:
// - GGUF (what llama-imatrix writes by default): general.type "imatrix",
//   imatrix.datasets (strings), imatrix.chunk_count and imatrix.chunk_size
//   (u32); per matrix NAME, the f32 tensors NAME.in_sum2 [cols, 1] (the sums)
//   and NAME.counts [1, 1] (the rows). Written and read.
// - the legacy .dat (llama-imatrix --output-format dat): int32 entry count;
//   per entry int32 name length, the name, int32 calls, int32 value count,
//   that many f32 values (the mean square times the calls); then int32
//   chunk count and the dataset's name. Read only.
// A file describing several matrices per tensor (mixture-of-experts) is
// refused, naming the tensor: ember runs none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ember {

struct ImatrixEntry {
  std::string name;            // the weight's tensor name ("blk.0.attn_q.weight")
  std::vector<float> sum_sq;   // per input column
  double rows = 0;             // rows counted (legacy files: the calls)
};

struct Imatrix {
  std::vector<ImatrixEntry> entries;
  std::vector<std::string> datasets;  // calibration text files
  uint32_t chunk_count = 0;           // chunks of text run
  uint32_t chunk_size = 0;            // tokens per chunk

  // The entry for a weight; a split part of a fused matrix (attn_q/k/v,
  // ffn_gate) falls back to the fused one's (attn_qkv, ffn_up), whose
  // input it shares (llama-imatrix's phi3 files).
  const ImatrixEntry* find(const std::string& name) const;
};

// Per column, the mean square (sum_sq / rows) with every column at least a
// millionth of the row's mean, so that no element's error is weightless;
// empty when rows is 0.
std::vector<float> imatrix_importance(const ImatrixEntry& e);

// GGUF, through a temporary file renamed into place. Errors: EMBER_ERR_IO,
// EMBER_ERR_INVALID_ARGUMENT (an entry without columns).
Status write_imatrix(const std::string& path, const Imatrix& m);

// GGUF (by its magic) or legacy .dat. Errors: EMBER_ERR_IO, EMBER_ERR_FORMAT
// / EMBER_ERR_TRUNCATED naming the field (hostile files included),
// EMBER_ERR_UNSUPPORTED (several matrices per tensor).
Result<Imatrix> read_imatrix(const std::string& path);
Result<Imatrix> parse_imatrix(const uint8_t* data, size_t size, const std::string& path);

}  // namespace ember

// What a model file says about itself beyond the C API's model info: its
// bytes, what one decode step reads, its quantization by matrix bytes and
// the data segment's digest. Used by bench, advise and gate.
#pragma once

#include <cstdint>
#include <string>

#include "ember.h"

namespace ember::cli {

struct ModelFacts {
  uint64_t weight_bytes = 0;            // every tensor
  uint64_t decode_bytes_per_token = 0;  // what one decode step reads
  std::string quantization;             // "q8_0 (+f32 x11)", by matrix bytes
  std::string recipe;                   // provenance.quantization
  std::string sha256;                   // the data segment's digest (metadata)
};

// From an open model's file (ember_model_get_file_info and its tensors).
// Errors: the C API's, with ember_last_error().
ember_status model_facts(const ember_model* model, ModelFacts* out);

}  // namespace ember::cli

// The .ember writer (conversion only: libember.a reads files, the tools
// write them). A ModelSpec is what the importers (importers.h) produce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/model_file.h"

namespace ember {

// A tensor to write: name, type, shape and its bytes (not owned).
struct TensorSource {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  uint64_t size = 0;
  Layout layout = Layout::RowMajor;  // of `data`
};

struct ModelSpec {
  HParams hparams;
  Vocab vocab;
  std::vector<TensorSource> tensors;
  Provenance provenance;
  // The layout the writer gives every RowMajor tensor it fits (Q8_0/Q4_0/Q5_0
  // matrices with rows a multiple of 16); RowMajor writes them as given.
  Layout quant_layout = Layout::Rows16;
};

// Serializes a model into the .ember layout. The spec is checked the way the
// loader would check the file (the writer never produces a file the loader
// refuses).
Result<std::vector<uint8_t>> serialize_model(const ModelSpec& spec);
Status write_model(const ModelSpec& spec, const std::string& path);

}  // namespace ember

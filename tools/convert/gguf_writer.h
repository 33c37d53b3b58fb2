// Writes a model as a GGUF v3 file that llama.cpp loads (the model's
// architecture; phi3's q/k/v and gate/up fused as llama.cpp reads them), for
// side-by-side runs on the same weights. Tensors keep
// their bytes (ember's Q8_0/Q4_0 blocks are GGUF's); GGUF dims are
// innermost first, so shapes are written reversed. ember's GGUF importer
// reads the file back to the same tensors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tools/convert/model_writer.h"

namespace ember {

// general.name for the file; "" leaves the key out.
struct GgufWriteOptions {
  std::string name;
  // Extra metadata written after ember's own keys (for tests of importers:
  // keys that must be refused or checked). A key ember writes itself may
  // not be repeated (GGUF forbids duplicates).
  std::vector<std::pair<std::string, uint32_t>> extra_u32;
  std::vector<std::pair<std::string, float>> extra_f32;
  std::vector<std::pair<std::string, std::string>> extra_str;
};

// Errors: EMBER_ERR_UNSUPPORTED (a byte-level BPE vocabulary without
// merges, a RoPE style other than the architecture's in llama.cpp),
// EMBER_ERR_BAD_TENSOR (a tensor that is not 1-D or 2-D), EMBER_ERR_IO.
Status write_gguf(const ModelSpec& spec, const std::string& path, const GgufWriteOptions& options = {});

// A GGUF v3 file that is not a model (an importance matrix): these keys, in
// this order (strings, string arrays, u32), and the tensors as given.
struct GgufPlainFile {
  std::vector<std::pair<std::string, std::string>> str;
  std::vector<std::pair<std::string, std::vector<std::string>>> strs;
  std::vector<std::pair<std::string, uint32_t>> u32;
  std::vector<TensorSource> tensors;
};
// Errors: EMBER_ERR_IO.
Status write_gguf_plain(const std::string& path, const GgufPlainFile& file);

}  // namespace ember

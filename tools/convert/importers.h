// Importers: turn a foreign model file into a ModelSpec the .ember writer
// takes. They live with the tools (the runtime only reads .ember files) and
// are a library so that tests can convert without spawning the CLI.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/model_file.h"
#include "platforms/linux/mapped_file.h"
#include "tools/convert/model_writer.h"

namespace ember {

// A ModelSpec plus the buffers it points into (the mapped source file and any
// tensors the importer had to convert, e.g. f16 norms to f32).
struct ImportedModel {
  ModelSpec spec;
  MappedFile source;
  std::vector<std::vector<uint8_t>> owned;
};

// llama2.c checkpoint (`model.bin`, legacy v0 layout) with its tokenizer.bin.
Result<std::unique_ptr<ImportedModel>> import_llama2c(const std::string& checkpoint, const std::string& tokenizer);

// GGUF v2/v3, architectures llama, qwen2, qwen3, phi3; tensors kept byte for
// byte in their GGUF type (fused attn_qkv and phi3's gate/up ffn_up split into
// whole rows).
Result<std::unique_ptr<ImportedModel>> import_gguf(const std::string& path);

// True when the file starts with the GGUF magic.
bool is_gguf_file(const std::string& path);

// Fills provenance (source name, SHA-256 of the source bytes, converter, a
// summary of the tensor types).
void set_provenance(ImportedModel* model, const std::string& source_path);

}  // namespace ember

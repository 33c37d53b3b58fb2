// A verified, memory-mapped .ember file. Nothing in it is used before every
// check in verify_model() has passed: framing, the FlatBuffers verifier with
// explicit limits, then the semantic rules (DESIGN.md principle 2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/status.h"
#include "format/dtype.h"
#include "model/hparams.h"
#include "platforms/linux/mapped_file.h"
#include "security/sha256.h"
#include "tokenizer/vocab.h"

namespace ember {

constexpr uint32_t kSchemaVersion = 1;
constexpr uint64_t kDataAlignment = 4096;  // the data segment starts on a page
constexpr uint64_t kTensorAlignment = 64;  // every tensor inside it
constexpr int kMaxDims = 4;

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  int n_dims = 0;
  int64_t shape[kMaxDims] = {0, 0, 0, 0};  // outermost first: [rows, cols]
  uint64_t offset = 0;                      // within the data segment
  uint64_t size = 0;                        // bytes
  const uint8_t* data = nullptr;            // into the mapping

  int64_t rows() const { return n_dims >= 2 ? shape[0] : 1; }
  int64_t cols() const { return n_dims >= 2 ? shape[1] : shape[0]; }
  uint64_t elements() const;
};

struct Provenance {
  std::string source_file;
  std::vector<uint8_t> source_sha256;
  std::string converter;
  std::string quantization;
};

// What a parsed file holds (also what the writer takes).
struct ModelContents {
  HParams hparams;
  Vocab vocab;
  std::vector<TensorView> tensors;
  Provenance provenance;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  std::vector<uint8_t> data_sha256;
};

// Parses and verifies `size` bytes of an .ember file. The views in `out`
// point into `data`, which must outlive them. Never reads outside
// [data, data+size).
Status verify_model(const uint8_t* data, size_t size, ModelContents* out);

class ModelFile {
 public:
  struct Options {
    bool verify_digest = false;  // hash the data segment against the metadata
  };
  static Result<std::unique_ptr<ModelFile>> open(const std::string& path, const Options& options);

  const HParams& hparams() const { return contents_.hparams; }
  const Vocab& vocab() const { return contents_.vocab; }
  const std::vector<TensorView>& tensors() const { return contents_.tensors; }
  const Provenance& provenance() const { return contents_.provenance; }
  const ModelContents& contents() const { return contents_; }
  const TensorView* find(std::string_view name) const;
  const MappedFile& mapping() const { return file_; }

 private:
  MappedFile file_;
  ModelContents contents_;
};

// A tensor to write: name, type, shape and its bytes (not owned).
struct TensorSource {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  uint64_t size = 0;
};

struct ModelSpec {
  HParams hparams;
  Vocab vocab;
  std::vector<TensorSource> tensors;
  Provenance provenance;
};

// Serializes a model into the .ember layout. The spec is checked the way the
// loader would check the file (the writer never produces a file the loader
// refuses).
Result<std::vector<uint8_t>> serialize_model(const ModelSpec& spec);
Status write_model(const ModelSpec& spec, const std::string& path);

}  // namespace ember

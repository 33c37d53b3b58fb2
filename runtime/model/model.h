// An opened model: the verified mapping, its tokenizer, and the checks the
// architecture needs. Immutable after open, so sessions on many threads may
// share it.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "format/model_file.h"
#include "tokenizer/tokenizer.h"

namespace ember {

class Model {
 public:
  // The integrity policy (ember_integrity_policy): structure only, + the
  // data segment's digest, + a signature by public_key_pem over the file.
  struct Options {
    bool verify_digest = false;
    bool verify_signature = false;
    std::string public_key_pem;  // PEM text, used during open only
    bool guard_mapping = true;   // register with the SIGBUS guard (mapping_guard.h)
  };
  static Result<std::unique_ptr<Model>> open(const std::string& path, const Options& options);

  // Whether the mapped file is still the one verified (ModelFile::check_intact).
  Status check_intact() const { return file_->check_intact(); }

  const ModelFile& file() const { return *file_; }
  const HParams& hparams() const { return file_->hparams(); }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  uint64_t parameter_count() const;

 private:
  std::unique_ptr<ModelFile> file_;
  Tokenizer tokenizer_;
};

}  // namespace ember

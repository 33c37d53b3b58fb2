#include "model/model.h"

#include "model/llama_graph.h"

namespace ember {

Result<std::unique_ptr<Model>> Model::open(const std::string& path, const Options& options) {
  ModelFile::Options fo;
  fo.verify_digest = options.verify_digest;
  fo.verify_signature = options.verify_signature;
  fo.public_key_pem = options.public_key_pem;
  fo.guard_mapping = options.guard_mapping;
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ModelFile> file, ModelFile::open(path, fo));
  EMBER_TRY(check_llama_tensors(file->contents()).with_context("'" + path + "'"));
  auto model = std::unique_ptr<Model>(new Model());
  EMBER_ASSIGN_OR_RETURN(model->tokenizer_, Tokenizer::create(file->vocab()));
  model->file_ = std::move(file);
  return model;
}

uint64_t Model::parameter_count() const {
  uint64_t n = 0;
  for (const auto& t : file_->tensors()) n += t.elements();
  return n;
}

}  // namespace ember

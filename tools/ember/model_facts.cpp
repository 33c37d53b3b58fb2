#include "tools/ember/model_facts.h"

#include <algorithm>
#include <memory>

#include "format/model_file.h"

namespace ember::cli {

Result<ModelFacts> model_facts(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ModelFile> file, ModelFile::open(path, ModelFile::Options{}));
  ModelFacts f;
  uint64_t by_type[kDTypeCount] = {};
  int count_by_type[kDTypeCount] = {};
  for (const TensorView& t : file->tensors()) {
    f.weight_bytes += t.size;
    by_type[static_cast<int>(t.dtype)] += t.size;
    count_by_type[static_cast<int>(t.dtype)]++;
    // A decode step reads one row of the embedding table (all of it when it
    // is also the output matrix) and every other tensor whole.
    if (t.name == "token_embd.weight" && !file->hparams().tied_embeddings) {
      f.decode_bytes_per_token += t.size / std::max<int64_t>(1, t.rows());
    } else {
      f.decode_bytes_per_token += t.size;
    }
  }
  int main_type = 0;
  for (int i = 1; i < kDTypeCount; ++i) {
    if (by_type[i] > by_type[main_type]) main_type = i;
  }
  f.quantization = dtype_name(static_cast<DType>(main_type));
  std::string others;
  for (int i = 0; i < kDTypeCount; ++i) {
    if (i == main_type || !count_by_type[i]) continue;
    others += std::string(others.empty() ? "" : ", ") + dtype_name(static_cast<DType>(i)) + " x" +
              std::to_string(count_by_type[i]);
  }
  if (!others.empty()) f.quantization += " (+" + others + ")";
  f.recipe = file->provenance().quantization;
  f.sha256 = to_hex(file->contents().data_sha256.data(), file->contents().data_sha256.size());
  return f;
}

}  // namespace ember::cli

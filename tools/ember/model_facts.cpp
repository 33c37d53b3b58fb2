#include "tools/ember/model_facts.h"

#include <cstring>

namespace ember::cli {

ember_status model_facts(const ember_model* model, ModelFacts* out) {
  ember_model_file_info file;
  std::memset(&file, 0, sizeof file);
  file.struct_size = sizeof file;
  ember_status st = ember_model_get_file_info(model, &file);
  if (st != EMBER_OK) return st;
  ModelFacts f;
  f.weight_bytes = file.weight_bytes;
  f.decode_bytes_per_token = file.decode_weight_bytes;
  f.recipe = file.quantization;
  f.sha256 = file.data_sha256;
  // The type holding the most bytes (the first in the format's order on a
  // tie), then the others with their tensor counts.
  uint64_t by_type[EMBER_TYPE_COUNT] = {};
  int count_by_type[EMBER_TYPE_COUNT] = {};
  const char* names[EMBER_TYPE_COUNT] = {};
  for (size_t i = 0; i < file.n_tensors; ++i) {
    ember_tensor_info t;
    std::memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    if ((st = ember_model_get_tensor_info(model, i, &t)) != EMBER_OK) return st;
    by_type[t.type] += t.bytes;
    count_by_type[t.type]++;
    names[t.type] = t.type_name;
  }
  int main_type = 0;
  for (int i = 1; i < EMBER_TYPE_COUNT; ++i) {
    if (by_type[i] > by_type[main_type]) main_type = i;
  }
  f.quantization = names[main_type] ? names[main_type] : "f32";
  std::string others;
  for (int i = 0; i < EMBER_TYPE_COUNT; ++i) {
    if (i == main_type || !count_by_type[i]) continue;
    others += std::string(others.empty() ? "" : ", ") + names[i] + " x" + std::to_string(count_by_type[i]);
  }
  if (!others.empty()) f.quantization += " (+" + others + ")";
  *out = std::move(f);
  return EMBER_OK;
}

}  // namespace ember::cli

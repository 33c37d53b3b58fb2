// Validates the plain reference forward pass against llama2.c's golden
// output, so other suites can trust it on prompts without a golden file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "reference/llama2c_reference.h"
#include "test_data.h"

namespace ember::test {
namespace {

template <typename T>
std::vector<T> read_numbers(const std::string& path) {
  std::istringstream in(read_text_file(path));
  std::vector<T> out;
  T v;
  while (in >> v) out.push_back(v);
  return out;
}

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (int32_t i = 1; i < static_cast<int32_t>(v.size()); ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

}  // namespace

TEST_SUITE("reference") {

TEST_CASE("reference forward reproduces llama2.c's golden logits and greedy ids") {
  const std::string model = test_data("models/stories260K.bin");
  if (model.empty()) return;
  const std::string ids_path = test_data("golden/once-upon-a-time.ids.txt");
  if (ids_path.empty()) return;
  const std::string logits_path = test_data("golden/once-upon-a-time.logits.txt");
  if (logits_path.empty()) return;

  ReferenceLlama ref;
  REQUIRE(ref.load(model));
  CHECK(ref.vocab_size() == 512);
  CHECK(ref.seq_len() == 512);

  const auto ids = read_numbers<int32_t>(ids_path);
  const auto golden = read_numbers<float>(logits_path);
  REQUIRE(ids.size() == 200);
  REQUIRE(golden.size() == 512);
  CHECK(ids[0] == 1);  // BOS

  // The prompt is BOS + "Once upon a time": positions 0..4. From position 4
  // on, each next id in the file is llama2.c's greedy choice; before that
  // the next id is the prompt's, not a prediction.
  constexpr size_t kLastPromptPos = 4;
  size_t mismatches = 0;
  for (size_t pos = 0; pos + 1 < ids.size(); ++pos) {
    const std::vector<float> logits =
        ref.forward(ids[pos], static_cast<int32_t>(pos));
    REQUIRE(logits.size() == 512);
    if (pos == kLastPromptPos) {
      float worst = 0.0f;
      for (size_t i = 0; i < logits.size(); ++i) {
        worst = std::max(worst, std::fabs(logits[i] - golden[i]));
      }
      MESSAGE("max |reference - golden| logit difference: " << worst);
      CHECK(worst < 1e-4f);
    }
    if (pos >= kLastPromptPos) {
      const int32_t predicted = argmax(logits);
      if (predicted != ids[pos + 1]) {
        ++mismatches;
        MESSAGE("position " << pos << ": argmax " << predicted << ", golden "
                            << ids[pos + 1]);
      }
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("reference loader fails cleanly") {
  ReferenceLlama ref;
  CHECK_FALSE(ref.load("/nonexistent/stories.bin"));
  CHECK(ref.forward(1, 0).empty());

  const std::string model = test_data("models/stories260K.bin");
  if (model.empty()) return;
  // A truncated copy (header and a little data) is rejected, not read past.
  const std::string bytes = read_text_file(model);
  const std::string dir = temp_dir("reference");
  const std::string truncated = dir + "/truncated.bin";
  {
    std::FILE* f = std::fopen(truncated.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(bytes.data(), 1, 1000, f);
    std::fclose(f);
  }
  CHECK_FALSE(ref.load(truncated));
  std::filesystem::remove_all(dir);
  REQUIRE(ref.load(model));
  CHECK(ref.forward(-1, 0).empty());
  CHECK(ref.forward(512, 0).empty());
  CHECK(ref.forward(1, 512).empty());
  CHECK(ref.forward(1, 0).size() == 512);
}

}  // TEST_SUITE("reference")

}  // namespace ember::test

// The invariant exact speculative decoding rests on (issue 42): a row's
// logits are bitwise the same whatever the number of rows in its step — the
// last of 21 prompt tokens run alone after 20, or in one step of 2, 3, 6, 9,
// 16 (the most a streamed small step takes), 17 or all 21 rows (the int8
// panels' prefill) — for every weight type on every kernel path this CPU has.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "ember.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

// The logits after the prompt, run in `s` from empty as a prefill of
// `split` tokens and then one step of the rest.
std::vector<float> last_logits(ember_session* s, const std::vector<int32_t>& prompt, size_t split, int32_t vocab) {
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  std::vector<float> logits(static_cast<size_t>(vocab));
  if (split > 0) REQUIRE(ember_session_prefill(s, prompt.data(), split, logits.data()) == EMBER_OK);
  REQUIRE(ember_session_prefill(s, prompt.data() + split, prompt.size() - split, logits.data()) == EMBER_OK);
  return logits;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("a row's logits are bitwise the same whatever the rows in its step, every path and weight type") {
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const SynthShape k256 = {"k256", 256, 512, 2, 4, 2, 0, 64};  // whole 256-element super-blocks
  const std::string dir = test::temp_dir("step-rows");
  const char* saved = std::getenv("EMBER_ISA");
  const std::string saved_isa = saved ? saved : "";
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS}) {
    const std::string type = dtype_name(t);
    CAPTURE(type);
    const bool super = dtype_block_elements(t) == 256;
    auto m = make_synthetic(super ? k256 : tiny, t, 5, "");
    REQUIRE(m.is_ok());
    const std::string path = dir + "/m-" + type + ".ember";
    REQUIRE(write_model(m.value()->spec, path).is_ok());
    ember_model* model = nullptr;
    REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 21; ++i) prompt.push_back(3 + (i * 29) % (info.vocab_size - 3));
    for (int i = 0; i < kCpuIsaCount; ++i) {
      const CpuIsa isa = static_cast<CpuIsa>(i);
      if (!cpu_isa_supported(isa)) continue;
      const std::string isa_name = cpu_isa_name(isa);
      CAPTURE(isa_name);
      setenv("EMBER_ISA", isa_name.c_str(), 1);  // read when a session is created
      ember_session_options so;
      ember_session_options_default(&so);
      so.context_length = 64;
      so.max_batch = 32;
      so.n_threads = 2;
      ember_session* s = nullptr;
      REQUIRE(ember_session_create(model, &so, &s) == EMBER_OK);
      const std::vector<float> alone = last_logits(s, prompt, 20, info.vocab_size);
      for (size_t split : {0u, 4u, 5u, 12u, 15u, 18u, 19u}) {
        CAPTURE(split);
        const std::vector<float> x = last_logits(s, prompt, split, info.vocab_size);
        CHECK(std::memcmp(x.data(), alone.data(), x.size() * sizeof(float)) == 0);
      }
      ember_session_free(s);
    }
    ember_model_free(model);
  }
  if (saved_isa.empty()) {
    unsetenv("EMBER_ISA");
  } else {
    setenv("EMBER_ISA", saved_isa.c_str(), 1);
  }
}

}  // TEST_SUITE
}  // namespace ember

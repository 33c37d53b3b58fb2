// qwen2: llama plus Q/K/V biases and half-split RoPE. The synthetic qwen2
// family round-trips through GGUF (general.architecture qwen2), its biases
// change the logits (they are applied), bad biases are refused, and Vulkan
// (lavapipe) gives the CPU's logits. The comparison with llama.cpp itself is
// tools/scripts/compare_logits.sh (docs/decisions.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember.h"
#include "model/llama_graph.h"
#include "model/model.h"
#include "test_data.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/importers.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"
#include "model/family_fixture.h"
#include "vulkan/vulkan_fixture.h"

namespace {

using namespace ember;

using ember::test::prefill_logits;

std::unique_ptr<ImportedModel> tiny_qwen2() {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  shape.arch = "qwen2";
  auto m = make_synthetic(shape, DType::F32, 9, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return std::move(m).value();
}

const std::vector<int32_t> kTokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};

}  // namespace

TEST_SUITE("qwen2") {

TEST_CASE("qwen2 synthetic: biases and half-split rope survive GGUF, the biases are applied") {
  const std::string dir = test::temp_dir("qwen2");
  auto model = tiny_qwen2();
  ModelSpec& spec = model->spec;
  CHECK(spec.hparams.arch == ModelArch::Qwen2);
  CHECK(spec.hparams.rope_style == RopeStyle::Half);
  const std::string ember_path = dir + "/q.ember", gguf = dir + "/q.gguf", converted = dir + "/q-conv.ember";
  REQUIRE(write_model(spec, ember_path).is_ok());
  REQUIRE(write_gguf(spec, gguf).is_ok());
  auto imported = import_gguf(gguf);
  REQUIRE_MESSAGE(imported.is_ok(), imported.status().message());
  CHECK(imported.value()->spec.hparams.arch == ModelArch::Qwen2);
  CHECK(imported.value()->spec.hparams.rope_style == RopeStyle::Half);
  REQUIRE(write_model(imported.value()->spec, converted).is_ok());
  const std::vector<float> a = prefill_logits(ember_path, kTokens);
  CHECK(ember::test::max_abs_diff(a, prefill_logits(converted, kTokens)) == 0.0);

  // The graph: three bias-adds per layer, after the q/k/v matmuls.
  auto opened = Model::open(ember_path, Model::Options{});
  REQUIRE(opened.is_ok());
  auto g = build_llama_graph(opened.value()->file().contents(), 32, 8);
  REQUIRE(g.is_ok());
  int biases = 0;
  for (const Op& op : g->ops) biases += op.kind == OpKind::BiasAdd;
  CHECK(biases == 3 * static_cast<int>(spec.hparams.n_layers));

  // Zero biases: other logits.
  ModelSpec zero = spec;
  std::vector<float> zeros(64, 0.0f);
  for (TensorSource& t : zero.tensors) {
    if (t.name.find(".bias") != std::string::npos) t.data = zeros.data();
  }
  const std::string zero_path = dir + "/q-zero.ember";
  REQUIRE(write_model(zero, zero_path).is_ok());
  CHECK(ember::test::max_abs_diff(a, prefill_logits(zero_path, kTokens)) > 1e-3);
}

TEST_CASE("qwen2: a missing or misshapen bias is refused by name") {
  const std::string dir = test::temp_dir("qwen2-bad");
  auto model = tiny_qwen2();
  {
    ModelSpec spec = model->spec;
    spec.tensors.erase(std::remove_if(spec.tensors.begin(), spec.tensors.end(),
                                      [](const TensorSource& t) { return t.name == "blk.1.attn_k.bias"; }),
                       spec.tensors.end());
    REQUIRE(write_model(spec, dir + "/missing.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/missing.ember").c_str(), nullptr, &m) == EMBER_ERR_MISSING_TENSOR);
    CHECK(std::string(ember_last_error()).find("blk.1.attn_k.bias") != std::string::npos);
  }
  {
    ModelSpec spec = model->spec;
    for (TensorSource& t : spec.tensors) {
      if (t.name == "blk.0.attn_v.bias") {
        t.shape = {t.shape[0] / 2};
        t.size /= 2;
      }
    }
    REQUIRE(write_model(spec, dir + "/short.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/short.ember").c_str(), nullptr, &m) == EMBER_ERR_BAD_TENSOR);
    CHECK(std::string(ember_last_error()).find("blk.0.attn_v.bias") != std::string::npos);
  }
  // A llama file with a bias: refused (the llama graph has none).
  {
    ModelSpec spec = model->spec;
    spec.hparams.arch = ModelArch::Llama;
    spec.hparams.rope_style = RopeStyle::Adjacent;
    REQUIRE(write_model(spec, dir + "/llama-bias.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/llama-bias.ember").c_str(), nullptr, &m) == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(ember_last_error()).find(".bias") != std::string::npos);
  }
}

#if EMBER_VULKAN
TEST_CASE("qwen2: vulkan gives the cpu's logits") {
  ember::test::check_vulkan_matches_cpu(tiny_qwen2()->spec, "qwen2-vk");
}
#endif

}  // TEST_SUITE

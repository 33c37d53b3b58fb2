// qwen3: llama plus a per-head RMSNorm of Q and K before half-split RoPE,
// with heads wider than dim / n_heads. The synthetic qwen3 family
// round-trips through GGUF (general.architecture qwen3), its Q/K norms are
// grouped rmsnorm ops and change the logits (they are applied), missing or
// misshapen norms are refused by name, a grouped rmsnorm equals the plain
// kernel on each group, and Vulkan (lavapipe) gives the CPU's logits. The
// comparison with llama.cpp itself is tools/scripts/compare_logits.sh
// (docs/decisions.md).
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

// Heads of 32 over dim 64: q is 4 x 32 = 128 wide, as Qwen3's are wider
// than dim / n_heads.
std::unique_ptr<ImportedModel> tiny_qwen3() {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  shape.arch = "qwen3";
  shape.head_dim = 32;
  auto m = make_synthetic(shape, DType::F32, 11, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return std::move(m).value();
}

const std::vector<int32_t> kTokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};

}  // namespace

TEST_SUITE("qwen3") {

TEST_CASE("qwen3 synthetic: q/k norms and wide heads survive GGUF, the norms are applied per head") {
  const std::string dir = test::temp_dir("qwen3");
  auto model = tiny_qwen3();
  ModelSpec& spec = model->spec;
  CHECK(spec.hparams.arch == ModelArch::Qwen3);
  CHECK(spec.hparams.rope_style == RopeStyle::Half);
  CHECK(spec.hparams.q_dim() == 128);
  const std::string ember_path = dir + "/q.ember", gguf = dir + "/q.gguf", converted = dir + "/q-conv.ember";
  REQUIRE(write_model(spec, ember_path).is_ok());
  REQUIRE(write_gguf(spec, gguf).is_ok());
  auto imported = import_gguf(gguf);
  REQUIRE_MESSAGE(imported.is_ok(), imported.status().message());
  CHECK(imported.value()->spec.hparams.arch == ModelArch::Qwen3);
  CHECK(imported.value()->spec.hparams.rope_style == RopeStyle::Half);
  CHECK(imported.value()->spec.hparams.head_dim() == 32);
  REQUIRE(write_model(imported.value()->spec, converted).is_ok());
  const std::vector<float> a = prefill_logits(ember_path, kTokens);
  CHECK(ember::test::max_abs_diff(a, prefill_logits(converted, kTokens)) == 0.0);

  // The graph: two grouped rmsnorms per layer (q, then k), head_dim wide,
  // right before the two ropes.
  auto opened = Model::open(ember_path, Model::Options{});
  REQUIRE(opened.is_ok());
  auto g = build_llama_graph(opened.value()->file().contents(), 32, 8);
  REQUIRE(g.is_ok());
  int grouped = 0;
  for (size_t i = 0; i < g->ops.size(); ++i) {
    const Op& op = g->ops[i];
    if (op.kind != OpKind::RmsNorm || op.params.rmsnorm.group == 0) continue;
    ++grouped;
    CHECK(op.params.rmsnorm.group == 32);
    CHECK(op.out == op.a);
    REQUIRE(i + 2 < g->ops.size());
    // q's norm, k's norm, rope q, rope k: each norm two ops before its rope.
    const Op& rope = g->ops[i + 2];
    CHECK(rope.kind == OpKind::Rope);
    CHECK(rope.a == op.a);
  }
  CHECK(grouped == 2 * static_cast<int>(spec.hparams.n_layers));

  // Other norm weights (each a different vector per head element): other
  // logits, for q and for k alike.
  for (const char* which : {"attn_q_norm", "attn_k_norm"}) {
    ModelSpec changed = spec;
    std::vector<float> w(32);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f + 0.1f * static_cast<float>(i % 7);
    for (TensorSource& t : changed.tensors) {
      if (t.name.find(which) != std::string::npos) t.data = w.data();
    }
    const std::string path = dir + "/q-" + which + ".ember";
    REQUIRE(write_model(changed, path).is_ok());
    CHECK(ember::test::max_abs_diff(a, prefill_logits(path, kTokens)) > 1e-3);
  }
}

TEST_CASE("qwen3: a missing or misshapen q/k norm is refused by name") {
  const std::string dir = test::temp_dir("qwen3-bad");
  auto model = tiny_qwen3();
  {
    ModelSpec spec = model->spec;
    spec.tensors.erase(std::remove_if(spec.tensors.begin(), spec.tensors.end(),
                                      [](const TensorSource& t) { return t.name == "blk.1.attn_k_norm.weight"; }),
                       spec.tensors.end());
    REQUIRE(write_model(spec, dir + "/missing.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/missing.ember").c_str(), nullptr, &m) == EMBER_ERR_MISSING_TENSOR);
    CHECK(std::string(ember_last_error()).find("blk.1.attn_k_norm.weight") != std::string::npos);
  }
  {
    // dim / n_heads (16) wide: the width of a llama head, not of this model's.
    ModelSpec spec = model->spec;
    for (TensorSource& t : spec.tensors) {
      if (t.name == "blk.0.attn_q_norm.weight") {
        t.shape = {16};
        t.size = 16 * sizeof(float);
      }
    }
    REQUIRE(write_model(spec, dir + "/short.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/short.ember").c_str(), nullptr, &m) == EMBER_ERR_BAD_TENSOR);
    CHECK(std::string(ember_last_error()).find("blk.0.attn_q_norm.weight") != std::string::npos);
  }
  // A llama file with q/k norms: refused (the llama graph has none).
  {
    ModelSpec spec = model->spec;
    spec.hparams.arch = ModelArch::Llama;
    spec.hparams.rope_style = RopeStyle::Adjacent;
    REQUIRE(write_model(spec, dir + "/llama-norm.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/llama-norm.ember").c_str(), nullptr, &m) == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(ember_last_error()).find("_norm.weight") != std::string::npos);
  }
  // A qwen3 GGUF with a tensor the graph does not have (a q bias): refused
  // by name at import.
  {
    ModelSpec spec = model->spec;
    std::vector<float> bias(128, 0.5f);
    spec.tensors.push_back({"blk.0.attn_q.bias", DType::F32, {128}, bias.data(), bias.size() * sizeof(float)});
    REQUIRE(write_gguf(spec, dir + "/bias.gguf").is_ok());
    auto imported = import_gguf(dir + "/bias.gguf");
    REQUIRE(!imported.is_ok());
    CHECK(imported.status().code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(imported.status().message()).find("blk.0.attn_q.bias") != std::string::npos);
  }
}

TEST_CASE("grouped rmsnorm: each group normalized on its own with the group's weight") {
  // A two-op graph through the CPU backend: rmsnorm of a 3-row activation of
  // 4 groups of 24 (not a multiple of any vector width), against the plain
  // formula per group.
  const int64_t group = 24, groups = 4, cols = group * groups;
  const int32_t rows = 3;
  Graph g;
  g.hparams.dim = static_cast<uint32_t>(cols);
  g.hparams.n_heads = 4;
  g.hparams.n_kv_heads = 4;
  g.hparams.vocab_size = static_cast<uint32_t>(cols);
  g.hparams.n_layers = 0;
  g.max_batch = rows;
  g.context = 8;
  std::vector<float> embd(static_cast<size_t>(cols * cols)), w(group);
  for (size_t i = 0; i < embd.size(); ++i) embd[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + (i % 5));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + 0.05f * static_cast<float>(i);
  WeightRef e;
  e.name = "embd";
  e.data = reinterpret_cast<const uint8_t*>(embd.data());
  e.rows = cols;
  e.cols = cols;
  e.size = embd.size() * sizeof(float);
  WeightRef n;
  n.name = "norm";
  n.data = reinterpret_cast<const uint8_t*>(w.data());
  n.rows = 1;
  n.cols = group;
  n.size = w.size() * sizeof(float);
  g.weights = {e, n};
  g.activations = {{"x", cols, rows}, {"logits", cols, 1}};
  Op embed;
  embed.kind = OpKind::Embed;
  embed.out = 0;
  embed.weight = 0;
  Op norm;
  norm.kind = OpKind::RmsNorm;
  norm.out = 0;
  norm.a = 0;
  norm.weight = 1;
  norm.params.rmsnorm.eps = 1e-6f;
  norm.params.rmsnorm.group = static_cast<uint32_t>(group);
  g.ops = {embed, norm};
  g.logits = 0;
  REQUIRE(check_op_params(g).is_ok());
  // A group that does not divide the row, or a weight of the row's width:
  // refused before any backend reads out of bounds.
  {
    Graph bad = g;
    bad.ops[1].params.rmsnorm.group = 25;
    CHECK(check_op_params(bad).code() == EMBER_ERR_BAD_TENSOR);
    bad.ops[1].params.rmsnorm.group = 0;
    CHECK(check_op_params(bad).code() == EMBER_ERR_BAD_TENSOR);
  }
  ember::test::Runner cpu;
  REQUIRE(cpu.init(g, ember::test::cpu_backend()).is_ok());
  const std::vector<int32_t> tokens = {5, 17, 60};
  REQUIRE(cpu.step(tokens, 0, nullptr).is_ok());
  const std::vector<float> out = cpu.cpu_activation(0, rows);
  double worst = 0;
  for (int32_t r = 0; r < rows; ++r) {
    const float* x = embd.data() + tokens[r] * cols;
    const float* y = out.data() + r * cols;
    for (int64_t j = 0; j < groups; ++j) {
      double ss = 0;
      for (int64_t c = 0; c < group; ++c) ss += static_cast<double>(x[j * group + c]) * x[j * group + c];
      const double inv = 1.0 / std::sqrt(ss / group + 1e-6);
      for (int64_t c = 0; c < group; ++c) {
        worst = std::max(worst, std::fabs(y[j * group + c] - w[c] * inv * x[j * group + c]));
      }
    }
  }
  CHECK(worst < 1e-5);
}

#if EMBER_VULKAN
TEST_CASE("qwen3: vulkan gives the cpu's logits") {
  ember::test::check_vulkan_matches_cpu(tiny_qwen3()->spec, "qwen3-vk");
}
#endif

}  // TEST_SUITE

// Llama 3.x: the rope_freqs frequency factors run on the CPU and on Vulkan
// (each pair's angle divided by its factor), the synthetic llama3 family
// round-trips through GGUF, and anything in a llama GGUF that would change
// the arithmetic and that ember does not implement is refused by name
// (issue 13: a Llama 3.1 file used to run with its factors silently dropped).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember.h"
#include "model/llama_graph.h"
#include "test_data.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/importers.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"
#include "model/family_fixture.h"
#include "vulkan/vulkan_fixture.h"

namespace {

using namespace ember;
using ember::test::Builder;
using ember::test::Runner;

// A rope graph (embed -> rope -> tail) whose rope ops carry `factors`.
Builder rope_graph(const std::vector<float>& factors) {
  Builder b(64, 4, 2, 40, 32, 8);
  b.g.hparams.rope_theta = 500000.0f;
  const int32_t x = b.embed();
  b.op(OpKind::Rope, x, x);
  b.g.ops.back().params.rope.freq_factors = factors.data();
  b.tail(x);
  return b;
}

using ember::test::prefill_logits;

SynthShape tiny_llama3() {
  SynthShape s;
  REQUIRE(synth_shape("tiny", &s));
  s.arch = "llama3";
  return s;
}

// Converts a GGUF with `ember convert`'s importer; the status.
Status import_status(const std::string& gguf) {
  auto r = import_gguf(gguf);
  return r.is_ok() ? Status::ok() : r.status();
}

}  // namespace

TEST_SUITE("llama3") {

TEST_CASE("llama3 rope factors: the cpu divides each pair's angle by its factor") {
  const int64_t head_dim = 16;
  std::vector<float> factors(head_dim / 2);
  for (size_t j = 0; j < factors.size(); ++j) factors[j] = 1.0f + 1.5f * static_cast<float>(j);
  Builder b = rope_graph(factors);
  Runner cpu;
  REQUIRE(cpu.init(b.g, ember::test::cpu_backend()).is_ok());
  const std::vector<int32_t> tokens = {3, 17, 5};
  const int32_t pos = 9;
  REQUIRE(cpu.step(tokens, pos, nullptr).is_ok());
  const int32_t x = b.g.ops[0].out;
  const std::vector<float> got = cpu.cpu_activation(x, static_cast<int32_t>(tokens.size()));
  // The embedding table (f32, vocab x dim) the graph's first weight holds.
  const float* table = reinterpret_cast<const float*>(b.g.weights[b.g.ops[0].weight].data);
  double worst = 0, moved = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* e = table + tokens[t] * 64;
    for (int h = 0; h < 4; ++h) {
      for (int64_t j = 0; j < head_dim / 2; ++j) {
        const double freq = std::pow(500000.0, -2.0 * j / head_dim) / factors[j];
        const double angle = static_cast<double>(pos + t) * freq;
        const double v0 = e[h * head_dim + 2 * j], v1 = e[h * head_dim + 2 * j + 1];
        const double w0 = v0 * std::cos(angle) - v1 * std::sin(angle);
        const double w1 = v0 * std::sin(angle) + v1 * std::cos(angle);
        worst = std::max({worst, std::fabs(w0 - got[t * 64 + h * head_dim + 2 * j]),
                          std::fabs(w1 - got[t * 64 + h * head_dim + 2 * j + 1])});
        // Without the factor the angle would differ by this much.
        moved = std::max(moved, std::fabs(static_cast<double>(pos + t) * freq * (factors[j] - 1.0)));
      }
    }
  }
  CHECK(worst < 1e-4);
  CHECK(moved > 1.0);  // the factors matter at these positions
}

#if EMBER_VULKAN
TEST_CASE("llama3 rope factors: vulkan gives the cpu's rotation") {
  std::vector<float> factors(8);
  for (size_t j = 0; j < factors.size(); ++j) factors[j] = 8.0f / (1.0f + static_cast<float>(j));
  Builder b = rope_graph(factors);
  auto vk = ember::test::open_vulkan();
  if (!vk) return;
  Runner cpu, gpu;
  REQUIRE(cpu.init(b.g, ember::test::cpu_backend()).is_ok());
  REQUIRE(gpu.init(b.g, std::move(vk)).is_ok());
  std::vector<float> lc, lg;
  int32_t pos = 0;
  for (const std::vector<int32_t>& tokens : {std::vector<int32_t>{1, 2, 3, 4}, std::vector<int32_t>{7}}) {
    REQUIRE(cpu.step(tokens, pos, &lc).is_ok());
    REQUIRE(gpu.step(tokens, pos, &lg).is_ok());
    CHECK(ember::test::max_abs_diff(lc, lg) < 1e-4);
    pos += static_cast<int32_t>(tokens.size());
  }
}
#endif

TEST_CASE("llama3 synthetic: rope_freqs and tied embeddings survive GGUF and conversion, and change the logits") {
  const std::string dir = test::temp_dir("llama3");
  const SynthShape shape = tiny_llama3();
  auto model = make_synthetic(shape, DType::F32, 5, "");
  REQUIRE_MESSAGE(model.is_ok(), model.status().message());
  ModelSpec& spec = model.value()->spec;
  CHECK(spec.hparams.tied_embeddings);
  CHECK(spec.hparams.rope_theta == 500000.0f);
  const TensorSource* freqs = nullptr;
  for (const TensorSource& t : spec.tensors) {
    if (t.name == "rope_freqs.weight") freqs = &t;
    CHECK(t.name != "output.weight");
  }
  REQUIRE(freqs != nullptr);
  const float* f = reinterpret_cast<const float*>(freqs->data);
  // Llama 3.1's rule at head_dim 16, theta 500000: the fastest pairs keep
  // their frequency, the slowest are slowed 8x.
  CHECK(f[0] == 1.0f);
  CHECK(f[7] == 8.0f);

  const std::string ember_path = dir + "/l3.ember", gguf = dir + "/l3.gguf", converted = dir + "/l3-conv.ember";
  REQUIRE(write_model(spec, ember_path).is_ok());
  REQUIRE(write_gguf(spec, gguf).is_ok());
  auto imported = import_gguf(gguf);
  REQUIRE_MESSAGE(imported.is_ok(), imported.status().message());
  REQUIRE(write_model(imported.value()->spec, converted).is_ok());
  const std::vector<int32_t> tokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
  const std::vector<float> a = prefill_logits(ember_path, tokens), b = prefill_logits(converted, tokens);
  CHECK(ember::test::max_abs_diff(a, b) == 0.0);

  // The same weights without the factors: other logits (the tensor is used).
  ModelSpec plain = spec;
  plain.tensors.erase(std::remove_if(plain.tensors.begin(), plain.tensors.end(),
                                     [](const TensorSource& t) { return t.name == "rope_freqs.weight"; }),
                      plain.tensors.end());
  const std::string plain_path = dir + "/l3-plain.ember";
  REQUIRE(write_model(plain, plain_path).is_ok());
  CHECK(ember::test::max_abs_diff(a, prefill_logits(plain_path, tokens)) > 1e-4);

  // All-one factors are exactly no factors.
  ModelSpec ones = spec;
  std::vector<float> one(freqs->size / sizeof(float), 1.0f);
  for (TensorSource& t : ones.tensors) {
    if (t.name == "rope_freqs.weight") t.data = one.data();
  }
  const std::string ones_path = dir + "/l3-ones.ember";
  REQUIRE(write_model(ones, ones_path).is_ok());
  CHECK(ember::test::max_abs_diff(prefill_logits(ones_path, tokens), prefill_logits(plain_path, tokens)) == 0.0);
}

TEST_CASE("llama3: bad rope_freqs tensors are refused when the model opens") {
  const std::string dir = test::temp_dir("llama3-bad");
  auto model = make_synthetic(tiny_llama3(), DType::F32, 5, "");
  REQUIRE(model.is_ok());
  struct Case {
    const char* what;
    float value;
    int64_t len_delta;
  };
  for (const Case& c : {Case{"zero factor", 0.0f, 0}, Case{"nan factor", NAN, 0}, Case{"short", 1.0f, -1}}) {
    CAPTURE(c.what);
    ModelSpec spec = model.value()->spec;
    std::vector<float> bad(8, 1.0f);
    bad[3] = c.value;
    for (TensorSource& t : spec.tensors) {
      if (t.name != "rope_freqs.weight") continue;
      t.shape = {8 + c.len_delta};
      t.data = bad.data();
      t.size = static_cast<uint64_t>(8 + c.len_delta) * sizeof(float);
    }
    const std::string path = dir + "/bad.ember";
    REQUIRE(write_model(spec, path).is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open(path.c_str(), nullptr, &m) == EMBER_ERR_BAD_TENSOR);
    CHECK(std::string(ember_last_error()).find("rope_freqs") != std::string::npos);
    ember_model_free(m);
  }
}

TEST_CASE("llama GGUF: keys and tensors that change the arithmetic are refused by name, neutral ones accepted") {
  const std::string dir = test::temp_dir("llama-refuse");
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  auto model = make_synthetic(shape, DType::F32, 5, "");
  REQUIRE(model.is_ok());
  const ModelSpec& spec = model.value()->spec;
  const std::string path = dir + "/m.gguf";

  // Neutral values of checked keys: accepted.
  {
    GgufWriteOptions o;
    o.extra_u32 = {{"llama.attention.key_length", 16}, {"llama.expert_count", 0}};
    o.extra_f32 = {{"llama.rope.scaling.factor", 1.0f}};
    o.extra_str = {{"llama.rope.scaling.type", "none"}};
    REQUIRE(write_gguf(spec, path, o).is_ok());
    const Status s = import_status(path);
    CHECK_MESSAGE(s.is_ok(), s.message());
  }
  struct Case {
    GgufWriteOptions options;
    const char* names;
  };
  std::vector<Case> cases;
  {
    Case c{{}, "llama.rope.scaling.type"};
    c.options.extra_str = {{"llama.rope.scaling.type", "yarn"}};
    cases.push_back(c);
  }
  {
    Case c{{}, "llama.rope.scaling.factor"};
    c.options.extra_f32 = {{"llama.rope.scaling.factor", 4.0f}};
    cases.push_back(c);
  }
  {
    Case c{{}, "llama.expert_count"};
    c.options.extra_u32 = {{"llama.expert_count", 8}};
    cases.push_back(c);
  }
  {
    // A key width is read (explicit_head_dim); a value width other than it is not.
    Case c{{}, "llama.attention.value_length"};
    c.options.extra_u32 = {{"llama.attention.value_length", 32}};
    cases.push_back(c);
  }
  {
    // A key width of 32 is now a head width (explicit_head_dim, as Qwen3's),
    // so what this file says is RoPE on 16 of each head's 32 dims: refused
    // by the rotary width's key.
    Case c{{}, "llama.rope.dimension_count"};
    c.options.extra_u32 = {{"llama.attention.key_length", 32}};
    cases.push_back(c);
  }
  {
    Case c{{}, "llama.logit_scale"};
    c.options.extra_f32 = {{"llama.logit_scale", 0.5f}};
    cases.push_back(c);
  }
  {
    Case c{{}, "split.count"};
    c.options.extra_u32 = {{"split.count", 3}};
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    CAPTURE(c.names);
    REQUIRE(write_gguf(spec, path, c.options).is_ok());
    const Status s = import_status(path);
    CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(s.message().find(c.names) != std::string::npos);
  }
  // A tensor the graph does not read (a Q/K/V bias, as qwen2 has).
  ModelSpec extra = spec;
  std::vector<float> bias(64, 0.5f);
  extra.tensors.push_back({"blk.0.attn_q.bias", DType::F32, {64}, bias.data(), bias.size() * sizeof(float)});
  REQUIRE(write_gguf(extra, path).is_ok());
  const Status s = import_status(path);
  CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(s.message().find("blk.0.attn_q.bias") != std::string::npos);
  // ... and in an .ember file written without the importer.
  const std::string ember_path = dir + "/extra.ember";
  REQUIRE(write_model(extra, ember_path).is_ok());
  ember_model* m = nullptr;
  CHECK(ember_model_open(ember_path.c_str(), nullptr, &m) == EMBER_ERR_UNSUPPORTED);
  CHECK(std::string(ember_last_error()).find("blk.0.attn_q.bias") != std::string::npos);
  ember_model_free(m);
}

}  // TEST_SUITE

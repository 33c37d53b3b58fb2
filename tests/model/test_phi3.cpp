// phi3: llama with half-split RoPE, whose GGUF fuses Q/K/V (attn_qkv) and
// gate/up (ffn_up, gate rows first). The synthetic phi3 family is written as
// llama.cpp's fused tensors, the importer splits them back into exactly the
// original rows (so the logits equal the unfused model's), the order of the
// halves matters, what ember does not implement (a separate gate) is refused
// by name (LongRoPE and partial rotary: test_phi3_rope.cpp), and Vulkan
// (lavapipe) gives the CPU's logits. The comparison with llama.cpp itself is
// tools/scripts/compare_logits.sh (docs/decisions.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "model/llama_graph.h"
#include "model/model.h"
#include "test_data.h"
#include "tools/convert/gguf.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/importers.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"
#include "model/family_fixture.h"
#include "vulkan/vulkan_fixture.h"

namespace {

using namespace ember;

using ember::test::prefill_logits;

std::unique_ptr<ImportedModel> tiny_phi3(DType dtype = DType::F32) {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  shape.arch = "phi3";
  auto m = make_synthetic(shape, dtype, 13, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return std::move(m).value();
}

const TensorSource* tensor(const ModelSpec& spec, const std::string& name) {
  for (const TensorSource& t : spec.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool same_bytes(const TensorSource* a, const TensorSource* b) {
  return a && b && a->size == b->size && a->shape == b->shape && a->dtype == b->dtype &&
         std::memcmp(a->data, b->data, a->size) == 0;
}

// The import's error for a phi3 GGUF written from `spec` with `options`.
Status import_error(const ModelSpec& spec, const std::string& path, const GgufWriteOptions& options = {}) {
  REQUIRE(write_gguf(spec, path, options).is_ok());
  auto imported = import_gguf(path);
  if (imported.is_ok()) return Status::ok();
  return imported.status();
}

const std::vector<int32_t> kTokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};

}  // namespace

TEST_SUITE("phi3") {

TEST_CASE("phi3 synthetic: the GGUF fuses q/k/v and gate/up, the import splits them back row for row") {
  for (DType dtype : {DType::F32, DType::Q8_0}) {
    CAPTURE(dtype_name(dtype));
    const std::string dir = test::temp_dir("phi3");
    auto model = tiny_phi3(dtype);
    const ModelSpec& spec = model->spec;
    CHECK(spec.hparams.arch == ModelArch::Phi3);
    CHECK(spec.hparams.rope_style == RopeStyle::Half);
    const std::string ember_path = dir + "/p.ember", gguf = dir + "/p.gguf", converted = dir + "/p-conv.ember";
    REQUIRE(write_model(spec, ember_path).is_ok());
    REQUIRE(write_gguf(spec, gguf).is_ok());
    {
      // llama.cpp's phi3 tensors: fused, no separate q/k/v/gate.
      auto mapped = MappedFile::open(gguf);
      REQUIRE(mapped.is_ok());
      auto file = GgufFile::parse(mapped->data(), mapped->size());
      REQUIRE(file.is_ok());
      CHECK(*file->get_string("general.architecture") == "phi3");
      const GgufTensorInfo* qkv = file->find_tensor("blk.1.attn_qkv.weight");
      const GgufTensorInfo* up = file->find_tensor("blk.1.ffn_up.weight");
      REQUIRE(qkv);
      REQUIRE(up);
      CHECK(qkv->dims[1] == spec.hparams.q_dim() + 2 * spec.hparams.kv_dim());
      CHECK(up->dims[1] == 2 * spec.hparams.hidden_dim);
      CHECK(file->find_tensor("blk.1.attn_q.weight") == nullptr);
      CHECK(file->find_tensor("blk.1.ffn_gate.weight") == nullptr);
    }
    auto imported = import_gguf(gguf);
    REQUIRE_MESSAGE(imported.is_ok(), imported.status().message());
    const ModelSpec& back = imported.value()->spec;
    CHECK(back.hparams.arch == ModelArch::Phi3);
    CHECK(back.hparams.rope_style == RopeStyle::Half);
    for (uint32_t l = 0; l < spec.hparams.n_layers; ++l) {
      for (const char* part : {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}) {
        const std::string n = llama_tensor_name(part, static_cast<int>(l));
        CAPTURE(n);
        CHECK(same_bytes(tensor(spec, n), tensor(back, n)));
      }
    }
    REQUIRE(write_model(back, converted).is_ok());
    CHECK(ember::test::max_abs_diff(prefill_logits(ember_path, kTokens), prefill_logits(converted, kTokens)) == 0.0);
  }
}

TEST_CASE("phi3: the fused halves are used in their order (gate first)") {
  const std::string dir = test::temp_dir("phi3-order");
  auto model = tiny_phi3();
  const ModelSpec& spec = model->spec;
  REQUIRE(write_model(spec, dir + "/p.ember").is_ok());
  // Gate and up exchanged (what reading the fused tensor up-first would
  // give): other logits.
  ModelSpec swapped = spec;
  for (TensorSource& t : swapped.tensors) {
    const size_t at = t.name.find("ffn_gate");
    const size_t up = t.name.find("ffn_up");
    if (at != std::string::npos) t.name.replace(at, 8, "ffn_up");
    else if (up != std::string::npos) t.name.replace(up, 6, "ffn_gate");
  }
  REQUIRE(write_model(swapped, dir + "/swapped.ember").is_ok());
  CHECK(ember::test::max_abs_diff(prefill_logits(dir + "/p.ember", kTokens), prefill_logits(dir + "/swapped.ember", kTokens)) > 1e-3);
  // K and V exchanged inside the fused rows (the same shape, so only the
  // split's order tells them apart): other logits.
  ModelSpec kv = spec;
  for (TensorSource& t : kv.tensors) {
    const size_t k = t.name.find("attn_k.");
    const size_t v = t.name.find("attn_v.");
    if (k != std::string::npos) t.name.replace(k, 6, "attn_v");
    else if (v != std::string::npos) t.name.replace(v, 6, "attn_k");
  }
  REQUIRE(write_gguf(kv, dir + "/kv.gguf").is_ok());
  auto imported = import_gguf(dir + "/kv.gguf");
  REQUIRE(imported.is_ok());
  REQUIRE(write_model(imported.value()->spec, dir + "/kv.ember").is_ok());
  CHECK(ember::test::max_abs_diff(prefill_logits(dir + "/p.ember", kTokens), prefill_logits(dir + "/kv.ember", kTokens)) > 1e-3);
}

TEST_CASE("phi3: a lone LongRoPE factor, a separate gate and misshapen fused tensors are refused by name") {
  const std::string dir = test::temp_dir("phi3-bad");
  auto model = tiny_phi3();
  const uint32_t half = model->spec.hparams.head_dim() / 2;
  std::vector<float> factors(half, 1.5f);
  {
    ModelSpec spec = model->spec;
    // LongRoPE (test_phi3_rope.cpp runs it) needs both factor tensors: one
    // alone converts, and the .ember file is refused at open naming the
    // missing one.
    spec.tensors.push_back({"rope_factors_long.weight", DType::F32, {half}, factors.data(), half * sizeof(float)});
    REQUIRE(write_gguf(spec, dir + "/long.gguf").is_ok());
    auto imported = import_gguf(dir + "/long.gguf");
    REQUIRE(imported.is_ok());
    REQUIRE(write_model(imported.value()->spec, dir + "/long.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/long.ember").c_str(), nullptr, &m) == EMBER_ERR_MISSING_TENSOR);
    CHECK(std::string(ember_last_error()).find("rope_factors_short.weight") != std::string::npos);
  }
  {
    // Its attention factor is read (a cos/sin scale).
    GgufWriteOptions o;
    o.extra_f32 = {{"phi3.rope.scaling.attn_factor", 1.19f}};
    REQUIRE(write_gguf(model->spec, dir + "/attn-factor.gguf", o).is_ok());
    auto imported = import_gguf(dir + "/attn-factor.gguf");
    REQUIRE(imported.is_ok());
    CHECK(imported.value()->spec.hparams.rope_attn_factor == 1.19f);
  }
  {
    // llama.cpp reads phi3's sliding window and turns it off: accepted.
    GgufWriteOptions o;
    o.extra_u32 = {{"phi3.attention.sliding_window", 2047}};
    CHECK(import_error(model->spec, dir + "/swa.gguf", o).is_ok());
    // Any other architecture's window is refused.
    ModelSpec llama = model->spec;
    llama.hparams.arch = ModelArch::Llama;
    llama.hparams.rope_style = RopeStyle::Adjacent;
    o.extra_u32 = {{"llama.attention.sliding_window", 2047}};
    const Status s = import_error(llama, dir + "/llama-swa.gguf", o);
    CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(s.message()).find("llama.attention.sliding_window") != std::string::npos);
  }
  {
    // A fused ffn_up one gate short.
    ModelSpec spec = model->spec;
    for (TensorSource& t : spec.tensors) {
      if (t.name == "blk.0.ffn_gate.weight") {
        t.shape[0] -= 1;
        t.size -= t.shape[1] * sizeof(float);
      }
    }
    const Status s = import_error(spec, dir + "/short.gguf");
    CHECK(s.code() == EMBER_ERR_BAD_TENSOR);
    CHECK(std::string(s.message()).find("blk.0.ffn_up.weight") != std::string::npos);
  }
  {
    // A fused qkv with a missing k's rows.
    ModelSpec spec = model->spec;
    for (TensorSource& t : spec.tensors) {
      if (t.name == "blk.1.attn_k.weight") {
        t.shape[0] /= 2;
        t.size /= 2;
      }
    }
    const Status s = import_error(spec, dir + "/qkv.gguf");
    CHECK(s.code() == EMBER_ERR_BAD_TENSOR);
    CHECK(std::string(s.message()).find("blk.1.attn_qkv.weight") != std::string::npos);
  }
  {
    // Missing q/k/v altogether: the .ember file is refused at open, naming
    // the tensor the graph needs.
    ModelSpec spec = model->spec;
    spec.tensors.erase(std::remove_if(spec.tensors.begin(), spec.tensors.end(),
                                      [](const TensorSource& t) { return t.name == "blk.0.attn_v.weight"; }),
                       spec.tensors.end());
    REQUIRE(write_model(spec, dir + "/missing.ember").is_ok());
    ember_model* m = nullptr;
    CHECK(ember_model_open((dir + "/missing.ember").c_str(), nullptr, &m) == EMBER_ERR_MISSING_TENSOR);
    CHECK(std::string(ember_last_error()).find("blk.0.attn_v.weight") != std::string::npos);
  }
}

#if EMBER_VULKAN
TEST_CASE("phi3: vulkan gives the cpu's logits") {
  ember::test::check_vulkan_matches_cpu(tiny_phi3()->spec, "phi3-vk");
}
#endif

}  // TEST_SUITE

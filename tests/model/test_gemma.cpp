// gemma2 and gemma3: the llama graph plus Gemma's description (scaled
// embeddings, GELU-tanh FFN, post norms, soft-capping, sliding-window layers,
// per-head Q/K norms, two RoPE bases). The synthetic families round-trip
// through GGUF with llama.cpp's keys; every feature is applied (changing it
// changes the logits); a window at least as long as the prompt is full
// attention; what ember does not run is refused by name. The comparison with
// llama.cpp itself is tools/scripts/compare_logits.sh (docs/decisions.md).
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
#include "vulkan/vulkan_fixture.h"

namespace {

using namespace ember;

// The logits after each of `chunks` (prefill then decode steps).
std::vector<float> run_chunks(const std::string& path, const std::vector<std::vector<int32_t>>& chunks,
                              int32_t context = 0) {
  ember_model* m = nullptr;
  REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
  ember_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_threads = 2;
  if (context) so.context_length = context;
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(m, &so, &s) == EMBER_OK, ember_last_error());
  std::vector<float> out(info.vocab_size);
  for (const auto& c : chunks) {
    REQUIRE_MESSAGE(ember_session_prefill(s, c.data(), static_cast<int32_t>(c.size()), out.data()) == EMBER_OK,
                    ember_last_error());
  }
  ember_session_free(s);
  ember_model_free(m);
  return out;
}

// 14 tokens: longer than the synthetic window of 8.
const std::vector<int32_t> kTokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52};

std::vector<float> prefill(const std::string& path) { return run_chunks(path, {kTokens}); }

std::unique_ptr<ImportedModel> tiny(const char* arch) {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  shape.arch = arch;
  auto m = make_synthetic(shape, DType::F32, 11, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return std::move(m).value();
}

std::string write(const ModelSpec& spec, const std::string& path) {
  const Status st = write_model(spec, path);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return path;
}

// Multiplies the named norm vector (every layer's, by base name) by `f`.
void scale_norms(ModelSpec* spec, const std::string& base, float f, std::vector<std::vector<float>>* keep) {
  for (TensorSource& t : spec->tensors) {
    if (t.name.find(base) == std::string::npos) continue;
    const float* src = reinterpret_cast<const float*>(t.data);
    keep->emplace_back(src, src + t.size / sizeof(float));
    for (float& x : keep->back()) x *= f;
    t.data = reinterpret_cast<const uint8_t*>(keep->back().data());
  }
}

}  // namespace

TEST_SUITE("gemma") {

TEST_CASE("gemma synthetic: the description survives GGUF with llama.cpp's keys") {
  const std::string dir = test::temp_dir("gemma-gguf");
  for (const char* arch : {"gemma2", "gemma3"}) {
    CAPTURE(arch);
    auto model = tiny(arch);
    const HParams& hp = model->spec.hparams;
    CHECK(hp.head_dim() > hp.dim / hp.n_heads);
    CHECK(hp.sliding_window < kTokens.size());
    const std::string direct = write(model->spec, dir + "/" + arch + ".ember");
    const std::string gguf = dir + "/" + arch + ".gguf";
    REQUIRE(write_gguf(model->spec, gguf).is_ok());
    auto imported = import_gguf(gguf);
    REQUIRE_MESSAGE(imported.is_ok(), imported.status().message());
    const HParams& ih = imported.value()->spec.hparams;
    CHECK(ih.arch == hp.arch);
    CHECK(ih.rope_style == RopeStyle::Half);
    CHECK(ih.attn_softcap == hp.attn_softcap);
    CHECK(ih.final_softcap == hp.final_softcap);
    CHECK(ih.sliding_window == hp.sliding_window);
    CHECK(ih.swa_period == hp.swa_period);
    CHECK(ih.rope_scale_global == hp.rope_scale_global);
    CHECK((ih.rope_theta_swa != 0.0f ? ih.rope_theta_swa : ih.rope_theta) ==
          (hp.rope_theta_swa != 0.0f ? hp.rope_theta_swa : hp.rope_theta));
    CHECK(ih.explicit_head_dim == hp.explicit_head_dim);
    const std::string converted = write(imported.value()->spec, dir + "/" + arch + "-conv.ember");
    CHECK(test::max_abs_diff(prefill(direct), prefill(converted)) == 0.0);
  }
}

TEST_CASE("gemma graph: windows on the sliding layers only, two angle tables, the ops of the family") {
  const std::string dir = test::temp_dir("gemma-graph");
  for (const char* arch : {"gemma2", "gemma3"}) {
    CAPTURE(arch);
    auto model = tiny(arch);
    const std::string path = write(model->spec, dir + "/" + arch + ".ember");
    auto opened = Model::open(path, Model::Options{});
    REQUIRE(opened.is_ok());
    auto g = build_llama_graph(opened.value()->file().contents(), 32, 8);
    REQUIRE(g.is_ok());
    const HParams& hp = model->spec.hparams;
    int geglu = 0, swiglu = 0, softcap = 0, group_norms = 0;
    for (const Op& op : g->ops) {
      geglu += op.kind == OpKind::GeGLU;
      swiglu += op.kind == OpKind::SwiGLU;
      softcap += op.kind == OpKind::Softcap;
      group_norms += op.kind == OpKind::RmsNorm && op.params.rmsnorm.group == hp.head_dim();
      if (op.kind == OpKind::Attention) {
        CHECK(op.params.attention.window == (op.layer % 2 == 0 ? hp.sliding_window : 0u));
        CHECK(op.params.attention.softcap == hp.attn_softcap);
      }
      if (op.kind == OpKind::Embed) CHECK(op.params.embed.scale == doctest::Approx(std::sqrt(float(hp.dim))));
    }
    CHECK(geglu == static_cast<int>(hp.n_layers));
    CHECK(swiglu == 0);
    CHECK(softcap == (hp.final_softcap != 0.0f ? 1 : 0));
    CHECK(group_norms == (hp.arch == ModelArch::Gemma3 ? 2 * static_cast<int>(hp.n_layers) : 0));
    // gemma2: one RoPE base; gemma3: the sliding layers' and the global ones'.
    CHECK(rope_tables(g.value()).size() == (hp.arch == ModelArch::Gemma3 ? 2u : 1u));
  }
}

TEST_CASE("gemma: every feature is applied, a window as long as the prompt is full attention") {
  const std::string dir = test::temp_dir("gemma-features");
  for (const char* arch : {"gemma2", "gemma3"}) {
    CAPTURE(arch);
    auto model = tiny(arch);
    const ModelSpec& base = model->spec;
    const std::vector<float> ref = prefill(write(base, dir + "/base.ember"));
    auto variant = [&](const char* what, auto&& edit) {
      ModelSpec s = base;
      std::vector<std::vector<float>> keep;
      edit(&s, &keep);
      const double d = test::max_abs_diff(ref, prefill(write(s, dir + "/" + what + ".ember")));
      CAPTURE(what);
      return d;
    };
    // The window: a shorter one changes the logits; one at least as long as
    // the prompt equals no window at all, bit for bit.
    CHECK(variant("window4", [](ModelSpec* s, auto*) { s->hparams.sliding_window = 4; }) > 1e-4);
    {
      ModelSpec s = base;
      s.hparams.sliding_window = static_cast<uint32_t>(kTokens.size());
      const std::vector<float> a = prefill(write(s, dir + "/window-long.ember"));
      s.hparams.sliding_window = 0;
      s.hparams.swa_period = 0;
      if (s.hparams.arch == ModelArch::Gemma3) s.hparams.rope_theta_swa = 0.0f, s.hparams.rope_scale_global = 1.0f;
      ModelSpec t = base;
      t.hparams.sliding_window = static_cast<uint32_t>(kTokens.size());
      if (t.hparams.arch == ModelArch::Gemma3) t.hparams.rope_theta_swa = 0.0f, t.hparams.rope_scale_global = 1.0f;
      const std::vector<float> b = prefill(write(t, dir + "/window-long-one-base.ember"));
      const std::vector<float> c = prefill(write(s, dir + "/no-window.ember"));
      CHECK(test::max_abs_diff(b, c) == 0.0);
      CHECK(test::max_abs_diff(a, ref) > 1e-4);  // the window of 8 did matter
    }
    CHECK(variant("post-attn", [](ModelSpec* s, auto* k) { scale_norms(s, "post_attention_norm", 1.5f, k); }) > 1e-4);
    CHECK(variant("post-ffw", [](ModelSpec* s, auto* k) { scale_norms(s, "post_ffw_norm", 1.5f, k); }) > 1e-4);
    if (base.hparams.arch == ModelArch::Gemma2) {
      CHECK(variant("attn-cap", [](ModelSpec* s, auto*) { s->hparams.attn_softcap = 50.0f; }) > 1e-4);
      CHECK(variant("final-cap", [](ModelSpec* s, auto*) { s->hparams.final_softcap = 30.0f; }) > 1e-4);
    } else {
      CHECK(variant("q-norm", [](ModelSpec* s, auto* k) { scale_norms(s, "attn_q_norm", 1.5f, k); }) > 1e-4);
      CHECK(variant("k-norm", [](ModelSpec* s, auto* k) { scale_norms(s, "attn_k_norm", 1.5f, k); }) > 1e-4);
      CHECK(variant("theta-swa", [](ModelSpec* s, auto*) { s->hparams.rope_theta_swa = 0.0f; }) > 1e-4);
      CHECK(variant("rope-scale", [](ModelSpec* s, auto*) { s->hparams.rope_scale_global = 1.0f; }) > 1e-4);
    }
    // Decoding token by token gives the batch's logits (the window seen from
    // each step's own position).
    std::vector<std::vector<int32_t>> steps = {{kTokens.begin(), kTokens.begin() + 5}};
    for (size_t i = 5; i < kTokens.size(); ++i) steps.push_back({kTokens[i]});
    CHECK(test::max_abs_diff(ref, run_chunks(dir + "/base.ember", steps)) < 1e-4);
  }
}

TEST_CASE("gemma: what ember does not run is refused by name") {
  const std::string dir = test::temp_dir("gemma-refuse");
  auto model = tiny("gemma3");
  // A vision tower's tensor (gemma3 multimodal files carry them in the mmproj,
  // but a merged file would not): refused by name.
  {
    ModelSpec s = model->spec;
    std::vector<float> w(64, 0.5f);
    s.tensors.push_back({"v.blk.0.attn_q.weight", DType::F32, {8, 8}, reinterpret_cast<const uint8_t*>(w.data()),
                         w.size() * sizeof(float)});
    const std::string gguf = dir + "/vision.gguf";
    REQUIRE(write_gguf(s, gguf).is_ok());
    auto imported = import_gguf(gguf);
    REQUIRE_FALSE(imported.is_ok());
    CHECK(imported.status().code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(imported.status().message()).find("v.blk.0.attn_q.weight") != std::string::npos);
  }
  // gemma3 has no attention soft-cap; a key saying otherwise is refused.
  {
    GgufWriteOptions o;
    o.extra_f32.push_back({"gemma3.attn_logit_softcapping", 50.0f});
    const std::string gguf = dir + "/cap.gguf";
    REQUIRE(write_gguf(model->spec, gguf, o).is_ok());
    auto imported = import_gguf(gguf);
    REQUIRE_FALSE(imported.is_ok());
    CHECK(std::string(imported.status().message()).find("gemma3.attn_logit_softcapping") != std::string::npos);
  }
  // YaRN scaling is not the linear factor ember runs.
  {
    ModelSpec s = model->spec;
    s.hparams.rope_scale_global = 1.0f;
    GgufWriteOptions o;
    o.extra_str.push_back({"gemma3.rope.scaling.type", "yarn"});
    const std::string gguf = dir + "/yarn.gguf";
    REQUIRE(write_gguf(s, gguf, o).is_ok());
    auto imported = import_gguf(gguf);
    REQUIRE_FALSE(imported.is_ok());
    CHECK(std::string(imported.status().message()).find("rope.scaling.type") != std::string::npos);
  }
  // A missing post norm or Q/K norm: refused at open, by name.
  for (const char* name : {"blk.1.post_ffw_norm.weight", "blk.0.attn_k_norm.weight"}) {
    ModelSpec s = model->spec;
    s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(),
                                   [&](const TensorSource& t) { return t.name == name; }),
                    s.tensors.end());
    const std::string path = write(s, dir + "/missing.ember");
    ember_model* m = nullptr;
    CHECK(ember_model_open(path.c_str(), nullptr, &m) == EMBER_ERR_MISSING_TENSOR);
    CHECK(std::string(ember_last_error()).find(name) != std::string::npos);
  }
  // Gemma's fields on a llama model would be ignored: refused (the writer
  // checks hparams as opening does).
  {
    auto llama = tiny("gemma2");
    ModelSpec s = llama->spec;
    s.hparams.arch = ModelArch::Llama;
    const Status st = write_model(s, dir + "/llama-cap.ember");
    CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(st.message()).find("gemma2/gemma3 fields") != std::string::npos);
  }
}

#if EMBER_VULKAN
TEST_CASE("gemma: vulkan gives the cpu's logits, past the window, and shifts the context as the cpu does") {
  const std::string dir = test::temp_dir("gemma-vk");
  for (const char* arch : {"gemma2", "gemma3"}) {
    CAPTURE(arch);
    auto vk = ember::test::open_vulkan();
    if (!vk) return;
    auto model = tiny(arch);
    const std::string path = write(model->spec, dir + "/" + arch + ".ember");
    auto opened = Model::open(path, Model::Options{});
    REQUIRE(opened.is_ok());
    auto g = build_llama_graph(opened.value()->file().contents(), 32, 16);
    REQUIRE(g.is_ok());
    ember::test::Runner cpu, gpu;
    REQUIRE(cpu.init(g.value(), ember::test::cpu_backend()).is_ok());
    const Status st = gpu.init(g.value(), std::move(vk));
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    std::vector<float> lc, lg;
    int32_t pos = 0;
    for (const std::vector<int32_t>& t : {kTokens, std::vector<int32_t>{44}, std::vector<int32_t>{45}}) {
      REQUIRE(cpu.step(t, pos, &lc).is_ok());
      REQUIRE(gpu.step(t, pos, &lg).is_ok());
      CHECK(ember::test::max_abs_diff(lc, lg) < 1e-4);
      pos += static_cast<int32_t>(t.size());
    }
    // Drop positions 2..5 and go on: each layer's keys re-rotated with its
    // own RoPE (two tables on gemma3).
    REQUIRE(cpu.backend->remove_positions(2, 6, pos).is_ok());
    REQUIRE(gpu.backend->remove_positions(2, 6, pos).is_ok());
    pos -= 4;
    REQUIRE(cpu.step({46}, pos, &lc).is_ok());
    REQUIRE(gpu.step({46}, pos, &lg).is_ok());
    CHECK(ember::test::max_abs_diff(lc, lg) < 1e-4);
  }
}
#endif

}  // TEST_SUITE

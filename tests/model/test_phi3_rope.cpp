// phi3's RoPE variants (Phi-3.5-mini, Phi-4-mini): partial rotary (only the
// first n_rot elements of each head rotate, theta^(-2j / n_rot)) and LongRoPE
// (rope_factors_long/short chosen by the session's context against the
// original context, cos/sin scaled by the attention factor). The Rope op
// against a double-precision scalar reference of ggml's rope on the CPU and
// on Vulkan; context shifting re-rotating stored keys by the same rotated
// dims and factors (no second mscale); the factors a session's graph picks;
// and what a file may hold. The comparison with llama.cpp itself is
// tools/scripts/compare_logits.sh (docs/decisions.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ember.h"
#include "model/family_fixture.h"
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
using ember::test::Builder;
using ember::test::Runner;

// ggml's rope of one head (n_dims = n_rot, NEOX for Half, NORMAL for
// Adjacent), in double: pair j at angle pos * theta^(-2j / n_rot) / ff[j],
// cos and sin times mscale, elements from n_rot on copied.
std::vector<double> rope_ref(const float* x, int64_t head_dim, int64_t n_rot, RopeStyle style, double theta,
                             const float* ff, double mscale, int32_t pos) {
  std::vector<double> out(x, x + head_dim);
  const int64_t half = n_rot / 2;
  for (int64_t j = 0; j < half; ++j) {
    const double freq = std::pow(theta, -2.0 * j / static_cast<double>(n_rot)) / (ff ? ff[j] : 1.0);
    const double c = std::cos(pos * freq) * mscale, s = std::sin(pos * freq) * mscale;
    const int64_t a = style == RopeStyle::Adjacent ? 2 * j : j;
    const int64_t b = style == RopeStyle::Adjacent ? 2 * j + 1 : j + half;
    out[a] = x[a] * c - x[b] * s;
    out[b] = x[a] * s + x[b] * c;
  }
  return out;
}

struct RopeCase {
  RopeStyle style;
  uint32_t n_rot;   // 0: the whole head
  bool factors;
  float mscale;
};

// x = embedding rows (an f32 table), roped in place: 2 heads of 16.
struct RopeGraph {
  Builder b{32, 2, 2, 40, 64, 8};
  std::vector<float> ff;
  int32_t x = -1;
  explicit RopeGraph(const RopeCase& c) {
    b.g.hparams.rope_style = c.style;
    b.g.hparams.rope_theta = 10000.0f;
    b.g.hparams.rope_dims = c.n_rot;
    b.g.hparams.rope_attn_factor = c.mscale;
    const uint32_t rot = b.g.hparams.rotated_dims();
    for (uint32_t j = 0; j < rot / 2; ++j) ff.push_back(1.0f + 0.7f * static_cast<float>(j * j));
    x = b.embed();
    b.op(OpKind::Rope, x, x);
    if (c.factors) b.g.ops.back().params.rope.freq_factors = ff.data();
    // Attention reads the roped rows as q, k and v, so the cache holds them.
    const int32_t att = b.act(32, 8);
    b.op(OpKind::Attention, att, x, x, x, -1, 0);
    b.tail(att);
  }
  // Checks `got` (n rows of x after a step at pos) against the reference.
  void check_rows(const std::vector<int32_t>& tokens, int32_t pos, const std::vector<float>& got) const {
    const HParams& hp = b.g.hparams;
    const float* table = reinterpret_cast<const float*>(b.g.weights[0].data);
    const RopeParams& rp = b.g.ops[1].params.rope;
    double worst = 0;
    bool tail_exact = true;
    for (size_t i = 0; i < tokens.size(); ++i) {
      for (uint32_t h = 0; h < 2; ++h) {
        const float* in = table + tokens[i] * 32 + h * 16;
        const std::vector<double> want = rope_ref(in, 16, hp.rotated_dims(), hp.rope_style, hp.rope_theta,
                                                  rp.freq_factors, hp.rope_attn_factor, pos + static_cast<int32_t>(i));
        for (int64_t e = 0; e < 16; ++e) {
          const float g = got[i * 32 + h * 16 + e];
          worst = std::max(worst, std::fabs(g - want[e]));
          // The elements past n_rot pass through untouched.
          if (e >= static_cast<int64_t>(hp.rotated_dims())) tail_exact &= g == in[e];
        }
      }
    }
    CHECK(worst < 1e-5);
    CHECK(tail_exact);
  }
};

const RopeCase kRopeCases[] = {
    {RopeStyle::Half, 0, false, 1.0f},    {RopeStyle::Half, 12, false, 1.0f}, {RopeStyle::Half, 12, true, 1.25f},
    {RopeStyle::Half, 4, true, 1.0f},     {RopeStyle::Adjacent, 10, true, 0.8f},
};

void run_rope_cases(bool vulkan) {
  for (const RopeCase& c : kRopeCases) {
    CAPTURE(static_cast<int>(c.style));
    CAPTURE(c.n_rot);
    CAPTURE(c.factors);
    CAPTURE(c.mscale);
    RopeGraph rg(c);
    Runner r;
#if EMBER_VULKAN
    VulkanBackend* vkb = nullptr;
    if (vulkan) {
      auto vk = ember::test::open_vulkan();
      if (!vk) return;
      vkb = vk.get();
      REQUIRE(r.init(rg.b.g, std::move(vk)).is_ok());
    }
#endif
    if (!vulkan) REQUIRE(r.init(rg.b.g, ember::test::cpu_backend()).is_ok());
    int32_t pos = 0;
    for (const std::vector<int32_t>& t : {std::vector<int32_t>{3, 9, 17}, std::vector<int32_t>{5, 6},
                                          std::vector<int32_t>{39, 1, 2, 4, 8, 16, 32, 7}}) {
      CAPTURE(pos);
      REQUIRE(r.step(t, pos, nullptr).is_ok());
      std::vector<float> got(32 * t.size());
#if EMBER_VULKAN
      if (vulkan) REQUIRE(vkb->read_activation(rg.x, static_cast<int32_t>(t.size()), got.data()).is_ok());
#endif
      if (!vulkan) got = r.cpu_activation(rg.x, static_cast<int32_t>(t.size()));
      rg.check_rows(t, pos, got);
      pos += static_cast<int32_t>(t.size());
    }
  }
}

// Keys stored at positions 0..9, positions [2, 6) removed: rows 2..5 then
// hold the keys of the tokens from 6..9 as if roped at 2..5 (the same
// rotated dims and factors, the attention factor once).
void run_shift_cases(bool vulkan) {
  for (const RopeCase& c : kRopeCases) {
    CAPTURE(static_cast<int>(c.style));
    CAPTURE(c.n_rot);
    CAPTURE(c.factors);
    RopeGraph rg(c);
    Runner r;
    if (vulkan) {
#if EMBER_VULKAN
      auto vk = ember::test::open_vulkan();
      if (!vk) return;
      REQUIRE(r.init(rg.b.g, std::move(vk)).is_ok());
#endif
    } else {
      REQUIRE(r.init(rg.b.g, ember::test::cpu_backend()).is_ok());
    }
    const std::vector<int32_t> a = {3, 9, 17, 5, 6, 39}, b = {1, 2, 4, 8};
    REQUIRE(r.step(a, 0, nullptr).is_ok());
    REQUIRE(r.step(b, 6, nullptr).is_ok());
    REQUIRE(r.backend->remove_positions(2, 6, 10).is_ok());
    std::vector<uint8_t> rows(6 * r.plan.kv_k_row_bytes);
    REQUIRE(r.backend->read_kv(0, false, 6, rows.data()).is_ok());
    std::vector<float> got(4 * 32);
    for (int32_t i = 0; i < 4; ++i) std::memcpy(&got[i * 32], rows.data() + (2 + i) * r.plan.kv_k_row_bytes, 32 * 4);
    rg.check_rows(b, 2, got);
  }
}

// A tiny phi3 (heads of 16) with rope_dims and, when orig != 0, LongRoPE.
std::unique_ptr<ImportedModel> tiny_phi3(uint32_t rope_dims, uint32_t orig) {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  shape.arch = "phi3";
  shape.rope_dims = rope_dims;
  shape.long_rope_orig = orig;
  auto m = make_synthetic(shape, DType::F32, 13, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return std::move(m).value();
}

TensorSource* tensor(ModelSpec& spec, const std::string& name) {
  for (TensorSource& t : spec.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Replaces a factor tensor's values (the bytes live in `keep`).
void set_factors(ModelSpec& spec, const std::string& name, const std::vector<float>& v,
                 std::vector<std::vector<float>>* keep) {
  TensorSource* t = tensor(spec, name);
  REQUIRE(t);
  keep->push_back(v);
  t->data = keep->back().data();
  t->size = v.size() * sizeof(float);
  t->shape = {static_cast<int64_t>(v.size())};
}

// The last token's logits of a prefill with a session of `context`.
std::vector<float> logits_at(const std::string& path, int32_t context) {
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_threads = 2;
  so.context_length = context;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  const std::vector<int32_t> tokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
  std::vector<float> out(info.vocab_size);
  REQUIRE(ember_session_prefill(s, tokens.data(), static_cast<int32_t>(tokens.size()), out.data()) == EMBER_OK);
  ember_session_free(s);
  ember_model_free(m);
  return out;
}

std::string write(const ModelSpec& spec, const std::string& path) {
  const Status s = write_model(spec, path);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  return path;
}

// The status and message of writing `spec` (the writer verifies the
// hyper-parameters), then of ember_model_open (which checks the tensors).
std::pair<ember_status, std::string> open_error(const ModelSpec& spec, const std::string& path) {
  const Status w = write_model(spec, path);
  if (!w.is_ok()) return {static_cast<ember_status>(w.code()), w.message()};
  ember_model* m = nullptr;
  const ember_status st = ember_model_open(path.c_str(), nullptr, &m);
  std::string msg = st == EMBER_OK ? "" : ember_last_error();
  if (m) ember_model_free(m);
  return {st, msg};
}

}  // namespace

TEST_SUITE("phi3-rope") {

TEST_CASE("rope op on the cpu: partial rotary, frequency factors and the attention factor against ggml's formula") {
  run_rope_cases(false);
}

TEST_CASE("context shift on the cpu re-rotates stored keys with the rope's rotated dims and factors") {
  run_shift_cases(false);
}

TEST_CASE("rope params: bad n_rot or mscale is refused by check_op_params") {
  RopeGraph rg({RopeStyle::Half, 12, false, 1.0f});
  Graph g = rg.b.g;
  g.ops[1].params.rope.n_rot = 18;
  CHECK(check_op_params(g).code() == EMBER_ERR_BAD_TENSOR);
  g.ops[1].params.rope.n_rot = 7;
  CHECK(check_op_params(g).code() == EMBER_ERR_BAD_TENSOR);
  g.ops[1].params.rope.n_rot = 12;
  CHECK(check_op_params(g).is_ok());
  g.ops[1].params.rope.mscale = 0.0f;
  CHECK(check_op_params(g).code() == EMBER_ERR_BAD_TENSOR);
}

TEST_CASE("phi3 LongRoPE: a session's graph takes the long factors past the original context, else the short") {
  const std::string dir = test::temp_dir("phi3-longrope-graph");
  auto model = tiny_phi3(12, 64);
  const HParams& hp = model->spec.hparams;
  CHECK(hp.rope_dims == 12);
  CHECK(hp.rope_orig_context == 64);
  // sqrt(1 + ln(256 / 64) / ln(64)), as llama.cpp's converter derives it.
  CHECK(hp.rope_attn_factor == doctest::Approx(std::sqrt(1.0 + std::log(4.0) / std::log(64.0))).epsilon(1e-6));
  const std::string path = write(model->spec, dir + "/m.ember");
  auto opened = Model::open(path, Model::Options{});
  REQUIRE_MESSAGE(opened.is_ok(), opened.status().message());
  const ModelContents& contents = opened.value()->file().contents();
  const float* lng = nullptr;
  const float* sht = nullptr;
  for (const TensorView& t : contents.tensors) {
    if (t.name == "rope_factors_long.weight") lng = reinterpret_cast<const float*>(t.data);
    if (t.name == "rope_factors_short.weight") sht = reinterpret_cast<const float*>(t.data);
  }
  REQUIRE(lng);
  REQUIRE(sht);
  for (int32_t context : {16, 64, 65, 256}) {
    CAPTURE(context);
    auto g = build_llama_graph(contents, context, 8);
    REQUIRE(g.is_ok());
    int ropes = 0;
    for (const Op& op : g.value().ops) {
      if (op.kind != OpKind::Rope) continue;
      ++ropes;
      CHECK(op.params.rope.freq_factors == (context > 64 ? lng : sht));
      CHECK(op.params.rope.n_rot == 12);
      CHECK(op.params.rope.mscale == hp.rope_attn_factor);
    }
    CHECK(ropes == 2 * static_cast<int>(hp.n_layers));
  }
}

TEST_CASE("phi3 LongRoPE and partial rotary: logits follow the factors the context picks") {
  const std::string dir = test::temp_dir("phi3-longrope-logits");
  std::vector<std::vector<float>> keep;
  // The same weights without LongRoPE: the reference.
  auto plain = tiny_phi3(12, 0);
  const std::string plain_path = write(plain->spec, dir + "/plain.ember");
  auto model = tiny_phi3(12, 64);
  const uint32_t pairs = 6;
  const std::vector<float> ones(pairs, 1.0f);
  {
    // Short factors of 1, no attention factor: a context <= 64 runs exactly
    // the plain model; past 64, the long factors change the logits.
    ModelSpec s = model->spec;
    s.hparams.rope_attn_factor = 1.0f;
    set_factors(s, "rope_factors_short.weight", ones, &keep);
    const std::string p = write(s, dir + "/short1.ember");
    CHECK(ember::test::max_abs_diff(logits_at(p, 64), logits_at(plain_path, 64)) == 0.0);
    CHECK(ember::test::max_abs_diff(logits_at(p, 65), logits_at(plain_path, 65)) > 1e-3);
  }
  {
    // Long factors of 1: the other way round.
    ModelSpec s = model->spec;
    s.hparams.rope_attn_factor = 1.0f;
    set_factors(s, "rope_factors_long.weight", ones, &keep);
    const std::string p = write(s, dir + "/long1.ember");
    CHECK(ember::test::max_abs_diff(logits_at(p, 200), logits_at(plain_path, 200)) == 0.0);
    CHECK(ember::test::max_abs_diff(logits_at(p, 32), logits_at(plain_path, 32)) > 1e-3);
  }
  {
    // Both factors 1: only the attention factor differs from the plain model.
    ModelSpec s = model->spec;
    set_factors(s, "rope_factors_long.weight", ones, &keep);
    set_factors(s, "rope_factors_short.weight", ones, &keep);
    const std::string p = write(s, dir + "/mscale.ember");
    CHECK(ember::test::max_abs_diff(logits_at(p, 32), logits_at(plain_path, 32)) > 1e-3);
    s.hparams.rope_attn_factor = 1.0f;
    const std::string q = write(s, dir + "/mscale1.ember");
    CHECK(ember::test::max_abs_diff(logits_at(q, 32), logits_at(plain_path, 32)) == 0.0);
  }
  {
    // Partial rotary matters: all 16 dims rotating gives other logits, and
    // rope_dims = head_dim is the same as 0.
    auto full = tiny_phi3(0, 0);
    auto full16 = tiny_phi3(16, 0);
    CHECK(full16->spec.hparams.rope_dims == 0);
    const std::string f = write(full->spec, dir + "/full.ember");
    CHECK(ember::test::max_abs_diff(logits_at(f, 32), logits_at(plain_path, 32)) > 1e-3);
  }
}

TEST_CASE("phi3 LongRoPE: the GGUF round trip keeps the keys and tensors llama.cpp writes") {
  const std::string dir = test::temp_dir("phi3-longrope-gguf");
  auto model = tiny_phi3(12, 64);
  const ModelSpec& spec = model->spec;
  REQUIRE(write_gguf(spec, dir + "/m.gguf").is_ok());
  auto imported = import_gguf(dir + "/m.gguf");
  REQUIRE_MESSAGE(imported.is_ok(), imported.status().message());
  const HParams& hp = imported.value()->spec.hparams;
  CHECK(hp.rope_dims == 12);
  CHECK(hp.rope_orig_context == 64);
  CHECK(hp.rope_attn_factor == spec.hparams.rope_attn_factor);
  ModelSpec back = imported.value()->spec;
  for (const char* n : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    CAPTURE(n);
    const TensorSource* a = tensor(const_cast<ModelSpec&>(spec), n);
    const TensorSource* b = tensor(back, n);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->size == b->size);
    CHECK(std::memcmp(a->data, b->data, a->size) == 0);
  }
  const std::string p1 = write(spec, dir + "/direct.ember"), p2 = write(back, dir + "/converted.ember");
  CHECK(ember::test::max_abs_diff(logits_at(p1, 128), logits_at(p2, 128)) == 0.0);
}

TEST_CASE("phi3 rope keys and LongRoPE tensors: what a file may hold, refused with the name") {
  const std::string dir = test::temp_dir("phi3-longrope-bad");
  std::vector<std::vector<float>> keep;
  auto model = tiny_phi3(12, 64);
  {
    ModelSpec s = model->spec;
    s.hparams.rope_dims = 7;
    auto [st, msg] = open_error(s, dir + "/odd.ember");
    CHECK(st == EMBER_ERR_BAD_HPARAMS);
    CHECK(msg.find("rope_dims") != std::string::npos);
    s.hparams.rope_dims = 18;
    std::tie(st, msg) = open_error(s, dir + "/wide.ember");
    CHECK(st == EMBER_ERR_BAD_HPARAMS);
    CHECK(msg.find("rope_dims") != std::string::npos);
  }
  {
    ModelSpec s = model->spec;
    s.hparams.rope_attn_factor = 0.0f;
    auto [st, msg] = open_error(s, dir + "/mscale0.ember");
    CHECK(st == EMBER_ERR_BAD_HPARAMS);
    CHECK(msg.find("rope_attn_factor") != std::string::npos);
  }
  {
    // Factors sized for the whole head, not the 6 rotated pairs.
    ModelSpec s = model->spec;
    set_factors(s, "rope_factors_short.weight", std::vector<float>(8, 1.0f), &keep);
    auto [st, msg] = open_error(s, dir + "/size.ember");
    CHECK(st == EMBER_ERR_BAD_TENSOR);
    CHECK(msg.find("rope_factors_short.weight") != std::string::npos);
  }
  {
    std::vector<float> bad(6, 1.0f);
    bad[3] = std::nanf("");
    ModelSpec s = model->spec;
    set_factors(s, "rope_factors_long.weight", bad, &keep);
    auto [st, msg] = open_error(s, dir + "/nan.ember");
    CHECK(st == EMBER_ERR_BAD_TENSOR);
    CHECK(msg.find("rope_factors_long.weight") != std::string::npos);
    bad[3] = 0.0f;
    set_factors(s, "rope_factors_long.weight", bad, &keep);
    std::tie(st, msg) = open_error(s, dir + "/zero.ember");
    CHECK(st == EMBER_ERR_BAD_TENSOR);
  }
  {
    // One of the two alone.
    ModelSpec s = model->spec;
    s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(),
                                   [](const TensorSource& t) { return t.name == "rope_factors_long.weight"; }),
                    s.tensors.end());
    auto [st, msg] = open_error(s, dir + "/one.ember");
    CHECK(st == EMBER_ERR_MISSING_TENSOR);
    CHECK(msg.find("rope_factors_long.weight") != std::string::npos);
  }
  {
    // LongRoPE tensors on another family: refused by name.
    ModelSpec s = model->spec;
    s.hparams.arch = ModelArch::Qwen2;
    auto [st, msg] = open_error(s, dir + "/qwen2.ember");
    CHECK(st == EMBER_ERR_UNSUPPORTED);
    CHECK(msg.find("rope_factors_") != std::string::npos);
  }
  {
    // GGUF: an odd phi3 rope.dimension_count, named.
    ModelSpec s = model->spec;
    s.hparams.rope_dims = 7;
    REQUIRE(write_gguf(s, dir + "/odd.gguf").is_ok());
    auto odd = import_gguf(dir + "/odd.gguf");
    REQUIRE_FALSE(odd.is_ok());
    CHECK(odd.status().code() == EMBER_ERR_BAD_HPARAMS);
    CHECK(std::string(odd.status().message()).find("phi3.rope.dimension_count") != std::string::npos);
  }
  {
    // GGUF: partial rotary on llama (whose llama.cpp graph asserts full
    // rotary) is refused, naming the key.
    SynthShape sh;
    REQUIRE(synth_shape("tiny", &sh));
    sh.rope_dims = 8;
    auto llama_model = make_synthetic(sh, DType::F32, 13, "");
    REQUIRE(llama_model.is_ok());
    REQUIRE(write_gguf(llama_model.value()->spec, dir + "/llama.gguf").is_ok());
    auto r = import_gguf(dir + "/llama.gguf");
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(r.status().message()).find("llama.rope.dimension_count") != std::string::npos);
  }
}

#if EMBER_VULKAN
TEST_CASE("rope op on vulkan: partial rotary, frequency factors and the attention factor against ggml's formula") {
  run_rope_cases(true);
}

TEST_CASE("context shift on vulkan re-rotates stored keys with the rope's rotated dims and factors") {
  run_shift_cases(true);
}

TEST_CASE("phi3 partial rotary with LongRoPE: vulkan gives the cpu's logits, short and long factors") {
  // The fixture's session context is 32: long factors past 16, short up to 64.
  ember::test::check_vulkan_matches_cpu(tiny_phi3(12, 16)->spec, "phi3-longrope-vk-long");
  ember::test::check_vulkan_matches_cpu(tiny_phi3(12, 64)->spec, "phi3-longrope-vk-short");
}
#endif

}  // TEST_SUITE

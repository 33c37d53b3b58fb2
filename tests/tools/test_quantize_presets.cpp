// ember quantize --type PRESET: the per-tensor mixture of q4_k_m on a model
// whose rows are whole 256-blocks, the documented fallbacks when they are
// not (and f16 when rows are not even 32-blocks), the quantized model
// running close to the f32 one, and unknown presets refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember.h"
#include "format/model_file.h"
#include "tools/convert/quantize.h"
#include "tools_helpers.h"

namespace ember {
namespace {

// Every matrix's rows are whole 256-blocks (dim 256, hidden 512).
SynthShape wide_shape() {
  SynthShape s;
  s.name = "wide";
  s.dim = 256;
  s.hidden_dim = 512;
  s.n_layers = 8;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.context = 64;
  return s;
}

// dim 160 (like 896: a multiple of 32, not of 256); hidden 80 (not even a
// multiple of 32), so ffn_down's rows are 80 elements.
SynthShape narrow_shape() {
  SynthShape s;
  s.name = "narrow";
  s.dim = 160;
  s.hidden_dim = 80;
  s.n_layers = 2;
  s.n_heads = 5;
  s.n_kv_heads = 5;
  s.context = 64;
  return s;
}

std::map<std::string, DType> tensor_types(const std::string& path) {
  auto f = ModelFile::open(path, ModelFile::Options{true});
  REQUIRE_MESSAGE(f.is_ok(), f.status().message());
  std::map<std::string, DType> types;
  for (const auto& t : f.value()->tensors()) types[t.name] = t.dtype;
  return types;
}

std::vector<float> prefill_logits(const std::string& path) {
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 32;
  so.n_threads = 2;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  std::vector<float> out(info.vocab_size);
  const int32_t prompt[] = {1, 72, 101, 108, 108, 111};
  REQUIRE(ember_session_prefill(s, prompt, 6, out.data()) == EMBER_OK);
  ember_session_free(s);
  ember_model_free(m);
  return out;
}

double relative_rms(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    REQUIRE(std::isfinite(a[i]));
    num += (a[i] - ref[i]) * static_cast<double>(a[i] - ref[i]);
    den += ref[i] * static_cast<double>(ref[i]);
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("quantize presets: the bumped layers of the _m presets") {
  // First and last eighth (at least one layer each) and every third layer.
  std::set<int> got;
  for (int i = 0; i < 8; ++i) if (preset_bumped_layer(i, 8)) got.insert(i);
  CHECK(got == std::set<int>{0, 2, 5, 7});
  got.clear();
  for (int i = 0; i < 32; ++i) if (preset_bumped_layer(i, 32)) got.insert(i);
  CHECK(got == std::set<int>{0, 1, 2, 3, 5, 8, 11, 14, 17, 20, 23, 26, 28, 29, 30, 31});
  // The fallback table.
  CHECK(preset_fallback(DType::Q2_K, 896) == DType::Q4_0);
  CHECK(preset_fallback(DType::Q3_K, 896) == DType::Q4_0);
  CHECK(preset_fallback(DType::Q4_K, 896) == DType::Q5_0);
  CHECK(preset_fallback(DType::Q5_K, 896) == DType::Q5_1);
  CHECK(preset_fallback(DType::Q6_K, 896) == DType::Q8_0);
  CHECK(preset_fallback(DType::IQ4_XS, 896) == DType::IQ4_NL);
  CHECK(preset_fallback(DType::Q4_K, 1024) == DType::Q4_K);
  CHECK(preset_fallback(DType::Q4_K, 80) == DType::F16);
  CHECK(preset_fallback(DType::Q8_0, 80) == DType::F16);
  CHECK(preset_fallback(DType::Q8_0, 96) == DType::Q8_0);
  // llama.cpp's rules for grouped queries and q3_k_m's first ffn_down layers.
  const QuantPreset iq4xs = parse_quant_preset("iq4_xs").value();
  CHECK(preset_type(iq4xs, "blk.5.attn_v.weight", 24, false, 7) == DType::Q5_K);
  CHECK(preset_type(iq4xs, "blk.5.attn_v.weight", 24, false, 2) == DType::IQ4_XS);
  CHECK(preset_type(iq4xs, "blk.5.attn_q.weight", 24, false, 7) == DType::IQ4_XS);
  // Without an importance matrix, the first eighth of ffn_down q5_k.
  CHECK(preset_type(iq4xs, "blk.2.ffn_down.weight", 24, false, 7, false) == DType::Q5_K);
  CHECK(preset_type(iq4xs, "blk.3.ffn_down.weight", 24, false, 7, false) == DType::IQ4_XS);
  CHECK(preset_type(iq4xs, "blk.2.ffn_down.weight", 24, false, 7, true) == DType::IQ4_XS);
  // With one, q4_0 and q5_0 take q4_1 / q5_1 there.
  CHECK(preset_type(parse_quant_preset("q4_0").value(), "blk.2.ffn_down.weight", 24, false, 1, true) == DType::Q4_1);
  CHECK(preset_type(parse_quant_preset("q5_0").value(), "blk.2.ffn_down.weight", 24, false, 1, true) == DType::Q5_1);
  CHECK(preset_type(parse_quant_preset("q4_0").value(), "blk.2.ffn_down.weight", 24, false, 1, false) == DType::Q4_0);
  CHECK(preset_type(parse_quant_preset("q4_0").value(), "blk.3.ffn_down.weight", 24, false, 1, true) == DType::Q4_0);
  const QuantPreset q3km = parse_quant_preset("q3_k_m").value();
  CHECK(preset_type(q3km, "blk.0.ffn_down.weight", 24) == DType::Q5_K);   // 24 / 16 = 1 layer
  CHECK(preset_type(q3km, "blk.1.ffn_down.weight", 24) == DType::Q4_K);
  CHECK(preset_type(q3km, "blk.1.ffn_down.weight", 32) == DType::Q5_K);   // 32 / 16 = 2 layers
  CHECK(preset_type(q3km, "blk.0.attn_v.weight", 24, false, 8) == DType::Q5_K);
  CHECK(preset_type(q3km, "blk.4.attn_v.weight", 24, false, 8) != DType::Q5_K);
  CHECK(preset_type(parse_quant_preset("q2_k").value(), "blk.3.attn_v.weight", 24, false, 4) == DType::Q4_K);
  const QuantPreset q4km = parse_quant_preset("q4_k_m").value();
  for (int layer = 0; layer < 24; ++layer) {  // no grouped-query rule
    const std::string v = "blk." + std::to_string(layer) + ".attn_v.weight";
    CHECK(preset_type(q4km, v, 24, false, 8) == preset_type(q4km, v, 24, false, 1));
  }
  // Every listed name parses; its base type is what the name says.
  std::string names = quant_preset_names();
  size_t pos = 0;
  int n = 0;
  while (pos < names.size()) {
    size_t end = names.find(' ', pos);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(pos, end - pos);
    auto p = parse_quant_preset(name);
    REQUIRE_MESSAGE(p.is_ok(), name);
    CHECK(name.rfind(dtype_name(p.value().base), 0) == 0);
    pos = end + 1;
    n++;
  }
  CHECK(n == 16);
}

TEST_CASE("quantize presets: q4_k_m mixture on whole 256-blocks and the model runs close to f32") {
  const std::string dir = test::temp_dir("quantize-presets");
  const std::string in = test::synth_ember(dir, wide_shape(), DType::F32, 11, "wide-f32.ember");
  const std::string out = dir + "/wide-q4_k_m.ember";
  auto r = test::run_cli("quantize " + in + " -o " + out + " --type q4_k_m 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("[1/") != std::string::npos);
  CHECK(r.out.find("bits per weight overall") != std::string::npos);
  CHECK(r.out.find("q6_k") != std::string::npos);
  const auto types = tensor_types(out);
  const std::set<int> bumped = {0, 2, 5, 7};
  CHECK(types.at("output.weight") == DType::Q6_K);
  CHECK(types.at("token_embd.weight") == DType::Q4_K);
  CHECK(types.at("output_norm.weight") == DType::F32);
  for (int l = 0; l < 8; ++l) {
    CAPTURE(l);
    const std::string b = "blk." + std::to_string(l) + ".";
    const DType vd = bumped.count(l) ? DType::Q6_K : DType::Q4_K;
    CHECK(types.at(b + "attn_v.weight") == vd);
    CHECK(types.at(b + "ffn_down.weight") == vd);
    for (const char* role : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) {
      CHECK(types.at(b + role + ".weight") == DType::Q4_K);
    }
    CHECK(types.at(b + "attn_norm.weight") == DType::F32);
    CHECK(types.at(b + "ffn_norm.weight") == DType::F32);
  }
  auto f = ModelFile::open(out, ModelFile::Options{true});
  REQUIRE(f.is_ok());
  CHECK(f.value()->provenance().quantization.rfind("q4_k_m preset", 0) == 0);

  // Loose tolerance: 4-6 bits per weight over 8 layers of random weights;
  // the relative RMS of the logits stays well under 25%.
  const auto ref = prefill_logits(in);
  const auto q = prefill_logits(out);
  const double err = relative_rms(q, ref);
  MESSAGE("q4_k_m logits relative RMS vs f32: " << err);
  CHECK(err < 0.25);

  // The _s preset: the base type everywhere except output.
  const std::string out_s = dir + "/wide-q4_k_s.ember";
  r = test::run_cli("quantize " + in + " -o " + out_s + " --type q4_k_s 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  for (const auto& [name, t] : tensor_types(out_s)) {
    const std::string tensor = name;  // CAPTURE cannot take a structured binding (clang 14)
    CAPTURE(tensor);
    if (name == "output.weight") CHECK(t == DType::Q6_K);
    else if (name.find("norm") != std::string::npos) CHECK(t == DType::F32);
    else CHECK(t == DType::Q4_K);
  }
}

TEST_CASE("quantize presets: rows that are not whole blocks fall back as documented") {
  const std::string dir = test::temp_dir("quantize-presets-narrow");
  for (DType src : {DType::F16, DType::BF16}) {
    const std::string src_name = dtype_name(src);
    CAPTURE(src_name);
    const std::string in = test::synth_ember(dir, narrow_shape(), src, 5, "narrow-" + src_name + ".ember");
    struct Case {
      const char* preset;
      DType base_fb, bumped_fb, output_fb;
    };
    for (const Case& c : {Case{"q4_k_m", DType::Q5_0, DType::F16, DType::Q8_0},
                          Case{"q2_k", DType::Q4_0, DType::F16, DType::Q8_0},
                          Case{"q5_k_s", DType::Q5_1, DType::F16, DType::Q8_0},
                          Case{"iq4_xs", DType::IQ4_NL, DType::F16, DType::Q8_0},
                          Case{"q4_0", DType::Q4_0, DType::F16, DType::Q8_0}}) {
      CAPTURE(c.preset);
      const std::string out = dir + "/narrow-" + src_name + "-" + c.preset + ".ember";
      auto r = test::run_cli("quantize " + in + " -o " + out + " --type " + c.preset + " 2>&1");
      REQUIRE_MESSAGE(r.rc == 0, r.out);
      const auto types = tensor_types(out);
      CHECK(types.at("output.weight") == c.output_fb);
      CHECK(types.at("blk.0.attn_q.weight") == c.base_fb);
      CHECK(types.at("blk.1.ffn_up.weight") == c.base_fb);
      // ffn_down: rows of 80 elements, f16 whatever the preset wanted.
      CHECK(types.at("blk.0.ffn_down.weight") == c.bumped_fb);
      CHECK(types.at("blk.1.ffn_down.weight") == c.bumped_fb);
      CHECK(types.at("blk.0.attn_norm.weight") == DType::F32);
      if (c.base_fb != DType::Q4_0) CHECK(r.out.find("fallback from") != std::string::npos);
      const auto q = prefill_logits(out);
      for (float v : q) REQUIRE(std::isfinite(v));
    }
  }
}

TEST_CASE("quantize presets: a quantized source is dequantized first and unknown presets are refused") {
  const std::string dir = test::temp_dir("quantize-presets-cli");
  const std::string in = test::synth_ember(dir, narrow_shape(), DType::F32, 3, "n-f32.ember");
  const std::string q8 = dir + "/n-q8.ember";
  auto r = test::run_cli("quantize " + in + " -o " + q8 + " --dtype q8_0 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string out = dir + "/n-q4km.ember";
  r = test::run_cli("quantize " + q8 + " -o " + out + " --type q4_k_m 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("dequantized to f32 first") != std::string::npos);
  CHECK(tensor_types(out).at("blk.0.attn_q.weight") == DType::Q5_0);

  r = test::run_cli("quantize " + in + " -o " + out + " --type q4_k_x 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.rfind("EMBER_ERR_INVALID_ARGUMENT: --type 'q4_k_x' is not a preset", 0) == 0);
  CHECK(r.out.find("q3_k_l") != std::string::npos);
  CHECK(r.out.find("iq4_xs") != std::string::npos);
  r = test::run_cli("quantize " + in + " -o " + out + " --type q4_k_m --dtype q8_0 2>&1");
  CHECK(r.rc != 0);
  r = test::run_cli("quantize " + in + " -o " + out + " 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("--type") != std::string::npos);
}

TEST_CASE("quantize presets: --gguf writes the same weight bytes as the .ember output") {
  const std::string dir = test::temp_dir("quantize-presets-gguf");
  const std::string in = test::synth_ember(dir, wide_shape(), DType::F32, 13, "w.ember");
  const std::string ember = dir + "/w-q3_k_m.ember", gguf = dir + "/w-q3_k_m.gguf";
  REQUIRE(test::run_cli("quantize " + in + " -o " + ember + " --type q3_k_m --layout row-major 2>/dev/null").rc == 0);
  auto r = test::run_cli("quantize " + in + " -o " + gguf + " --type q3_k_m --gguf 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  auto e = ModelFile::open(ember, ModelFile::Options{true});
  REQUIRE(e.is_ok());
  auto g = import_gguf(gguf);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  std::map<std::string, const TensorSource*> by_name;
  for (const auto& t : g.value()->spec.tensors) by_name[t.name] = &t;
  int q4k = 0, q5k = 0;
  for (const auto& t : e.value()->tensors()) {
    CAPTURE(t.name);
    REQUIRE(by_name.count(t.name) == 1);
    const TensorSource& gt = *by_name[t.name];
    CHECK(gt.dtype == t.dtype);
    REQUIRE(gt.size == t.size);
    CHECK(std::memcmp(gt.data, t.data, t.size) == 0);
    q4k += t.dtype == DType::Q4_K;
    q5k += t.dtype == DType::Q5_K;
    if (t.name == "blk.0.attn_v.weight" || t.name == "blk.1.attn_v.weight") CHECK(t.dtype == DType::Q5_K);
  }
  // attn_output, attn_v and ffn_down of the 8 layers, less attn_v of layers
  // 0 and 1 (q5_k); token_embd is q3_k.
  CHECK(q4k == 22);
  CHECK(q5k == 2);
}

}  // TEST_SUITE
}  // namespace ember

// Whole models on the Vulkan device: stories260K against the llama2.c
// reference (greedy ids, hence text, identical; logits within 1e-3) and
// against the CPU backend; synthetic models of every weight type (and
// quantization-preset mixtures) agreeing with the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "model/llama_graph.h"
#include "model/model.h"
#include "model/stories_fixture.h"
#include "tools/convert/quantize.h"
#include "tools/convert/synthetic.h"
#include "vulkan/vulkan_fixture.h"

#if EMBER_VULKAN

namespace {

using namespace ember;
using ember::test::argmax;
using ember::test::max_abs_diff;
using ember::test::Runner;
using ember::test::write_widened;

std::vector<double> read_numbers(const std::string& path) {
  std::istringstream in(ember::test::read_text_file(path));
  std::vector<double> v;
  double x;
  while (in >> x) v.push_back(x);
  return v;
}

std::unique_ptr<Model> open_model(const std::string& path) {
  auto m = Model::open(path, Model::Options());
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return std::move(m).value();
}

// A session-shaped run of `model` on `backend`, as Session::create builds it.
bool start(Runner* r, const Model& model, std::unique_ptr<Backend> backend, int32_t context, int32_t max_batch,
           KvType kv = KvType::F32) {
  auto g = build_llama_graph(model.file().contents(), context, std::min(max_batch, context), kv, kv);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  Status st = r->init(g.value(), std::move(backend));
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return true;
}

// Greedy generation from `prompt` on both backends (the CPU's choice fed to
// both); returns the worst logit difference and counts top-1 disagreements.
// `cpu_model` may differ from `model` (the f32 widening of a quantized one).
// A disagreement counts only where the CPU's own logits separate the two
// choices by more than `tie` (0: every disagreement counts).
// `worst_rel` (if given) receives the worst relative L2 distance of the
// device's logits from the CPU's, ||lg - lc|| / ||lc||, over every step.
double greedy_vs_cpu(const Model& model, const std::vector<int32_t>& prompt, int steps, int32_t context,
                     int32_t max_batch, KvType kv, int* disagreements, const Model* cpu_model = nullptr,
                     double tie = 0, int* near_ties = nullptr, double* worst_rel = nullptr) {
  auto vk = ember::test::open_vulkan();
  if (!vk) return 0;
  Runner cpu, gpu;
  start(&cpu, cpu_model ? *cpu_model : model, ember::test::cpu_backend(), context, max_batch, kv);
  start(&gpu, model, std::move(vk), context, max_batch, kv);
  std::vector<float> lc, lg;
  int32_t pos = 0;
  for (size_t done = 0; done < prompt.size();) {
    const size_t n = std::min<size_t>(prompt.size() - done, cpu.graph.max_batch);
    std::vector<int32_t> chunk(prompt.begin() + done, prompt.begin() + done + n);
    REQUIRE(cpu.step(chunk, pos, &lc).is_ok());
    REQUIRE(gpu.step(chunk, pos, &lg).is_ok());
    pos += static_cast<int32_t>(n);
    done += n;
  }
  double worst = max_abs_diff(lc, lg);
  auto rel_l2 = [&] {
    double num = 0, den = 0;
    for (size_t i = 0; i < lc.size(); ++i) {
      num += (static_cast<double>(lg[i]) - lc[i]) * (static_cast<double>(lg[i]) - lc[i]);
      den += static_cast<double>(lc[i]) * lc[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  };
  if (worst_rel) *worst_rel = rel_l2();
  *disagreements = 0;
  if (near_ties) *near_ties = 0;
  for (int s = 0; s < steps; ++s) {
    const int32_t next = argmax(lc);
    const int32_t mine = argmax(lg);
    if (mine != next) {
      if (lc[next] - lc[mine] > tie) {
        ++*disagreements;
      } else if (near_ties) {
        ++*near_ties;
      }
    }
    REQUIRE(cpu.step({next}, pos, &lc).is_ok());
    REQUIRE(gpu.step({next}, pos, &lg).is_ok());
    ++pos;
    worst = std::max(worst, max_abs_diff(lc, lg));
    if (worst_rel) *worst_rel = std::max(*worst_rel, rel_l2());
  }
  return worst;
}

}  // namespace

TEST_SUITE("vulkan") {

TEST_CASE("vulkan: stories260K greedy ids and logits match the llama2.c reference") {
  const std::string ids_path = ember::test::test_data("golden/once-upon-a-time.ids.txt");
  const std::string logits_path = ember::test::test_data("golden/once-upon-a-time.logits.txt");
  if (ids_path.empty() || logits_path.empty()) return;
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  const std::vector<double> golden = read_numbers(ids_path);
  const std::vector<double> golden_logits = read_numbers(logits_path);
  REQUIRE(golden.size() == 200);
  auto model = open_model(path);
  auto vk = ember::test::open_vulkan();
  if (!vk) return;
  for (KvType kv : {KvType::F32, KvType::F16}) {
    CAPTURE(std::string(kv_type_name(kv)));
    Runner r;
    auto backend = ember::test::open_vulkan();
    REQUIRE(backend);
    start(&r, *model, std::move(backend), 256, 512, kv);
    // BOS + "Once upon a time" as one batch, then greedy decode.
    std::vector<int32_t> ids;
    REQUIRE(model->tokenizer().encode("Once upon a time", true, &ids).is_ok());
    REQUIRE(ids.size() == 5);
    for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == static_cast<int32_t>(golden[i]));
    std::vector<float> logits;
    REQUIRE(r.step(ids, 0, &logits).is_ok());
    double diff = 0;
    for (size_t i = 0; i < logits.size(); ++i) diff = std::max(diff, std::fabs(logits[i] - golden_logits[i]));
    CHECK(diff < (kv == KvType::F32 ? 1e-3 : 2e-2));
    std::vector<int32_t> out(ids);
    for (int32_t pos = 5; pos < 200; ++pos) {
      const int32_t next = argmax(logits);
      out.push_back(next);
      if (kv == KvType::F32) REQUIRE(next == static_cast<int32_t>(golden[pos]));
      REQUIRE(r.step({next}, pos, &logits).is_ok());
    }
    if (kv == KvType::F32) {
      // Same ids, hence the same text as ../shared/golden/once-upon-a-time.txt.
      std::string text, want;
      std::vector<int32_t> want_ids(golden.begin(), golden.end());
      REQUIRE(model->tokenizer().decode(out.data(), out.size(), &text).is_ok());
      REQUIRE(model->tokenizer().decode(want_ids.data(), want_ids.size(), &want).is_ok());
      CHECK(text == want);
    } else {
      int same = 0;
      for (size_t i = 0; i < out.size(); ++i) same += out[i] == static_cast<int32_t>(golden[i]);
      MESSAGE("f16 kv cache: " << same << " of 200 greedy ids equal the f32 reference");
    }
  }
}

TEST_CASE("vulkan: stories260K agrees with the CPU backend on any prompt, batched and token by token, both reduction variants") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  auto model = open_model(path);
  const char* prompts[] = {"Lily and Tom went to the", "The dog", "Zyx 123 \xc3\xbc!"};
  for (bool portable : {false, true}) {
    CAPTURE(portable);
    ember::test::ShaderVariant variant(portable);
    for (const char* prompt : prompts) {
      CAPTURE(prompt);
      std::vector<int32_t> ids;
      REQUIRE(model->tokenizer().encode(prompt, true, &ids).is_ok());
      for (int32_t max_batch : {512, 3, 1}) {
        CAPTURE(max_batch);
        int disagree = 0;
        const double worst = greedy_vs_cpu(*model, ids, 40, 128, max_batch, KvType::F32, &disagree);
        CHECK(disagree == 0);
        CHECK(worst < 1e-3);
      }
    }
  }
}

TEST_CASE("vulkan: synthetic F16, BF16, Q8_0 and Q4_0 models agree with the CPU on top-1") {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  for (DType t : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0}) {
    CAPTURE(std::string(dtype_name(t)));
    auto m = make_synthetic(shape, t, 7, "");
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    const std::string dir = ember::test::temp_dir("vulkan");
    const std::string path = dir + "/tiny-" + dtype_name(t) + ".ember";
    const std::string wide = dir + "/tiny-" + dtype_name(t) + "-as-f32.ember";
    REQUIRE(write_model(m.value()->spec, path).is_ok());
    REQUIRE(write_widened(m.value()->spec, wide).is_ok());
    auto model = open_model(path);
    auto model_f32 = open_model(wide);
    std::vector<int32_t> prompt;
    REQUIRE(model->tokenizer().encode("Once upon a time there was", true, &prompt).is_ok());

    // 1. Against the CPU on the same file. The CPU quantizes activations to
    //    8 bits for Q8_0/Q4_0 weights and the device keeps them f32, so on a
    //    random model a near-tie (CPU logits within 0.25) may flip; any
    //    clear choice must agree.
    int disagree = 0, ties = 0;
    double worst = greedy_vs_cpu(*model, prompt, 32, 128, 16, KvType::F32, &disagree, nullptr, 0.25, &ties);
    MESSAGE(std::string(dtype_name(t)) << " vs cpu: worst logit difference " << worst << ", top-1 disagreements " << disagree
                          << " + near-ties " << ties << " of 33");
    CHECK(disagree == 0);
    // A CPU with AVX512-BF16 rounds a BF16 matmul's activations to BF16
    // (dispatch.h, cpu_choose_bf16_dot), as it rounds the int8 types' to 8 bits.
    const bool bf16_rounded = t == DType::BF16 && cpu_select_families().is_ok() && cpu_select_families().value().bf16_dot;
    CHECK(worst < (t == DType::F16 || (t == DType::BF16 && !bf16_rounded) ? 1e-3 : 0.25));

    // 2. Exactly: against the CPU on the same weights widened to f32 (the
    //    arithmetic the device performs), every top-1 and logits within 1e-3.
    worst = greedy_vs_cpu(*model, prompt, 32, 128, 16, KvType::F32, &disagree, model_f32.get());
    MESSAGE(std::string(dtype_name(t)) << " vs f32-widened on cpu: worst logit difference " << worst);
    CHECK(disagree == 0);
    CHECK(worst < 1e-3);
  }
}

TEST_CASE("vulkan: q8_0 kv cache agrees with the CPU's q8_0 kv cache, stories260K and synthetic") {
  // Both backends store q8_0 rows with the same rounding (bit-identical for
  // identical inputs: test_vulkan_kv.cpp). Their inputs differ by f32
  // summation order (~1e-5, the f32 bound below), so an element on a rounding
  // boundary lands one q8_0 step apart (1/127 of its block's largest
  // magnitude); measured worst over these runs is ~1e-2, hence 5e-2, with
  // every clear top-1 choice equal (near-ties within 0.1 may flip).
  std::vector<std::pair<std::string, std::unique_ptr<Model>>> models;
  const std::string stories = ember::test::stories_model("llama2c");
  if (!stories.empty()) models.emplace_back("stories260K", open_model(stories));
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  auto m = make_synthetic(shape, DType::F16, 11, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const std::string path = ember::test::temp_dir("vulkan") + "/tiny-f16-kvq8.ember";
  REQUIRE(write_model(m.value()->spec, path).is_ok());
  models.emplace_back("tiny f16", open_model(path));
  for (auto& [name, model] : models) {
    CAPTURE(name);
    std::vector<int32_t> prompt;
    REQUIRE(model->tokenizer().encode("Once upon a time there was", true, &prompt).is_ok());
    for (int32_t max_batch : {512, 1}) {
      CAPTURE(max_batch);
      int disagree = 0, ties = 0;
      const double worst =
          greedy_vs_cpu(*model, prompt, 60, 128, max_batch, KvType::Q8_0, &disagree, nullptr, 0.1, &ties);
      MESSAGE(name << " q8_0 kv, batch " << max_batch << ": worst logit difference " << worst
                   << ", top-1 disagreements " << disagree << " + near-ties " << ties);
      CHECK(disagree == 0);
      CHECK(worst < 5e-2);
    }
  }
}

// Vulkan against the CPU on one model, two ways. (1) Exactly: the CPU runs
// the same weights widened to f32 (write_widened), which is the arithmetic
// the device performs (it dequantizes in the shader and keeps activations
// f32): every top-1 equal and logits within 1e-4 (measured ~3e-6: f32
// summation order), which a wrong nibble, bit or scale would break. This stays valid whatever the CPU's
// own kernels for the type do. (2) Against the CPU on the same file: its
// kernels for a block type may quantize activations to 8 bits (as
// llama.cpp does, 1-3% rel-L2 on random-weight models), so the bound is 5%
// rel-L2, with every top-1 the CPU separates by more than 0.25 equal.
void check_model_vs_cpu(const std::string& label, const ModelSpec& spec, const std::string& dir) {
  const std::string path = dir + "/" + label + ".ember", wide = dir + "/" + label + "-as-f32.ember";
  REQUIRE(write_model(spec, path).is_ok());
  REQUIRE(write_widened(spec, wide).is_ok());
  auto model = open_model(path);
  auto model_f32 = open_model(wide);
  std::vector<int32_t> prompt;
  REQUIRE(model->tokenizer().encode("Once upon a time there was", true, &prompt).is_ok());
  int disagree = 0, ties = 0;
  double rel = 0;
  double worst = greedy_vs_cpu(*model, prompt, 16, 64, 16, KvType::F32, &disagree, model_f32.get());
  MESSAGE(label << " vs f32-widened on cpu: worst logit difference " << worst);
  CHECK(disagree == 0);
  CHECK(worst < 1e-4);
  worst = greedy_vs_cpu(*model, prompt, 16, 64, 16, KvType::F32, &disagree, nullptr, 0.25, &ties, &rel);
  MESSAGE(label << " vs cpu: worst logit difference " << worst << ", worst rel-L2 " << rel
                << ", top-1 disagreements " << disagree << " + near-ties " << ties << " of 17");
  CHECK(disagree == 0);
  CHECK(rel < 0.05);
}

TEST_CASE("vulkan: synthetic models of every GGUF block type (q4_1 ... iq4_xs) agree with the CPU") {
  // Rows of 256 and 512: whole super-blocks for every type.
  const SynthShape shape{"w256", 256, 512, 1, 4, 2, 0, 64};
  if (!ember::test::open_vulkan()) return;
  const std::string dir = ember::test::temp_dir("vulkan-types");
  for (DType t : {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS}) {
    CAPTURE(std::string(dtype_name(t)));
    auto m = make_synthetic(shape, t, 7, "");
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    check_model_vs_cpu(std::string("w256-") + dtype_name(t), m.value()->spec, dir);
  }
}

TEST_CASE("vulkan: quantization-preset mixtures (q2_k, and q4_k_m on rows that are not whole 256-blocks) agree with the CPU") {
  if (!ember::test::open_vulkan()) return;
  const std::string dir = ember::test::temp_dir("vulkan-presets");
  struct Case {
    SynthShape shape;
    const char* preset;
    std::vector<DType> want;  // types the mixture must hold
  };
  // dim 256: q2_k's q2_k / q3_k / q4_k / q6_k; dim 320 (as Qwen2.5-0.5B's
  // 896, not whole 256-blocks): q4_k_m falls back to q5_0 and q8_0 beside
  // q6_k, so repacked and raw block types meet in one graph.
  const Case cases[] = {
      {{"p256", 256, 512, 2, 4, 2, 0, 64}, "q2_k", {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q6_K}},
      {{"p320", 320, 768, 2, 5, 1, 0, 64}, "q4_k_m", {DType::Q5_0, DType::Q8_0, DType::Q6_K}},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.preset));
    auto m = make_synthetic(c.shape, DType::F32, 5, "");
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    auto preset = parse_quant_preset(c.preset);
    REQUIRE(preset.is_ok());
    PresetReport report;
    REQUIRE(quantize_model_preset(m.value().get(), preset.value(), &report).is_ok());
    for (DType t : c.want) {
      bool found = false;
      for (const TensorSource& ts : m.value()->spec.tensors) found |= ts.dtype == t;
      CAPTURE(std::string(dtype_name(t)));
      CHECK(found);
    }
    check_model_vs_cpu(c.shape.name + "-" + c.preset, m.value()->spec, dir);
  }
}

TEST_CASE("vulkan: device bytes are the file's bytes for GGUF block types, and a layout the shaders do not read is refused") {
  // Q3_K blocks are 110 bytes: 37 rows of 256 are 4070 bytes, a word more
  // on the device (4072); the same graph with the weight f32 differs by
  // exactly the weights' difference.
  using ember::test::Builder;
  auto graph = [](DType t, Layout l) {
    Builder b(64, 4, 2, 40, 32, 4);
    const int32_t x = b.embed(DType::F32, 256);
    const int32_t y = b.act(37, 4);
    const int32_t w = b.weight(t, 37, 256, 0.5f);
    b.g.weights[w].layout = l;
    b.op(OpKind::MatMul, y, x, -1, -1, w);
    b.tail(y);
    return b;
  };
  Builder q3 = graph(DType::Q3_K, Layout::RowMajor), f32 = graph(DType::F32, Layout::RowMajor);
  REQUIRE(q3.g.weights[1].size == 4070);
  CHECK(vulkan_supports(q3.g).is_ok());
  const uint64_t with_q3 = vulkan_device_bytes(q3.g, BackendOptions());
  const uint64_t with_f32 = vulkan_device_bytes(f32.g, BackendOptions());
  REQUIRE(with_q3 > 0);
  CHECK(with_f32 - with_q3 == 37ull * 256 * 4 - 4072);
  // A non-row-major layout of a raw block type cannot be read: the planner's
  // query says so (auto then takes the CPU, naming why), and prepare too.
  Builder bad = graph(DType::Q4_K, Layout::Rows16);
  const Status st = vulkan_supports(bad.g);
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK_MESSAGE(st.message().find("'w' (q4_k) has layout rows16") != std::string::npos, st.message());
  CHECK(vulkan_device_bytes(bad.g, BackendOptions()) == 0);
  auto vk = ember::test::open_vulkan();
  if (!vk) return;
  Runner r;
  CHECK(r.init(bad.g, std::move(vk)).code() == EMBER_ERR_UNSUPPORTED);
}

TEST_CASE("vulkan: a batched graph (several sequences) is supported, and the entry says it runs them") {
  using ember::test::Builder;
  Builder b(64, 4, 2, 40, 32, 4);
  const int32_t x = b.embed(DType::F32, 256);
  const int32_t y = b.act(37, 4);
  const int32_t w = b.weight(DType::F32, 37, 256, 0.5f);
  b.op(OpKind::MatMul, y, x, -1, -1, w);
  b.tail(y);
  const uint64_t one = vulkan_device_bytes(b.g, BackendOptions());
  b.g.n_seqs = 3;
  CHECK(vulkan_supports(b.g).is_ok());
  CHECK(find_backend(BackendKind::Vulkan)->caps.batched_sequences);
  CHECK(check_capabilities(*find_backend(BackendKind::Vulkan), b.g).is_ok());
  // Three sequences' caches (1 layer, kv_dim 32 f32: 2 x 32 x 4 bytes a
  // row, 32 rows each), two more logits rows (40 floats) and two more
  // output-row words in the step buffer.
  CHECK(vulkan_device_bytes(b.g, BackendOptions()) - one == 2ull * (32 * 2 * 32 * 4) + 2 * 40 * 4 + 2 * 4);
}

}  // TEST_SUITE

#endif

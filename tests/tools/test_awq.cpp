// Activation-aware scaling (issue 45 item 3, tools/convert/awq.h): the scaled
// float model computes what the unscaled one does (every family, grouped
// queries, biases, the logits head), the search never picks a worse scaling
// by its own measure, misuse is refused by name, and `ember quantize --awq`
// end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "ember.h"
#include "tools/convert/awq.h"
#include "tools/convert/imatrix.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/quantize.h"
#include "tools_helpers.h"

namespace ember {
namespace {

const std::vector<int32_t> kTokens = {1, 20, 33, 47, 5, 80, 91, 12, 3, 60, 7, 44, 101, 9};

// The model's activation statistics over kTokens (the logits head's too).
Imatrix collect_stats(const std::string& path) {
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model, nullptr, &s) == EMBER_OK);
  REQUIRE(ember_session_collect_activations(s, 1, 1) == EMBER_OK);
  REQUIRE(ember_session_prefill(s, kTokens.data(), kTokens.size(), nullptr) == EMBER_OK);
  Imatrix m;
  for (size_t i = 0; i < ember_session_activation_count(s); ++i) {
    ember_activation_stats st{};
    REQUIRE(ember_session_activation_stats(s, i, &st, nullptr, 0) == EMBER_OK);
    ImatrixEntry e;
    e.name = st.weight;
    e.sum_sq.resize(static_cast<size_t>(st.cols));
    REQUIRE(ember_session_activation_stats(s, i, &st, e.sum_sq.data(), e.sum_sq.size()) == EMBER_OK);
    e.rows = static_cast<double>(st.rows);
    m.entries.push_back(std::move(e));
  }
  ember_session_free(s);
  ember_model_free(model);
  return m;
}

// The logits after each of kTokens, decoded one at a time.
std::vector<float> logits_of(const std::string& path) {
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  ember_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model, nullptr, &s) == EMBER_OK);
  std::vector<float> all, one(static_cast<size_t>(info.vocab_size));
  for (int32_t t : kTokens) {
    REQUIRE(ember_session_decode(s, t, one.data()) == EMBER_OK);
    all.insert(all.end(), one.begin(), one.end());
  }
  ember_session_free(s);
  ember_model_free(model);
  return all;
}

DType q4_0_target(const TensorSource& t) { return t.shape.size() == 1 ? DType::F32 : DType::Q4_0; }

SynthShape tiny_shape() {
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  return tiny;
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("awq: the scaled f32 model computes what the unscaled one does, every family") {
  const std::string dir = test::temp_dir("awq-fold");
  const SynthShape tiny = tiny_shape();
  REQUIRE(tiny.n_kv_heads < tiny.n_heads);  // grouped queries: attn_v -> attn_output shares scales
  for (const std::string arch : {"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"}) {
    CAPTURE(arch);
    SynthShape shape = tiny;
    shape.arch = arch;
    const std::string plain = test::synth_ember(dir, shape, DType::F32, 11, arch + ".ember");
    const Imatrix stats = collect_stats(plain);
    auto model = make_synthetic(shape, DType::F32, 11, "");
    REQUIRE(model.is_ok());
    AwqReport rep;
    const Status st = apply_awq(model.value().get(), stats, nullptr, q4_0_target, &rep, nullptr, 0.6f);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    // Four groups per layer, plus the head where it is its own matrix
    // (llama and phi3; the others tie it to the embeddings).
    const bool own_head = arch == "llama" || arch == "phi3";
    CHECK(rep.groups.size() == 4u * shape.n_layers + (own_head ? 1u : 0u));
    CHECK(rep.scaled == static_cast<int>(rep.groups.size()));
    for (const AwqGroup& g : rep.groups) CHECK_MESSAGE(g.skipped.empty(), describe_awq_group(g));
    const std::string scaled = dir + "/" + arch + "-scaled.ember";
    const Status w = write_model(model.value()->spec, scaled);
    REQUIRE_MESSAGE(w.is_ok(), w.message());
    const std::vector<float> a = logits_of(plain), b = logits_of(scaled);
    REQUIRE(a.size() == b.size());
    double max_diff = 0, max_abs = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(a[i])));
    }
    CHECK(max_abs > 0.0);
    CHECK_MESSAGE(max_diff <= 1e-4 * max_abs + 1e-5, "max |Δlogit| " << max_diff << " of " << max_abs);
    // The weights did change: a wrong fold, not a skipped one, would differ.
    CHECK(test::data_digest(plain) != test::data_digest(scaled));
  }
}

TEST_CASE("awq: the search keeps the least error, α 0 when scaling does not help, weighting follows the scales") {
  const std::string dir = test::temp_dir("awq-search");
  const SynthShape tiny = tiny_shape();
  const std::string plain = test::synth_ember(dir, tiny, DType::F32, 12, "tiny.ember");
  const Imatrix stats = collect_stats(plain);
  auto model = make_synthetic(tiny, DType::F32, 12, "");
  REQUIRE(model.is_ok());
  AwqReport rep;
  REQUIRE(apply_awq(model.value().get(), stats, &stats, q4_0_target, &rep).is_ok());
  for (const AwqGroup& g : rep.groups) {
    CAPTURE(describe_awq_group(g));
    CHECK(g.skipped.empty());
    CHECK(g.error_plain > 0.0);
    CHECK(g.error_scaled <= g.error_plain);
    CHECK((g.alpha == 0.0f) == (g.error_scaled == g.error_plain));
    CHECK(describe_awq_group(g).find(g.layer + " ") != std::string::npos);
  }
  // The weighting imatrix of a scaled consumer is divided by s^2 column by column.
  const Imatrix scaled = scale_imatrix(stats, rep);
  int changed = 0;
  for (const auto& [name, s] : rep.column_scales) {
    const ImatrixEntry* before = stats.find(name);
    const ImatrixEntry* after = scaled.find(name);
    REQUIRE(before != nullptr);
    REQUIRE(after != nullptr);
    for (size_t j = 0; j < s.size(); ++j) {
      CHECK(after->sum_sq[j] == doctest::Approx(before->sum_sq[j] / (s[j] * s[j])).epsilon(1e-5));
    }
    ++changed;
  }
  CHECK(changed == static_cast<int>(rep.column_scales.size()));
  // Float targets: nothing to gain, nothing changed.
  auto f = make_synthetic(tiny, DType::F32, 12, "");
  REQUIRE(f.is_ok());
  AwqReport frep;
  REQUIRE(apply_awq(f.value().get(), stats, nullptr, [](const TensorSource&) { return DType::F16; }, &frep).is_ok());
  CHECK(frep.scaled == 0);
  for (const AwqGroup& g : frep.groups) CHECK(g.skipped == "its matrices stay float");
}

TEST_CASE("awq: misuse is refused by name: another model's statistics, none that apply, an encoder") {
  const std::string dir = test::temp_dir("awq-misuse");
  const SynthShape tiny = tiny_shape();
  const Imatrix stats = collect_stats(test::synth_ember(dir, tiny, DType::F32, 13, "tiny.ember"));
  SynthShape wide = tiny;
  wide.dim *= 2;
  wide.hidden_dim *= 2;
  auto m = make_synthetic(wide, DType::F32, 13, "");
  REQUIRE(m.is_ok());
  AwqReport rep;
  Status s = apply_awq(m.value().get(), stats, nullptr, q4_0_target, &rep);
  CHECK(s.code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(s.message().find("columns") != std::string::npos);
  Imatrix unrelated;
  unrelated.entries.push_back({"something.else.weight", std::vector<float>(64, 1.0f), 4});
  auto m2 = make_synthetic(tiny, DType::F32, 13, "");
  REQUIRE(m2.is_ok());
  s = apply_awq(m2.value().get(), unrelated, nullptr, q4_0_target, &rep);
  CHECK(s.code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(s.message().find("no entry") != std::string::npos);
  SynthShape bert = tiny;
  bert.arch = "bert";
  auto enc = make_synthetic(bert, DType::F32, 13, "");
  REQUIRE(enc.is_ok());
  s = apply_awq(enc.value().get(), stats, nullptr, q4_0_target, &rep);
  CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(s.message().find("encoder") != std::string::npos);
}

TEST_CASE("ember quantize --awq: one line per group, the recipe, with --imatrix, and refusals") {
  const std::string dir = test::temp_dir("awq-cli");
  const SynthShape tiny = tiny_shape();
  const std::string f32 = test::synth_ember(dir, tiny, DType::F32, 14, "tiny.ember");
  const std::string text = dir + "/calib.txt";
  {
    std::ofstream t(text);
    for (int i = 0; i < 30; ++i) t << "A small robot counted " << i << " stars over the quiet hill tonight.\n";
  }
  auto r = test::run_cli("imatrix -m " + f32 + " -f " + text + " -o " + dir + "/im.gguf --ctx 32 --threads 2 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  r = test::run_cli("quantize " + f32 + " -o " + dir + "/a.ember --dtype q4_0 --awq " + dir + "/im.gguf --imatrix " +
                    dir + "/im.gguf 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("awq: blk.0 attn_norm -> attn_q attn_k attn_v: ") != std::string::npos);
  CHECK(r.out.find("awq: blk.1 ffn_up -> ffn_down: ") != std::string::npos);
  CHECK(r.out.find("awq: head output_norm -> output: not scaled, no statistics for output.weight") !=
        std::string::npos);
  CHECK(r.out.find("activation-aware scales on ") != std::string::npos);
  CHECK(r.out.find("matrices weighted") != std::string::npos);
  r = test::run_cli("info " + dir + "/a.ember 2>&1");
  CHECK(r.out.find("activation-aware scales") != std::string::npos);
  // The scaled model runs.
  r = test::run_cli("run -m " + dir + "/a.ember -p 'A small robot' -n 8 --threads 2 2>&1");
  CHECK_MESSAGE(r.rc == 0, r.out);
  r = test::run_cli("quantize " + f32 + " -o " + dir + "/b.ember --type q4_k_m --awq " + dir + "/missing.gguf 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("missing.gguf") != std::string::npos);
}

}  // TEST_SUITE
}  // namespace ember

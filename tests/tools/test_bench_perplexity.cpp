// ember bench: the JSON carries every key of the reproducible template.
// ember perplexity: Q8_0 within 1% of F32, on a synthetic model and on the
// real stories260K (whose ffn_down rows, 172 wide, keep f32).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include "model/stories_fixture.h"
#include "tools/convert/quantize.h"
#include "tools_helpers.h"

namespace ember {
namespace {

// The text to score: the golden story when the test data is there, else a
// fixed paragraph (the synthetic model's score does not need real text).
std::string text_file(const std::string& dir) {
  const std::string golden = test::test_data_dir() + "/golden/once-upon-a-time.txt";
  if (std::filesystem::exists(golden)) return golden;
  const std::string path = dir + "/text.txt";
  std::ofstream(path) << "Once upon a time, there was a little girl named Lily. She liked to play outside in the "
                         "park with her friends. One day, she saw a big red ball under a tree.\n";
  return path;
}

double perplexity_of(const std::string& model, const std::string& text, const std::string& extra = "") {
  auto r = test::run_cli("perplexity -m " + model + " -f " + text + " --threads 1 " + extra + " 2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const size_t at = r.out.find("perplexity ");
  REQUIRE(at != std::string::npos);
  const double ppl = std::atof(r.out.c_str() + at + 11);
  const size_t tk = r.out.find("tokens_scored ");
  REQUIRE(tk != std::string::npos);
  CHECK(std::atoi(r.out.c_str() + tk + 14) > 10);
  return ppl;
}

std::string quantized_copy(const std::string& in, const std::string& out, DType t) {
  auto m = import_ember(in);
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  REQUIRE(quantize_model(m.value().get(), t, nullptr).is_ok());
  REQUIRE(write_model(m.value()->spec, out).is_ok());
  return out;
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("bench --json: every key of the reproducible template") {
  const std::string dir = test::temp_dir("bench");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string model = test::synth_ember(dir, tiny, DType::Q8_0, 1, "tiny-q8.ember");
  auto r = test::run_cli("bench -m " + model + " -p 8,16 -n 4 -r 1 --threads 1 --probe-mb 16 --json 2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string& j = r.out;
  for (const char* key :
       {"hardware", "cpu_model", "physical_cores", "logical_threads", "memory_capacity_gb", "memory_bandwidth_gbs",
        "software", "inference_framework", "version", "git_hash", "backend", "kernels", "quantization",
        "thread_count", "numa_affinity", "runs", "workload", "model_size", "parameters", "input_length",
        "output_length", "batch_size", "model_sha256", "metrics", "first_token_latency_ms", "tokens_per_second",
        "prefill_tokens_per_second", "inter_token_latency_ms_p50", "inter_token_latency_ms_p95", "peak_rss_bytes",
        "effective_bandwidth_gbs", "bandwidth_utilization_pct"}) {
    CHECK_MESSAGE(j.find(std::string("\"") + key + "\":") != std::string::npos, key);
  }
  CHECK(j.find("\"inference_framework\": \"ember\"") != std::string::npos);
  CHECK(j.find("\"input_length\": 16") != std::string::npos);
  CHECK(j.find("\"quantization\": \"q8_0") != std::string::npos);
  CHECK(j.find("\"model_sha256\": \"" + test::data_digest(model) + "\"") != std::string::npos);
  CHECK(j.find("nan") == std::string::npos);

  CHECK(j.find("\"context_beyond_model\": false") != std::string::npos);

  // The text table; a workload longer than the model's 256 positions runs
  // in a context sized to it (as llama-bench does), and says so.
  r = test::run_cli("bench -m " + model + " -p 8 -n 2 -r 1 --probe-mb 16 2>/dev/null");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("decode tok/s") != std::string::npos);
  r = test::run_cli("bench -m " + model + " -p 300 -n 4 -r 1 --threads 1 --probe-mb 16 --json 2>/dev/null");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\"context_length\": 305") != std::string::npos);
  CHECK(r.out.find("\"model_context\": 256") != std::string::npos);
  CHECK(r.out.find("\"context_beyond_model\": true") != std::string::npos);
  // Past what any session can hold: refused, naming the lengths.
  r = test::run_cli("bench -m " + model + " -p 1048576 -n 2 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.rfind("EMBER_ERR_INVALID_ARGUMENT: -p 1048576 plus -n 2", 0) == 0);
}

TEST_CASE("bench -d: prompts and decode after a context, one stream and several, sliding-window models too") {
  const std::string dir = test::temp_dir("bench-depth");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string model = test::synth_ember(dir, tiny, DType::Q8_0, 1, "tiny-q8.ember");
  auto r = test::run_cli("bench -m " + model + " -p 8 -n 4 -d 40 -r 2 --threads 1 --probe-mb 16 --json 2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"depth\": 40") != std::string::npos);
  CHECK(r.out.find("\"context_length\": 53") != std::string::npos);  // 40 + 8 + 4 + 1
  // Several streams as sequences of one session, each at the depth.
  r = test::run_cli("bench -m " + model + " -p 8 -n 4 -d 40 -r 2 --parallel 2 --probe-mb 16 --json 2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"batched\": true") != std::string::npos);
  CHECK(r.out.find("\"depth\": 40") != std::string::npos);
  // Gemma 2's sliding-window ring refuses removing a tail: each repetition
  // starts over from an empty sequence instead.
  SynthShape g = tiny;
  g.arch = "gemma2";
  const std::string gemma = test::synth_ember(dir, g, DType::F32, 1, "tiny-gemma2.ember");
  r = test::run_cli("bench -m " + gemma + " -p 8 -n 4 -d 20 -r 2 --threads 1 --probe-mb 16 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("depth 20, context 33") != std::string::npos);
  r = test::run_cli("bench -m " + model + " -p 8 -n 2 -d 1048576 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.rfind("EMBER_ERR_INVALID_ARGUMENT: -d 1048576 plus -p 8 plus -n 2", 0) == 0);
  r = test::run_cli("bench -m " + model + " -d -5 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("-d") != std::string::npos);
}

TEST_CASE("perplexity: Q8_0 within 1% of F32 on a synthetic model") {
  const std::string dir = test::temp_dir("ppl-synth");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string f32 = test::synth_ember(dir, tiny, DType::F32, 2, "tiny-f32.ember");
  const std::string q8 = quantized_copy(f32, dir + "/tiny-q8.ember", DType::Q8_0);
  const std::string text = text_file(dir);
  const double a = perplexity_of(f32, text, "--ctx 64 --max-tokens 150");
  const double b = perplexity_of(q8, text, "--ctx 64 --max-tokens 150");
  MESSAGE("synthetic tiny: f32 " << a << ", q8_0 " << b);
  CHECK(std::isfinite(a));
  CHECK(std::fabs(b - a) / a < 0.01);
}

// "key value" lines of `ember perplexity`'s stdout.
double field(const std::string& out, const std::string& key) {
  const size_t at = out.find("\n" + key + " ");
  REQUIRE_MESSAGE(at != std::string::npos, key << " missing in: " << out);
  return std::atof(out.c_str() + at + key.size() + 2);
}

TEST_CASE("perplexity --kl-base: KL against the baseline grows with coarser weights, zero against itself") {
  const std::string dir = test::temp_dir("ppl-kl");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string f32 = test::synth_ember(dir, tiny, DType::F32, 2, "tiny-f32.ember");
  const std::string q8 = quantized_copy(f32, dir + "/tiny-q8.ember", DType::Q8_0);
  const std::string q4 = quantized_copy(f32, dir + "/tiny-q4.ember", DType::Q4_0);
  const std::string text = text_file(dir);
  const auto run = [&](const std::string& m, const std::string& extra) {
    auto r = test::run_cli("perplexity -m " + m + " --kl-base " + f32 + " -f " + text +
                           " --ctx 64 --max-tokens 150 --threads 1 " + extra + " 2>/dev/null");
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    return "\n" + r.out;
  };
  const std::string self = run(f32, "");
  CHECK(field(self, "kl_divergence_mean") == 0.0);
  CHECK(field(self, "kl_divergence_max") == 0.0);
  CHECK(field(self, "same_top1_pct") == 100.0);
  CHECK(field(self, "perplexity_delta") == 0.0);
  const std::string a = run(q8, ""), b = run(q4, "");
  const double kl8 = field(a, "kl_divergence_mean"), kl4 = field(b, "kl_divergence_mean");
  MESSAGE("tiny: KL q8_0 " << kl8 << ", q4_0 " << kl4);
  CHECK(kl8 > 0);
  CHECK(kl4 > 4 * kl8);
  CHECK(field(a, "kl_divergence_median") <= field(a, "kl_divergence_p99"));
  CHECK(field(a, "kl_divergence_p99") <= field(a, "kl_divergence_max"));
  CHECK(field(a, "kl_divergence_ci95") > 0);
  CHECK(field(a, "same_top1_pct") > field(b, "same_top1_pct") - 1e-9);
  // The baseline's perplexity is the f32 model's own; delta and ratio agree.
  CHECK(field(a, "base_perplexity") == doctest::Approx(field(self, "perplexity")).epsilon(1e-6));
  CHECK(field(a, "perplexity") - field(a, "base_perplexity") ==
        doctest::Approx(field(a, "perplexity_delta")).epsilon(1e-3));
  CHECK(std::exp(field(a, "ln_ppl_ratio")) ==
        doctest::Approx(field(a, "perplexity") / field(a, "base_perplexity")).epsilon(1e-4));
  // llama-perplexity's chunking works the same way.
  const std::string c = run(q4, "--llama-chunks");
  CHECK(field(c, "kl_divergence_mean") > 0);
  // A baseline of another vocabulary is refused, naming both.
  SynthShape wider = tiny;
  wider.vocab_size = 1000;  // the built-in pieces padded: another vocabulary size
  const std::string other = test::synth_ember(dir, wider, DType::F32, 2, "tiny-1000.ember");
  auto r = test::run_cli("perplexity -m " + other + " --kl-base " + f32 + " -f " + text + " 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("EMBER_ERR_INVALID_ARGUMENT: --kl-base '" + f32 + "': its vocabulary is not the model's") !=
        std::string::npos);
}

TEST_CASE("perplexity: stories260K Q8_0 within 1% of F32 (ffn_down keeps f32)") {
  const std::string f32 = test::stories_model("llama2c");
  if (f32.empty()) return;
  const std::string dir = test::temp_dir("ppl-stories");
  const std::string q8 = quantized_copy(f32, dir + "/stories-q8.ember", DType::Q8_0);
  auto file = ModelFile::open(q8, ModelFile::Options{});
  REQUIRE(file.is_ok());
  int q8_count = 0, f32_matrices = 0;
  for (const auto& t : file.value()->tensors()) {
    if (t.n_dims == 2 && t.dtype == DType::Q8_0) ++q8_count;
    if (t.n_dims == 2 && t.dtype == DType::F32) {
      ++f32_matrices;
      CHECK(t.name.find("ffn_down") != std::string::npos);
    }
  }
  CHECK(q8_count > 0);
  CHECK(f32_matrices == 5);
  const std::string text = test::test_data("golden/once-upon-a-time.txt");
  if (text.empty()) return;
  const double a = perplexity_of(f32, text, "--ctx 256");
  const double b = perplexity_of(q8, text, "--ctx 256");
  MESSAGE("stories260K: f32 " << a << ", q8_0 " << b);
  CHECK(a > 1.0);
  CHECK(a < 50.0);  // a trained model on its own kind of text
  CHECK(std::fabs(b - a) / a < 0.01);
}

}  // TEST_SUITE
}  // namespace ember

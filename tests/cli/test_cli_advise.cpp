// `ember advise`: the cost, replica, SLO and crossover figures against
// numbers worked by hand, bad arguments, and what fits a memory budget
// against `ember plan`.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cli/cli_run.h"
#include "test_data.h"
#include "tools/convert/synthetic.h"
#include "tools/tools_helpers.h"

namespace {

using ember::test::run_ember;

// The number after "key": in a JSON text, from `from` on.
double json_number(const std::string& j, const std::string& key, size_t from = 0) {
  const size_t at = j.find("\"" + key + "\": ", from);
  REQUIRE_MESSAGE(at != std::string::npos, key);
  return std::atof(j.c_str() + at + key.size() + 4);
}

// A report in the shape `ember bench --json` writes (only what advise reads).
std::string fake_bench(const std::string& dir, double tps, double ttft, double p50, double p95) {
  const std::string path = dir + "/bench.json";
  std::ofstream(path) << "{\n  \"hardware\": {\"cpu_model\": \"Test CPU\"},\n"
                         "  \"software\": {\"backend\": \"cpu\", \"kernels\": \"cpu (avx2)\"},\n"
                         "  \"runs\": [\n"
                         "    {\"workload\": {\"input_length\": 64}, \"metrics\": {\"first_token_latency_ms\": 10.0, "
                         "\"tokens_per_second\": " << tps * 2 << ", \"inter_token_latency_ms_p50\": 1.0, "
                         "\"inter_token_latency_ms_p95\": 2.0}},\n"
                         "    {\"workload\": {\"input_length\": 512}, \"metrics\": {\"first_token_latency_ms\": " << ttft
                      << ", \"tokens_per_second\": " << tps << ", \"inter_token_latency_ms_p50\": " << p50
                      << ", \"inter_token_latency_ms_p95\": " << p95 << "}}\n  ]\n}\n";
  return path;
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("advise: $0.70/h at 2,400 tok/s and 70% → $0.1157 per 1M tokens, 10 QPS x 200 x 1.5 → 2 replicas") {
  // 0.70 / (2400 x 0.7 x 3600) x 1e6 = 0.70 / 6,048,000 x 1e6 = 0.11574
  // 10 x 200 x 1.5 = 3000 tokens/s over 2400 x 0.7 = 1680 per replica: 1.79 → 2
  const auto r = run_ember("advise --throughput 2400 --hourly-cost 0.70 --utilization 0.7 --qps 10 "
                           "--tokens-per-request 200 --headroom 1.5 --json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(json_number(r.out, "cost_per_1m_tokens_usd") == doctest::Approx(0.115741).epsilon(1e-5));
  CHECK(json_number(r.out, "replicas") == 2);
  CHECK(json_number(r.out, "hourly_usd_at_load") == doctest::Approx(1.40));
  // Two replicas for 2000 tokens/s: 1.40 / (2000 x 3600) x 1e6 = 0.19444.
  CHECK(json_number(r.out, "cost_per_1m_tokens_usd_at_load") == doctest::Approx(0.194444).epsilon(1e-5));
  const auto text = run_ember("advise --throughput 2400 --hourly-cost 0.70 --qps 10 --tokens-per-request 200");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("| $0.1157 | 2 | $1.40 |") != std::string::npos);
  // 1.5 is the default headroom; at 2x it takes ceil(4000 / 1680) = 3.
  const auto h2 = run_ember("advise --throughput 2400 --hourly-cost 0.70 --qps 10 --tokens-per-request 200 "
                            "--headroom 2 --json");
  CHECK(json_number(h2.out, "replicas") == 3);
}

TEST_CASE("advise: the CPU/GPU crossover and the recommendation") {
  // CPU: $0.35/h, 120 tok/s → 84 effective, a replica per 56 tokens/s of
  // demand at 1.5x: $0.35 up to 56, $0.70 up to 112, $1.05 beyond. L4:
  // $0.70 for one replica up to 1120 tokens/s. The L4 costs as much or more
  // up to 112 tokens/s and less from there on: crossover 112 tokens/s =
  // 0.56 QPS at 200 tokens. H100 at $4.50: the CPU's 13th replica ($4.55,
  // above 12 x 56 = 672 tokens/s) is the first that costs more.
  const auto r = run_ember("advise --throughput 120 --hourly-cost 0.35 --gpu L4:0.70:2400 --gpu H100:4.50:15000 "
                           "--qps 0.5 --tokens-per-request 200 --json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const size_t l4 = r.out.find("\"gpu\": \"L4\"");
  const size_t h100 = r.out.find("\"gpu\": \"H100\"");
  REQUIRE(l4 != std::string::npos);
  REQUIRE(h100 != std::string::npos);
  CHECK(json_number(r.out, "crossover_tokens_per_s", l4) == doctest::Approx(112.0));
  CHECK(json_number(r.out, "crossover_qps", l4) == doctest::Approx(0.56));
  CHECK(json_number(r.out, "crossover_tokens_per_s", h100) == doctest::Approx(672.0));
  // 0.5 QPS = 100 tokens/s, below the crossover: two CPU replicas cost
  // $0.70, as much as one L4; a tie goes to fewer replicas: the L4.
  CHECK(r.out.find("\"option\": \"L4\"") != std::string::npos);
  const auto low = run_ember("advise --throughput 120 --hourly-cost 0.35 --gpu L4:0.70:2400 --qps 0.2 "
                             "--tokens-per-request 200 --json");
  REQUIRE(low.code == 0);
  CHECK(low.out.find("\"option\": \"this machine\"") != std::string::npos);  // 40 tokens/s: one CPU at $0.35
  CHECK(low.out.find("at or below the crossover") != std::string::npos);
  const auto high = run_ember("advise --throughput 120 --hourly-cost 0.35 --gpu L4:0.70:2400 --qps 10 "
                              "--tokens-per-request 200 --json");
  CHECK(high.out.find("\"option\": \"L4\"") != std::string::npos);
  CHECK(high.out.find("above the crossover") != std::string::npos);
  // A GPU dearer per token than the CPU never crosses over.
  const auto never = run_ember("advise --throughput 120 --hourly-cost 0.35 --gpu Big:100:1000 --json");
  CHECK(never.out.find("\"crossover\": \"none") != std::string::npos);
}

TEST_CASE("advise: the SLO from a bench report's TTFT and ITL p95") {
  const std::string dir = ember::test::temp_dir("advise");
  // The slowest run: 50 tok/s, TTFT 50 ms, ITL p95 10 ms; a 200-token
  // request: 50 + 199 x 10 = 2040 ms.
  const std::string bench = fake_bench(dir, 50, 50, 8, 10);
  auto r = run_ember("advise --bench " + bench + " --hourly-cost 0.35 --qps 1 --tokens-per-request 200 "
                     "--latency-slo-ms 2000 --gpu L4:0.70:2400 --json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(json_number(r.out, "tokens_per_second") == 50);  // the slower of the two runs
  CHECK(json_number(r.out, "request_latency_ms_p95") == doctest::Approx(2040));
  CHECK(json_number(r.out, "request_latency_ms_p50") == doctest::Approx(50 + 199 * 8));
  CHECK(r.out.find("\"meets_slo\": \"no\"") != std::string::npos);
  CHECK(r.out.find("\"meets_slo\": \"unknown\"") != std::string::npos);  // the L4: no report
  CHECK(r.out.find("misses the latency SLO") != std::string::npos);
  CHECK(r.out.find("\"option\": \"L4\"") != std::string::npos);
  r = run_ember("advise --bench " + bench + " --hourly-cost 0.35 --qps 1 --tokens-per-request 200 "
                "--latency-slo-ms 2100 --json");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"meets_slo\": \"yes\"") != std::string::npos);
  CHECK(r.out.find("\"name\": \"cpu on Test CPU\"") != std::string::npos);
}

TEST_CASE("advise: bad arguments name the flag and the value") {
  const std::string dir = ember::test::temp_dir("advise");
  { std::ofstream(dir + "/notjson.json") << "{ not json"; }
  { std::ofstream(dir + "/noruns.json") << "{\"hardware\": {}}"; }
  struct Case {
    std::string args, expect;
  };
  const Case cases[] = {
      {"advise --throughput 2400 --hourly-cost 0.7 --utilization 1.5", "--utilization = '1.5'"},
      {"advise --throughput 2400 --hourly-cost 0.7 --utilization 0", "--utilization = '0'"},
      {"advise --throughput abc --hourly-cost 0.7", "--throughput = 'abc'"},
      {"advise --throughput 2400 --hourly-cost -1", "--hourly-cost = '-1'"},
      {"advise --throughput 2400 --hourly-cost 0.7 --headroom 0.5", "--headroom = '0.5'"},
      {"advise --throughput 2400 --hourly-cost 0.7 --qps 10", "--qps needs --tokens-per-request"},
      {"advise --throughput 2400 --hourly-cost 0.7 --qps 10 --tokens-per-request 0", "--tokens-per-request = '0'"},
      {"advise --throughput 2400", "--hourly-cost USD is required"},
      {"advise --gpu L4:0.70", "--gpu 'L4:0.70'"},
      {"advise --gpu L4:x:2400", "USD_PER_HOUR 'x'"},
      {"advise --gpu L4:0.70:0", "TOK_PER_S '0'"},
      {"advise --bench " + dir + "/notjson.json --hourly-cost 1", "notjson.json': not JSON"},
      {"advise --bench " + dir + "/noruns.json --hourly-cost 1", "no \"runs\" array"},
      {"advise --bench /nonexistent.json --hourly-cost 1", "--bench '/nonexistent.json'"},
      {"advise", "nothing to advise on"},
      {"advise --throughput 1 --hourly-cost 1 --frob", "unknown option --frob"},
      {"advise -m x.ember --memory-budget 12Q", "--memory-budget '12Q'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_ember(c.args);
    CHECK(r.code != 0);
    CHECK(r.err.rfind("EMBER_ERR_", 0) == 0);
    CHECK_MESSAGE(r.err.find(c.expect) != std::string::npos, r.err);
  }
}

TEST_CASE("advise -m: the largest context within a memory budget, from the plan") {
  const std::string dir = ember::test::temp_dir("advise-fit");
  ember::SynthShape tiny;
  REQUIRE(ember::synth_shape("tiny", &tiny));
  const std::string model = ember::test::synth_ember(dir, tiny, ember::DType::Q8_0, 1, "tiny-q8.ember");
  // The budget: exactly what `ember plan` says context 100 takes.
  const auto plan = run_ember("plan -m " + model + " --ctx 100 --json");
  REQUIRE(plan.code == 0);
  const double at100 = json_number(plan.out, "weights_mapped_bytes") + json_number(plan.out, "private_bytes");
  const std::string budget = std::to_string(static_cast<long long>(at100));
  auto r = run_ember("advise -m " + model + " --memory-budget " + budget + " --ctx 64,101 --json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(json_number(r.out, "largest_context") == 100);
  CHECK(json_number(r.out, "bytes_at_largest_context") == at100);
  CHECK(r.out.find("\"limited_by\": \"budget\"") != std::string::npos);
  const size_t c64 = r.out.find("\"context\": 64");
  const size_t c101 = r.out.find("\"context\": 101");
  REQUIRE(c64 != std::string::npos);
  REQUIRE(c101 != std::string::npos);
  CHECK(r.out.find("\"fits\": true", c64) < c101);
  CHECK(r.out.find("\"fits\": false", c101) != std::string::npos);
  // A budget above the model's own context: limited by the model.
  r = run_ember("advise -m " + model + " --memory-budget 64G --json");
  REQUIRE(r.code == 0);
  CHECK(json_number(r.out, "largest_context") == json_number(r.out, "model_context"));
  CHECK(r.out.find("\"limited_by\": \"model context\"") != std::string::npos);
  // Too small for anything.
  r = run_ember("advise -m " + model + " --memory-budget 1K");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("| 0 |") != std::string::npos);
}

}  // TEST_SUITE

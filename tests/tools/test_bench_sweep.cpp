// ember bench --sweep ... --plot F.svg: the SVG is well-formed, has the
// three panels and their series, and its numbers are the JSON report's;
// --format yaml prints exactly the template's fields.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tools_helpers.h"

namespace ember {
namespace {

// Balanced tags: every element opened is closed in order (XML declaration,
// comments and self-closing tags aside). Returns "" or what is wrong.
std::string check_balanced(const std::string& svg, std::map<std::string, int>* counts) {
  std::vector<std::string> stack;
  size_t at = 0;
  while ((at = svg.find('<', at)) != std::string::npos) {
    const size_t end = svg.find('>', at);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(at);
    const std::string tag = svg.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "</" + name + "> closes " + (stack.empty() ? "nothing" : stack.back());
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    (*counts)[name]++;
    if (tag.back() != '/') stack.push_back(name);
  }
  return stack.empty() ? "" : "<" + stack.back() + "> never closed";
}

// Every value of attribute `attr` inside the element with id `id`.
std::vector<std::string> attrs_in(const std::string& svg, const std::string& id, const std::string& attr) {
  std::vector<std::string> out;
  const size_t start = svg.find("id=\"" + id + "\"");
  if (start == std::string::npos) return out;
  const size_t stop = svg.find("<g class=\"chart", start + 1);
  const std::string key = " " + attr + "=\"";
  for (size_t at = svg.find(key, start); at != std::string::npos && at < stop; at = svg.find(key, at + 1)) {
    const size_t v = at + key.size();
    out.push_back(svg.substr(v, svg.find('"', v) - v));
  }
  return out;
}

// The value printed after `"key": ` for every occurrence, in order.
std::vector<std::string> json_values(const std::string& j, const std::string& key) {
  std::vector<std::string> out;
  const std::string k = "\"" + key + "\": ";
  for (size_t at = j.find(k); at != std::string::npos; at = j.find(k, at + 1)) {
    const size_t v = at + k.size();
    out.push_back(j.substr(v, j.find_first_of(",\n", v) - v));
  }
  return out;
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("bench --sweep --plot: a well-formed SVG whose numbers are the JSON's") {
  const std::string dir = test::temp_dir("bench-sweep");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string model = test::synth_ember(dir, tiny, DType::Q8_0, 1, "tiny-q8.ember");
  const std::string svg_path = dir + "/sweep.svg";
  auto r = test::run_cli("bench -m " + model + " --sweep prompt=8,16,32 parallel=1,2 -n 6 -r 2 --threads 2 "
                         "--probe-mb 16 --json --plot " + svg_path + " 2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string& j = r.out;
  const auto inputs = json_values(j, "input_length");
  const auto parallel = json_values(j, "parallel_sessions");
  REQUIRE(inputs.size() == 6);
  CHECK(inputs == std::vector<std::string>{"8", "16", "32", "8", "16", "32"});
  CHECK(parallel == std::vector<std::string>{"1", "1", "1", "2", "2", "2"});
  // Two streams on the cpu: sequences of one session, decoded as one batch.
  CHECK(json_values(j, "batched") == std::vector<std::string>{"false", "false", "false", "true", "true", "true"});
  CHECK(json_values(j, "batch_size") == std::vector<std::string>{"1", "1", "1", "2", "2", "2"});
  const auto ttft = json_values(j, "first_token_latency_ms");
  const auto agg = json_values(j, "aggregate_tokens_per_second");
  const auto itl_count = json_values(j, "inter_token_latency_count");
  // Every token of every session after its first: 2 repetitions x 6.
  CHECK(itl_count == std::vector<std::string>{"12", "12", "12", "24", "24", "24"});

  const std::string svg = test::read_text_file(svg_path);
  REQUIRE(!svg.empty());
  CHECK(svg.rfind("<?xml", 0) == 0);
  std::map<std::string, int> counts;
  CHECK(check_balanced(svg, &counts) == "");
  CHECK(counts["svg"] == 1);
  for (const char* id : {"throughput-vs-parallel", "ttft-vs-prompt", "itl-histogram"}) {
    CHECK_MESSAGE(svg.find(std::string("id=\"") + id + "\"") != std::string::npos, id);
  }
  CHECK(svg.find("class=\"axis x\"") != std::string::npos);
  CHECK(svg.find("class=\"axis y\"") != std::string::npos);
  // Throughput vs parallelism: a series per input length, x = sessions,
  // y = the JSON's aggregate tokens/s.
  CHECK(attrs_in(svg, "throughput-vs-parallel", "data-name") ==
        std::vector<std::string>{"input 8", "input 16", "input 32"});
  CHECK(attrs_in(svg, "throughput-vs-parallel", "data-x") ==
        std::vector<std::string>{"1", "2", "1", "2", "1", "2"});
  CHECK(attrs_in(svg, "throughput-vs-parallel", "data-y") ==
        std::vector<std::string>{agg[0], agg[3], agg[1], agg[4], agg[2], agg[5]});
  // TTFT vs input length: a series per number of sessions.
  CHECK(attrs_in(svg, "ttft-vs-prompt", "data-name") == std::vector<std::string>{"1 session", "2 sessions"});
  CHECK(attrs_in(svg, "ttft-vs-prompt", "data-x") == std::vector<std::string>{"8", "16", "32", "8", "16", "32"});
  CHECK(attrs_in(svg, "ttft-vs-prompt", "data-y") == ttft);
  // The ITL histogram: every single-session inter-token latency, once.
  const auto bars = attrs_in(svg, "itl-histogram", "data-count");
  CHECK(bars.size() == 20);
  int total = 0;
  for (const auto& b : bars) total += std::atoi(b.c_str());
  CHECK(total == 36);
  CHECK(svg.find("data-total=\"36\"") != std::string::npos);

  // Bad sweeps name the item.
  r = test::run_cli("bench -m " + model + " --sweep prompt=8,x 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("--sweep 'prompt=8,x'") != std::string::npos);
  r = test::run_cli("bench -m " + model + " --sweep batch=2 2>&1");
  CHECK(r.out.find("--sweep 'batch=2'") != std::string::npos);
}

TEST_CASE("bench --format yaml: exactly the template's fields") {
  const std::string dir = test::temp_dir("bench-yaml");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string model = test::synth_ember(dir, tiny, DType::Q8_0, 1, "tiny-q8.ember");
  auto r = test::run_cli("bench -m " + model + " -p 8,16 -n 4 -r 1 --threads 1 --probe-mb 16 --format yaml "
                         "2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  // Two documents, each exactly the template's keys in its order.
  const std::string expected_keys =
      "hardware:|cpu_model:|physical_cores:|logical_threads:|memory_capacity_gb:|memory_bandwidth:|software:|"
      "inference_framework:|backend:|quantization:|thread_count:|numa_affinity:|workload:|model_size:|"
      "input_length:|output_length:|batch_size:|metrics:|first_token_latency_ms:|tokens_per_second:|";
  std::string keys;
  size_t start = 0;
  int docs = 0;
  while (start < r.out.size()) {
    const size_t end = r.out.find('\n', start);
    const std::string line = r.out.substr(start, end - start);
    start = end == std::string::npos ? r.out.size() : end + 1;
    if (line == "---") {
      CHECK(keys == expected_keys);
      keys.clear();
      continue;
    }
    if (line.empty() || line.find_first_not_of(' ') == std::string::npos || line[line.find_first_not_of(' ')] == '#') {
      if (line.rfind("# Reproducible", 0) == 0) ++docs;
      continue;
    }
    const std::string trimmed = line.substr(line.find_first_not_of(' '));
    keys += trimmed.substr(0, trimmed.find(':') + 1) + "|";
  }
  CHECK(keys == expected_keys);
  CHECK(docs == 2);
  CHECK(r.out.find("input_length: 16\n") != std::string::npos);
  CHECK(r.out.find("inference_framework: \"ember ") != std::string::npos);
  CHECK(r.out.find("quantization: \"q8_0") != std::string::npos);
  r = test::run_cli("bench -m " + model + " --format xml 2>&1");
  CHECK(r.out.rfind("EMBER_ERR_INVALID_ARGUMENT: --format 'xml'", 0) == 0);
}

}  // TEST_SUITE
}  // namespace ember

// Token-exact comparisons through the CLI: `ember run --tokens` (the prompt
// as exact ids), `-n 0` (prefill only) with `--dump-logits`, and `--ids`.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "model/stories_fixture.h"
#include "test_data.h"

namespace {

using ember::test::run_ember;

std::vector<double> numbers(const std::string& text) {
  std::vector<double> v;
  std::istringstream in(text);
  double x;
  while (in >> x) v.push_back(x);
  return v;
}

// "prompt N tokens" from the timing line.
int prompt_tokens(const std::string& err) {
  const size_t at = err.find("prompt ");
  return at == std::string::npos ? -1 : std::atoi(err.c_str() + at + 7);
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("run --tokens gives the text prompt's logits, -n 0 prefills only, --ids prints the golden ids") {
  const std::string model = ember::test::stories_model("llama2c");
  const std::string ids_path = ember::test::test_data("golden/once-upon-a-time.ids.txt");
  const std::string logits_path = ember::test::test_data("golden/once-upon-a-time.logits.txt");
  if (model.empty() || ids_path.empty() || logits_path.empty()) return;
  const std::vector<double> golden_ids = numbers(ember::test::read_text_file(ids_path));
  const std::vector<double> golden_logits = numbers(ember::test::read_text_file(logits_path));
  REQUIRE(golden_ids.size() == 200);
  const std::string dir = ember::test::temp_dir("cli-tokens");

  // The text prompt, prefill only.
  const auto text = run_ember("run -m " + model + " -p 'Once upon a time' -n 0 --dump-logits " + dir + "/text.txt");
  REQUIRE(text.code == 0);
  CHECK(text.out == "Once upon a time\n");
  CHECK(text.err.find("0 tokens generated") != std::string::npos);
  const int n_prompt = prompt_tokens(text.err);
  REQUIRE(n_prompt == 5);  // BOS + 4

  // The same ids (BOS included) as --tokens: the same logits, to the bit.
  std::string list;
  for (int i = 0; i < n_prompt; ++i) list += (i ? "," : "") + std::to_string(static_cast<int>(golden_ids[i]));
  const auto ids = run_ember("run -m " + model + " --tokens " + list + " -n 0 --dump-logits " + dir + "/ids.txt");
  REQUIRE(ids.code == 0);
  CHECK(ids.out == "Once upon a time\n");  // the ids' pieces
  CHECK(prompt_tokens(ids.err) == n_prompt);  // nothing added
  const std::string dump = ember::test::read_text_file(dir + "/ids.txt");
  CHECK(dump == ember::test::read_text_file(dir + "/text.txt"));
  const std::vector<double> got = numbers(dump);
  REQUIRE(got.size() == golden_logits.size());
  double max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::fabs(got[i] - golden_logits[i]));
  CHECK(max_diff < 1e-4);

  // Without BOS nothing is added back: another context, other logits.
  std::string no_bos = list.substr(list.find(',') + 1);
  const auto bare = run_ember("run -m " + model + " --tokens " + no_bos + " -n 0 --dump-logits " + dir + "/bare.txt");
  REQUIRE(bare.code == 0);
  CHECK(prompt_tokens(bare.err) == n_prompt - 1);
  CHECK(ember::test::read_text_file(dir + "/bare.txt") != dump);

  // -n 0 without --dump-logits; spaces around ids are allowed.
  const auto prefill = run_ember("run -m " + model + " --tokens '1, 403 ,407' -n 0");
  CHECK(prefill.code == 0);
  CHECK(prefill.err.find("0 tokens generated") != std::string::npos);

  // --ids: the generated ids, one per line, are the reference's greedy ids.
  const int n_new = 20;
  const auto gen = run_ember("run -m " + model + " --tokens " + list + " -n " + std::to_string(n_new) + " --ids");
  REQUIRE(gen.code == 0);
  const std::vector<double> out_ids = numbers(gen.out);
  REQUIRE(out_ids.size() == static_cast<size_t>(n_new));
  for (int i = 0; i < n_new; ++i) CHECK(out_ids[i] == golden_ids[n_prompt + i]);
  size_t lines = 0;
  for (char c : gen.out) lines += c == '\n';
  CHECK(lines == static_cast<size_t>(n_new));
  // The same with a text prompt.
  const auto gen_text = run_ember("run -m " + model + " -p 'Once upon a time' -n " + std::to_string(n_new) + " --ids");
  REQUIRE(gen_text.code == 0);
  CHECK(gen_text.out == gen.out);
}

TEST_CASE("run --tokens: malformed lists and ids outside the vocabulary are clear errors") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  struct Case {
    std::string tokens;
    std::string status;
    std::string says;
  };
  const Case cases[] = {
      {"1,,2", "EMBER_ERR_INVALID_ARGUMENT", "id #2 is empty"},
      {"abc", "EMBER_ERR_INVALID_ARGUMENT", "'abc' is not a non-negative decimal integer"},
      {"-1", "EMBER_ERR_INVALID_ARGUMENT", "'-1' is not"},
      {"1,-1", "EMBER_ERR_INVALID_ARGUMENT", "id #2 = '-1'"},
      {"99999999999", "EMBER_ERR_INVALID_ARGUMENT", "too large"},
      {"''", "EMBER_ERR_INVALID_ARGUMENT", "id #1 is empty"},
      {"1,2,", "EMBER_ERR_INVALID_ARGUMENT", "id #3 is empty"},
      {"1,2x", "EMBER_ERR_INVALID_ARGUMENT", "'2x'"},
      {"1,512", "EMBER_ERR_TOKEN_OUT_OF_RANGE", "id #2 = 512 is outside the vocabulary (0..511)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.tokens);
    const auto r = run_ember("run -m " + model + " --tokens " + c.tokens + " -n 3");
    CHECK(r.code != 0);
    CHECK(r.err.rfind(c.status + ": ", 0) == 0);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
  }
  const auto both = run_ember("run -m " + model + " -p hi --tokens 1,2");
  CHECK(both.code != 0);
  CHECK(both.err.rfind("EMBER_ERR_INVALID_ARGUMENT: ", 0) == 0);
}

}  // TEST_SUITE

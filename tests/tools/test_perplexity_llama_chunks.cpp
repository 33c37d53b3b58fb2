// ember perplexity --llama-chunks: the tokens llama-perplexity scores (BOS +
// text in whole chunks of N, the last N/2 - 1 of each), so the two programs'
// figures compare (tools/scripts/check_perplexity.sh does, against
// llama-perplexity itself).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "model/stories_fixture.h"
#include "tools_helpers.h"

namespace ember {
namespace {

struct Score {
  double ppl = 0;
  long scored = 0;
};

Score score(const std::string& model, const std::string& text, const std::string& extra) {
  auto r = test::run_cli("perplexity -m " + model + " -f " + text + " --threads 1 " + extra + " 2>/dev/null");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const size_t at = r.out.find("perplexity ");
  const size_t tk = r.out.find("tokens_scored ");
  REQUIRE(at != std::string::npos);
  REQUIRE(tk != std::string::npos);
  return {std::atof(r.out.c_str() + at + 11), std::atol(r.out.c_str() + tk + 14)};
}

long token_count(const std::string& model, const std::string& text) {
  auto r = test::run_cli("tokenize " + model + " --file " + text + " 2>/dev/null");
  REQUIRE(r.rc == 0);
  std::istringstream in(r.out);
  long n = 0;
  std::string id;
  while (in >> id) ++n;
  return n;
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("perplexity --llama-chunks: whole chunks of N, the last N/2 - 1 tokens of each scored") {
  const std::string model = test::stories_model("gguf");
  if (model.empty()) return;
  const std::string text = test::test_data("golden/once-upon-a-time.txt");
  if (text.empty()) return;
  const long n = token_count(model, text);
  REQUIRE(n > 100);
  for (long ctx : {32L, 48L, 64L}) {
    CAPTURE(ctx);
    const Score s = score(model, text, "--ctx " + std::to_string(ctx) + " --llama-chunks");
    // BOS + the text's tokens, cut into whole chunks.
    CHECK(s.scored == (n + 1) / ctx * (ctx - ctx / 2 - 1));
    CHECK(s.ppl > 1.0);
    CHECK(s.ppl < 50.0);
  }
  // A different average than the default windows (every token scored).
  const Score whole = score(model, text, "--ctx 64");
  CHECK(whole.scored == n);

  // Less than one chunk: refused with a message, not a crash or a NaN.
  const std::string dir = test::temp_dir("ppl-llama-chunks");
  const std::string short_text = dir + "/short.txt";
  std::ofstream(short_text) << "Once upon a time.";
  auto r = test::run_cli("perplexity -m " + model + " -f " + short_text + " --ctx 64 --llama-chunks 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("less than one chunk of 64") != std::string::npos);
}

}  // TEST_SUITE
}  // namespace ember

// `ember chat` and `ember run --chat`: the model's chat template (or a named
// one) rendered, parsed for its control tokens, run; chat keeps the KV
// between turns and saves/loads the conversation.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "ember.h"
#include "model/stories_fixture.h"
#include "test_data.h"

namespace ember {
namespace {

std::vector<int32_t> rendered_ids(ember_model* model, const char* tmpl, const std::vector<ember_chat_message>& msgs) {
  size_t len = 0;
  REQUIRE(ember_chat_format(model, tmpl, msgs.data(), msgs.size(), 1, nullptr, 0, &len) == EMBER_ERR_BUFFER_TOO_SMALL);
  std::string text(len, '\0');
  REQUIRE(ember_chat_format(model, tmpl, msgs.data(), msgs.size(), 1, text.data(), text.size(), &len) == EMBER_OK);
  size_t n = 0;
  ember_tokenize(model, text.data(), text.size(), EMBER_TOKENIZE_PARSE_SPECIAL, nullptr, 0, &n);
  std::vector<int32_t> ids(n);
  REQUIRE(ember_tokenize(model, text.data(), text.size(), EMBER_TOKENIZE_PARSE_SPECIAL, ids.data(), ids.size(), &n) ==
          EMBER_OK);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
  if (info.add_bos && (ids.empty() || ids[0] != info.bos_id)) ids.insert(ids.begin(), info.bos_id);
  return ids;
}

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace

TEST_CASE("cli: ember run --chat runs the rendered conversation's tokens") {
  const std::string model_path = test::stories_model("llama2c");
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(model_path.c_str(), nullptr, &model) == EMBER_OK);
  // The model file has no template: its family's built-in (llama2), said on stderr.
  const auto ids = rendered_ids(model, "llama2", {{"user", "Tell me a story"}});
  auto chat = test::run_ember("run -m " + model_path + " --chat -p 'Tell me a story' -n 12 --ids");
  auto exact = test::run_ember("run -m " + model_path + " --tokens " + join(ids) + " -n 12 --ids");
  CHECK(chat.code == 0);
  CHECK(exact.code == 0);
  CHECK(chat.err.find("chat template: built-in 'llama2'") != std::string::npos);
  CHECK(!chat.out.empty());
  CHECK(chat.out == exact.out);
  // A named template with a system message: the same as those ids.
  const auto ids2 = rendered_ids(model, "chatml", {{"system", "Be kind"}, {"user", "Hi"}});
  auto chat2 = test::run_ember("run -m " + model_path + " --chat --template chatml --system 'Be kind' -p Hi -n 8 --ids");
  auto exact2 = test::run_ember("run -m " + model_path + " --tokens " + join(ids2) + " -n 8 --ids");
  CHECK(chat2.code == 0);
  CHECK(chat2.out == exact2.out);
  // Misuse is named.
  auto bad = test::run_ember("run -m " + model_path + " --system x -p y");
  CHECK(bad.code != 0);
  CHECK(bad.err.find("--chat") != std::string::npos);
  bad = test::run_ember("run -m " + model_path + " --chat --template nonesuch -p y");
  CHECK(bad.code != 0);
  CHECK(bad.err.find("'nonesuch' is not a built-in") != std::string::npos);
  ember_model_free(model);
}

TEST_CASE("cli: ember chat keeps the KV between turns, saves and loads the conversation") {
  const std::string model_path = test::stories_model("llama2c");
  const std::string dir = test::temp_dir("cli-chat");
  const std::string input = dir + "/in.txt";
  {
    std::ofstream f(input);
    f << "Once upon a time\nThe cat sat\n/save " << dir << "/state\n/reset\n/bogus\n/load " << dir
      << "/state\nAnd then\n/quit\n";
  }
  auto r = test::run_ember("chat -m " + model_path + " -n 10 < " + input);
  CHECK(r.code == 0);
  INFO(r.err);
  // Turn 1's reply equals ember run --chat on the same message (greedy).
  auto once = test::run_ember("run -m " + model_path + " --chat -p 'Once upon a time' -n 10");
  REQUIRE(once.code == 0);
  const std::string first_line = r.out.substr(0, r.out.find('\n'));
  CHECK(first_line + "\n" == once.out);
  // Turn 2 reused the first turn's tokens (only the new ones prefilled).
  const size_t t2 = r.err.find("[turn 2: ");
  REQUIRE(t2 != std::string::npos);
  CHECK(std::stoi(r.err.substr(t2 + 9)) > 0);
  CHECK(r.err.find("[saved to " + dir + "/state") != std::string::npos);
  CHECK(r.err.find("[conversation reset]") != std::string::npos);
  CHECK(r.err.find("unknown command '/bogus'") != std::string::npos);
  CHECK(r.err.find("[loaded " + dir + "/state: 4 messages]") != std::string::npos);
  // After the load the conversation continues: turn 3 reuses the loaded KV.
  const size_t t3 = r.err.find("[turn 3: ");
  REQUIRE(t3 != std::string::npos);
  CHECK(std::stoi(r.err.substr(t3 + 9)) > 20);
  // A missing state is a message, not a crash.
  {
    std::ofstream f(input);
    f << "/load " << dir << "/nope\n/quit\n";
  }
  r = test::run_ember("chat -m " + model_path + " < " + input);
  CHECK(r.code == 0);
  CHECK(r.err.find("[load failed: ") != std::string::npos);
}

}  // namespace ember

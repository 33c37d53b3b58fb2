// `ember chat` and `ember run --chat`: the model's chat template (or a named
// one) rendered, parsed for its control tokens, run; chat keeps the KV
// between turns and saves/loads the conversation; with --tools a call is
// printed as a line of JSON and /tool answers it.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

TEST_CASE("cli: ember chat --tools prints a demanded call as JSON, /tool answers it, misuse is named") {
  const std::string model_path = test::stories_model("llama2c");
  if (model_path.empty()) return;
  const std::string dir = test::temp_dir("cli-chat-tools");
  const std::string tools = dir + "/tools.json", input = dir + "/in.txt", tmpl = dir + "/short.jinja";
  {
    // A short template in the Hermes form (stories260K's context is 512
    // tokens of mostly single characters: chatml's tool preamble fills it).
    std::ofstream f(tmpl);
    f << "{% if tools %}tools:{% for t in tools %} {{ t['function']['name'] }}{% endfor %}\n{% endif %}"
         "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{% if m['tool_calls'] %}<tool_call>"
         "{{ m['tool_calls'][0]['function']['arguments'] | tojson }}</tool_call>{% endif %}\n{% endfor %}"
         "{% if add_generation_prompt %}assistant: {% endif %}";
  }
  {
    std::ofstream f(tools);
    f << R"([{"type":"function","function":{"name":"get_weather","description":"Weather now","parameters":)"
         R"({"type":"object","properties":{"city":{"enum":["Oslo","Lima"]}},"required":["city"],)"
         R"("additionalProperties":false}}}])";
  }
  {
    std::ofstream f(input);
    f << "Weather?\n/tool {\"temp\": -3}\n/tool more\n/save " << dir << "/state\n/load " << dir << "/state\n/quit\n";
  }
  auto r = test::run_ember("chat -m " + model_path + " --template " + tmpl + " --tools " + tools +
                           " --tool-choice required -n 300 --temp 1 --seed 3 < " + input);
  INFO(r.err);
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.err.find("tools: 1 function(s), tool choice required, calls read in the Hermes <tool_call> form") !=
        std::string::npos);
  // The call: one line of JSON, its arguments held to the schema.
  std::istringstream lines(r.out);
  std::string line;
  int calls = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("{\"tool_call\"", 0) != 0) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["tool_call"]["name"] == "get_weather");
    CHECK(j["tool_call"]["id"].get<std::string>().rfind("call_", 0) == 0);
    const auto& args = j["tool_call"]["arguments"];
    CHECK((args == nlohmann::json({{"city", "Oslo"}}) || args == nlohmann::json({{"city", "Lima"}})));
    ++calls;
  }
  CHECK(calls >= 1);
  CHECK(r.err.find("tool call(s): answer each with /tool RESULT") != std::string::npos);
  // The result answered every call (one line per call here: the first
  // /tool when there is one call), then the model replied freely.
  if (calls == 1) {
    CHECK(r.err.find("[turn 2: ") != std::string::npos);
    CHECK(r.err.find("[no tool call is waiting for a result") != std::string::npos);
  }
  // The calls and the result survive /save and /load.
  CHECK(r.err.find("[loaded " + dir + "/state: ") != std::string::npos);
  std::ifstream saved(dir + "/state.messages.json");
  std::stringstream ss;
  ss << saved.rdbuf();
  const auto msgs = nlohmann::json::parse(ss.str(), nullptr, false);
  REQUIRE(msgs.is_array());
  REQUIRE(msgs.size() >= 3);
  CHECK(msgs[1]["role"] == "assistant");
  CHECK(msgs[1]["tool_calls"][0]["function"]["name"] == "get_weather");
  CHECK(msgs[2]["role"] == "tool");
  CHECK(msgs[2]["tool_call_id"] == msgs[1]["tool_calls"][0]["id"]);
  CHECK(msgs[2]["content"] == "{\"temp\": -3}");

  // Misuse, named.
  struct Bad {
    std::string args;
    const char* says;
  };
  {
    std::ofstream f(dir + "/bad.json");
    f << R"([{"type":"function","function":{"name":"no spaces"}}])";
  }
  const Bad bad[] = {
      {"--tool-choice required", "--tool-choice needs --tools"},
      {"--tools " + dir + "/nope.json", "nope.json"},
      {"--tools " + dir + "/bad.json", "tools[0].function.name must be 1 to 64"},
      {"--tools " + tools + " --tool-choice nonesuch", "--tool-choice 'nonesuch' must be auto, none, required or"},
      {"--tools " + tools + " --tool-choice get_weather --json-object", "cannot be given with"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.args);
    auto e = test::run_ember("chat -m " + model_path + " " + b.args + " < /dev/null");
    CHECK(e.code != 0);
    CHECK_MESSAGE(e.err.find(b.says) != std::string::npos, e.err);
  }
  auto help = test::run_ember("chat --help");
  CHECK(help.out.find("--tools FILE") != std::string::npos);
  CHECK(help.out.find("/tool RESULT") != std::string::npos);
}

}  // namespace ember

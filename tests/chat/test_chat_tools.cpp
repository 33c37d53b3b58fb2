// Tools through chat templates: OpenAI-shaped messages and tools as JSON
// (ember_chat_format_json), the built-in chatml and llama3 templates'
// tool signatures, calls and results, the tool-call syntax of a template,
// and the JSON reader's refusals (named elements, line:column, depth).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_json.h"
#include "chat/chat_template.h"
#include "ember.h"
#include "test_data.h"

#ifndef EMBER_LLAMA_VOCAB_DIR
#define EMBER_LLAMA_VOCAB_DIR ""
#endif

namespace ember::chat {
namespace {

const char kTools[] =
    R"([{"type":"function","function":{"name":"get_weather","description":"Weather of a city",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])";

const char kConversation[] =
    R"([{"role":"developer","content":"Be brief."},{"role":"user","content":"Weather in Oslo?"},)"
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
    R"("function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},)"
    R"({"role":"tool","tool_call_id":"call_1","content":"-3 C"},{"role":"tool","tool_call_id":"call_2","content":"snow"}])";

std::string format_json(const char* tmpl, const char* messages, const char* tools, ember_status* st) {
  size_t n = 0;
  *st = ember_chat_format_json(nullptr, tmpl, messages, tools, 1, nullptr, 0, &n);
  if (*st != EMBER_ERR_BUFFER_TOO_SMALL && *st != EMBER_OK) return ember_last_error();
  std::string out(n, '\0');
  *st = ember_chat_format_json(nullptr, tmpl, messages, tools, 1, out.data(), out.size(), &n);
  return *st == EMBER_OK ? out : std::string(ember_last_error());
}

TEST_CASE("chat tools: chatml renders tools, a call and a run of tool results in Qwen/Hermes form") {
  ember_status st;
  const std::string out = format_json("chatml", kConversation, kTools, &st);
  REQUIRE_MESSAGE(st == EMBER_OK, out);
  // The system turn holds the caller's system text, then the signatures.
  CHECK(out.rfind("<|im_start|>system\nBe brief.\n\n# Tools\n", 0) == 0);
  CHECK(out.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"") != std::string::npos);
  CHECK(out.find("</tools>") != std::string::npos);
  // The call: its arguments string becomes the object it holds.
  CHECK(out.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                 "\"Oslo\"}}\n</tool_call><|im_end|>\n") != std::string::npos);
  // Two tool messages share one user turn.
  CHECK(out.find("<|im_start|>user\n<tool_response>\n-3 C\n</tool_response>\n<tool_response>\nsnow\n"
                 "</tool_response><|im_end|>\n<|im_start|>assistant\n") != std::string::npos);
  CHECK(out.find("<|im_start|>system", 1) == std::string::npos);  // the system message is not repeated
}

TEST_CASE("chat tools: llama3 renders tools, a call as {name, parameters} and an ipython result") {
  ember_status st;
  const std::string out = format_json("llama3", kConversation, kTools, &st);
  REQUIRE_MESSAGE(st == EMBER_OK, out);
  CHECK(out.find("<|start_header_id|>system<|end_header_id|>\n\nBe brief.\n\n") != std::string::npos);
  CHECK(out.find("\"name\": \"get_weather\"") != std::string::npos);
  CHECK(out.find("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": "
                 "{\"city\": \"Oslo\"}}<|eot_id|>") != std::string::npos);
  CHECK(out.find("<|start_header_id|>ipython<|end_header_id|>\n\n-3 C<|eot_id|>") != std::string::npos);
  const std::string end = "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  REQUIRE(out.size() > end.size());
  CHECK(out.substr(out.size() - end.size()) == end);
}

TEST_CASE("chat tools: without tools the JSON form renders as ember_chat_format does") {
  const char* names[] = {"chatml", "llama3", "gemma", "phi3"};
  for (const char* name : names) {
    CAPTURE(name);
    ember_chat_message msgs[] = {{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "More"}};
    size_t n = 0;
    REQUIRE(ember_chat_format(nullptr, name, msgs, 4, 1, nullptr, 0, &n) == EMBER_ERR_BUFFER_TOO_SMALL);
    std::string want(n, '\0');
    REQUIRE(ember_chat_format(nullptr, name, msgs, 4, 1, want.data(), want.size(), &n) == EMBER_OK);
    ember_status st;
    const char* plain = R"([{"role":"system","content":"S"},{"role":"user","content":"Hi"},)"
                        R"({"role":"assistant","content":"Yo"},{"role":"user","content":"More"}])";
    CHECK(format_json(name, plain, nullptr, &st) == want);
    CHECK(format_json(name, plain, "[]", &st) == want);
    CHECK(format_json(name, plain, "null", &st) == want);
  }
}

TEST_CASE("chat tools: malformed messages and tools are refused naming the element") {
  struct Case {
    const char* messages;
    const char* tools;
    const char* want;
  };
  const Case cases[] = {
      {"{}", nullptr, "messages must be an array"},
      {R"([{"content":"x"}])", nullptr, "messages[0] has no 'role'"},
      {R"([{"role":1}])", nullptr, "messages[0].role must be a string"},
      {R"([{"role":"user","content":5}])", nullptr, "messages[0].content must be"},
      {R"([{"role":"assistant","tool_calls":{}}])", nullptr, "messages[0].tool_calls must be an array"},
      {R"([{"role":"assistant","tool_calls":[{"type":"function","function":{"arguments":"{}"}}]}])", nullptr,
       "messages[0].tool_calls[0].function.name must be a string"},
      {R"([{"role":"assistant","tool_calls":[{"type":"code"}]}])", nullptr, "messages[0].tool_calls[0].type"},
      {"[]", R"({"type":"function"})", "tools must be an array"},
      {"[]", R"([{"type":"retrieval"}])", "tools[0].type must be \"function\""},
      {"[]", R"([{"type":"function","function":{"description":"x"}}])", "tools[0].function.name must be a string"},
      {"[\n {\"role\": \"user\",\n  \"content\": x}]", nullptr, "messages is not valid JSON (at 3:14)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.messages);
    ember_status st;
    const std::string out = format_json("chatml", c.messages, c.tools, &st);
    CHECK(st == EMBER_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE(out.find(c.want) != std::string::npos, out);
  }
  size_t n = 0;
  CHECK(ember_chat_format_json(nullptr, "chatml", nullptr, nullptr, 1, nullptr, 0, &n) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_chat_format_json(nullptr, nullptr, "[]", nullptr, 1, nullptr, 0, &n) == EMBER_ERR_INVALID_ARGUMENT);
}

TEST_CASE("chat tools: the JSON reader bounds nesting without recursion") {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  Value v;
  JsonReadLimits limits;
  Status s = json_to_value(deep, "tools", limits, &v);
  CHECK(s.code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(s.message()).find("deeper than 64") != std::string::npos);
  REQUIRE(json_to_value(R"({"a":[1,2.5,null,true,"s",{"b":18446744073709551615}]})", "x", limits, &v).is_ok());
  REQUIRE(v.is_mapping());
  const Value* a = v.find("a");
  REQUIRE(a);
  REQUIRE(a->is_list());
  CHECK(a->list->size() == 6);
  CHECK((*a->list)[0].i == 1);
  CHECK((*a->list)[1].f == 2.5);
  CHECK((*a->list)[2].is_none());
  CHECK((*a->list)[5].find("b")->kind == Value::Kind::Float);  // past int64: a float, as Python would not, but finite
  limits.max_bytes = 4;
  CHECK(json_to_value("[1, 2]", "tools", limits, &v).code() == EMBER_ERR_INVALID_ARGUMENT);
}

TEST_CASE("chat tools: the call syntax follows the template") {
  CHECK(ember_chat_tool_syntax(nullptr, "chatml") == EMBER_TOOL_SYNTAX_HERMES);
  CHECK(ember_chat_tool_syntax(nullptr, "qwen2") == EMBER_TOOL_SYNTAX_HERMES);
  CHECK(ember_chat_tool_syntax(nullptr, "llama3") == EMBER_TOOL_SYNTAX_LLAMA3);
  CHECK(ember_chat_tool_syntax(nullptr, "gemma") == EMBER_TOOL_SYNTAX_HERMES);
  CHECK(ember_chat_tool_syntax(nullptr, "no-such-template") == EMBER_TOOL_SYNTAX_HERMES);
  CHECK(ember_chat_tool_syntax(nullptr, nullptr) == EMBER_TOOL_SYNTAX_HERMES);
  // A model's own template: Qwen2.5's writes <tool_call>, Llama 3.1's its headers.
  CHECK(ember_chat_tool_syntax(nullptr, "{{ '<|start_header_id|>' }}{# <tool_call> #}") == EMBER_TOOL_SYNTAX_HERMES);
  CHECK(ember_chat_tool_syntax(nullptr, "{{ '<|start_header_id|>ipython' }}") == EMBER_TOOL_SYNTAX_LLAMA3);
  // Mistral v3 writes the marker and the array's bracket as one literal.
  CHECK(ember_chat_tool_syntax(nullptr, "{{- \"[TOOL_CALLS][\" }}") == EMBER_TOOL_SYNTAX_MISTRAL);
  // The later Mistral form: the name after the marker, then [ARGS].
  CHECK(ember_chat_tool_syntax(nullptr, "{{- '[TOOL_CALLS]' + name + '[ARGS]' }}") == EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  CHECK(ember_chat_tool_syntax(nullptr, "{{- '[TOOL_CALLS]' }}") == EMBER_TOOL_SYNTAX_HERMES);
  // Gemma 4 writes '<|tool_call>call:'; Phi-4-mini its tools between <|tool|> and <|/tool|>.
  CHECK(ember_chat_tool_syntax(nullptr, "{{- '<|tool_call>call:' + name }}") == EMBER_TOOL_SYNTAX_GEMMA4);
  CHECK(ember_chat_tool_syntax(nullptr, "{{ '<|tool|>' + message['tools'] + '<|/tool|>' }}") == EMBER_TOOL_SYNTAX_PHI4);
  CHECK(ember_chat_tool_syntax(nullptr, "phi4-mini") == EMBER_TOOL_SYNTAX_PHI4);
  CHECK(ember_chat_tool_syntax(nullptr, "phi3") == EMBER_TOOL_SYNTAX_HERMES);
}

// Phi-4-mini-instruct's own template (its tokenizer_config.json): the tools
// are the system message's `tools` member, calls are not read.
const char kPhi4MiniTemplate[] =
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is "
    "not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' "
    "+ '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}";

TEST_CASE("chat tools: Phi-4-mini's template gets the tools in the system message and the calls in the content") {
  ember_status st;
  std::string out = format_json(kPhi4MiniTemplate, kConversation, kTools, &st);
  REQUIRE_MESSAGE(st == EMBER_OK, out);
  CHECK(ember_chat_tool_syntax(nullptr, kPhi4MiniTemplate) == EMBER_TOOL_SYNTAX_PHI4);
  // The functions themselves (Microsoft's documented form), in the caller's system turn.
  CHECK(out.rfind("<|system|>Be brief.<|tool|>[{\"name\": \"get_weather\", \"description\": \"Weather of a city\", "
                  "\"parameters\": {\"type\": \"object\"", 0) == 0);
  CHECK(out.find("}]<|/tool|><|end|><|user|>Weather in Oslo?<|end|>") != std::string::npos);
  CHECK(out.find("<|assistant|><|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]"
                 "<|/tool_call|><|end|>") != std::string::npos);
  CHECK(out.find("<|tool|>-3 C<|end|><|tool|>snow<|end|><|assistant|>") != std::string::npos);
  // No system message: one is made for the tools.
  const char conv[] = R"([{"role":"user","content":"Hi"}])";
  out = format_json(kPhi4MiniTemplate, conv, kTools, &st);
  REQUIRE_MESSAGE(st == EMBER_OK, out);
  CHECK(out.rfind("<|system|>You are a helpful assistant with some tools.<|tool|>[{\"name\": \"get_weather\"", 0) == 0);
  // No tools: as the template renders plain messages.
  out = format_json(kPhi4MiniTemplate, conv, nullptr, &st);
  CHECK(out == "<|user|>Hi<|end|><|assistant|>");
  // Other templates are not touched: chatml reads `tools` itself.
  out = format_json("chatml", conv, kTools, &st);
  CHECK(out.find("helpful assistant with some tools") == std::string::npos);
}

TEST_CASE("chat tools: the phi4-mini built-in renders as Phi-4-mini's template with tools where Microsoft puts them") {
  ember_status st;
  const std::string builtin = format_json("phi4-mini", kConversation, kTools, &st);
  REQUIRE_MESSAGE(st == EMBER_OK, builtin);
  const std::string own = format_json(kPhi4MiniTemplate, kConversation, kTools, &st);
  REQUIRE_MESSAGE(st == EMBER_OK, own);
  CHECK(builtin == own);
  const char conv[] = R"([{"role":"system","content":"S"},{"role":"user","content":"Hi"}])";
  CHECK(format_json("phi4-mini", conv, nullptr, &st) == format_json(kPhi4MiniTemplate, conv, nullptr, &st));
}


std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The tool conversation through models' own templates (llama.cpp's
// models/templates): the families whose call syntax ember writes render
// the tools, the call and the result, and say which syntax they use; every
// template that reads `tools` renders it or is refused by name.
TEST_CASE("chat tools: models' own templates render tools, calls and results") {
  std::string dir = std::string(EMBER_LLAMA_VOCAB_DIR) + "/templates";
  if (const char* d = std::getenv("EMBER_LLAMA_VOCAB_DIR"); d && *d) dir = std::string(d) + "/templates";
  if (!std::filesystem::is_directory(dir)) {
    if (ember::test::test_data_required()) FAIL("llama.cpp chat templates missing in '" << dir << "'");
    MESSAGE("skipped: llama.cpp chat templates not found in '" << dir << "'; run tools/scripts/fetch_llama_vocabs.sh");
    return;
  }
  struct Family {
    const char* file;
    int syntax;
  };
  const Family families[] = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", EMBER_TOOL_SYNTAX_HERMES},
      {"Qwen-Qwen3-0.6B.jinja", EMBER_TOOL_SYNTAX_HERMES},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", EMBER_TOOL_SYNTAX_HERMES},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", EMBER_TOOL_SYNTAX_HERMES},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", EMBER_TOOL_SYNTAX_LLAMA3},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", EMBER_TOOL_SYNTAX_LLAMA3},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", EMBER_TOOL_SYNTAX_LLAMA3},
      {"unsloth-mistral-Devstral-Small-2507.jinja", EMBER_TOOL_SYNTAX_MISTRAL_ARGS},
      {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", EMBER_TOOL_SYNTAX_MISTRAL_ARGS},
  };
  // Syntax only: Small 3.2's refuses ids other than 9 characters (serve
  // maps them), Gemma 2's has no tool form, Granite 3.3's asks for
  // <|tool_call|> and a JSON list (Phi-4-mini's form).
  const Family syntax_only[] = {
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", EMBER_TOOL_SYNTAX_MISTRAL_ARGS},
      {"google-gemma-2-2b-it.jinja", EMBER_TOOL_SYNTAX_HERMES},
      {"ibm-granite-granite-3.3-2B-Instruct.jinja", EMBER_TOOL_SYNTAX_PHI4},
  };
  for (const Family& f : syntax_only) {
    const std::filesystem::path path = std::filesystem::path(dir) / f.file;
    if (std::filesystem::exists(path)) CHECK(ember_chat_tool_syntax(nullptr, read_file(path).c_str()) == f.syntax);
  }
  // Gemma 4's name a tool result by the call it answers (a result whose id
  // matches no call is None + str there, in Jinja2 too): one call, one
  // result. The first ("interleaved") reads results only as the assistant's
  // tool_responses: ember puts them there.
  const char gemma_conversation[] =
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Oslo?"},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
      R"("function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","content":"-3 C, snow"}])";
  for (const char* file : {"google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja"}) {
    CAPTURE(file);
    const std::filesystem::path path = std::filesystem::path(dir) / file;
    if (!std::filesystem::exists(path)) continue;
    const std::string tmpl = read_file(path);
    CHECK(ember_chat_tool_syntax(nullptr, tmpl.c_str()) == EMBER_TOOL_SYNTAX_GEMMA4);
    ember_status st;
    const std::string out = format_json(tmpl.c_str(), gemma_conversation, kTools, &st);
    REQUIRE_MESSAGE(st == EMBER_OK, out);
    CHECK(out.find("<|tool>declaration:get_weather{description:<|\"|>Weather of a city<|\"|>") != std::string::npos);
    CHECK(out.find("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>") != std::string::npos);
    CHECK(out.find("<|tool_response>response:get_weather{value:<|\"|>-3 C, snow<|\"|>}<tool_response|>") !=
          std::string::npos);
  }
  // Mistral Nemo's refuses the conversation's ids (9 letters and digits
  // only: serve maps them, tools/serve/tool_calls.h): its syntax is checked.
  if (const auto nemo = std::filesystem::path(dir) / "mistralai-Mistral-Nemo-Instruct-2407.jinja";
      std::filesystem::exists(nemo)) {
    CHECK(ember_chat_tool_syntax(nullptr, read_file(nemo).c_str()) == EMBER_TOOL_SYNTAX_MISTRAL);
  }
  for (const Family& f : families) {
    const std::string file = f.file;
    CAPTURE(file);
    const std::filesystem::path path = std::filesystem::path(dir) / f.file;
    if (!std::filesystem::exists(path)) continue;
    const std::string tmpl = read_file(path);
    CHECK(ember_chat_tool_syntax(nullptr, tmpl.c_str()) == f.syntax);
    ember_status st;
    const std::string out = format_json(tmpl.c_str(), kConversation, kTools, &st);
    REQUIRE_MESSAGE(st == EMBER_OK, out);
    CHECK(out.find("Weather of a city") != std::string::npos);  // the tool's description
    CHECK(out.find("Weather in Oslo?") != std::string::npos);
    CHECK(out.find("\"Oslo\"") != std::string::npos);          // the call's arguments
    CHECK(out.find("-3 C") != std::string::npos);              // the tool's result
    CHECK(out.find("snow") != std::string::npos);
  }
  // Every template that reads `tools`: rendered, or refused with a status.
  int rendered = 0, reading = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jinja") continue;
    const std::string tmpl = read_file(e.path());
    if (tmpl.find("tools") == std::string::npos) continue;
    ++reading;
    const std::string file = e.path().filename().string();
    CAPTURE(file);
    ember_status st;
    const std::string out = format_json(tmpl.c_str(), kConversation, kTools, &st);
    if (st == EMBER_OK) {
      ++rendered;
    } else {
      CHECK((st == EMBER_ERR_UNSUPPORTED || st == EMBER_ERR_INVALID_ARGUMENT || st == EMBER_ERR_NO_MEMORY));
      CHECK(!out.empty());
    }
  }
  MESSAGE("templates reading tools: " << rendered << " of " << reading << " render the tool conversation");
  CHECK(rendered * 2 >= reading);
}

}  // namespace
}  // namespace ember::chat

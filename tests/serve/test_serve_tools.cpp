// Tool calls in `ember serve` without a socket: the reader's tools,
// tool_choice, parallel_tool_calls and messages' tool_calls/tool_call_id
// (and refusals naming the field), the call grammar (prefixed rules,
// compiled for a model, admitting exactly the calls asked for), and calls
// read back from text, whole and streamed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ember.h"
#include "test_data.h"
#include "tools/serve/grammar_cache.h"
#include "tools/serve/openai_api.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/tool_calls.h"
#include "serve/tool_test_helpers.h"

#ifndef EMBER_LLAMA_VOCAB_DIR
#define EMBER_LLAMA_VOCAB_DIR ""
#endif

using namespace ember::serve;
using json = nlohmann::json;

namespace {

const char kWeather[] =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather now",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Oslo","Lima"]},)"
    R"("days":{"type":"integer","minimum":1,"maximum":3}},"required":["city","days"]}}})";

std::string chat_body(const std::string& extra) {
  return R"({"messages":[{"role":"user","content":"hi"}])" + extra + "}";
}

// A chat request with the get_weather and now tools, tool_choice "required".
CompletionRequest weather_and_now_required() {
  CompletionRequest r;
  RequestError e;
  REQUIRE(read_completion_request(
      chat_body(std::string(",\"tools\":[") + kWeather +
                R"(,{"type":"function","function":{"name":"now"}}],"tool_choice":"required")"),
      true, ReadLimits(), &r, &e));
  return r;
}

RequestError read_error(const std::string& body, bool chat = true) {
  CompletionRequest r;
  RequestError e;
  CHECK_FALSE(read_completion_request(body, chat, ReadLimits(), &r, &e));
  return e;
}

}  // namespace

TEST_CASE("serve tools: the reader takes tools, tool_choice and parallel_tool_calls") {
  CompletionRequest r;
  RequestError e;
  const std::string tools = std::string(",\"tools\":[") + kWeather +
                            R"(,{"type":"function","function":{"name":"now"}}])";
  REQUIRE_MESSAGE(read_completion_request(chat_body(tools), true, ReadLimits(), &r, &e), e.message);
  REQUIRE(r.tools.size() == 2);
  CHECK(r.tools[0].name == "get_weather");
  CHECK(r.tools[0].description == "Weather now");
  // The schema kept as compact JSON, members in their order.
  CHECK(r.tools[0].parameters ==
        R"({"type":"object","properties":{"city":{"type":"string","enum":["Oslo","Lima"]},)"
        R"("days":{"type":"integer","minimum":1,"maximum":3}},"required":["city","days"]})");
  CHECK(r.tools[1].parameters.empty());
  CHECK(r.tool_choice == ToolChoice::kAuto);  // the default with tools
  CHECK(r.parallel_tool_calls);

  REQUIRE(read_completion_request(chat_body(tools + R"(,"tool_choice":"required","parallel_tool_calls":false)"), true,
                                  ReadLimits(), &r, &e));
  CHECK(r.tool_choice == ToolChoice::kRequired);
  CHECK_FALSE(r.parallel_tool_calls);
  REQUIRE(read_completion_request(
      chat_body(tools + R"(,"tool_choice":{"type":"function","function":{"name":"now"}})"), true, ReadLimits(), &r, &e));
  CHECK(r.tool_choice == ToolChoice::kNamed);
  CHECK(r.tool_choice_name == "now");
  REQUIRE(read_completion_request(chat_body(tools + R"(,"tool_choice":"none")"), true, ReadLimits(), &r, &e));
  CHECK(r.tool_choice == ToolChoice::kNone);
  // No tools: none; tools [] and null are no tools, on both endpoints.
  REQUIRE(read_completion_request(chat_body(R"(,"tools":[],"tool_choice":null)"), true, ReadLimits(), &r, &e));
  CHECK(r.tool_choice == ToolChoice::kNone);
  CHECK(read_completion_request(R"({"prompt":"x","tools":[],"tool_choice":"none"})", false, ReadLimits(), &r, &e));
}

TEST_CASE("serve tools: assistant tool_calls and tool messages are read") {
  const std::string body = R"({"messages":[{"role":"user","content":"weather?"},)"
                           R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
                           R"("function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},)"
                           R"({"id":"call_2","type":"function","function":{"name":"now","arguments":{"tz":"UTC"}}}]},)"
                           R"({"role":"tool","tool_call_id":"call_1","content":"cold"}]})";
  CompletionRequest r;
  RequestError e;
  REQUIRE_MESSAGE(read_completion_request(body, true, ReadLimits(), &r, &e), e.message);
  REQUIRE(r.messages.size() == 3);
  const ChatMessage& a = r.messages[1];
  CHECK(a.content.empty());
  REQUIRE(a.tool_calls.size() == 2);
  CHECK(a.tool_calls[0].id == "call_1");
  CHECK(a.tool_calls[0].name == "get_weather");
  CHECK(a.tool_calls[0].arguments == R"({"city":"Oslo"})");
  CHECK(a.tool_calls[1].arguments == R"({"tz":"UTC"})");  // an object given: kept as its text
  CHECK(r.messages[2].role == "tool");
  CHECK(r.messages[2].tool_call_id == "call_1");
  CHECK(r.messages[2].content == "cold");
}

TEST_CASE("serve tools: malformed tools, tool_choice and calls are 400 naming the field") {
  struct Case {
    std::string body;
    const char* param;
    const char* says;
  };
  const std::string w = kWeather;
  const Case cases[] = {
      {chat_body(R"(,"tools":{})"), "tools", "'tools' must be an array"},
      {chat_body(R"(,"tools":[1])"), "tools", "'tools[0]' must be"},
      {chat_body(R"(,"tools":[{"type":"code_interpreter"}])"), "tools", "'tools[0].type' must be \"function\""},
      {chat_body(R"(,"tools":[{"type":"function"}])"), "tools", "'tools[0].function' must be an object"},
      {chat_body(R"(,"tools":[{"type":"function","function":{"name":"a b"}}])"), "tools", "'tools[0].function.name'"},
      {chat_body(R"(,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}])"), "tools",
       "'tools[0].function.parameters' must be a JSON Schema object"},
      {chat_body(R"(,"tools":[{"type":"function","function":{"name":"f","description":7}}])"), "tools",
       "'tools[0].function.description' must be a string"},
      {chat_body(",\"tools\":[" + w + "," + w + "]"), "tools", "is given twice"},
      {chat_body(",\"tools\":[" + w + R"(],"tool_choice":"always")"), "tool_choice", "'tool_choice' must be"},
      {chat_body(",\"tools\":[" + w + R"(],"tool_choice":{"type":"function"})"), "tool_choice", "'tool_choice'"},
      {chat_body(",\"tools\":[" + w + R"(],"tool_choice":{"type":"function","function":{"name":"nope"}})"),
       "tool_choice", "\"nope\" is not one of the functions"},
      {chat_body(R"(,"tool_choice":"required")"), "tool_choice", "'tools' is empty"},
      {chat_body(",\"tools\":[" + w + R"(],"parallel_tool_calls":1)"), "parallel_tool_calls", "true or false"},
      {R"({"messages":[{"role":"tool","content":"x"}]})", "messages", "'messages[0]' (role tool) needs 'tool_call_id'"},
      {R"({"messages":[{"role":"assistant","tool_calls":{}}]})", "messages", "'messages[0].tool_calls' must be an array"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]})",
       "messages", "'messages[0].tool_calls[0].function.name' must be a string"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"f","function":{"name":"x"}}]}]})", "messages",
       "'messages[0].tool_calls[0].type' must be \"function\""},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"id":1,"function":{"name":"x"}}]}]})", "messages",
       "'messages[0].tool_calls[0].id' must be a string"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]})",
       nullptr, nullptr},  // the chat endpoint takes them
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    CompletionRequest r;
    RequestError e;
    const bool ok = read_completion_request(c.body, true, ReadLimits(), &r, &e);
    if (!c.param) {
      CHECK(ok);
      continue;
    }
    REQUIRE_FALSE(ok);
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_MESSAGE(e.message.find(c.says) != std::string::npos, e.message);
  }
  // The completions API takes no tools.
  RequestError e = read_error(R"({"prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]})", false);
  CHECK(e.param == "tools");
  CHECK(e.code == "unsupported_parameter");
  e = read_error(R"({"prompt":"x","tool_choice":"auto"})", false);
  CHECK(e.param == "tool_choice");
}

TEST_CASE("serve tools: captured values are bounded by the body's budget and a size cap") {
  // Many small elements inside parameters cost more kept bytes than their body.
  std::string schema = R"({"type":"object","properties":{)";
  for (int i = 0; i < 8000; ++i) schema += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":{}";
  schema += "}}";
  const std::string body = chat_body(R"(,"tools":[{"type":"function","function":{"name":"f","parameters":)" + schema +
                                     "}}]");
  RequestError e = read_error(body);
  CHECK(e.param == "tools");
  CHECK(e.message.find("KiB") != std::string::npos);
  ReadLimits tight;
  tight.kept_slack = 256;
  tight.kept_per_body_byte = 1;
  CompletionRequest r;
  const std::string small = chat_body(std::string(",\"tools\":[") + kWeather + "]");
  CHECK_FALSE(read_completion_request(small, true, tight, &r, &e));
  CHECK(e.message.find("more than its size allows") != std::string::npos);
}

TEST_CASE("serve tools: rules are prefixed outside literals, classes and comments") {
  const std::string g = "root ::= \"a root\" [a-z\\]x] item # root comment\nitem ::= \"\\\"item\\\"\" {2,3} root-x\n";
  CHECK(prefix_gbnf_rules(g, "t0-") ==
        "t0-root ::= \"a root\" [a-z\\]x] t0-item # root comment\nt0-item ::= \"\\\"item\\\"\" {2,3} t0-root-x\n");
}

TEST_CASE("serve tools: the call grammar admits the asked-for calls, read back into tool_calls") {
  CompletionRequest r = weather_and_now_required();
  std::string gbnf, why;
  REQUIRE(tool_call_grammar(r, EMBER_TOOL_SYNTAX_HERMES, &gbnf, &why));
  CHECK(gbnf.find("root ::= tool-call ( \"\\n\" tool-call )*") != std::string::npos);
  CHECK(gbnf.find("call-0 ::= \"\\\"get_weather\\\", \\\"arguments\\\": \" t0-root") != std::string::npos);
  CHECK(gbnf.find("t1-root ::=") != std::string::npos);
  r.tool_choice = ToolChoice::kNamed;
  r.tool_choice_name = "now";
  r.parallel_tool_calls = false;
  REQUIRE(tool_call_grammar(r, EMBER_TOOL_SYNTAX_LLAMA3, &gbnf, &why));
  CHECK(gbnf.find("root ::= \"{\\\"name\\\": \" ( call-1 ) \"}\"") != std::string::npos);
  CHECK(gbnf.find("get_weather") == std::string::npos);
  // A schema the translator refuses: named.
  r.tools[1].parameters = R"({"type":"array","uniqueItems":true})";
  CHECK_FALSE(tool_call_grammar(r, EMBER_TOOL_SYNTAX_HERMES, &gbnf, &why));
  CHECK(why.find("'now'") != std::string::npos);
  CHECK(why.find("uniqueItems") != std::string::npos);
}

TEST_CASE("serve tools: calls are parsed out of Hermes and Llama 3 text") {
  ParsedReply p = parse_tool_calls(
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 2}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
      EMBER_TOOL_SYNTAX_HERMES);
  CHECK(p.content == "Let me look.");
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(json::parse(p.calls[0].arguments) == json({{"city", "Oslo"}, {"days", 2}}));
  CHECK(p.calls[0].id.rfind("call_", 0) == 0);
  CHECK(p.calls[0].id.size() == 29);
  CHECK(p.calls[0].id != p.calls[1].id);
  // Not a call: left as text.
  p = parse_tool_calls("<tool_call>\nnot json\n</tool_call> and more", EMBER_TOOL_SYNTAX_HERMES);
  CHECK(p.calls.empty());
  CHECK(p.content == "<tool_call>\nnot json\n</tool_call> and more");
  // An unclosed call (a token limit) whose JSON is whole still counts.
  p = parse_tool_calls("<tool_call>{\"name\":\"now\",\"arguments\":{}}", EMBER_TOOL_SYNTAX_HERMES);
  CHECK(p.calls.size() == 1);
  p = parse_tool_calls(" {\"name\": \"now\", \"parameters\": {\"tz\": \"UTC\"}}\n", EMBER_TOOL_SYNTAX_LLAMA3);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].arguments == R"({"tz":"UTC"})");
  CHECK(p.content.empty());
  p = parse_tool_calls("<|python_tag|>{\"name\": \"now\", \"parameters\": {}}", EMBER_TOOL_SYNTAX_LLAMA3);
  CHECK(p.calls.size() == 1);
  p = parse_tool_calls("{\"answer\": 4}", EMBER_TOOL_SYNTAX_LLAMA3);
  CHECK(p.calls.empty());
  CHECK(p.content == "{\"answer\": 4}");
}

TEST_CASE("serve tools: streamed text is released up to a call, the call held to the end") {
  ToolCallStream s(EMBER_TOOL_SYNTAX_HERMES, false);
  std::string sent;
  for (const char* piece : {"Sure", ", checking <", "tool", "_call>\n{\"name\": \"now\", ", "\"arguments\": {}}\n",
                            "</tool_call>"}) {
    sent += s.add(piece);
  }
  CHECK(sent == "Sure, checking ");
  ParsedReply rest = s.finish();
  REQUIRE(rest.calls.size() == 1);
  CHECK(rest.calls[0].name == "now");
  // A '<' that turns out not to start a call is released after all.
  ToolCallStream plain(EMBER_TOOL_SYNTAX_HERMES, false);
  sent = plain.add("a <");
  sent += plain.add("b> c");
  CHECK(sent == "a <b> c");
  CHECK(plain.finish().content.empty());
  // Required: no content; the call goes out as deltas, not at the end.
  ToolCallStream held(EMBER_TOOL_SYNTAX_HERMES, true);
  CHECK(held.add("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>").empty());
  CHECK(held.streamed_calls() == 1);
  CHECK(held.deltas().size() == 1);
  CHECK(held.finish().calls.empty());
  // Llama 3: a reply that starts with '{' is held; other text is released.
  ToolCallStream l3(EMBER_TOOL_SYNTAX_LLAMA3, false);
  CHECK(l3.add("  ").empty());
  CHECK(l3.add("{\"name\": \"now\", ").empty());
  CHECK(l3.add("\"parameters\": {}}").empty());
  CHECK(l3.finish().calls.size() == 1);
  ToolCallStream l3text(EMBER_TOOL_SYNTAX_LLAMA3, false);
  CHECK(l3text.add(" Hello") == " Hello");
}

TEST_CASE("serve tools: the response shapes: message.tool_calls, content null, finish tool_calls, stream deltas") {
  CompletionRequest r;
  r.chat = true;
  std::vector<ToolCall> calls = {{"call_a", "now", "{}"}};
  const json body = json::parse(completion_body(r, "chatcmpl-1", 1, "m", "", Finish::kToolCalls, Usage(), nullptr, &calls));
  const json& choice = body["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  CHECK(choice["message"]["tool_calls"][0] ==
        json({{"id", "call_a"}, {"type", "function"}, {"function", {{"name", "now"}, {"arguments", "{}"}}}}));
  const std::string chunks = stream_tool_call_chunks(r, "chatcmpl-1", 1, "m", calls[0], 0);
  const size_t split = chunks.find("\n\ndata: ");
  REQUIRE(split != std::string::npos);
  const json first = json::parse(chunks.substr(6, split - 6));
  const json second = json::parse(chunks.substr(split + 8));
  CHECK(first["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "now");
  CHECK(first["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_a");
  CHECK(second["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] == "{}");
  CHECK(second["choices"][0]["delta"]["tool_calls"][0]["index"] == 0);
}

using ember::serve::test::constrained;
using ember::serve::test::random_model;

TEST_CASE("serve tools: on a random model the call grammar gives calls that satisfy the schema, every syntax") {
  ember_model* m = random_model();
  CompletionRequest r;
  RequestError e;
  REQUIRE(read_completion_request(
      chat_body(std::string(",\"tools\":[") + kWeather +
                R"(,{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":)"
                R"({"tz":{"enum":["UTC","CET"]}},"required":["tz"],"additionalProperties":false}}}],)"
                R"("tool_choice":"required")"),
      true, ReadLimits(), &r, &e));
  for (int syntax : {EMBER_TOOL_SYNTAX_HERMES, EMBER_TOOL_SYNTAX_LLAMA3, EMBER_TOOL_SYNTAX_MISTRAL}) {
    CAPTURE(syntax);
    std::string gbnf, why;
    REQUIRE(tool_call_grammar(r, syntax, &gbnf, &why));
    ember_grammar* g = nullptr;
    REQUIRE_MESSAGE(ember_grammar_create(m, gbnf.c_str(), "root", &g) == EMBER_OK, ember_last_error(), gbnf);
    int calls = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const std::string text = constrained(m, g, seed);
      CAPTURE(text);
      const ParsedReply p = parse_tool_calls(text, syntax);
      CHECK(p.content.empty());
      REQUIRE(!p.calls.empty());
      if (syntax == EMBER_TOOL_SYNTAX_LLAMA3) CHECK(p.calls.size() == 1);
      for (const ToolCall& c : p.calls) {
        ++calls;
        const json args = json::parse(c.arguments, nullptr, false);
        REQUIRE(args.is_object());
        if (c.name == "get_weather") {
          CHECK((args["city"] == "Oslo" || args["city"] == "Lima"));
          REQUIRE(args["days"].is_number_integer());
          CHECK(args["days"].get<int>() >= 1);
          CHECK(args["days"].get<int>() <= 3);
        } else {
          CHECK(c.name == "now");
          CHECK((args["tz"] == "UTC" || args["tz"] == "CET"));
          CHECK(args.size() == 1);
        }
      }
    }
    CHECK(calls >= 4);
    ember_grammar_free(g);
  }
  ember_model_free(m);
}

TEST_CASE("serve tools: cut and mutated tool requests are read or refused with a 400, never more") {
  const std::string base =
      R"({"messages":[{"role":"user","content":"w?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1",)"
      R"("type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"c1","content":"cold"}],"tools":[)" +
      std::string(kWeather) + R"(],"tool_choice":{"type":"function","function":{"name":"get_weather"}},)"
                              R"("parallel_tool_calls":false})";
  CompletionRequest r;
  RequestError e;
  REQUIRE_MESSAGE(read_completion_request(base, true, ReadLimits(), &r, &e), e.message);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const char bytes[] = "{}[],:\"0a\\ nul";
  int read = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string body = base;
    if (i < 300) {
      body.resize(next() % body.size());
    } else {
      for (int k = 0; k < 1 + i % 3; ++k) body[next() % body.size()] = bytes[next() % (sizeof bytes - 1)];
    }
    if (read_completion_request(body, true, ReadLimits(), &r, &e)) {
      ++read;
      for (const ToolFunction& t : r.tools) CHECK(!t.name.empty());
      std::string gbnf, why;
      if (!r.tools.empty()) (void)tool_call_grammar(r, EMBER_TOOL_SYNTAX_HERMES, &gbnf, &why);
    } else {
      ++refused;
      CHECK(e.status == 400);
      CHECK(!e.message.empty());
      CHECK(e.message.size() < 400);
    }
  }
  MESSAGE("mutated tool requests: " << read << " read, " << refused << " refused");
  CHECK(read > 0);
  CHECK(refused > 0);
}

namespace {

// A template of llama.cpp's collection (tools/scripts/fetch_llama_vocabs.sh),
// "" when it is not there.
std::string llama_template(const char* file) {
  std::string dir = std::string(EMBER_LLAMA_VOCAB_DIR) + "/templates";
  if (const char* d = std::getenv("EMBER_LLAMA_VOCAB_DIR"); d && *d) dir = std::string(d) + "/templates";
  std::ifstream f(std::filesystem::path(dir) / file, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("serve tools: Mistral's [TOOL_CALLS] array: the grammar, whole and streamed parsing, 9-letter ids") {
  CompletionRequest r = weather_and_now_required();
  std::string gbnf, why;
  REQUIRE(tool_call_grammar(r, EMBER_TOOL_SYNTAX_MISTRAL, &gbnf, &why));
  CHECK(gbnf.find("root ::= \"[TOOL_CALLS]\"? \"[\" tool-call ( \", \" tool-call )* \"]\"") != std::string::npos);
  CHECK(gbnf.find("call-0 ::= \"\\\"get_weather\\\", \\\"arguments\\\": \" t0-root") != std::string::npos);
  r.parallel_tool_calls = false;
  REQUIRE(tool_call_grammar(r, EMBER_TOOL_SYNTAX_MISTRAL, &gbnf, &why));
  CHECK(gbnf.find("root ::= \"[TOOL_CALLS]\"? \"[\" tool-call \"]\"\n") != std::string::npos);

  ParsedReply p = parse_tool_calls(
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 2}}, "
      "{\"name\": \"now\", \"arguments\": {}}]",
      EMBER_TOOL_SYNTAX_MISTRAL);
  CHECK(p.content.empty());
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(json::parse(p.calls[0].arguments) == json({{"city", "Oslo"}, {"days", 2}}));
  CHECK(p.calls[1].name == "now");
  for (const ToolCall& c : p.calls) {
    CHECK(c.id.size() == 9);
    CHECK(template_call_id(c.id, EMBER_TOOL_SYNTAX_MISTRAL) == c.id);  // already one the template takes
  }
  // The marker a control token printed as nothing: the array alone; text before it is content.
  p = parse_tool_calls(" [{\"name\": \"now\", \"arguments\": {}}]", EMBER_TOOL_SYNTAX_MISTRAL);
  CHECK(p.calls.size() == 1);
  p = parse_tool_calls("Checking. [TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}]", EMBER_TOOL_SYNTAX_MISTRAL);
  CHECK(p.calls.size() == 1);
  CHECK(p.content == "Checking.");
  // Cut by a token limit: the whole calls before the cut.
  p = parse_tool_calls("[{\"name\": \"now\", \"arguments\": {\"s\": \"]},\\\"\"}}, {\"name\": \"no", EMBER_TOOL_SYNTAX_MISTRAL);
  REQUIRE(p.calls.size() == 1);
  CHECK(json::parse(p.calls[0].arguments) == json({{"s", "]},\""}}));
  // Not calls: the text as it is.
  for (const char* text : {"[1, 2]", "[]", "[TOOL_CALLS][{\"name\": \"now\"}]", "plain"}) {
    p = parse_tool_calls(text, EMBER_TOOL_SYNTAX_MISTRAL);
    CHECK(p.calls.empty());
    CHECK(p.content == text);
  }
  // Streamed: text before the marker is released, the marker held back while it may be one.
  ToolCallStream s(EMBER_TOOL_SYNTAX_MISTRAL, false);
  std::string sent;
  for (const char* piece : {"Sure", ", [TOOL", "_CALLS][{\"name\": \"now\", ", "\"arguments\": {}}]"}) sent += s.add(piece);
  CHECK(sent == "Sure, ");
  CHECK(s.finish().calls.size() == 1);
  ToolCallStream bare(EMBER_TOOL_SYNTAX_MISTRAL, false);
  CHECK(bare.add("[{\"name\": \"now\", ").empty());
  CHECK(bare.finish().calls.empty());  // cut: no call, its text is content
  ToolCallStream text(EMBER_TOOL_SYNTAX_MISTRAL, false);
  CHECK(text.add("a [b] c") == "a [b] c");
}

TEST_CASE("serve tools: Mistral's templates get 9-letter call ids, the call and its result agreeing") {
  CHECK(ember_chat_tool_syntax(nullptr, "{{- \"[TOOL_CALLS][\" }}") == EMBER_TOOL_SYNTAX_MISTRAL);
  const std::string a = template_call_id("call_1", EMBER_TOOL_SYNTAX_MISTRAL);
  CHECK(a.size() == 9);
  CHECK(a == template_call_id("call_1", EMBER_TOOL_SYNTAX_MISTRAL));
  CHECK(a != template_call_id("call_2", EMBER_TOOL_SYNTAX_MISTRAL));
  CHECK(template_call_id("call_1", EMBER_TOOL_SYNTAX_HERMES) == "call_1");
  const std::string nemo = llama_template("mistralai-Mistral-Nemo-Instruct-2407.jinja");
  if (nemo.empty()) {
    if (ember::test::test_data_required()) FAIL("llama.cpp chat templates missing: run tools/scripts/fetch_llama_vocabs.sh");
    MESSAGE("skipped: llama.cpp chat templates not found");
    return;
  }
  CHECK(ember_chat_tool_syntax(nullptr, nemo.c_str()) == EMBER_TOOL_SYNTAX_MISTRAL);
  for (const char* later : {"Mistral-Small-3.2-24B-Instruct-2506.jinja", "unsloth-mistral-Devstral-Small-2507.jinja"}) {
    const std::string tmpl = llama_template(later);
    if (!tmpl.empty()) CHECK(ember_chat_tool_syntax(nullptr, tmpl.c_str()) == EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  }
  const std::string body = std::string(R"({"messages":[{"role":"user","content":"weather?"},)") +
                           R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
                           R"("function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},)"
                           R"({"role":"tool","tool_call_id":"call_1","content":"cold"}],"tools":[)" +
                           kWeather + "]}";
  CompletionRequest r;
  RequestError e;
  REQUIRE_MESSAGE(read_completion_request(body, true, ReadLimits(), &r, &e), e.message);
  std::string out;
  REQUIRE_MESSAGE(format_chat(nullptr, r, &out, nemo.c_str()) == EMBER_OK, ember_last_error());
  CHECK(out.find("[AVAILABLE_TOOLS][{\"type\": \"function\"") != std::string::npos);
  CHECK(out.find("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"" + a +
                 "\"}]") != std::string::npos);
  CHECK(out.find("[TOOL_RESULTS]{\"content\": cold, \"call_id\": \"" + a + "\"}[/TOOL_RESULTS]") != std::string::npos);
}

TEST_CASE("serve tools: Llama 3.x writes one call, parallel_tool_calls true or not") {
  // Its templates raise "This model only supports single tool-calls at
  // once!" for more: the grammar holds one object, parallel or not.
  CompletionRequest r;
  RequestError e;
  REQUIRE(read_completion_request(chat_body(std::string(",\"tools\":[") + kWeather +
                                            R"(],"tool_choice":"required","parallel_tool_calls":true)"),
                                  true, ReadLimits(), &r, &e));
  REQUIRE(r.parallel_tool_calls);
  std::string gbnf, why;
  REQUIRE(tool_call_grammar(r, EMBER_TOOL_SYNTAX_LLAMA3, &gbnf, &why));
  CHECK(gbnf.rfind("root ::= \"{\\\"name\\\": \" ( call-0 ) \"}\"\n", 0) == 0);
  ember_model* m = random_model();
  ember_grammar* g = nullptr;
  REQUIRE_MESSAGE(ember_grammar_create(m, gbnf.c_str(), "root", &g) == EMBER_OK, ember_last_error());
  for (uint64_t seed = 21; seed <= 23; ++seed) {
    const std::string text = constrained(m, g, seed);
    CAPTURE(text);
    CHECK(parse_tool_calls(text, EMBER_TOOL_SYNTAX_LLAMA3).calls.size() == 1);
  }
  ember_grammar_free(g);
  ember_model_free(m);
}

namespace {

void test_call_grammar_cache(ember_model* m) {
  GrammarCache cache(m, 4);
  CompletionRequest r;
  RequestError e;
  REQUIRE(read_completion_request(chat_body(std::string(",\"tools\":[") + kWeather + R"(],"tool_choice":"required")"),
                                  true, ReadLimits(), &r, &e));
  bool hit = true;
  const GrammarRef first = cache.get_tool_calls(r, EMBER_TOOL_SYNTAX_HERMES, &hit, &e);
  REQUIRE_MESSAGE(first, e.message);
  CHECK_FALSE(hit);
  CHECK(cache.compiled() == 1);
  // The second identical request (read again from its body): the same grammar, nothing compiled.
  CompletionRequest again;
  REQUIRE(read_completion_request(chat_body(std::string(",\"tools\":[") + kWeather + R"(],"tool_choice":"required")"),
                                  true, ReadLimits(), &again, &e));
  CHECK(cache.get_tool_calls(again, EMBER_TOOL_SYNTAX_HERMES, &hit, &e) == first);
  CHECK(hit);
  CHECK(cache.compiled() == 1);
  // Each part of the key makes another grammar: syntax, parallel, tool_choice, a schema.
  CHECK(cache.get_tool_calls(again, EMBER_TOOL_SYNTAX_MISTRAL, &hit, &e) != first);
  again.parallel_tool_calls = false;
  CHECK(cache.get_tool_calls(again, EMBER_TOOL_SYNTAX_HERMES, &hit, &e) != first);
  again.tool_choice = ToolChoice::kNamed;
  again.tool_choice_name = "get_weather";
  CHECK(cache.get_tool_calls(again, EMBER_TOOL_SYNTAX_HERMES, &hit, &e) != nullptr);
  CHECK_FALSE(hit);
  CHECK(cache.compiled() == 4);
  // A schema the translator refuses: a 400 naming the function, nothing kept.
  again.tools[0].parameters = R"({"type":"array","uniqueItems":true})";
  CHECK(cache.get_tool_calls(again, EMBER_TOOL_SYNTAX_HERMES, &hit, &e) == nullptr);
  CHECK(e.status == 400);
  CHECK(e.param == "tools");
  CHECK(e.message.find("'get_weather'") != std::string::npos);
  CHECK(cache.size() == 4);
}

}  // namespace

TEST_CASE("serve tools: a call grammar is compiled once and found again for the same tools") {
  ember_model* m = random_model();
  test_call_grammar_cache(m);  // the cache's grammars are freed before the model
  ember_model_free(m);
}

TEST_CASE("serve tools: legacy functions and function_call are read as tools and tool_choice") {
  const std::string weather = R"({"name":"get_weather","description":"Weather now",)"
                              R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}})";
  const std::string functions = ",\"functions\":[" + weather + R"(,{"name":"now"}])";
  CompletionRequest r;
  RequestError e;
  REQUIRE_MESSAGE(read_completion_request(chat_body(functions), true, ReadLimits(), &r, &e), e.message);
  REQUIRE(r.tools.size() == 2);
  CHECK(r.tools[0].name == "get_weather");
  CHECK(r.tools[0].description == "Weather now");
  CHECK(r.tools[0].parameters == R"({"type":"object","properties":{"city":{"type":"string"}}})");
  CHECK(r.tools[1].parameters.empty());
  CHECK(r.tool_choice == ToolChoice::kAuto);
  CHECK_FALSE(r.parallel_tool_calls);  // a legacy reply holds one call
  struct Choice {
    const char* json;
    ToolChoice choice;
  };
  for (const Choice& c : {Choice{R"("none")", ToolChoice::kNone}, Choice{R"("auto")", ToolChoice::kAuto},
                          Choice{R"({"name":"now"})", ToolChoice::kNamed}}) {
    CAPTURE(c.json);
    REQUIRE_MESSAGE(read_completion_request(chat_body(functions + ",\"function_call\":" + c.json), true, ReadLimits(),
                                            &r, &e),
                    e.message);
    CHECK(r.tool_choice == c.choice);
  }
  CHECK(r.tool_choice_name == "now");
  // function_call with tools, as tool_choice would be.
  REQUIRE(read_completion_request(chat_body(std::string(",\"tools\":[") + kWeather +
                                            R"(],"function_call":{"name":"get_weather"})"),
                                  true, ReadLimits(), &r, &e));
  CHECK(r.tool_choice == ToolChoice::kNamed);
  // Refusals name the legacy fields, and both spellings at once are refused naming both.
  struct Bad {
    std::string body;
    const char* param;
    const char* says;
  };
  const Bad bad[] = {
      {chat_body(functions + ",\"tools\":[" + kWeather + "]"), "functions", "'functions' and 'tools' are both given"},
      {chat_body(functions + R"(,"tool_choice":"auto","function_call":"auto")"), "function_call",
       "'function_call' and 'tool_choice' are both given"},
      {chat_body(R"(,"functions":{})"), "functions", "'functions' must be an array"},
      {chat_body(R"(,"functions":[1])"), "functions", "'functions[0]' must be an object"},
      {chat_body(R"(,"functions":[{"name":"a b"}])"), "functions", "'functions[0].name' must be 1 to 64"},
      {chat_body(functions + R"(,"function_call":"required")"), "function_call", "'function_call' must be"},
      {chat_body(functions + R"(,"function_call":{"name":"nope"})"), "function_call",
       "'function_call.name' = \"nope\" is not one of the functions in 'functions'"},
      {chat_body(R"(,"function_call":{"name":"now"})"), "function_call", "'functions' is empty"},
      {R"({"prompt":"x","functions":[{"name":"f"}]})", "functions", "only for /v1/chat/completions"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.body);
    CompletionRequest out;
    RequestError err;
    const bool chat = b.body.find("\"prompt\"") == std::string::npos;
    REQUIRE_FALSE(read_completion_request(b.body, chat, ReadLimits(), &out, &err));
    CHECK(err.status == 400);
    CHECK(err.param == b.param);
    CHECK_MESSAGE(err.message.find(b.says) != std::string::npos, err.message);
  }
  // The message naming both names both.
  CompletionRequest out;
  RequestError both;
  CHECK_FALSE(read_completion_request(bad[0].body, true, ReadLimits(), &out, &both));
  CHECK(both.message.find("'functions'") != std::string::npos);
  CHECK(both.message.find("'tools'") != std::string::npos);
}

namespace {

// SSE text ("data: {...}\n\n" events) gathered as OpenAI's clients do:
// delta.tool_calls by index. *arguments_chunks counts the chunks carrying
// argument text; a call's first chunk must carry its id, type and name.
json gather_sse_calls(const std::string& sse, int* arguments_chunks) {
  json calls = json::array();
  size_t at = 0;
  while ((at = sse.find("data: ", at)) != std::string::npos) {
    const size_t end = sse.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const json chunk = json::parse(sse.substr(at + 6, end - at - 6));
    at = end;
    for (const json& d : chunk["choices"][0]["delta"].value("tool_calls", json::array())) {
      const size_t i = d["index"];
      if (i == calls.size()) {
        CHECK(d.contains("id"));
        CHECK(d["type"] == "function");
        calls.push_back({{"id", d["id"]}, {"name", d["function"]["name"]}, {"arguments", ""}});
      }
      REQUIRE(i < calls.size());
      const std::string piece = d["function"].value("arguments", "");
      if (!piece.empty()) ++*arguments_chunks;
      calls[i]["arguments"] = calls[i]["arguments"].get<std::string>() + piece;
    }
  }
  return calls;
}

}  // namespace

TEST_CASE("serve tools: a demanded call's arguments stream as they are generated, in every syntax") {
  const std::string a0 = R"({"city": "Oslo, \"}{\" [x]", "days": [1, {"n": 2}]})";
  const std::string a1 = "{}";
  const std::string hermes = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + a0 +
                             "}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": " + a1 + "}\n</tool_call>";
  const std::string mistral = "[{\"name\": \"get_weather\", \"arguments\": " + a0 + "}, {\"name\": \"now\", "
                              "\"arguments\": " + a1 + "}]";
  const std::string llama3 = "{\"name\": \"get_weather\", \"parameters\": " + a0 + "}";
  struct Case {
    int syntax;
    std::string text;
  };
  for (const Case& c : {Case{EMBER_TOOL_SYNTAX_HERMES, hermes}, Case{EMBER_TOOL_SYNTAX_MISTRAL, mistral},
                        Case{EMBER_TOOL_SYNTAX_LLAMA3, llama3}}) {
    const int syntax = c.syntax;
    const std::string& text = c.text;
    CAPTURE(syntax);
    CompletionRequest r;
    r.chat = true;
    ToolCallStream s(syntax, true);
    std::string sse;
    // Three bytes at a time, as tokens come.
    for (size_t i = 0; i < text.size(); i += 3) {
      CHECK(s.add(text.substr(i, 3)).empty());
      sse += tool_stream_deltas(r, "chatcmpl-1", 1, "m", &s);
    }
    Finish finish = Finish::kStop;
    sse += tool_stream_tail(r, "chatcmpl-1", 1, "m", &s, &finish);
    CHECK(finish == Finish::kToolCalls);
    int pieces = 0;
    const json calls = gather_sse_calls(sse, &pieces);
    const size_t n = syntax == EMBER_TOOL_SYNTAX_LLAMA3 ? 1 : 2;
    REQUIRE(calls.size() == n);
    CHECK(s.streamed_calls() == n);
    CHECK(calls[0]["name"] == "get_weather");
    CHECK(calls[0]["arguments"] == a0);  // the pieces add up to the arguments text
    CHECK(json::parse(calls[0]["arguments"].get<std::string>())["days"][1]["n"] == 2);
    if (n == 2) {
      CHECK(calls[1]["name"] == "now");
      CHECK(calls[1]["arguments"] == a1);
      CHECK(calls[0]["id"] != calls[1]["id"]);
    }
    CHECK(pieces > static_cast<int>(a0.size() / 3) - 2);  // in pieces, not at the end
  }
  // A string-valued and a number-valued arguments value end where they end.
  ToolCallStream s(EMBER_TOOL_SYNTAX_LLAMA3, true);
  s.add("{\"name\": \"f\", \"parameters\": 12}");
  const auto d = s.deltas();
  REQUIRE(d.size() == 1);  // the start and its arguments, one add
  CHECK(d[0].first);
  CHECK(d[0].name == "f");
  CHECK(d[0].arguments == "12");
  ToolCallStream str(EMBER_TOOL_SYNTAX_HERMES, true);
  str.add("<tool_call>\n{\"name\": \"f\", \"arguments\": \"a}\\\"b\"}\n</tool_call>");
  const auto ds = str.deltas();
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].arguments == "\"a}\\\"b\"");
}

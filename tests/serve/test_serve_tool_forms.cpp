// The later families' call forms (tools/serve/tool_syntax.h): Mistral's
// [TOOL_CALLS]name[ARGS]{...}, Phi-4-mini's <|tool_call|>[...]<|/tool_call|>
// and Gemma 4's <|tool_call>call:name{key:<|"|>value<|"|>}<tool_call|>:
// their grammars (compiled, and generating calls that satisfy the schema on
// a random model), reading them back whole and streamed, with their markers
// printed or not, and malformed text of every form read as content.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember.h"
#include "serve/tool_test_helpers.h"
#include "tools/serve/grammar_cache.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/tool_args_gemma.h"
#include "tools/serve/tool_calls.h"

using namespace ember::serve;
using json = nlohmann::json;

namespace {

const std::vector<ToolFunction> kTools = {
    {"get_weather", "Weather now",
     R"({"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":3},)"
     R"("City":{"type":"string","enum":["Oslo","Lima"]},"note":{"type":"string"},)"
     R"("units":{"type":"array","items":{"type":"boolean"},"minItems":1}},"required":["City","days"]})"},
    {"now", "", ""},
};
const std::vector<std::string> kNames = {"get_weather", "now"};

// Every prefix cut and a byte changed here and there: read without a crash,
// and whatever is read has object arguments.
void read_mutations(const std::string& text, int syntax) {
  uint64_t x = 0x2545f4914f6cdd1dull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const char bytes[] = "{}[],:\"<|>\\ aN";
  for (size_t i = 0; i < text.size() + 400; ++i) {
    std::string t = text;
    if (i <= text.size()) {
      t.resize(i);
    } else {
      for (int k = 0; k < 3; ++k) t[next() % t.size()] = bytes[next() % (sizeof bytes - 1)];
    }
    const ParsedReply p = parse_tool_calls(t, syntax, kNames);
    for (const ToolCall& c : p.calls) CHECK(json::parse(c.arguments, nullptr, false).is_object());
    ToolCallStream auto_stream(syntax, false, kNames), all(syntax, true, kNames);
    for (size_t k = 0; k < t.size(); k += 5) {
      auto_stream.add(t.substr(k, 5));
      all.add(t.substr(k, 5));
      all.deltas();
    }
    auto_stream.finish();
    all.finish();
  }
}

}  // namespace

TEST_CASE("tool forms: Mistral's [TOOL_CALLS]name[ARGS]: grammar, markers printed or not, ids, cuts") {
  std::string gbnf, why;
  REQUIRE(tool_call_grammar(kTools, "", true, EMBER_TOOL_SYNTAX_MISTRAL_ARGS, &gbnf, &why));
  CHECK(gbnf.rfind("root ::= tool-call ( tool-call )*\ntool-call ::= \"[TOOL_CALLS]\"? ( call-0 | call-1 )\n", 0) == 0);
  CHECK(gbnf.find("call-0 ::= \"get_weather\" \"[ARGS]\"? t0-root") != std::string::npos);
  REQUIRE(tool_call_grammar(kTools, "now", false, EMBER_TOOL_SYNTAX_MISTRAL_ARGS, &gbnf, &why));
  CHECK(gbnf.rfind("root ::= tool-call\ntool-call ::= \"[TOOL_CALLS]\"? ( call-1 )\n", 0) == 0);

  ParsedReply p = parse_tool_calls(
      "[TOOL_CALLS]get_weather[ARGS]{\"City\": \"Oslo\", \"days\": 2}[TOOL_CALLS]now[ARGS]{}", EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  CHECK(p.content.empty());
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(json::parse(p.calls[0].arguments) == json({{"City", "Oslo"}, {"days", 2}}));
  CHECK(p.calls[1].name == "now");
  CHECK(p.calls[1].arguments == "{}");
  CHECK(p.calls[0].id.size() == 9);
  // The markers printed as nothing (control tokens): names and objects.
  p = parse_tool_calls(" get_weather{\"City\": \"Lima\", \"days\": 1}now{}", EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[1].name == "now");
  // Small 3.2's [CALL_ID]: the id is the call's; printed as nothing, the
  // id glued to the name is cut off by the names offered.
  p = parse_tool_calls("[TOOL_CALLS]now[CALL_ID]a1B2c3D4e[ARGS]{}", EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].id == "a1B2c3D4e");
  p = parse_tool_calls("nowa1B2c3D4e{}", EMBER_TOOL_SYNTAX_MISTRAL_ARGS, kNames);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].name == "now");
  CHECK(p.calls[0].id == "a1B2c3D4e");
  // Text before a printed marker is content; text after the calls too.
  p = parse_tool_calls("Let me see.[TOOL_CALLS]now[ARGS]{} Done.", EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.content == "Let me see.\nDone.");
  // Cut by a token limit: the whole calls before the cut.
  p = parse_tool_calls("now{}get_weather{\"City\": \"Os", EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].name == "now");
  // Not calls: the text as it is.
  for (const char* text : {"Hello there", "f{not json}", "[TOOL_CALLS]", "{\"a\": 1}", "now[ARGS][1]", ""}) {
    p = parse_tool_calls(text, EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
    CHECK(p.calls.empty());
    CHECK(p.content == text);
  }
  // Streamed: released up to a marker; a reply beginning name{ held; words released.
  ToolCallStream s(EMBER_TOOL_SYNTAX_MISTRAL_ARGS, false);
  std::string sent;
  for (const char* piece : {"Sure", ", [TOOL", "_CALLS]now[ARGS]{", "}"}) sent += s.add(piece);
  CHECK(sent == "Sure, ");
  CHECK(s.finish().calls.size() == 1);
  ToolCallStream bare(EMBER_TOOL_SYNTAX_MISTRAL_ARGS, false);
  CHECK(bare.add("get_wea").empty());
  CHECK(bare.add("ther{\"City\": ").empty());
  CHECK(bare.add("\"Oslo\", \"days\": 3}").empty());
  CHECK(bare.finish().calls.size() == 1);
  ToolCallStream words(EMBER_TOOL_SYNTAX_MISTRAL_ARGS, false);
  CHECK(words.add("Hel").empty());
  CHECK(words.add("lo there") == "Hello there");
  CHECK(words.finish().calls.empty());
  read_mutations("[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{\"City\": \"Oslo\", \"days\": [2, {\"x\": \"]\"}]}now{}",
                 EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
}

TEST_CASE("tool forms: Phi-4-mini's <|tool_call|>[...]: grammar, markers printed or not, several blocks") {
  std::string gbnf, why;
  REQUIRE(tool_call_grammar(kTools, "", true, EMBER_TOOL_SYNTAX_PHI4, &gbnf, &why));
  CHECK(gbnf.rfind("root ::= \"<|tool_call|>\"? \"[\" tool-call ( \", \" tool-call )* \"]\" \"<|/tool_call|>\"?\n", 0) == 0);
  CHECK(gbnf.find("call-0 ::= \"\\\"get_weather\\\", \\\"arguments\\\": \" t0-root") != std::string::npos);

  ParsedReply p = parse_tool_calls(
      "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"City\": \"Oslo\", \"days\": 2}}, "
      "{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>",
      EMBER_TOOL_SYNTAX_PHI4);
  CHECK(p.content.empty());
  REQUIRE(p.calls.size() == 2);
  CHECK(json::parse(p.calls[0].arguments) == json({{"City", "Oslo"}, {"days", 2}}));
  CHECK(p.calls[0].id.rfind("call_", 0) == 0);
  // Markers printed as nothing; the closing one missing; objects without the list.
  CHECK(parse_tool_calls("[{\"name\": \"now\", \"arguments\": {}}]", EMBER_TOOL_SYNTAX_PHI4).calls.size() == 1);
  CHECK(parse_tool_calls("<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]", EMBER_TOOL_SYNTAX_PHI4).calls.size() == 1);
  p = parse_tool_calls("<|tool_call|>{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"now\", \"arguments\": {}}",
                       EMBER_TOOL_SYNTAX_PHI4);
  CHECK(p.calls.size() == 2);
  // Text around the blocks is content; a block that is no call stays text.
  p = parse_tool_calls("First <|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|> then "
                       "<|tool_call|>[oops]<|/tool_call|>",
                       EMBER_TOOL_SYNTAX_PHI4);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.content == "First  then <|tool_call|>[oops]<|/tool_call|>");
  for (const char* text : {"[1, 2]", "{\"answer\": 4}", "plain", "<|tool_call|>", "[{\"name\": \"now\"}]"}) {
    p = parse_tool_calls(text, EMBER_TOOL_SYNTAX_PHI4);
    CHECK(p.calls.empty());
    CHECK(p.content == text);
  }
  ToolCallStream s(EMBER_TOOL_SYNTAX_PHI4, false);
  std::string sent;
  for (const char* piece : {"Sure", ", <|tool", "_call|>[{\"name\": \"now\", ", "\"arguments\": {}}]<|/tool_call|>"}) {
    sent += s.add(piece);
  }
  CHECK(sent == "Sure, ");
  CHECK(s.finish().calls.size() == 1);
  read_mutations("<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"City\": \"Oslo\", \"days\": 2}}, "
                 "{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>",
                 EMBER_TOOL_SYNTAX_PHI4);
}

TEST_CASE("tool forms: Gemma 4's arguments read into JSON, whole and a byte at a time") {
  struct Case {
    const char* gemma;
    const char* json;
  };
  const Case cases[] = {
      {"{}", "{}"},
      {"{city:<|\"|>Oslo<|\"|>}", R"({"city":"Oslo"})"},
      {"{a:1,b:-2.5e3,c:true,d:false,e:null,f:None}", R"({"a":1,"b":-2.5e3,"c":true,"d":false,"e":null,"f":null})"},
      {"{todos:[<|\"|>buy milk<|\"|>,<|\"|>walk dog<|\"|>]}", R"({"todos":["buy milk","walk dog"]})"},
      {"{config:{theme:<|\"|>dark<|\"|>,count:3},x:[[],{}]}", R"({"config":{"theme":"dark","count":3},"x":[[],{}]})"},
      // Quotes, backslashes, newlines, '<' and a lone '|' inside a string.
      {"{s:<|\"|>a \"q\" \\ b\nc <x> |y<|\"|>}", R"({"s":"a \"q\" \\ b\nc <x> |y"})"},
      {"{<|\"|>odd key<|\"|>:1, \"json\": \"v\" }", R"({"odd key":1,"json":"v"})"},
      {"{ name : Paris , n : 2 }", R"({"name":"Paris","n":2})"},  // bare words (marks printed as nothing)
      {"{u:<|\"|>żółw ☃<|\"|>}", R"({"u":"żółw ☃"})"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.gemma);
    const std::string text = std::string(c.gemma) + "<tool_call|>";
    std::string out;
    size_t used = 0;
    REQUIRE(gemma_args_to_json(text, &out, &used));
    CHECK(json::parse(out) == json::parse(c.json));
    CHECK(used == std::string(c.gemma).size());
    GemmaArgsReader r;
    std::string pieces;
    for (char ch : text) pieces += r.add(std::string_view(&ch, 1));
    CHECK(r.done());
    CHECK(pieces == out);
    CHECK(r.used() == used);
  }
  for (const char* bad : {"", "x", "{", "{a}", "{:1}", "{a:1", "{a:<|\"|>x}", "{a:1]", "{a:1,}", "[1]", "{a:[1}"}) {
    CAPTURE(bad);
    std::string out;
    size_t used = 0;
    CHECK_FALSE(gemma_args_to_json(bad, &out, &used));
  }
  std::string deep(100, '[');
  std::string out;
  size_t used = 0;
  CHECK_FALSE(gemma_args_to_json("{a:" + deep, &out, &used));
}

TEST_CASE("tool forms: Gemma 4's <|tool_call>call:name{...}: grammar, reading, streaming") {
  std::string gbnf, why;
  REQUIRE(tool_call_grammar(kTools, "", true, EMBER_TOOL_SYNTAX_GEMMA4, &gbnf, &why));
  CHECK(gbnf.rfind("root ::= tool-call ( tool-call )*\ntool-call ::= \"<|tool_call>call:\" ( call-0 | call-1 ) "
                   "\"<tool_call|>\"\n",
                   0) == 0);
  // Keys in dictsort's order (case-folded: City, days, note, units), the
  // required ones present, enums and types as Gemma writes them.
  CHECK(gbnf.find("t0-root ::= \"{\" t0-root-o0-f0 \"}\"") != std::string::npos);
  CHECK(gbnf.find("t0-root-o0-f0 ::= \"City:\" ( \"<|\\\"|>Oslo<|\\\"|>\" | \"<|\\\"|>Lima<|\\\"|>\" ) t0-root-o0-r1") !=
        std::string::npos);
  CHECK(gbnf.find("t0-root-o0-r1 ::= \",\" \"days:\" gemma-integer t0-root-o0-r2") != std::string::npos);
  CHECK(gbnf.find("\"units:\" \"[\" gemma-bool ( \",\" gemma-bool )* \"]\"") != std::string::npos);
  CHECK(gbnf.find("t1-root ::= gemma-object") != std::string::npos);
  CHECK(gbnf.find("gemma-string ::=") != std::string::npos);

  ParsedReply p = parse_tool_calls(
      "Checking.<|tool_call>call:get_weather{City:<|\"|>Oslo<|\"|>,days:2}<tool_call|>"
      "<|tool_call>call:now{}<tool_call|><|tool_response>",
      EMBER_TOOL_SYNTAX_GEMMA4);
  CHECK(p.content == "Checking.");
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.calls[0].arguments == R"({"City":"Oslo","days":2})");
  CHECK(p.calls[1].arguments == "{}");
  // The marks printed as nothing: a reply beginning "call:".
  p = parse_tool_calls("call:now{}", EMBER_TOOL_SYNTAX_GEMMA4);
  CHECK(p.calls.size() == 1);
  // A call whose arguments are not Gemma's form stays text; a cut one too.
  p = parse_tool_calls("<|tool_call>call:now{oops}<tool_call|> and <|tool_call>call:now{}<tool_call|>",
                       EMBER_TOOL_SYNTAX_GEMMA4);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.content == "<|tool_call>call:now{oops}<tool_call|> and");
  for (const char* text : {"plain", "<|tool_call>call:{}", "<|tool_call>call:f{a:<|\"|>cut", "call:", "{a:1}"}) {
    p = parse_tool_calls(text, EMBER_TOOL_SYNTAX_GEMMA4);
    CHECK(p.calls.empty());
    CHECK(p.content == text);
  }
  // Auto: text released up to the mark.
  ToolCallStream s(EMBER_TOOL_SYNTAX_GEMMA4, false);
  std::string sent;
  for (const char* piece : {"Sure", ", <|tool", "_call>call:now{", "}<tool_call|>"}) sent += s.add(piece);
  CHECK(sent == "Sure, ");
  CHECK(s.finish().calls.size() == 1);
  read_mutations("<|tool_call>call:get_weather{City:<|\"|>Oslo, \"{<|\"|>,days:[2,{x:<|\"|>]<|\"|>}]}<tool_call|>"
                 "<|tool_call>call:now{}<tool_call|>",
                 EMBER_TOOL_SYNTAX_GEMMA4);
}

TEST_CASE("tool forms: a demanded call's arguments stream as JSON pieces in the later forms") {
  const std::string gemma_args = "{City:<|\"|>Oslo, \"}{\" [x]<|\"|>,days:[1,{n:2}]}";
  const std::string json_args = R"({"City": "Oslo, \"}{\" [x]", "days": [1, {"n": 2}]})";
  struct Case {
    int syntax;
    std::string text;
  };
  const Case cases[] = {
      {EMBER_TOOL_SYNTAX_MISTRAL_ARGS, "[TOOL_CALLS]get_weather[ARGS]" + json_args + "now{}"},
      {EMBER_TOOL_SYNTAX_PHI4, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": " + json_args +
                                   "}, {\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>"},
      {EMBER_TOOL_SYNTAX_GEMMA4,
       "<|tool_call>call:get_weather" + gemma_args + "<tool_call|><|tool_call>call:now{}<tool_call|>"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.syntax);
    ToolCallStream s(c.syntax, true);
    std::vector<std::string> names, args;
    int pieces = 0;
    for (size_t i = 0; i < c.text.size(); i += 3) {
      CHECK(s.add(c.text.substr(i, 3)).empty());
      for (const ToolCallStream::Delta& d : s.deltas()) {
        if (d.first) {
          names.push_back(d.name);
          args.emplace_back();
        }
        REQUIRE(d.index < args.size());
        if (!d.arguments.empty()) ++pieces;
        args[d.index] += d.arguments;
      }
    }
    CHECK(s.finish().calls.empty());
    REQUIRE(names.size() == 2);
    CHECK(names[0] == "get_weather");
    CHECK(names[1] == "now");
    CHECK(json::parse(args[0]) == json::parse(json_args));
    CHECK(json::parse(args[1]) == json::object());
    CHECK(pieces > 8);  // in pieces, not at the end
  }
}

TEST_CASE("tool forms: on a random model the later forms' grammars give calls that satisfy the schema") {
  // Closed schemas of short values: random weights would fill an open one
  // up to the token limit.
  const std::vector<ToolFunction> tools = {
      {"get_weather", "",
       R"({"type":"object","properties":{"days":{"enum":[1,2,3]},"City":{"type":"string","enum":["Oslo","Lima"]},)"
       R"("ok":{"type":"boolean"}},"required":["City","days"],"additionalProperties":false})"},
      {"now", "", R"({"type":"object","properties":{"tz":{"enum":["UTC","CET"]}},"required":["tz"],)"
                  R"("additionalProperties":false})"},
  };
  ember_model* m = test::random_model();
  for (int syntax : {EMBER_TOOL_SYNTAX_MISTRAL_ARGS, EMBER_TOOL_SYNTAX_PHI4, EMBER_TOOL_SYNTAX_GEMMA4}) {
    CAPTURE(syntax);
    std::string gbnf, why;
    REQUIRE(tool_call_grammar(tools, "", true, syntax, &gbnf, &why));
    ember_grammar* g = nullptr;
    REQUIRE_MESSAGE(ember_grammar_create(m, gbnf.c_str(), "root", &g) == EMBER_OK, ember_last_error(), gbnf);
    int calls = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const std::string text = test::constrained(m, g, seed);
      CAPTURE(text);
      const ParsedReply p = parse_tool_calls(text, syntax, kNames);
      CHECK(p.content.empty());
      REQUIRE(!p.calls.empty());
      for (const ToolCall& c : p.calls) {
        ++calls;
        const json a = json::parse(c.arguments, nullptr, false);
        REQUIRE(a.is_object());
        if (c.name == "get_weather") {
          CHECK((a["City"] == "Oslo" || a["City"] == "Lima"));
          CHECK((a["days"] == 1 || a["days"] == 2 || a["days"] == 3));
          if (a.contains("ok")) CHECK(a["ok"].is_boolean());
          CHECK(a.size() <= 3);
        } else {
          CHECK(c.name == "now");
          CHECK((a == json({{"tz", "UTC"}}) || a == json({{"tz", "CET"}})));
        }
      }
      // The same text streamed announces the same calls (and the one the
      // token limit cut, whose start came before the cut).
      ToolCallStream s(syntax, true, kNames);
      for (size_t i = 0; i < text.size(); i += 2) s.add(text.substr(i, 2));
      CHECK(s.streamed_calls() >= p.calls.size());
      CHECK(s.streamed_calls() <= p.calls.size() + 1);
    }
    CHECK(calls >= 4);
    ember_grammar_free(g);
  }
  ember_model_free(m);
}

namespace {

// A chat request whose tool_choice demands a call of one function named `name`.
CompletionRequest required_call(const std::string& name) {
  CompletionRequest r;
  RequestError e;
  REQUIRE(read_completion_request(
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":")" + name +
          R"(","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}],"tool_choice":"required"})",
      true, ReadLimits(), &r, &e));
  return r;
}

void test_cache_budget(ember_model* m) {
  // Two places of 64 MiB: what the plan counts is their sum.
  GrammarCache cache(m, 2, uint64_t{128} << 20);
  CHECK(cache.per_grammar_bytes() == uint64_t{64} << 20);
  CHECK(cache.budget_bytes() == uint64_t{128} << 20);
  RequestError e;
  GrammarRef a = cache.get_tool_calls(required_call("a"), EMBER_TOOL_SYNTAX_HERMES, nullptr, &e);
  GrammarRef b = cache.get_tool_calls(required_call("b"), EMBER_TOOL_SYNTAX_HERMES, nullptr, &e);
  REQUIRE(a);
  REQUIRE(b);
  // Every grammar capped at its place.
  CHECK(ember_grammar_memory(a.get()) <= cache.per_grammar_bytes());
  CHECK(ember_grammar_set_max_bytes(const_cast<ember_grammar*>(a.get()), 0) == EMBER_OK);
  REQUIRE(ember_grammar_set_max_bytes(const_cast<ember_grammar*>(a.get()), cache.per_grammar_bytes()) == EMBER_OK);
  // Both held by requests: a third is refused, not compiled past the budget.
  GrammarRef c = cache.get_tool_calls(required_call("c"), EMBER_TOOL_SYNTAX_HERMES, nullptr, &e);
  CHECK_FALSE(c);
  CHECK(e.status == 503);
  CHECK(e.code == "grammar_cache_busy");
  CHECK(e.param == "tools");
  CHECK(cache.alive() == 2);
  // One request ends: its grammar, kept by the cache only, makes room.
  b.reset();
  c = cache.get_tool_calls(required_call("c"), EMBER_TOOL_SYNTAX_HERMES, nullptr, &e);
  REQUIRE_MESSAGE(c, e.message);
  CHECK(cache.alive() == 2);
  // The one still held is found again, not compiled.
  bool hit = false;
  CHECK(cache.get_tool_calls(required_call("a"), EMBER_TOOL_SYNTAX_HERMES, &hit, &e) == a);
  CHECK(hit);
  // A budget smaller than one grammar's rules and vocabulary text: a 400 naming the cap.
  GrammarCache tiny(m, 1, 1024);
  CompletionRequest json_object;
  REQUIRE(read_completion_request(R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}})",
                                  true, ReadLimits(), &json_object, &e));
  CHECK_FALSE(tiny.get(json_object, nullptr, &e));
  CHECK(e.status == 400);
  CHECK(e.code == "grammar_too_large");
  CHECK(e.param == "response_format");
  CHECK(e.message.find("--grammar-cache-mib") != std::string::npos);
  CHECK(tiny.alive() == 0);
}

}  // namespace

TEST_CASE("tool forms: the grammar cache's budget caps every grammar and the grammars alive") {
  ember_model* m = test::random_model();
  test_cache_budget(m);  // the caches' grammars are freed before the model
  ember_model_free(m);
}

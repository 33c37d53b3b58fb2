// `ember serve`'s response_format (issue 41): the reader's shapes and
// refusals (json_object, json_schema with the schema copied as compact JSON
// text, bounded and charged to the keep budget), the grammar cache (hits by
// exact schema text, least recently used eviction, the runtime's refusals
// as 400s naming response_format), and a constrained request through the
// batched scheduler: the text ember_generate gives with the same grammar,
// ended by the grammar ("stop"), every token counted.
// tests/serve/openai_client_test.mjs drives it through the real server.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember.h"
#include "model/stories_fixture.h"
#include "tools/serve/grammar_cache.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/scheduler.h"

using namespace ember::serve;
using json = nlohmann::json;

namespace {

using Format = CompletionRequest::Format;

CompletionRequest read_ok(const std::string& body, bool chat = false) {
  CompletionRequest r;
  RequestError e;
  CHECK_MESSAGE(read_completion_request(body, chat, ReadLimits(), &r, &e), body.substr(0, 200), " -> ", e.message);
  return r;
}

RequestError read_bad(const std::string& body, const ReadLimits& limits = ReadLimits()) {
  CompletionRequest r;
  RequestError e;
  CHECK_MESSAGE(!read_completion_request(body, false, limits, &r, &e), body.substr(0, 200));
  CHECK(e.status == 400);
  return e;
}

std::string with_format(const json& format) {
  return json{{"prompt", "x"}, {"response_format", format}}.dump();
}

// A schema whose texts are short, so that greedy stories260K finishes it.
const char* kPersonSchema =
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer",)"
    R"("minimum":0,"maximum":99},"happy":{"type":"boolean"}},"required":["name","age","happy"],)"
    R"("additionalProperties":false})";

struct Model {
  ember_model* m = nullptr;
  explicit Model(const std::string& path) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
  }
  ~Model() { ember_model_free(m); }
};

}  // namespace

TEST_CASE("serve response_format: text, json_object and json_schema are read on both routes") {
  for (bool chat : {false, true}) {
    CAPTURE(chat);
    json body = chat ? json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}} : json{{"prompt", "hi"}};
    CompletionRequest r = read_ok(body.dump(), chat);
    CHECK(r.format == Format::kText);
    body["response_format"] = nullptr;
    CHECK(read_ok(body.dump(), chat).format == Format::kText);
    body["response_format"] = {{"type", "text"}};
    CHECK(read_ok(body.dump(), chat).format == Format::kText);
    body["response_format"] = {{"type", "json_object"}};
    r = read_ok(body.dump(), chat);
    CHECK(r.format == Format::kJsonObject);
    CHECK(r.json_schema.empty());
    const json schema = json::parse(kPersonSchema);
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "person"}, {"description", "a person"}, {"schema", schema},
                                                {"strict", true}}}};
    r = read_ok(body.dump(), chat);
    CHECK(r.format == Format::kJsonSchema);
    CHECK(r.json_schema == schema.dump());
    // strict false constrains all the same; indented input, compact copy.
    body["response_format"]["json_schema"]["strict"] = false;
    r = read_ok(body.dump(2), chat);
    CHECK(r.format == Format::kJsonSchema);
    CHECK(r.json_schema == schema.dump());
  }
  // json_schema before type; a boolean schema; no schema: any JSON object.
  CompletionRequest r = read_ok(R"({"prompt":"x","response_format":{"json_schema":{"name":"b","schema":true},"type":"json_schema"}})");
  CHECK(r.format == Format::kJsonSchema);
  CHECK(r.json_schema == "true");
  r = read_ok(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"n"}}})");
  CHECK(r.format == Format::kJsonObject);
  CHECK(r.json_schema.empty());
  // A schema given with "type":"text" is not kept.
  r = read_ok(R"({"prompt":"x","response_format":{"json_schema":{"schema":{"type":"string"}},"type":"text"}})");
  CHECK(r.format == Format::kText);
  CHECK(r.json_schema.empty());
  // The copy is the schema's compact text: numbers as written, strings
  // re-escaped, empty containers, nesting, unknown members kept.
  const std::string odd =
      R"({ "a" : [ 1.50, -0, 1e3, 18446744073709551615, -9223372036854775808, null, true, [ ], { } ],)"
      R"( "b\"\u00e9\n" : { "enum" : [ "\u0001", "x\\y" ] }, "x-other": {"nested": [[[{}]]]} })";
  r = read_ok(std::string(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":)") + odd +
              "}}}");
  CHECK(r.json_schema ==
        R"({"a":[1.50,0,1e3,18446744073709551615,-9223372036854775808,null,true,[],{}],"b\"é\n":{"enum":["\u0001","x\\y"]},"x-other":{"nested":[[[{}]]]}})");
  CHECK(json::parse(r.json_schema) == json::parse(odd));
}

TEST_CASE("serve response_format: malformed formats are 400s naming response_format") {
  struct Case {
    json format;
    const char* says;
  };
  const Case cases[] = {
      {"json_object", "'response_format' must be"},
      {json::array({{{"type", "text"}}}), "'response_format' must be"},
      {json::object(), "'response_format.type' is required"},
      {{{"type", "xml"}}, "'response_format.type' = \"xml\""},
      {{{"type", 3}}, "'response_format.type' = 3"},
      {{{"type", "json_schema"}}, "'response_format.json_schema' is required"},
      {{{"type", "json_schema"}, {"json_schema", "s"}}, "'response_format.json_schema' must be an object"},
      {{{"type", "json_schema"}, {"json_schema", {{"schema", json::array()}}}},
       "'response_format.json_schema.schema' must be a JSON Schema"},
      {{{"type", "json_schema"}, {"json_schema", {{"schema", "{}"}}}}, "'response_format.json_schema.schema' must be"},
      {{{"type", "json_schema"}, {"json_schema", {{"schema", 1}}}}, "'response_format.json_schema.schema' must be"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", 5}, {"schema", json::object()}}}},
       "'response_format.json_schema.name' must be a string"},
      {{{"type", "json_schema"}, {"json_schema", {{"strict", "yes"}, {"schema", json::object()}}}},
       "'response_format.json_schema.strict' must be true or false"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.format.dump());
    const RequestError e = read_bad(with_format(c.format));
    CHECK(e.param == "response_format");
    CHECK_MESSAGE(e.message.find(c.says) != std::string::npos, e.message);
  }
  CHECK(read_bad(with_format({{"type", "xml"}})).code == "invalid_value");
  // Not an unsupported parameter any more; the others still are.
  for (const UnsupportedParameter* p = unsupported_parameters(); p->name; ++p) {
    CHECK(std::string(p->name) != "response_format");
  }
  // tools on /v1/completions: still refused, naming them.
  CHECK(read_bad(R"({"prompt":"x","tools":[{"type":"function"}]})").param == "tools");
}

TEST_CASE("serve response_format: the schema copy is bounded, charged, and refused cheaply when too big or deep") {
  // Past max_schema_bytes: 400 naming the schema, before the rest is read.
  json props = json::object();
  for (int i = 0; i < 4000; ++i) props["p" + std::to_string(i)] = {{"type", "string"}};
  const std::string big = with_format({{"type", "json_schema"}, {"json_schema", {{"schema", {{"properties", props}}}}}});
  REQUIRE(big.size() > 64 << 10);
  ReadLimits limits;
  limits.max_schema_bytes = 32 << 10;
  RequestError e = read_bad(big, limits);
  CHECK(e.param == "response_format");
  CHECK(e.code == "schema_too_large");
  CHECK(e.message.find("'response_format.json_schema.schema'") != std::string::npos);
  CHECK(e.message.find("32 KiB") != std::string::npos);
  // Within the default 256 KiB it is read whole.
  CompletionRequest r = read_ok(big);
  CHECK(r.json_schema.size() > 64 << 10);
  CHECK(r.json_schema.size() < big.size());
  // Over 256 KiB by default.
  for (int i = 4000; i < 16000; ++i) props["p" + std::to_string(i)] = {{"type", "string"}};
  const std::string huge = with_format({{"type", "json_schema"}, {"json_schema", {{"schema", {{"properties", props}}}}}});
  REQUIRE(huge.size() > 256 << 10);
  CHECK(read_bad(huge).code == "schema_too_large");
  // The copy is charged to what the request may keep.
  ReadLimits tight;
  tight.kept_per_body_byte = 0;
  tight.kept_slack = 16 << 10;
  e = read_bad(big, tight);
  CHECK(e.param == "response_format");
  CHECK(e.message.find("what is kept of it") != std::string::npos);
  // Nesting past the limit is refused by the scan, before the reader runs.
  std::string deep = "{}";
  for (int i = 0; i < 80; ++i) deep = R"({"items":)" + deep + "}";
  e = read_bad(std::string(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":)") + deep +
               "}}}");
  CHECK(e.message.find("not valid JSON") != std::string::npos);
}

TEST_CASE("serve response_format: the grammar cache keeps grammars by schema text, refuses as 400s") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  GrammarCache cache(model.m, 2);
  RequestError e;
  bool hit = true;
  CompletionRequest text = read_ok(R"({"prompt":"x"})");
  CHECK(cache.get(text, &hit, &e) == nullptr);
  CHECK_FALSE(hit);
  CHECK(e.message.empty());

  const CompletionRequest object = read_ok(with_format({{"type", "json_object"}}));
  const GrammarRef g1 = cache.get(object, &hit, &e);
  REQUIRE(g1);
  CHECK_FALSE(hit);
  CHECK(cache.get(object, &hit, &e) == g1);
  CHECK(hit);

  auto schema_request = [](const std::string& schema) {
    return read_ok(with_format({{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", json::parse(schema)}}}}));
  };
  const CompletionRequest person = schema_request(kPersonSchema);
  GrammarRef g2 = cache.get(person, &hit, &e);
  REQUIRE(g2);
  CHECK_FALSE(hit);
  CHECK(cache.get(object, &hit, &e) == g1);  // object is now the most recently used
  CHECK(hit);
  // Both places held by requests: a third schema is a 503 to retry, not a
  // grammar past the cache's budget.
  const CompletionRequest third = schema_request(R"({"type":"object","properties":{"a":{"type":"boolean"}}})");
  RequestError busy;
  CHECK(cache.get(third, &hit, &busy) == nullptr);
  CHECK(busy.status == 503);
  CHECK(busy.code == "grammar_cache_busy");
  // The request holding person ends: person, kept by the cache only, is
  // dropped for the third.
  g2.reset();
  GrammarRef g3 = cache.get(third, &hit, &e);
  REQUIRE(g3);
  CHECK(cache.size() == 2);
  CHECK(cache.get(object, &hit, &e) == g1);
  CHECK(hit);
  g3.reset();
  GrammarRef g2again = cache.get(person, &hit, &e);
  REQUIRE(g2again);
  CHECK_FALSE(hit);  // compiled again

  // The runtime's refusals.
  RequestError u;
  CHECK(cache.get(schema_request(R"({"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}})"),
                  &hit, &u) == nullptr);
  CHECK(u.status == 400);
  CHECK(u.param == "response_format");
  CHECK(u.code == "unsupported_schema");
  CHECK_MESSAGE(u.message.find("uniqueItems") != std::string::npos, u.message);
  CHECK_MESSAGE(u.message.find("/properties/tags") != std::string::npos, u.message);
  RequestError m;
  CHECK(cache.get(schema_request(R"({"type":"object","required":5})"), &hit, &m) == nullptr);
  CHECK(m.status == 400);
  CHECK(m.param == "response_format");
  CHECK(m.code == "invalid_schema");
  CHECK(m.message.find("required") != std::string::npos);
  // Past the grammar matcher's budget (EMBER_ERR_TOO_COMPLEX: 5,000
  // optional properties, each comma opening a parse per property left):
  // the schema's doing, a 400.
  // (The translation's refusals above come first whatever the cache holds;
  // a compilation needs a place: person's request ends to free one.)
  g2again.reset();
  json wide = json::object();
  for (int i = 0; i < 5000; ++i) wide["p" + std::to_string(i)] = {{"type", "integer"}};
  RequestError c;
  CHECK(cache.get(schema_request(json{{"properties", wide}}.dump()), &hit, &c) == nullptr);
  CHECK(c.status == 400);
  CHECK(c.code == "schema_too_complex");
  CHECK_MESSAGE(c.message.find("too complex") != std::string::npos, c.message);
  CHECK(cache.size() == 1);  // person dropped for the place; the refusal not kept
  CHECK(cache.get(object, &hit, &e) == g1);
}

TEST_CASE("serve response_format: a constrained request through the scheduler ends with the grammar") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  GrammarCache cache(model.m);
  RequestError e;
  const CompletionRequest cr = read_ok(
      with_format({{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", json::parse(kPersonSchema)}}}}));
  const GrammarRef grammar = cache.get(cr, nullptr, &e);
  REQUIRE(grammar);
  std::vector<int32_t> prompt(64);
  size_t n = 0;
  const std::string text = "Once upon a time";
  REQUIRE(ember_tokenize(model.m, text.data(), text.size(), EMBER_TOKENIZE_ADD_BOS, prompt.data(), prompt.size(), &n) ==
          EMBER_OK);
  prompt.resize(n);

  // ember_generate alone with the grammar.
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 512;
  so.n_threads = 1;
  so.backend = EMBER_BACKEND_CPU;
  ember_session* session = nullptr;
  REQUIRE(ember_session_create(model.m, &so, &session) == EMBER_OK);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = 300;
  g.prompt_tokens = prompt.data();
  g.n_prompt_tokens = prompt.size();
  g.grammar = grammar.get();
  std::string alone;
  REQUIRE(ember_generate(session, nullptr, &g,
                         [](void* u, int32_t, const char* piece, size_t len) {
                           static_cast<std::string*>(u)->append(piece, len);
                           return 0;
                         },
                         &alone) == EMBER_OK);
  ember_generate_stats st;
  st.struct_size = sizeof st;
  ember_generate_last_stats(session, &st);
  ember_session_free(session);
  REQUIRE(st.stop_reason == EMBER_STOP_END);
  const json parsed = json::parse(alone, nullptr, false);
  REQUIRE_MESSAGE(parsed.is_object(), alone);
  CHECK(parsed["name"].is_string());
  CHECK(parsed["age"].is_number_integer());
  CHECK(parsed["happy"].is_boolean());

  BatchedConfig c;
  c.slots = 2;
  c.cache_slots = 0;
  ember_session_options_default(&c.session);
  c.session.context_length = 512;
  c.session.n_threads = 2;
  ember_status status = EMBER_OK;
  std::string error;
  auto scheduler = make_batched_scheduler(model.m, c, nullptr, &status, &error);
  REQUIRE_MESSAGE(scheduler != nullptr, error);
  struct Out {
    std::mutex mutex;
    std::condition_variable changed;
    std::string text;
    bool done = false;
    GenerationResult result;
  };
  auto out = std::make_shared<Out>();
  auto r = std::make_shared<GenerationRequest>();
  r->prompt = prompt;
  ember_generate_options_default(&r->sampling);
  r->sampling.max_new_tokens = 300;
  r->grammar = grammar;
  r->on_text = [out](std::string_view t) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->text.append(t);
  };
  r->on_done = [out](const GenerationResult& res) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->result = res;
    out->done = true;
    out->changed.notify_all();
  };
  REQUIRE(scheduler->submit(r) == Scheduler::Submit::kAccepted);
  {
    std::unique_lock<std::mutex> lock(out->mutex);
    REQUIRE(out->changed.wait_for(lock, std::chrono::seconds(60), [&] { return out->done; }));
  }
  CHECK(out->text == alone);
  CHECK(out->result.finish == Finish::kStop);
  // The grammar's last token is text, not an end token: it counts.
  CHECK(out->result.completion_tokens == st.sampled_tokens);
  CHECK(out->result.completion_tokens == st.generated_tokens);
}

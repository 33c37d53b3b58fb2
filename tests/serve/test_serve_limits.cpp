// `ember serve` under attack, without a socket (issue 43): the JSON scan
// against nlohmann's own verdict, nested and huge bodies, what a request may
// keep, the table of unsupported parameters, one validation domain with the
// sampler, error bodies, connection admission and the HTTP edge cases (411,
// Expect). tests/serve/hostile_client_test.mjs drives the real server.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/stories_fixture.h"
#include "tools/serve/admission.h"
#include "tools/serve/http_request.h"
#include "tools/serve/json_check.h"
#include "tools/serve/openai_api.h"
#include "tools/serve/request_reader.h"

using namespace ember::serve;
using json = nlohmann::json;

namespace {

RequestError read_error(const std::string& body, bool chat = false, const ReadLimits& limits = ReadLimits()) {
  CompletionRequest r;
  RequestError e;
  const bool ok = read_completion_request(body, chat, limits, &r, &e);
  CHECK_MESSAGE(!ok, body.substr(0, 200));
  CHECK(e.status >= 400);
  CHECK_FALSE(e.message.empty());
  return e;
}

bool reads(const std::string& body, bool chat = false, CompletionRequest* out = nullptr) {
  CompletionRequest r;
  RequestError e;
  const bool ok = read_completion_request(body, chat, ReadLimits(), &r, &e);
  if (out) *out = r;
  if (!ok) MESSAGE(e.message);
  return ok;
}

std::string nested(size_t depth, const std::string& inner = "") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

}  // namespace

TEST_CASE("serve limits: the JSON scan gives nlohmann's verdict, nests at most 64 deep") {
  const char* cases[] = {
      "{}", "[]", "0", "-0", "1.5e3", "-1E-2", "true", "null", "\"a\"", " {\"a\" : [1, 2, {\"b\": null}]} ",
      "\xEF\xBB\xBF{}",  // a byte order mark
      "{\"a\":\"\\u00e9\\ud83d\\ude00\\n\\\\\\/\"}", "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"",
      // refused
      "", " ", "{", "}", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "[1 2]",
      "{\"a\" 1}", "{1:2}", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
      "\"a\tb\"", "\"\xC3\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xFF\"", "{} {}",
      "[1] x", "/* c */ {}", "NaN", "[Infinity]", "1e400", "-1.5E+309", "[1e-400]", "123456789012345678901234567890",
  };
  for (const char* c : cases) {
    CAPTURE(c);
    CHECK(check_json(c, JsonLimits()).ok == json::accept(c));
  }
  // Random token soup, compared the same way (numbers stay short, nesting shallow).
  const char* pieces[] = {"{", "}", "[", "]", ",", ":", "\"k\"", "\"\\u00e9\"", "1", "-2.5e1", "true", "null",
                          " ", "\"\xC3\xA9\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "0", "01", "\"", "x"};
  std::mt19937 rng(43);
  int agreed_valid = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) s += pieces[rng() % (sizeof pieces / sizeof pieces[0])];
    const bool mine = check_json(s, JsonLimits()).ok;
    CAPTURE(s);
    REQUIRE(mine == json::accept(s));
    agreed_valid += mine;
  }
  CHECK(agreed_valid > 100);  // the soup held valid documents too

  JsonLimits limits;
  CHECK(check_json(nested(64), limits).ok);
  const JsonCheck deep = check_json(nested(65), limits);
  CHECK_FALSE(deep.ok);
  CHECK(deep.offset == 64);
  CHECK(deep.what.find("64") != std::string::npos);
  CHECK_FALSE(check_json(nested(100000), limits).ok);  // nothing recursive, nothing allocated
  CHECK_FALSE(check_json("[" + std::string(65, '1') + "]", limits).ok);
  CHECK(check_json("[" + std::string(64, '1') + "]", limits).ok);
}

TEST_CASE("serve limits: nested bodies are refused in every field, without serializing them") {
  const std::string deep = nested(100000);
  for (const std::string& body :
       {deep, "{\"prompt\":" + deep + "}", "{\"prompt\":\"x\",\"stop\":" + deep + "}",
        "{\"prompt\":\"x\",\"unknown\":" + deep + "}", "{\"prompt\":\"x\",\"temperature\":" + deep + "}",
        "{\"messages\":" + deep + "}", "{\"messages\":[{\"role\":\"user\",\"content\":" + deep + "}]}"}) {
    for (bool chat : {false, true}) {
      const RequestError e = read_error(body, chat);
      CHECK(e.status == 400);
      CHECK(e.message.find("deeper than 64") != std::string::npos);
      CHECK(e.message.size() < 300);
    }
  }
  // 64 deep is read; a value that is not read is skipped whole.
  CHECK(reads("{\"prompt\":\"x\",\"unknown\":" + nested(62) + "}"));
  const RequestError e = read_error("{\"prompt\":\"x\",\"temperature\":" + nested(62) + "}");
  CHECK(e.param == "temperature");
  CHECK(e.message.find("an array") != std::string::npos);
}

TEST_CASE("serve limits: what a request keeps is bounded by its size, values in messages are cut short") {
  // 4 MiB of [] in a field nobody reads: skipped, nothing kept.
  std::string junk = "{\"prompt\":\"x\",\"junk\":[";
  for (int i = 0; i < (4 << 20) / 3; ++i) junk += i ? ",[]" : "[]";
  junk += "]}";
  CHECK(reads(junk));
  // Tiny messages cost more to keep than their bytes: refused by the budget...
  std::string tiny = "{\"messages\":[";
  for (int i = 0; i < 200000; ++i) tiny += i ? ",{\"role\":\"user\"}" : "{\"role\":\"user\"}";
  tiny += "]}";
  RequestError e = read_error(tiny, true);
  CHECK(e.param == "messages");
  CHECK(e.message.find("more than its size allows") != std::string::npos);
  // ... or first by the count a context can hold.
  ReadLimits ctx;
  ctx.max_messages = 256;
  e = read_error(tiny, true, ctx);
  CHECK(e.message.find("more than 256 messages") != std::string::npos);
  ctx.max_prompt_tokens = 256;
  std::string ids = "{\"prompt\":[1";
  for (int i = 0; i < 300; ++i) ids += ",1";
  e = read_error(ids + "]}", false, ctx);
  CHECK(e.param == "prompt");
  CHECK(e.code == "context_length_exceeded");
  // A long string stays whole where it is kept, and is cut in a message.
  const std::string big(1 << 20, 'a');
  CompletionRequest r;
  REQUIRE(reads("{\"prompt\":\"" + big + "\"}", false, &r));
  CHECK(r.prompt.size() == big.size());
  e = read_error("{\"prompt\":\"x\",\"temperature\":\"" + big + "\"}");
  CHECK(e.message.size() < 200);
  CHECK(e.message.find("aaaa...") != std::string::npos);
  e = read_error("{\"prompt\":\"x\",\"model\":5,\"" + big + "\":1}");
  CHECK(e.message.size() < 200);
}

TEST_CASE("serve limits: unsupported parameters are 400 naming them unless absent, null or neutral") {
  // Each row's neutral value (a row the lead removes when it is honoured
  // just stops being checked here).
  const json neutral = {{"n", 1},
                        {"best_of", 1},
                        {"logprobs", false},
                        {"top_logprobs", 0},
                        {"logit_bias", json::object()},
                        {"presence_penalty", 0},
                        {"frequency_penalty", 0.0},
                        {"functions", json::array()},
                        {"function_call", "none"},
                        {"response_format", {{"type", "text"}}},
                        {"suffix", ""}};
  const json asking[] = {2, true, json::array({1}), "auto", json({{"a", 1}}), json({{"type", "json_object"}}), 0.5};
  int rows = 0;
  for (const UnsupportedParameter* p = unsupported_parameters(); p->name; ++p, ++rows) {
    CAPTURE(p->name);
    REQUIRE(neutral.contains(p->name));
    for (bool chat : {false, true}) {
      json body = chat ? json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}} : json{{"prompt", "hi"}};
      body[p->name] = nullptr;
      CHECK(reads(body.dump(), chat));
      body[p->name] = neutral[p->name];
      CHECK(reads(body.dump(), chat));
      for (const json& v : asking) {
        if (v == neutral[p->name]) continue;
        body[p->name] = v;
        const RequestError e = read_error(body.dump(), chat);
        CHECK(e.status == 400);
        CHECK(e.param == p->name);
        CHECK(e.code == "unsupported_parameter");
        CHECK(e.message.find(std::string("'") + p->name + "'") != std::string::npos);
      }
    }
  }
  CHECK(rows >= 3);
  // A nested value inside response_format does not confuse the verdict.
  CHECK(reads(R"({"prompt":"x","response_format":{"json_schema":{"a":[{}]},"type":"text"}})"));
  CHECK(read_error(R"({"prompt":"x","response_format":{"type":"text","x":{}}, "logit_bias":{"1":{}}})").param ==
        "logit_bias");
}

TEST_CASE("serve limits: top_p 0 is a 400 naming top_p, what the reader takes the sampler takes") {
  RequestError e = read_error(R"({"prompt":"x","top_p":0})");
  CHECK(e.param == "top_p");
  CHECK(e.message.find("top_p") != std::string::npos);
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  // Edges and beyond of every sampling field: whatever is read runs.
  const char* values[] = {"-1", "-0.0", "0", "1e-40", "0.5", "1", "1.0000001", "2", "100", "100.5", "1e300", "true",
                          "\"1\"", "null", "5e-324"};
  int accepted = 0, refused = 0;
  for (const char* field : {"temperature", "top_p", "min_p", "top_k"}) {
    for (const char* v : values) {
      const std::string body = std::string(R"({"prompt":"x",")") + field + "\":" + v + "}";
      CAPTURE(body);
      CompletionRequest r;
      RequestError err;
      if (!read_completion_request(body, false, ReadLimits(), &r, &err)) {
        CHECK(err.status == 400);
        CHECK(err.param == field);
        ++refused;
        continue;
      }
      ++accepted;
      ember_generate_options o;
      ember_generate_options_default(&o);
      o.temperature = r.temperature;
      o.top_p = r.top_p;
      o.top_k = r.top_k;
      o.min_p = r.min_p;
      ember_sampler* s = nullptr;
      CHECK_MESSAGE(ember_sampler_create(model, &o, &s) == EMBER_OK, ember_last_error());
      ember_sampler_free(s);
    }
  }
  CHECK(accepted > 10);
  CHECK(refused > 10);
  ember_model_free(model);
}

TEST_CASE("serve limits: error.code is a string or null, param names the field") {
  const json a = json::parse(error_body(400, "x"));
  CHECK(a["error"]["code"].is_null());
  CHECK(a["error"]["param"].is_null());
  const json b = json::parse(error_body(401, "no", "", "invalid_api_key"));
  CHECK(b["error"]["code"] == "invalid_api_key");
  CHECK(b["error"]["type"] == "authentication_error");
  RequestError e;
  e.status = 404;
  e.message = "m";
  e.param = "model";
  e.code = "model_not_found";
  const json c = json::parse(error_body(e));
  CHECK(c["error"]["param"] == "model");
  CHECK(c["error"]["code"] == "model_not_found");
}

TEST_CASE("serve limits: admission caps an address, keeps spare slots, one per address") {
  AdmissionLimits l;
  l.max_connections = 4;
  l.max_per_client = 2;
  l.spare = 2;
  Admission a(l);
  CHECK(a.admit("10.0.0.1").slot == Admission::Slot::kGeneral);
  CHECK(a.admit("10.0.0.1").slot == Admission::Slot::kGeneral);
  Admission::Admit capped = a.admit("10.0.0.1");  // its cap: a spare slot, told why
  CHECK(capped.slot == Admission::Slot::kSpare);
  CHECK(capped.client_cap);
  CHECK(a.admit("10.0.0.1").slot == Admission::Slot::kRefused);  // one spare per address
  CHECK(a.admit("10.0.0.2").slot == Admission::Slot::kGeneral);
  CHECK(a.admit("10.0.0.3").slot == Admission::Slot::kGeneral);
  Admission::Admit full = a.admit("10.0.0.4");  // general slots full
  CHECK(full.slot == Admission::Slot::kSpare);
  CHECK_FALSE(full.client_cap);
  CHECK(a.admit("10.0.0.5").slot == Admission::Slot::kRefused);  // spares full
  CHECK(a.open() == 6);
  a.release("10.0.0.2", Admission::Slot::kGeneral);
  CHECK(a.admit("10.0.0.5").slot == Admission::Slot::kGeneral);
  a.release("10.0.0.1", Admission::Slot::kSpare);
  a.release("10.0.0.1", Admission::Slot::kGeneral);
  CHECK(a.admit("10.0.0.1").slot == Admission::Slot::kGeneral);  // below its cap again
  CHECK(a.admit("10.0.0.6").slot == Admission::Slot::kSpare);    // the spare it gave back
  CHECK(a.open() == 6);

  // The stated bound grows with the connections and the body limit.
  HttpMemoryInputs in;
  in.read_buffer = 65536;
  in.max_prompt_bytes = 8192;
  in.max_response_bytes = 65536;
  const HttpMemory m1 = http_memory_bound(in);
  in.http.max_body *= 2;
  const HttpMemory m2 = http_memory_bound(in);
  CHECK(m2.per_connection - m1.per_connection == 4 * (in.http.max_body / 2));
  CHECK(m1.connections == 68);
  CHECK(m1.total == m1.per_connection * 68);
}

TEST_CASE("serve limits: a POST without a length is 411 and its body is not a second request, Expect") {
  HttpLimits limits;
  size_t used = 0;
  {
    RequestParser p(limits);
    const std::string bytes = "POST /v1/completions HTTP/1.1\r\nHost: a\r\n\r\nGET /health HTTP/1.1\r\n\r\n";
    CHECK(p.feed(bytes.data(), bytes.size(), &used) == RequestParser::State::kError);
    CHECK(p.error_status() == 411);
  }
  {
    RequestParser p(limits);
    const std::string bytes = "POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-Continue\r\n\r\n";
    CHECK(p.feed(bytes.data(), bytes.size(), &used) == RequestParser::State::kHeaders);
    CHECK(p.request().expect_continue);
    CHECK(p.request().has_body);
  }
  {
    RequestParser p(limits);
    const std::string bytes = "POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: something\r\n\r\n";
    CHECK(p.feed(bytes.data(), bytes.size(), &used) == RequestParser::State::kError);
    CHECK(p.error_status() == 417);
  }
}

TEST_CASE("serve limits: logit_bias, log-probabilities and the penalties are read and checked") {
  CompletionRequest r;
  REQUIRE(reads(R"({"prompt":"x","logit_bias":{"5":1.5,"7":-100},"presence_penalty":-1,"frequency_penalty":2})",
                false, &r));
  REQUIRE(r.logit_bias.size() == 2);
  CHECK(r.logit_bias[0].token == 5);
  CHECK(r.logit_bias[0].bias == 1.5f);
  CHECK(r.logit_bias[1].token == 7);
  CHECK(r.logit_bias[1].bias == -100.0f);
  CHECK(r.presence_penalty == -1.0f);
  CHECK(r.frequency_penalty == 2.0f);
  CHECK_FALSE(r.logprobs);
  // The completions API's count, chat's true + top_logprobs.
  REQUIRE(reads(R"({"prompt":"x","logprobs":3})", false, &r));
  CHECK(r.logprobs);
  CHECK(r.top_logprobs == 3);
  REQUIRE(reads(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":4})", true, &r));
  CHECK(r.logprobs);
  CHECK(r.top_logprobs == 4);
  REQUIRE(reads(R"({"messages":[{"role":"user","content":"x"}],"logprobs":false})", true, &r));
  CHECK_FALSE(r.logprobs);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"prompt":"x","logit_bias":{"5":101}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"5":1,"5":2}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"abc":1}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"-3":1}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"5":"a"}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":[1]})", "logit_bias"},
      {R"({"prompt":"x","logprobs":21})", "logprobs"},
      {R"({"prompt":"x","logprobs":2.5})", "logprobs"},
      {R"({"prompt":"x","top_logprobs":2})", "top_logprobs"},
      {R"({"prompt":"x","logprobs":true,"top_logprobs":21})", "top_logprobs"},
      {R"({"prompt":"x","presence_penalty":-3})", "presence_penalty"},
      {R"({"prompt":"x","frequency_penalty":"a"})", "frequency_penalty"},
  };
  for (const auto& [body, param] : bad) {
    const std::string body_text = body;  // CAPTURE cannot take a structured binding (clang 14)
    CAPTURE(body_text);
    const RequestError e = read_error(body);
    CHECK(e.status == 400);
    CHECK(e.param == param);
    CHECK(e.message.find(param) != std::string::npos);
  }
}

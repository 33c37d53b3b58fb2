// `ember serve`'s request parsing, JSON fields and stop strings, without a
// socket (tests/serve/openai_client_test.mjs drives the whole server).
#include <doctest/doctest.h>

#include <string>

#include "tools/serve/http_request.h"
#include "tools/serve/openai_api.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/scheduler.h"

using namespace ember::serve;

namespace {

// Feeds bytes as the server does: past kHeaders (the unused bytes fed again)
// to the request's end or an error.
RequestParser::State feed_all(RequestParser& p, const std::string& bytes, size_t* used) {
  *used = 0;
  RequestParser::State st;
  do {
    size_t n = 0;
    st = p.feed(bytes.data() + *used, bytes.size() - *used, &n);
    *used += n;
  } while (st == RequestParser::State::kHeaders);
  return st;
}

}  // namespace

TEST_CASE("serve: a request, fed byte by byte, then a pipelined one") {
  HttpLimits limits;
  RequestParser p(limits);
  const std::string first =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\nContent-Length: 5\r\n\r\nhello";
  const std::string second = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::string bytes = first + second;
  size_t at = 0;
  RequestParser::State st = RequestParser::State::kNeedMore;
  int headers = 0;
  while ((st == RequestParser::State::kNeedMore || st == RequestParser::State::kHeaders) && at < bytes.size()) {
    size_t used = 0;
    st = p.feed(bytes.data() + at, 1, &used);
    if (st == RequestParser::State::kHeaders) {
      ++headers;
      CHECK(p.request().body.empty());  // stopped before the body
      CHECK(p.request().has_body);
    }
    at += used;
  }
  REQUIRE(st == RequestParser::State::kComplete);
  CHECK(headers == 1);
  CHECK(at == first.size());
  CHECK(p.request().method == "POST");
  CHECK(p.request().path == "/v1/completions");
  CHECK(p.request().body == "hello");
  REQUIRE(p.request().header("authorization") != nullptr);
  CHECK(*p.request().header("authorization") == "Bearer k");
  CHECK(p.request().keep_alive);
  p.reset();
  size_t used = 0;
  CHECK(feed_all(p, bytes.substr(at), &used) == RequestParser::State::kComplete);
  CHECK(used == second.size());
  CHECK_FALSE(p.request().has_body);
  CHECK(p.request().path == "/health");
}

TEST_CASE("serve: malformed and oversized requests are refused with their status") {
  HttpLimits limits;
  limits.max_body = 10;
  limits.max_header_bytes = 64;
  size_t used = 0;
  {
    RequestParser p(limits);
    CHECK(feed_all(p, "NONSENSE\r\n\r\n", &used) == RequestParser::State::kError);
    CHECK(p.error_status() == 400);
  }
  {
    RequestParser p(limits);
    CHECK(feed_all(p, "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", &used) == RequestParser::State::kError);
    CHECK(p.error_status() == 413);
  }
  {
    RequestParser p(limits);  // chunked: the limit holds without a length
    CHECK(feed_all(p, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n",
                   &used) == RequestParser::State::kError);
    CHECK(p.error_status() == 413);
  }
  {
    RequestParser p(limits);
    CHECK(feed_all(p, "GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n", &used) ==
          RequestParser::State::kError);
    CHECK(p.error_status() == 431);
  }
  {
    RequestParser p(limits);
    CHECK(feed_all(p, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", &used) == RequestParser::State::kNeedMore);
    CHECK(p.finish() == RequestParser::State::kError);
  }
}

TEST_CASE("serve: completion fields, and errors that name the field") {
  CompletionRequest r;
  std::string error;
  REQUIRE(parse_completion_request(
      R"({"model":"m","prompt":"hi","max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,)"
      R"("seed":3,"stop":["\n","."],"stream":true,"stream_options":{"include_usage":true}})",
      false, &r, &error));
  CHECK(r.prompt == "hi");
  CHECK(r.max_tokens == 7);
  CHECK(r.temperature == doctest::Approx(0.5));
  CHECK(r.top_k == 40);
  CHECK(r.has_seed);
  CHECK(r.seed == 3);
  CHECK(r.stop.size() == 2);
  CHECK(r.stream);
  CHECK(r.include_usage);
  REQUIRE(parse_completion_request(R"({"prompt":[1,2,3]})", false, &r, &error));
  CHECK(r.prompt_is_tokens);
  CHECK(r.prompt_tokens.size() == 3);
  REQUIRE(parse_completion_request(
      R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"u"}]}]})", true,
      &r, &error));
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[1].content == "u");

  const char* bad[][2] = {
      {"{", "valid JSON"},
      {"[1]", "JSON object"},
      {R"({"prompt":"x","temperature":"hot"})", "temperature"},
      {R"({"prompt":"x","top_p":2})", "top_p"},
      {R"({"prompt":"x","max_tokens":-1})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":1.5})", "max_tokens"},
      {R"({"prompt":"x","n":2})", "'n'"},
      {R"({"prompt":"x","stop":[1]})", "stop[0]"},
      {R"({"prompt":"x","stream":"yes"})", "stream"},
      {R"({"prompt":[-1]})", "prompt[0]"},
      {R"({"prompt":["a","b"]})", "prompt"},
      {R"({})", "prompt"},
  };
  for (const auto& b : bad) {
    CAPTURE(b[0]);
    CHECK_FALSE(parse_completion_request(b[0], false, &r, &error));
    CHECK(error.find(b[1]) != std::string::npos);
  }
  CHECK_FALSE(parse_completion_request(R"({"messages":[{"role":"robot","content":"x"}]})", true, &r, &error));
  CHECK(error.find("messages[0].role") != std::string::npos);
}

TEST_CASE("serve: error bodies are OpenAI's shape, invalid UTF-8 included") {
  const std::string e = error_body(400, "bad \xFF byte");
  CHECK(e.find("\"type\":\"invalid_request_error\"") != std::string::npos);
  CHECK(e.find("\"message\":") != std::string::npos);
  CHECK(error_body(429, "x").find("rate_limit_error") != std::string::npos);
}

// HTTP/1.1 request parsing for `ember serve`, over libhttp-parser (Debian's
// libhttp-parser-dev: a C callback parser, no exceptions, no allocation of
// its own). This file adds the server's limits (header count and size, body
// size, URL length) and collects one request at a time; pipelined bytes
// after a request stay in the caller's buffer for the next one. It stops
// once after the headers (State::kHeaders), so that the server can refuse a
// request (route, method, key, a full server) or answer "Expect:
// 100-continue" before the body is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <http_parser.h>

namespace ember::serve {

struct HttpLimits {
  size_t max_url = 8192;
  size_t max_headers = 64;            // header lines
  size_t max_header_bytes = 16384;    // names + values of all headers
  size_t max_body = 8u << 20;         // --max-body
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the URL's path, without the query
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  bool keep_alive = true;
  bool expect_continue = false;  // "Expect: 100-continue"
  bool has_body = false;         // a Content-Length above 0, or chunked

  // The first header of that (lower-case) name, or nullptr.
  const std::string* header(std::string_view name) const;
};

class RequestParser {
 public:
  enum class State { kNeedMore, kHeaders, kComplete, kError };

  explicit RequestParser(const HttpLimits& limits);
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Feeds bytes; *consumed says how many were used (the rest must be fed
  // again: they belong to this request's body after kHeaders, to the next
  // request after kComplete). kHeaders (once per request): method, path and
  // headers are set, the body is not read yet. kComplete: request() holds a
  // whole request; call reset() before feeding the next. kError:
  // error_status() (400, 411, 413, 414, 417, 431) and error_message() say
  // why; the connection should be closed.
  State feed(const char* data, size_t n, size_t* consumed);
  // The peer closed the connection: a request in progress is an error.
  State finish();

  const HttpRequest& request() const { return request_; }
  HttpRequest& request() { return request_; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // True once any byte of a request has arrived (for idle timeouts).
  bool started() const { return started_; }
  // True once the headers are complete (kHeaders was returned).
  bool headers_done() const { return headers_reported_; }
  // Body bytes received so far.
  size_t body_bytes() const { return request_.body.size(); }
  void reset();

 private:
  static int on_message_begin(http_parser* p);
  static int on_url(http_parser* p, const char* at, size_t n);
  static int on_header_field(http_parser* p, const char* at, size_t n);
  static int on_header_value(http_parser* p, const char* at, size_t n);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t n);
  static int on_message_complete(http_parser* p);
  int fail(int status, std::string message);

  HttpLimits limits_;
  http_parser parser_;
  http_parser_settings settings_;
  HttpRequest request_;
  std::string url_;
  size_t header_bytes_ = 0;
  bool in_value_ = false;
  bool started_ = false;
  bool complete_ = false;
  bool paused_at_headers_ = false;
  bool headers_reported_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace ember::serve

#include "tools/serve/http_request.h"

#include <cctype>
#include <climits>
#include <cstring>

namespace ember::serve {

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (h.first == name) return &h.second;
  }
  return nullptr;
}

RequestParser::RequestParser(const HttpLimits& limits) : limits_(limits) {
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = on_message_begin;
  settings_.on_url = on_url;
  settings_.on_header_field = on_header_field;
  settings_.on_header_value = on_header_value;
  settings_.on_headers_complete = on_headers_complete;
  settings_.on_body = on_body;
  settings_.on_message_complete = on_message_complete;
  reset();
}

void RequestParser::reset() {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  request_ = HttpRequest();
  url_.clear();
  header_bytes_ = 0;
  in_value_ = false;
  started_ = false;
  complete_ = false;
  paused_at_headers_ = false;
  headers_reported_ = false;
  error_status_ = 0;
  error_message_.clear();
}

int RequestParser::fail(int status, std::string message) {
  if (error_status_ == 0) {
    error_status_ = status;
    error_message_ = std::move(message);
  }
  return -1;  // any non-zero return stops http_parser with a callback error
}

int RequestParser::on_message_begin(http_parser* p) {
  static_cast<RequestParser*>(p->data)->started_ = true;
  return 0;
}

int RequestParser::on_url(http_parser* p, const char* at, size_t n) {
  auto* self = static_cast<RequestParser*>(p->data);
  self->started_ = true;
  if (self->url_.size() + n > self->limits_.max_url) {
    return self->fail(414, "the request URL is longer than " + std::to_string(self->limits_.max_url) + " bytes");
  }
  self->url_.append(at, n);
  return 0;
}

int RequestParser::on_header_field(http_parser* p, const char* at, size_t n) {
  auto* self = static_cast<RequestParser*>(p->data);
  self->header_bytes_ += n;
  if (self->header_bytes_ > self->limits_.max_header_bytes) {
    return self->fail(431, "the request headers exceed " + std::to_string(self->limits_.max_header_bytes) + " bytes");
  }
  auto& headers = self->request_.headers;
  if (headers.empty() || self->in_value_) {
    if (headers.size() >= self->limits_.max_headers) {
      return self->fail(431, "the request has more than " + std::to_string(self->limits_.max_headers) + " headers");
    }
    headers.emplace_back();
    self->in_value_ = false;
  }
  for (size_t i = 0; i < n; ++i) {
    headers.back().first.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(at[i]))));
  }
  return 0;
}

int RequestParser::on_header_value(http_parser* p, const char* at, size_t n) {
  auto* self = static_cast<RequestParser*>(p->data);
  self->header_bytes_ += n;
  if (self->header_bytes_ > self->limits_.max_header_bytes) {
    return self->fail(431, "the request headers exceed " + std::to_string(self->limits_.max_header_bytes) + " bytes");
  }
  if (self->request_.headers.empty()) return self->fail(400, "a header value without a name");
  self->in_value_ = true;
  self->request_.headers.back().second.append(at, n);
  return 0;
}

int RequestParser::on_headers_complete(http_parser* p) {
  auto* self = static_cast<RequestParser*>(p->data);
  if (p->upgrade) return self->fail(400, "protocol upgrades are not supported");
  self->request_.method = http_method_str(static_cast<http_method>(p->method));
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(self->url_.data(), self->url_.size(), 0, &u) != 0) {
    return self->fail(400, "the request URL is malformed");
  }
  if (u.field_set & (1 << UF_PATH)) {
    self->request_.path = self->url_.substr(u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
  } else {
    self->request_.path.assign(1, '/');  // (assign: gcc 12 warns falsely on = "/" here)
  }
  // http_parser sets content_length to ULLONG_MAX when there is none.
  const bool has_length = p->content_length != ULLONG_MAX;
  const bool chunked = (p->flags & F_CHUNKED) != 0;
  if (has_length && p->content_length > self->limits_.max_body) {
    return self->fail(413, "the request body (" + std::to_string(p->content_length) + " bytes) exceeds the limit of " +
                               std::to_string(self->limits_.max_body) + " bytes");
  }
  // A request without either has no body (RFC 9112 6.3): what such a POST
  // sends after its headers would be read as the next request.
  if (!has_length && !chunked && (p->method == HTTP_POST || p->method == HTTP_PUT || p->method == HTTP_PATCH)) {
    return self->fail(411, std::string("a ") + http_method_str(static_cast<http_method>(p->method)) +
                               " needs a Content-Length header (or Transfer-Encoding: chunked)");
  }
  HttpRequest& r = self->request_;
  r.has_body = chunked || (has_length && p->content_length > 0);
  if (has_length && p->content_length > 0) r.body.reserve(static_cast<size_t>(p->content_length));
  // (HTTP/1.0 has no Expect: it is ignored there, and no 100 is sent.)
  const std::string* e = p->http_major == 1 && p->http_minor == 0 ? nullptr : r.header("expect");
  if (e) {
    std::string v;
    for (char c : *e) v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (v != "100-continue") return self->fail(417, "the only expectation understood is Expect: 100-continue");
    r.expect_continue = true;
  }
  r.keep_alive = http_should_keep_alive(p) != 0;
  // Stops here: the server looks at the headers before the body is read.
  self->paused_at_headers_ = true;
  http_parser_pause(p, 1);
  return 0;
}

int RequestParser::on_body(http_parser* p, const char* at, size_t n) {
  auto* self = static_cast<RequestParser*>(p->data);
  if (self->request_.body.size() + n > self->limits_.max_body) {
    return self->fail(413, "the request body exceeds the limit of " + std::to_string(self->limits_.max_body) + " bytes");
  }
  self->request_.body.append(at, n);
  return 0;
}

int RequestParser::on_message_complete(http_parser* p) {
  auto* self = static_cast<RequestParser*>(p->data);
  self->complete_ = true;
  // Stops here: bytes after this request are the next one's.
  http_parser_pause(p, 1);
  return 0;
}

RequestParser::State RequestParser::feed(const char* data, size_t n, size_t* consumed) {
  *consumed = 0;
  if (error_status_) return State::kError;
  if (complete_) return State::kComplete;
  if (paused_at_headers_ && headers_reported_) {
    paused_at_headers_ = false;
    http_parser_pause(&parser_, 0);
  }
  const size_t used = http_parser_execute(&parser_, &settings_, data, n);
  *consumed = used;
  const http_errno err = HTTP_PARSER_ERRNO(&parser_);
  if (complete_) {
    return State::kComplete;  // HPE_PAUSED, from on_message_complete
  }
  if (paused_at_headers_ && !headers_reported_ && error_status_ == 0) {
    headers_reported_ = true;  // HPE_PAUSED, from on_headers_complete
    return State::kHeaders;
  }
  if (err != HPE_OK) {
    if (error_status_ == 0) {
      error_status_ = 400;
      error_message_ = std::string("malformed HTTP request: ") + http_errno_description(err);
    }
    return State::kError;
  }
  return State::kNeedMore;
}

RequestParser::State RequestParser::finish() {
  if (complete_) return State::kComplete;
  if (error_status_) return State::kError;
  if (paused_at_headers_ && headers_reported_) {
    paused_at_headers_ = false;
    http_parser_pause(&parser_, 0);
  }
  // A request that ends at the connection's end (HTTP/1.0 without a length)
  // is completed by a zero-length execute.
  http_parser_execute(&parser_, &settings_, nullptr, 0);
  if (complete_) return State::kComplete;
  if (error_status_ == 0) {
    error_status_ = 400;
    error_message_ = "the connection closed in the middle of a request";
  }
  return State::kError;
}

}  // namespace ember::serve

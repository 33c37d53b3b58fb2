#include "tools/serve/server.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/serve/tool_calls.h"

namespace ember::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
// Raised when the drain deadline passes: connections stop reading and
// writing, generations are cancelled.
std::atomic<bool> g_cut{false};
int g_stop_pipe[2] = {-1, -1};

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
  }
  return "Error";
}

// Compares in time that depends on the lengths only, not on where the
// first difference is.
bool constant_time_equal(const std::string& a, const std::string& b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

bool iequal_prefix(const std::string& s, const char* prefix) {
  size_t i = 0;
  for (; prefix[i]; ++i) {
    if (i >= s.size() || std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// What a generation request's callbacks hand to its connection's thread.
struct Stream {
  std::mutex mutex;
  std::condition_variable changed;
  std::string text;              // not yet sent
  std::vector<TokenOut> tokens;  // their tokens, when log-probabilities are asked for
  bool done = false;
  GenerationResult result;
};

// A request's sampling fields as the runtime's options (the logit bias
// pointing into the request).
void sampling_of(const CompletionRequest& cr, ember_generate_options* o) {
  ember_generate_options_default(o);
  o->temperature = cr.temperature;
  o->top_p = cr.top_p;
  o->top_k = cr.top_k;
  o->min_p = cr.min_p;
  o->presence_penalty = cr.presence_penalty;
  o->frequency_penalty = cr.frequency_penalty;
  o->logit_bias = cr.logit_bias.data();
  o->n_logit_bias = cr.logit_bias.size();
  o->logprobs = cr.logprobs ? 1 : 0;
  o->top_logprobs = cr.top_logprobs;
}

// Released tokens as a response reports their log-probabilities: each one's
// text (its piece after the token before it) and where it starts in the
// choice's text.
class LogprobsWriter {
 public:
  LogprobsWriter(const ember_model* model, int32_t prev, size_t offset) : model_(model), prev_(prev), offset_(offset) {}
  void add(const std::vector<TokenOut>& tokens, std::vector<TokenLogprobs>* out) {
    out->clear();
    for (const TokenOut& t : tokens) {
      TokenLogprobs l;
      l.token = piece(t.token);
      l.logprob = t.logprob;
      for (const ember_token_logprob& a : t.top) l.top.emplace_back(piece(a.token), a.logprob);
      l.text_offset = offset_;
      offset_ += l.token.size();
      prev_ = t.token;
      out->push_back(std::move(l));
    }
  }

 private:
  std::string piece(int32_t token) const {
    char buf[256];
    size_t len = 0;
    ember_status st = ember_token_to_piece(model_, prev_, token, buf, sizeof buf, &len);
    if (st == EMBER_OK) return std::string(buf, len);
    if (st != EMBER_ERR_BUFFER_TOO_SMALL) return {};
    std::string p(len, '\0');
    if (ember_token_to_piece(model_, prev_, token, p.data(), p.size(), &len) != EMBER_OK) return {};
    p.resize(len);
    return p;
  }
  const ember_model* model_;
  int32_t prev_;
  size_t offset_;
};

std::string address_of(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, buf, sizeof buf);
  } else if (a.ss_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      inet_ntop(AF_INET, &v6.s6_addr[12], buf, sizeof buf);
    } else {
      inet_ntop(AF_INET6, &v6, buf, sizeof buf);
    }
  }
  return buf;
}

// A failed generation as the answer says it: the grammar's own limits
// (a schema whose grammar keeps too many parses open at some point:
// EMBER_ERR_TOO_COMPLEX, its messages begin "grammar: too complex:") are
// the request's doing, a 400 naming response_format; anything else is the
// server's, a 500.
RequestError generation_failure(const GenerationResult& res, bool constrained) {
  RequestError e;
  if (constrained && res.error.rfind("grammar: too complex:", 0) == 0) {
    e.status = 400;
    e.message = "'response_format.json_schema.schema' is past what ember's grammar matcher holds: " + res.error;
    e.param = "response_format";
    e.code = "schema_too_complex";
  } else {
    e.status = 500;
    e.message = "generation failed: " + res.error;
  }
  return e;
}

void on_signal(int sig) {
  if (g_stop.exchange(true)) {
    // The second signal: the operator does not want to wait for the drain.
    static const char kMsg[] = "ember serve: a second signal: exiting now\n";
    [[maybe_unused]] ssize_t w = ::write(2, kMsg, sizeof kMsg - 1);
    ::_exit(128 + sig);
  }
  Server::request_stop();
}

}  // namespace

Server::Server(const ServerConfig& config, ember_model* model, Scheduler* scheduler, Metrics* metrics,
               const TlsConfig* tls)
    : config_(config), model_(model), scheduler_(scheduler), metrics_(metrics), tls_(tls),
      admission_(config.admission), grammars_(model, 16, config.grammar_cache_bytes) {}

void Server::request_stop() {
  g_stop.store(true);
  if (g_stop_pipe[1] >= 0) {
    const char c = 1;
    [[maybe_unused]] ssize_t r = ::write(g_stop_pipe[1], &c, 1);
  }
}

bool Server::listen(std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(config_.port);
  if (const int rc = getaddrinfo(config_.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = "--host '" + config_.host + "': " + gai_strerror(rc);
    return false;
  }
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) {
    *error = "cannot listen on " + config_.host + ":" + port + ": " + why;
    return false;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  const int actual = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  config_.port = actual;
  std::printf("listening on %s://%s:%d\n", tls_ ? "https" : "http", config_.host.c_str(), actual);
  std::fflush(stdout);
  return true;
}

bool Server::run() {
  if (::pipe2(g_stop_pipe, O_CLOEXEC) != 0) g_stop_pipe[0] = g_stop_pipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  while (!g_stop.load()) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {g_stop_pipe[0], POLLIN, 0}};
    const int r = ::poll(p, g_stop_pipe[0] >= 0 ? 2 : 1, 1000);
    if (r <= 0 || !(p[0].revents & POLLIN)) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const std::string client = address_of(peer);
    const Admission::Admit admit = admission_.admit(client);
    if (admit.slot == Admission::Slot::kRefused) {
      // Even the spare slots are taken: a best-effort answer on plain HTTP
      // (nothing is read; TLS would need a handshake), then close.
      if (!tls_) {
        const std::string body = error_body(503, "the server has every connection slot taken: try again later");
        const std::string msg = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                                "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        [[maybe_unused]] ssize_t w = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      metrics_->on_request("connection", 503);
      ::close(fd);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(conn_mutex_);
      ++connections_;
    }
    std::thread([this, fd, client, admit] {
      serve_connection(fd, client, admit);
      std::lock_guard<std::mutex> l(conn_mutex_);
      --connections_;
      conn_done_.notify_all();
    }).detach();
  }
  // Draining: no new connections; accepted requests run to their end, or
  // to the drain deadline.
  ::close(listen_fd_);
  listen_fd_ = -1;
  std::fprintf(stderr, "ember serve: stopping: finishing the requests in flight (at most %g s, --drain-timeout)\n",
               config_.drain_timeout_s);
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(config_.drain_timeout_s * 1000));
  bool drained;
  {
    std::unique_lock<std::mutex> lock(conn_mutex_);
    drained = conn_done_.wait_until(lock, deadline, [this] { return connections_ == 0; });
    if (!drained) {
      std::fprintf(stderr, "ember serve: the drain deadline passed with %d connection(s) open: cutting them\n",
                   connections_);
      g_cut.store(true);
      // Every wait of a connection's thread looks at g_cut within 250 ms.
      if (!conn_done_.wait_for(lock, std::chrono::seconds(2), [this] { return connections_ == 0; })) {
        std::fprintf(stderr, "ember serve: %d connection(s) did not end: exiting\n", connections_);
        std::fflush(stderr);
        ::_exit(1);
      }
    }
  }
  if (scheduler_) scheduler_->drain();
  std::fprintf(stderr, "ember serve: stopped\n");
  return drained;
}

bool Server::respond(Reply& reply, int status, const std::string& content_type, const std::string& body,
                     const std::string& extra_headers) {
  metrics_->on_request(reply.route, status);
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\nContent-Type: " +
                     content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
                     (reply.keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n") + "\r\n";
  if (!reply.head) head += body;
  return reply.c.write_all(head) && reply.keep_alive;
}

bool Server::respond_error(Reply& reply, const RequestError& error, const std::string& extra_headers) {
  return respond(reply, error.status, "application/json", error_body(error), extra_headers);
}

bool Server::respond_error(Reply& reply, int status, const std::string& message, const std::string& extra_headers) {
  RequestError e;
  e.status = status;
  e.message = message;
  if (status == 401) e.code = "invalid_api_key";
  if (status == 429) e.code = "rate_limit_exceeded";
  return respond_error(reply, e, extra_headers);
}

bool Server::authorized(const HttpRequest& r) const {
  if (config_.api_key.empty()) return true;
  // "Bearer KEY": the scheme is case-insensitive (RFC 9110 11.1), then one
  // or more spaces.
  const std::string* h = r.header("authorization");
  std::string given;
  if (h && iequal_prefix(*h, "bearer") && h->size() > 6 && (*h)[6] == ' ') {
    size_t at = 6;
    while (at < h->size() && (*h)[at] == ' ') ++at;
    given = h->substr(at);
    while (!given.empty() && (given.back() == ' ' || given.back() == '\t')) given.pop_back();
  }
  return constant_time_equal(given, config_.api_key);
}

Server::Got Server::pump(Connection& c, RequestParser& parser, std::string& pending, std::vector<char>& buf,
                         Clock::time_point deadline) {
  while (true) {
    RequestParser::State st = RequestParser::State::kNeedMore;
    if (!pending.empty()) {
      size_t used = 0;
      st = parser.feed(pending.data(), pending.size(), &used);
      pending.erase(0, used);
    } else {
      const auto now = Clock::now();
      if (g_cut.load()) return Got::kClosed;
      if (now >= deadline) return Got::kTimeout;
      if (!parser.started() && g_stop.load()) return Got::kClosed;  // draining: no new requests
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      const long n = c.read(buf.data(), buf.size(), static_cast<int>(left < 250 ? left + 1 : 250));
      if (n == -2) continue;
      if (n < 0) return Got::kClosed;
      if (n == 0) {
        // The peer closed its sending side: a request already whole is
        // still answered (half-close), a partial one is not.
        if (!parser.started()) return Got::kClosed;
        st = parser.finish();
        if (st != RequestParser::State::kComplete) return Got::kClosed;
      } else {
        size_t used = 0;
        st = parser.feed(buf.data(), static_cast<size_t>(n), &used);
        if (used < static_cast<size_t>(n)) pending.append(buf.data() + used, static_cast<size_t>(n) - used);
      }
    }
    switch (st) {
      case RequestParser::State::kHeaders: return Got::kHeaders;
      case RequestParser::State::kComplete: return Got::kComplete;
      case RequestParser::State::kError: return Got::kError;
      case RequestParser::State::kNeedMore: break;
    }
  }
}

void Server::serve_connection(int fd, const std::string& client, Admission::Admit admit) {
  Connection c(fd, tls_);
  // The slot is given back before the connection's lingering close (its
  // destructor, declared before this): the answer is out by then.
  struct Release {
    Admission& admission;
    const std::string& client;
    Admission::Slot slot;
    ~Release() { admission.release(client, slot); }
  } release{admission_, client, admit.slot};
  c.set_abort(&g_cut);
  const bool spare = admit.slot == Admission::Slot::kSpare;
  const auto accepted = Clock::now();
  const int header_ms = spare ? kSpareHeaderMs : config_.header_timeout_ms;
  if (!c.handshake(header_ms)) return;
  RequestParser parser(config_.limits);
  std::string pending;  // bytes read past what the parser has taken
  std::vector<char> buf(kReadBufferBytes);
  for (bool first = true;; first = false) {
    parser.reset();
    // Headers: a new connection's handshake and first request within the
    // header timeout; a next request's first byte within the idle timeout,
    // its headers within the header timeout after that.
    const auto now = Clock::now();
    const auto idle_end = first ? accepted + std::chrono::milliseconds(header_ms)
                                : now + std::chrono::milliseconds(config_.idle_timeout_ms);
    Got got = pump(c, parser, pending, buf, idle_end);
    if (got == Got::kTimeout && parser.started() && !first) {
      got = pump(c, parser, pending, buf, idle_end + std::chrono::milliseconds(header_ms));
    }
    Reply reply{c, "other", false, false};
    if (got == Got::kClosed) return;
    if (got == Got::kTimeout) {
      if (parser.started()) {
        respond_error(reply, 408, "the request's headers did not arrive within " + std::to_string(header_ms / 1000) +
                                      " s (--header-timeout)");
      }
      return;
    }
    if (got == Got::kError) {
      respond_error(reply, parser.error_status(), parser.error_message());
      return;
    }
    const HttpRequest& r = parser.request();
    reply.keep_alive = r.keep_alive && !g_stop.load() && !spare;
    reply.head = r.method == "HEAD";
    if (!admit_request(reply, r, admit)) {
      // Refused: a request without a body may be followed by the next one
      // (the parser still has the headers' last byte to take).
      if (!reply.keep_alive) return;
      if (pump(c, parser, pending, buf, Clock::now() + std::chrono::milliseconds(header_ms)) != Got::kComplete) return;
      continue;
    }
    if (got == Got::kHeaders) {
      if (r.expect_continue && r.has_body && !c.write_all(std::string("HTTP/1.1 100 Continue\r\n\r\n"))) return;
      // The body keeps up with --min-recv-rate after a grace period: its
      // deadline moves on as bytes arrive.
      const auto body_start = Clock::now();
      auto body_deadline = [&] {
        return body_start + std::chrono::milliseconds(config_.body_grace_ms +
                                                      static_cast<int64_t>(parser.body_bytes() * 1000 /
                                                                           config_.min_recv_rate));
      };
      do {
        got = pump(c, parser, pending, buf, body_deadline());
      } while (got == Got::kTimeout && body_deadline() > Clock::now());
      if (got == Got::kClosed) return;
      if (got == Got::kTimeout) {
        reply.keep_alive = false;
        respond_error(reply, 408, "the request body arrived slower than " + std::to_string(config_.min_recv_rate) +
                                      " bytes/s (--min-recv-rate)");
        return;
      }
      if (got == Got::kError) {
        reply.keep_alive = false;
        respond_error(reply, parser.error_status(), parser.error_message());
        return;
      }
    }
    reply.keep_alive = r.keep_alive && !g_stop.load() && !spare;
    if (!dispatch(reply, parser.request()) || g_stop.load()) return;
  }
}

namespace {

struct Route {
  const char* path;
  const char* method;
};
const Route kRoutes[] = {{"/health", "GET"},
                         {"/metrics", "GET"},
                         {"/v1/models", "GET"},
                         {"/v1/completions", "POST"},
                         {"/v1/chat/completions", "POST"},
                         {"/v1/embeddings", "POST"},
                         {"/v1/rerank", "POST"},
                         {"/rerank", "POST"}};

const Route* route_of(const std::string& path) {
  for (const auto& rt : kRoutes) {
    if (path == rt.path) return &rt;
  }
  return nullptr;
}

}  // namespace

bool Server::admit_request(Reply& reply, const HttpRequest& r, Admission::Admit admit) {
  // A refusal before the body is read closes the connection when a body
  // follows (it is not read).
  const bool keep = reply.keep_alive && !r.has_body;
  const Route* route = route_of(r.path);
  if (route) reply.route = route->path;
  const bool probe = route && !r.has_body && (reply.route == "/health" || reply.route == "/metrics");
  if (admit.slot == Admission::Slot::kSpare && !(probe && (r.method == "GET" || r.method == "HEAD"))) {
    reply.keep_alive = false;
    reply.route = "connection";
    if (admit.client_cap) {
      respond_error(reply, 429, "this address holds " + std::to_string(config_.admission.max_per_client) +
                                    " connections already (--max-connections-per-client): try again later",
                    "Retry-After: 1\r\n");
    } else {
      respond_error(reply, 503, "the server has " + std::to_string(config_.admission.max_connections) +
                                    " connections open (--max-connections): try again later",
                    "Retry-After: 1\r\n");
    }
    return false;
  }
  reply.keep_alive = keep;
  if (!route) {
    respond_error(reply, 404, "no route " + r.method + " " + preview_string(r.path, 80));
    return false;
  }
  const bool method_ok = r.method == route->method || (r.method == "HEAD" && std::string(route->method) == "GET");
  if (!method_ok) {
    respond_error(reply, 405, std::string(route->path) + " takes " + route->method + ", not " + r.method,
                  std::string("Allow: ") + route->method + (std::string(route->method) == "GET" ? ", HEAD" : "") + "\r\n");
    return false;
  }
  if (reply.route != "/health" && !authorized(r)) {
    respond_error(reply, 401, "a valid API key is required: Authorization: Bearer KEY", "WWW-Authenticate: Bearer\r\n");
    return false;
  }
  return true;
}

bool Server::dispatch(Reply& reply, const HttpRequest& r) {
  const std::string& name = reply.route;
  if (name == "/health") {
    const SchedulerStats s = scheduler_ ? scheduler_->stats() : SchedulerStats{};
    const std::string body = "{\"status\":\"ok\",\"slots\":" + std::to_string(s.slots) +
                             ",\"active\":" + std::to_string(s.active) + ",\"queued\":" + std::to_string(s.queued) + "}";
    return respond(reply, 200, "application/json", body);
  }
  if (name == "/metrics") {
    return respond(reply, 200, "text/plain; version=0.0.4",
                   metrics_->render(scheduler_ ? scheduler_->stats() : SchedulerStats{}));
  }
  if (name == "/v1/models") {
    return respond(reply, 200, "application/json", models_body(config_.model_name, std::time(nullptr)));
  }
  if (name == "/v1/embeddings") return embeddings(reply, r);
  if (name == "/v1/rerank" || name == "/rerank") return rerank(reply, r);
  if (!scheduler_) {  // an encoder: it embeds, it does not generate
    RequestError e;
    e.status = 501;
    e.code = "not_supported";
    e.message = std::string("this server's model is an encoder: it answers POST ") +
                (config_.embed && config_.embed->pooling() == EMBER_POOLING_RANK ? "/v1/rerank" : "/v1/embeddings") +
                ", not completions";
    return respond_error(reply, e);
  }
  return generate(reply, r, name == "/v1/chat/completions");
}

bool Server::embeddings(Reply& reply, const HttpRequest& r) {
  if (!config_.embed) {
    RequestError e;
    e.status = 501;
    e.code = "not_supported";
    e.message = "this server does not embed: start it with --embeddings (or --pooling P)";
    return respond_error(reply, e);
  }
  if (config_.embed->pooling() == EMBER_POOLING_RANK) {
    RequestError e;
    e.status = 400;
    e.code = "not_supported";
    e.message = "this server serves a reranker (rank pooling): POST /v1/rerank with a query and documents";
    return respond_error(reply, e);
  }
  EmbeddingRequest req;
  RequestError error;
  if (!read_embedding_request(r.body, config_.embed_limits, &req, &error)) return respond_error(reply, error);
  if (!req.model.empty() && !serves_model(req.model)) {
    error.status = 404;
    error.param = "model";
    error.code = "model_not_found";
    std::string served = "'" + config_.model_name + "'";
    for (const auto& a : config_.model_aliases) served += ", '" + a + "'";
    error.message = "the model " + preview_string(req.model, 80) + " is not served here: 'model' must be one of " +
                    served + " (or absent)";
    return respond_error(reply, error);
  }
  std::string body;
  if (!config_.embed->run(req, config_.model_name, &body, &error)) return respond_error(reply, error);
  return respond(reply, 200, "application/json", body);
}

bool Server::rerank(Reply& reply, const HttpRequest& r) {
  if (!config_.embed || config_.embed->pooling() != EMBER_POOLING_RANK) {
    RequestError e;
    e.status = 501;
    e.code = "not_supported";
    e.message = "this server does not rerank: start it with a reranker model (a classifier head) and --pooling rank";
    return respond_error(reply, e);
  }
  RerankRequest req;
  RequestError error;
  if (!read_rerank_request(r.body, config_.embed_limits, &req, &error)) return respond_error(reply, error);
  if (!req.model.empty() && !serves_model(req.model)) {
    error.status = 404;
    error.param = "model";
    error.code = "model_not_found";
    error.message = "the model " + preview_string(req.model, 80) + " is not served here";
    return respond_error(reply, error);
  }
  std::string body;
  if (!config_.embed->rerank(req, config_.model_name, &body, &error)) return respond_error(reply, error);
  return respond(reply, 200, "application/json", body);
}

bool Server::serves_model(const std::string& name) const {
  if (name == config_.model_name) return true;
  for (const auto& a : config_.model_aliases) {
    if (name == a) return true;
  }
  return false;
}

bool Server::prepare(const HttpRequest& r, bool chat, Prepared* out, RequestError* error) {
  CompletionRequest& cr = out->request;
  if (!read_completion_request(r.body, chat, config_.read, &cr, error)) return false;
  auto refuse = [&](std::string message, const char* param, const char* code = "") {
    error->status = 400;
    error->message = std::move(message);
    error->param = param;
    error->code = code;
    return false;
  };
  if (!cr.model.empty() && !serves_model(cr.model)) {
    std::string served = "'" + config_.model_name + "'";
    for (const auto& a : config_.model_aliases) served += ", '" + a + "'";
    refuse("the model " + preview_string(cr.model, 80) + " is not served here: 'model' must be one of " + served +
               " (or absent)",
           "model", "model_not_found");
    error->status = 404;
    return false;
  }
  // The sampling values (and logit bias), checked by the sampler itself:
  // what is accepted here, the scheduler runs (one rule, the runtime's).
  ember_generate_options check;
  sampling_of(cr, &check);
  ember_sampler* sampler = nullptr;
  if (ember_sampler_create(model_, &check, &sampler) != EMBER_OK) {
    std::string why = ember_last_error();
    const std::string field = why.substr(0, why.find_first_of(" ["));
    static const char* const kFields[] = {"temperature", "top_p", "top_k", "min_p", "presence_penalty",
                                          "frequency_penalty", "logit_bias"};
    const char* param = "";
    for (const char* f : kFields) {
      if (field == f) param = f;
    }
    return refuse(why, param);
  }
  ember_sampler_free(sampler);
  if (cr.echo && cr.logprobs) {
    return refuse("'logprobs' with 'echo': the prompt's log-probabilities are not computed (ask for one or the other)",
                  "logprobs");
  }

  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model_, &info);
  const int32_t ctx = scheduler_->context_length();
  // Text longer than the context can hold in tokens is refused before it is
  // tokenized (the tokenizer takes ~40 bytes per byte of text).
  auto too_long = [&](uint64_t bytes, const char* what, const char* param) {
    return refuse(std::string(what) + " is " + std::to_string(bytes) + " bytes: more than a context of " +
                      std::to_string(ctx) + " tokens (--ctx) can hold (at most " +
                      std::to_string(config_.max_prompt_bytes) + " bytes of text)",
                  param, "context_length_exceeded");
  };
  std::string& prompt_text = out->prompt_text;
  std::vector<int32_t>& ids = out->ids;
  if (cr.prompt_is_tokens) {
    for (size_t i = 0; i < cr.prompt_tokens.size(); ++i) {
      if (cr.prompt_tokens[i] >= info.vocab_size) {
        return refuse("'prompt[" + std::to_string(i) + "]' = " + std::to_string(cr.prompt_tokens[i]) +
                          " is outside the vocabulary (0.." + std::to_string(info.vocab_size - 1) + ")",
                      "prompt");
      }
    }
    ids = std::move(cr.prompt_tokens);
    cr.prompt_tokens.clear();
  } else {
    uint64_t bytes = cr.prompt.size();
    if (chat) {
      bytes = 0;
      for (const auto& m : cr.messages) {
        bytes += m.content.size();
        for (const ToolCall& t : m.tool_calls) bytes += t.name.size() + t.arguments.size();
      }
      for (const ToolFunction& t : cr.tools) bytes += t.name.size() + t.description.size() + t.parameters.size();
    }
    if (bytes > config_.max_prompt_bytes) return too_long(bytes, chat ? "the messages' text" : "the prompt", chat ? "messages" : "prompt");
    std::unique_lock<std::mutex> gate(tokenize_gate_, std::defer_lock);
    if (bytes > kTokenizeGateBytes) gate.lock();
    if (chat) {
      if (format_chat(model_, cr, &prompt_text) != EMBER_OK) {
        return refuse(std::string("messages: ") + ember_last_error(), "messages");
      }
      if (prompt_text.size() > config_.max_prompt_bytes) return too_long(prompt_text.size(), "the rendered chat", "messages");
    } else {
      prompt_text = std::move(cr.prompt);
      cr.prompt.clear();
    }
    // The prompt rule every generation uses (ember_tokenize_prompt): a
    // rendered chat template spells its control tokens ("<|im_start|>") and
    // may write BOS itself, so its text is parsed for them; a plain prompt
    // is user text, nothing in it becomes a control token; BOS as the model
    // asks, unless the text begins with it.
    // At most one id more than a slot holds: a longer prompt is refused
    // with its count (the call reports it) and nothing larger is held.
    const size_t cap = std::min<size_t>(prompt_text.size() + 2, static_cast<size_t>(ctx) + 1);
    ids.resize(cap);
    size_t n = 0;
    const ember_status st = ember_tokenize_prompt(model_, prompt_text.data(), prompt_text.size(), chat ? 1 : 0, -1,
                                                  ids.data(), ids.size(), &n);
    if (st == EMBER_ERR_BUFFER_TOO_SMALL) {
      ids.clear();
      return refuse("the prompt has " + std::to_string(n) + " tokens; the context of a slot is " + std::to_string(ctx) +
                        " (--ctx), which must also hold the completion",
                    chat ? "messages" : "prompt", "context_length_exceeded");
    }
    if (st != EMBER_OK) return refuse(std::string("the prompt: ") + ember_last_error(), chat ? "messages" : "prompt");
    ids.resize(n);
  }
  if (ids.empty()) return refuse("the prompt is empty (and the model has no BOS)", chat ? "messages" : "prompt");
  if (static_cast<int64_t>(ids.size()) >= ctx) {
    return refuse("the prompt has " + std::to_string(ids.size()) + " tokens; the context of a slot is " +
                      std::to_string(ctx) + " (--ctx), which must also hold the completion",
                  chat ? "messages" : "prompt", "context_length_exceeded");
  }
  if (chat && !cr.tools.empty()) {
    out->tool_syntax = ember_chat_tool_syntax(model_, nullptr);
    out->tools_on = cr.tool_choice != ToolChoice::kNone;
    out->all_calls = cr.tool_choice == ToolChoice::kRequired || cr.tool_choice == ToolChoice::kNamed;
    if (out->all_calls) {
      // Compiled on this thread, or found in the cache (the same tools again).
      bool hit = false;
      out->tool_grammar = grammars_.get_tool_calls(cr, out->tool_syntax, &hit, error);
      if (!out->tool_grammar) return false;
      metrics_->on_grammar_cache(hit);
    }
  }
  const int32_t room = ctx - static_cast<int32_t>(ids.size());
  int32_t max_new = cr.max_tokens >= 0 ? cr.max_tokens : chat ? room : 16;
  if (max_new > room) max_new = room;
  out->max_new = max_new;
  // response_format: compiled here, on the connection's thread (the
  // scheduler's steps never wait for it), or found in the cache.
  if (cr.format != CompletionRequest::Format::kText) {
    bool hit = false;
    out->grammar = grammars_.get(cr, &hit, error);
    if (!out->grammar) return false;
    metrics_->on_grammar_cache(hit);
  }
  return true;
}

void Server::request_of(Prepared& prepared, GenerationRequest* req) {
  const CompletionRequest& cr = prepared.request;
  req->prompt = std::move(prepared.ids);
  sampling_of(cr, &req->sampling);
  req->sampling.logit_bias = nullptr;  // the scheduler points it at req->logit_bias
  req->sampling.n_logit_bias = 0;
  req->logit_bias = cr.logit_bias;
  req->sampling.max_new_tokens = prepared.max_new;
  req->sampling.seed = cr.has_seed ? cr.seed : std::random_device{}();
  req->stop = cr.stop;
  // A demanded tool call's grammar wins over response_format's.
  req->grammar = prepared.tool_grammar ? std::move(prepared.tool_grammar) : std::move(prepared.grammar);
}

bool Server::generate(Reply& reply, const HttpRequest& r, bool chat) {
  Connection& c = reply.c;
  Prepared prepared;
  RequestError refusal;
  // A 503: every compiled grammar is held by running requests (grammar_cache.h).
  if (!prepare(r, chat, &prepared, &refusal))
    return respond_error(reply, refusal, refusal.status == 503 ? "Retry-After: 1\r\n" : "");
  const CompletionRequest& cr = prepared.request;
  const std::string& prompt_text = prepared.prompt_text;

  auto req = std::make_shared<GenerationRequest>();
  request_of(prepared, req.get());
  LogprobsWriter logprobs(model_, req->prompt.back(), cr.echo ? prompt_text.size() : 0);
  std::vector<TokenLogprobs> lp;
  std::vector<TokenOut> tokens;
  req->deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(config_.timeout_s * 1000));
  auto stream = std::make_shared<Stream>();
  req->on_text = [stream](std::string_view text) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->text.append(text);
    stream->changed.notify_one();
  };
  if (cr.logprobs) {
    req->on_token = [stream](const TokenOut& t) {
      std::lock_guard<std::mutex> lock(stream->mutex);
      stream->tokens.push_back(t);
    };
  }
  req->on_done = [stream](const GenerationResult& res) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->done = true;
    stream->result = res;
    stream->changed.notify_one();
  };
  switch (scheduler_->submit(req)) {
    case Scheduler::Submit::kAccepted: break;
    case Scheduler::Submit::kQueueFull:
      return respond_error(reply, 429, "every slot is busy and the queue is full (--max-queue): try again later",
                           "Retry-After: 1\r\n");
    case Scheduler::Submit::kDraining:
      reply.keep_alive = false;
      return respond_error(reply, 503, "the server is shutting down");
  }
  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_.fetch_add(1));
  const int64_t created = std::time(nullptr);
  const std::string& model = config_.model_name;
  const std::string& route = reply.route;
  bool client_gone = false;
  // Waits for text or the end; cancels the request when the connection is
  // reset (looked at every 100 ms, also while text keeps coming) or cut at
  // the drain deadline. A client that only half-closed still gets its answer.
  auto last_check = std::chrono::steady_clock::now();
  auto next = [&](std::string* text) {
    std::unique_lock<std::mutex> lock(stream->mutex);
    while (true) {
      const auto now = std::chrono::steady_clock::now();
      if (!client_gone && now - last_check >= std::chrono::milliseconds(100)) {
        last_check = now;
        lock.unlock();
        if (c.reset_by_peer() || g_cut.load()) {
          client_gone = true;
          req->cancelled.store(true);
        }
        lock.lock();
      }
      if (!stream->text.empty() || stream->done) break;
      stream->changed.wait_for(lock, std::chrono::milliseconds(100));
    }
    text->swap(stream->text);
    stream->text.clear();
    tokens.swap(stream->tokens);
    stream->tokens.clear();
    return !text->empty() || !stream->done;
  };
  auto usage_of = [&]() {
    Usage u;
    u.prompt_tokens = stream->result.prompt_tokens;
    u.completion_tokens = stream->result.completion_tokens;
    u.cached_tokens = stream->result.cached_tokens;
    return u;
  };

  if (!cr.stream) {
    std::string all = cr.echo ? prompt_text : "", text;
    std::vector<TokenLogprobs> all_lp;
    while (next(&text)) {
      all += text;
      logprobs.add(tokens, &lp);
      for (auto& l : lp) all_lp.push_back(std::move(l));
    }
    if (client_gone) {
      metrics_->on_request(route, 499);  // nginx's "client closed request"
      return false;
    }
    const GenerationResult& res = stream->result;
    if (res.finish == Finish::kError) return respond_error(reply, generation_failure(res, req->grammar != nullptr));
    if (res.finish == Finish::kTimeout) {
      return respond_error(reply, 504, "the request ran past --timeout (" + std::to_string(config_.timeout_s) + " s)");
    }
    if (prepared.tools_on) {
      return respond(reply, 200, "application/json",
                     tool_completion_body(cr, id, created, model, all, prepared.tool_syntax, res.finish, usage_of(),
                                          cr.logprobs ? &all_lp : nullptr));
    }
    return respond(reply, 200, "application/json",
                   completion_body(cr, id, created, model, all, res.finish, usage_of(), cr.logprobs ? &all_lp : nullptr));
  }

  // Server-sent events, the body ending with the connection.
  metrics_->on_request(route, 200);
  bool ok = c.write_all(std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                    "Connection: close\r\n\r\n"));
  if (ok && chat) ok = c.write_all(stream_chunk(cr, id, created, model, "", nullptr, true));
  if (ok && cr.echo) ok = c.write_all(stream_chunk(cr, id, created, model, prompt_text, nullptr, false));
  std::string text;
  ToolCallStream calls(prepared.tool_syntax, prepared.all_calls, tool_names(cr));
  while (next(&text)) {
    if (prepared.tools_on) text = calls.add(text);
    logprobs.add(tokens, &lp);
    // A demanded call's arguments go out as they are generated.
    if (ok && prepared.all_calls) ok = c.write_all(tool_stream_deltas(cr, id, created, model, &calls));
    if (ok && (!text.empty() || !lp.empty())) {
      ok = c.write_all(stream_chunk(cr, id, created, model, text, nullptr, false, cr.logprobs ? &lp : nullptr));
    }
    if (!ok && !client_gone) {
      client_gone = true;
      req->cancelled.store(true);
    }
  }
  if (!ok || client_gone) return false;
  const GenerationResult& res = stream->result;
  if (res.finish == Finish::kError || res.finish == Finish::kTimeout) {
    RequestError e;
    if (res.finish == Finish::kError) {
      e = generation_failure(res, req->grammar != nullptr);
    } else {
      e.status = 504;
      e.message = "the request ran past --timeout";
    }
    c.write_all("data: " + error_body(e) + "\n\n");
  } else {
    Finish finish = res.finish;
    if (prepared.tools_on) c.write_all(tool_stream_tail(cr, id, created, model, &calls, &finish));
    c.write_all(stream_chunk(cr, id, created, model, "", &finish, false));
    if (cr.include_usage) c.write_all(stream_usage_chunk(cr, id, created, model, usage_of()));
  }
  c.write_all(std::string("data: [DONE]\n\n"));
  return false;
}

}  // namespace ember::serve

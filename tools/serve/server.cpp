#include "tools/serve/server.h"

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

namespace ember::serve {
namespace {

std::atomic<bool> g_stop{false};
int g_stop_pipe[2] = {-1, -1};

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
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

// What a generation request's callbacks hand to its connection's thread.
struct Stream {
  std::mutex mutex;
  std::condition_variable changed;
  std::string text;  // not yet sent
  bool done = false;
  GenerationResult result;
};

}  // namespace

Server::Server(const ServerConfig& config, ember_model* model, Scheduler* scheduler, Metrics* metrics,
               const TlsConfig* tls)
    : config_(config), model_(model), scheduler_(scheduler), metrics_(metrics), tls_(tls) {}

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

void Server::run() {
  if (::pipe2(g_stop_pipe, O_CLOEXEC) != 0) g_stop_pipe[0] = g_stop_pipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = [](int) { Server::request_stop(); };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  while (!g_stop.load()) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {g_stop_pipe[0], POLLIN, 0}};
    const int r = ::poll(p, g_stop_pipe[0] >= 0 ? 2 : 1, 1000);
    if (r <= 0 || !(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::unique_lock<std::mutex> lock(conn_mutex_);
    if (connections_ >= config_.max_connections) {
      lock.unlock();
      if (!tls_) {
        const std::string body = error_body(503, "the server has " + std::to_string(config_.max_connections) +
                                                     " connections open (--max-connections): try again later");
        const std::string msg = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        [[maybe_unused]] ssize_t w = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      metrics_->on_request("connection", 503);
      ::close(fd);
      continue;
    }
    ++connections_;
    lock.unlock();
    std::thread([this, fd] {
      serve_connection(fd);
      std::lock_guard<std::mutex> l(conn_mutex_);
      --connections_;
      conn_done_.notify_all();
    }).detach();
  }
  // Draining: no new connections; accepted requests run to their end.
  ::close(listen_fd_);
  listen_fd_ = -1;
  std::fprintf(stderr, "ember serve: stopping: finishing the requests in flight\n");
  {
    std::unique_lock<std::mutex> lock(conn_mutex_);
    conn_done_.wait(lock, [this] { return connections_ == 0; });
  }
  scheduler_->drain();
  std::fprintf(stderr, "ember serve: stopped\n");
}

bool Server::respond(Connection& c, const std::string& route, int status, const std::string& content_type,
                     const std::string& body, bool keep_alive, const std::string& extra_headers) {
  metrics_->on_request(route, status);
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\nContent-Type: " +
                     content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
                     (keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n") + "\r\n";
  return c.write_all(head + body) && keep_alive;
}

bool Server::respond_error(Connection& c, const std::string& route, int status, const std::string& message,
                           bool keep_alive, const std::string& extra_headers) {
  return respond(c, route, status, "application/json", error_body(status, message), keep_alive, extra_headers);
}

bool Server::authorized(const HttpRequest& r) const {
  if (config_.api_key.empty()) return true;
  const std::string* h = r.header("authorization");
  static const std::string kBearer = "Bearer ";
  const std::string given = h && h->compare(0, kBearer.size(), kBearer) == 0 ? h->substr(kBearer.size()) : "";
  return constant_time_equal(given, config_.api_key);
}

void Server::serve_connection(int fd) {
  Connection c(fd, tls_);
  if (!c.handshake(10000)) return;
  RequestParser parser(config_.limits);
  std::string pending;  // bytes read past the last request
  std::vector<char> buf(65536);
  while (true) {
    parser.reset();
    RequestParser::State state = RequestParser::State::kNeedMore;
    if (!pending.empty()) {
      size_t used = 0;
      state = parser.feed(pending.data(), pending.size(), &used);
      pending.erase(0, used);
    }
    auto idle_since = std::chrono::steady_clock::now();
    while (state == RequestParser::State::kNeedMore) {
      const long n = c.read(buf.data(), buf.size(), 250);
      const auto now = std::chrono::steady_clock::now();
      if (n == -2) {
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - idle_since).count();
        if (!parser.started()) {
          if (g_stop.load() || waited > config_.idle_timeout_ms) return;
        } else if (waited > config_.read_timeout_ms) {
          respond_error(c, "other", 408, "the request did not arrive within " +
                                            std::to_string(config_.read_timeout_ms / 1000) + " s", false);
          return;
        }
        continue;
      }
      if (n < 0) return;
      if (n == 0) {
        if (!parser.started()) return;
        state = parser.finish();
        if (state != RequestParser::State::kComplete) return;  // nobody to answer
        break;
      }
      size_t used = 0;
      state = parser.feed(buf.data(), static_cast<size_t>(n), &used);
      if (used < static_cast<size_t>(n)) pending.append(buf.data() + used, static_cast<size_t>(n) - used);
    }
    if (state == RequestParser::State::kError) {
      respond_error(c, "other", parser.error_status(), parser.error_message(), false);
      return;
    }
    if (!dispatch(c, parser.request()) || !parser.request().keep_alive || g_stop.load()) return;
  }
}

bool Server::dispatch(Connection& c, const HttpRequest& r) {
  const bool keep = r.keep_alive && !g_stop.load();
  struct Route {
    const char* path;
    const char* method;
  };
  static const Route kRoutes[] = {{"/health", "GET"},          {"/metrics", "GET"},
                                  {"/v1/models", "GET"},       {"/v1/completions", "POST"},
                                  {"/v1/chat/completions", "POST"}};
  const Route* route = nullptr;
  for (const auto& rt : kRoutes) {
    if (r.path == rt.path) route = &rt;
  }
  if (!route) return respond_error(c, "other", 404, "no route " + r.method + " " + r.path, keep);
  const std::string name = route->path;
  if (r.method != route->method) {
    return respond_error(c, name, 405, r.path + " takes " + route->method + ", not " + r.method, keep,
                         std::string("Allow: ") + route->method + "\r\n");
  }
  if (name != "/health" && !authorized(r)) {
    return respond_error(c, name, 401, "a valid API key is required: Authorization: Bearer KEY", keep,
                         "WWW-Authenticate: Bearer\r\n");
  }
  if (name == "/health") {
    const SchedulerStats s = scheduler_->stats();
    const std::string body = "{\"status\":\"ok\",\"slots\":" + std::to_string(s.slots) +
                             ",\"active\":" + std::to_string(s.active) + ",\"queued\":" + std::to_string(s.queued) + "}";
    return respond(c, name, 200, "application/json", body, keep);
  }
  if (name == "/metrics") {
    return respond(c, name, 200, "text/plain; version=0.0.4", metrics_->render(scheduler_->stats()), keep);
  }
  if (name == "/v1/models") {
    return respond(c, name, 200, "application/json", models_body(config_.model_name, std::time(nullptr)), keep);
  }
  return generate(c, r, name == "/v1/chat/completions", name);
}

bool Server::generate(Connection& c, const HttpRequest& r, bool chat, const std::string& route) {
  const bool keep = r.keep_alive && !g_stop.load();
  CompletionRequest cr;
  std::string error;
  if (!parse_completion_request(r.body, chat, &cr, &error)) return respond_error(c, route, 400, error, keep);
  std::string prompt_text = cr.prompt;
  std::vector<int32_t> ids;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model_, &info);
  if (chat && format_chat(model_, cr.messages, &prompt_text) != EMBER_OK) {
    return respond_error(c, route, 400, std::string("messages: ") + ember_last_error(), keep);
  }
  if (cr.prompt_is_tokens) {
    for (size_t i = 0; i < cr.prompt_tokens.size(); ++i) {
      if (cr.prompt_tokens[i] >= info.vocab_size) {
        return respond_error(c, route, 400, "'prompt[" + std::to_string(i) + "]' = " +
                                                std::to_string(cr.prompt_tokens[i]) + " is outside the vocabulary (0.." +
                                                std::to_string(info.vocab_size - 1) + ")", keep);
      }
    }
    ids = cr.prompt_tokens;
  } else {
    // A rendered chat template spells its control tokens ("<|im_start|>")
    // and may write BOS itself: its text is parsed for them, and BOS is
    // added only when the model wants one and the rendering has none. A
    // plain prompt is user text: nothing in it becomes a control token.
    int flags = info.add_bos ? EMBER_TOKENIZE_ADD_BOS : 0;
    if (chat) flags = EMBER_TOKENIZE_PARSE_SPECIAL;
    size_t n = 0;
    ids.resize(prompt_text.size() + 2);
    ember_status st = ember_tokenize(model_, prompt_text.data(), prompt_text.size(), flags, ids.data(), ids.size(), &n);
    if (st == EMBER_ERR_BUFFER_TOO_SMALL) {
      ids.resize(n);
      st = ember_tokenize(model_, prompt_text.data(), prompt_text.size(), flags, ids.data(), ids.size(), &n);
    }
    if (st == EMBER_OK && chat && info.add_bos && (n == 0 || ids[0] != info.bos_id)) {
      ids.insert(ids.begin(), info.bos_id);
      ++n;
    }
    if (st != EMBER_OK) return respond_error(c, route, 400, std::string("the prompt: ") + ember_last_error(), keep);
    ids.resize(n);
  }
  const int32_t ctx = scheduler_->context_length();
  if (ids.empty()) return respond_error(c, route, 400, "the prompt is empty (and the model has no BOS)", keep);
  if (static_cast<int64_t>(ids.size()) >= ctx) {
    return respond_error(c, route, 400, "the prompt has " + std::to_string(ids.size()) +
                                            " tokens; the context of a slot is " + std::to_string(ctx) +
                                            " (--ctx), which must also hold the completion", keep);
  }
  const int32_t room = ctx - static_cast<int32_t>(ids.size());
  int32_t max_new = cr.max_tokens >= 0 ? cr.max_tokens : chat ? room : 16;
  if (max_new > room) max_new = room;

  auto req = std::make_shared<GenerationRequest>();
  req->prompt = ids;
  ember_generate_options_default(&req->sampling);
  req->sampling.max_new_tokens = max_new;
  req->sampling.temperature = cr.temperature;
  req->sampling.top_p = cr.top_p;
  req->sampling.top_k = cr.top_k;
  req->sampling.min_p = cr.min_p;
  req->sampling.seed = cr.has_seed ? cr.seed : std::random_device{}();
  req->stop = cr.stop;
  req->deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(config_.timeout_s * 1000));
  auto stream = std::make_shared<Stream>();
  req->on_text = [stream](std::string_view text) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->text.append(text);
    stream->changed.notify_one();
  };
  req->on_done = [stream](const GenerationResult& res) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->done = true;
    stream->result = res;
    stream->changed.notify_one();
  };
  switch (scheduler_->submit(req)) {
    case Scheduler::Submit::kAccepted: break;
    case Scheduler::Submit::kQueueFull:
      return respond_error(c, route, 429, "every slot is busy and the queue is full (--max-queue): try again later",
                           keep, "Retry-After: 1\r\n");
    case Scheduler::Submit::kDraining:
      return respond_error(c, route, 503, "the server is shutting down", false);
  }
  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_.fetch_add(1));
  const int64_t created = std::time(nullptr);
  const std::string& model = config_.model_name;
  bool client_gone = false;
  // Waits for text or the end; cancels the request when the client leaves
  // (looked at every 100 ms, also while text keeps coming).
  auto last_check = std::chrono::steady_clock::now();
  auto next = [&](std::string* text) {
    std::unique_lock<std::mutex> lock(stream->mutex);
    while (true) {
      const auto now = std::chrono::steady_clock::now();
      if (!client_gone && now - last_check >= std::chrono::milliseconds(100)) {
        last_check = now;
        lock.unlock();
        if (c.peer_gone()) {
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
    while (next(&text)) all += text;
    if (client_gone) {
      metrics_->on_request(route, 499);  // nginx's "client closed request"
      return false;
    }
    const GenerationResult& res = stream->result;
    if (res.finish == Finish::kError) return respond_error(c, route, 500, "generation failed: " + res.error, keep);
    if (res.finish == Finish::kTimeout) {
      return respond_error(c, route, 504, "the request ran past --timeout (" + std::to_string(config_.timeout_s) + " s)",
                           keep);
    }
    return respond(c, route, 200, "application/json",
                   completion_body(cr, id, created, model, all, res.finish, usage_of()), keep);
  }

  // Server-sent events, the body ending with the connection.
  metrics_->on_request(route, 200);
  bool ok = c.write_all(std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                    "Connection: close\r\n\r\n"));
  if (ok && chat) ok = c.write_all(stream_chunk(cr, id, created, model, "", nullptr, true));
  if (ok && cr.echo) ok = c.write_all(stream_chunk(cr, id, created, model, prompt_text, nullptr, false));
  std::string text;
  while (next(&text)) {
    if (ok && !text.empty()) ok = c.write_all(stream_chunk(cr, id, created, model, text, nullptr, false));
    if (!ok && !client_gone) {
      client_gone = true;
      req->cancelled.store(true);
    }
  }
  if (!ok || client_gone) return false;
  const GenerationResult& res = stream->result;
  if (res.finish == Finish::kError || res.finish == Finish::kTimeout) {
    const std::string msg = res.finish == Finish::kError ? "generation failed: " + res.error
                                                         : "the request ran past --timeout";
    c.write_all("data: " + error_body(res.finish == Finish::kError ? 500 : 504, msg) + "\n\n");
  } else {
    c.write_all(stream_chunk(cr, id, created, model, "", &res.finish, false));
    if (cr.include_usage) c.write_all(stream_usage_chunk(cr, id, created, model, usage_of()));
  }
  c.write_all(std::string("data: [DONE]\n\n"));
  return false;
}

}  // namespace ember::serve

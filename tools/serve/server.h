// `ember serve`: an OpenAI-compatible HTTP(S) server over a Scheduler.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ember.h"
#include "tools/serve/connection.h"
#include "tools/serve/http_request.h"
#include "tools/serve/metrics.h"
#include "tools/serve/scheduler.h"

namespace ember::serve {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;            // empty: no authentication
  double timeout_s = 600;         // per generation request
  int max_connections = 64;
  int idle_timeout_ms = 5000;     // keep-alive between requests
  int read_timeout_ms = 30000;    // a request's headers and body
  HttpLimits limits;
  std::string model_name;         // reported by /v1/models and in responses
};

class Server {
 public:
  Server(const ServerConfig& config, ember_model* model, Scheduler* scheduler, Metrics* metrics,
         const TlsConfig* tls);
  // Binds and listens; prints the address. False with *error on failure.
  bool listen(std::string* error);
  // Serves until stop() (SIGTERM, SIGINT), then drains: stops accepting,
  // lets every accepted request finish, closes idle connections.
  void run();
  // Async-signal-safe.
  static void request_stop();

 private:
  void serve_connection(int fd);
  // Answers one request; false when the connection must close.
  bool dispatch(Connection& c, const HttpRequest& r);
  bool generate(Connection& c, const HttpRequest& r, bool chat, const std::string& route);
  bool respond(Connection& c, const std::string& route, int status, const std::string& content_type,
               const std::string& body, bool keep_alive, const std::string& extra_headers = "");
  bool respond_error(Connection& c, const std::string& route, int status, const std::string& message,
                     bool keep_alive, const std::string& extra_headers = "");
  bool authorized(const HttpRequest& r) const;

  ServerConfig config_;
  ember_model* model_;
  Scheduler* scheduler_;
  Metrics* metrics_;
  const TlsConfig* tls_;
  int listen_fd_ = -1;
  std::atomic<uint64_t> next_id_{1};

  std::mutex conn_mutex_;
  std::condition_variable conn_done_;
  int connections_ = 0;
};

// The `ember serve` command (argv[0] = "serve").
int serve_main(int argc, char** argv);

}  // namespace ember::serve

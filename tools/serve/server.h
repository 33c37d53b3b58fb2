// `ember serve`: an OpenAI-compatible HTTP(S) server over a Scheduler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember.h"
#include "tools/serve/admission.h"
#include "tools/serve/connection.h"
#include "tools/serve/embeddings.h"
#include "tools/serve/grammar_cache.h"
#include "tools/serve/http_request.h"
#include "tools/serve/metrics.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/scheduler.h"

namespace ember::serve {

// Each connection's receive buffer.
constexpr size_t kReadBufferBytes = 64 << 10;

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;            // empty: no authentication
  double timeout_s = 600;         // per generation request
  AdmissionLimits admission;      // --max-connections, --max-connections-per-client
  int idle_timeout_ms = 5000;     // keep-alive: waiting for a next request's first byte
  int header_timeout_ms = 10000;  // a request's line and headers, from its first byte (and a TLS handshake)
  // The body must keep up with min_recv_rate bytes per second after a grace
  // of body_grace_ms (serve_main: the header timeout): its deadline is
  // start + grace + received / rate.
  int body_grace_ms = 10000;
  uint64_t min_recv_rate = 1024;
  double drain_timeout_s = 30;    // on SIGTERM/SIGINT: requests in flight get this long
  HttpLimits limits;
  ReadLimits read;                // the JSON reader's (max_prompt_tokens/max_messages: the context)
  std::string model_name;         // reported by /v1/models and in responses
  std::vector<std::string> model_aliases;  // also accepted as a request's "model"
  uint64_t max_prompt_bytes = UINT64_MAX;  // a longer prompt text cannot fit the context
  uint64_t grammar_cache_bytes = 0;        // the compiled grammars' budget (0: GrammarCache's default)
  // POST /v1/embeddings: the embedding session's service (--embeddings,
  // --pooling), or null (501).
  EmbedService* embed = nullptr;
  EmbeddingLimits embed_limits;
};

class Server {
 public:
  Server(const ServerConfig& config, ember_model* model, Scheduler* scheduler, Metrics* metrics,
         const TlsConfig* tls);
  // Binds and listens; prints the address. False with *error on failure.
  bool listen(std::string* error);
  // Serves until stop() (SIGTERM, SIGINT), then drains: stops accepting,
  // lets every accepted request finish within --drain-timeout, closes idle
  // connections. True when everything finished in time (false: requests
  // were cut at the deadline). A second signal exits at once (status 128 +
  // the signal).
  bool run();
  // Async-signal-safe.
  static void request_stop();

 private:
  // One request's answer: where it goes and how.
  struct Reply {
    Connection& c;
    std::string route;  // for /metrics: a route's path, or "other"
    bool keep_alive;
    bool head;          // HEAD: the headers of the GET answer, no body
  };
  // A generation request read and checked, ready to submit.
  struct Prepared {
    CompletionRequest request;
    std::string prompt_text;     // what was tokenized (echo)
    std::vector<int32_t> ids;
    int32_t max_new = 0;
    GrammarRef grammar;          // response_format's constraint; null for text
    bool tools_on = false;   // calls are read out of the text (chat, tools, tool_choice not none)
    bool all_calls = false;  // tool_choice required or named: the text is all calls
    int tool_syntax = EMBER_TOOL_SYNTAX_HERMES;  // how the model writes a call
    GrammarRef tool_grammar;  // tool_choice required or named (the grammar cache's)
  };
  // The scheduler's request from a prepared one: prompt, sampling, stop
  // strings, the constraint.
  static void request_of(Prepared& prepared, GenerationRequest* req);
  enum class Got { kHeaders, kComplete, kError, kClosed, kTimeout };

  void serve_connection(int fd, const std::string& client, Admission::Admit admit);
  // Feeds `pending`, then reads, until the parser reports headers or a
  // whole request, the connection ends or `deadline` passes.
  Got pump(Connection& c, RequestParser& parser, std::string& pending, std::vector<char>& buf,
           std::chrono::steady_clock::time_point deadline);
  // Before the body is read: the route, method, key and slot. False when
  // the request was answered (refused) instead.
  bool admit_request(Reply& reply, const HttpRequest& r, Admission::Admit admit);
  // Answers one whole request; false when the connection must close.
  bool dispatch(Reply& reply, const HttpRequest& r);
  bool generate(Reply& reply, const HttpRequest& r, bool chat);
  bool embeddings(Reply& reply, const HttpRequest& r);
  bool rerank(Reply& reply, const HttpRequest& r);
  // Reads, validates and tokenizes a generation request: every refusal is a
  // 4xx naming the field (what this accepts, the scheduler runs).
  bool prepare(const HttpRequest& r, bool chat, Prepared* out, RequestError* error);
  bool serves_model(const std::string& name) const;
  bool respond(Reply& reply, int status, const std::string& content_type, const std::string& body,
               const std::string& extra_headers = "");
  bool respond_error(Reply& reply, const RequestError& error, const std::string& extra_headers = "");
  bool respond_error(Reply& reply, int status, const std::string& message, const std::string& extra_headers = "");
  bool authorized(const HttpRequest& r) const;

  ServerConfig config_;
  ember_model* model_;
  Scheduler* scheduler_;
  Metrics* metrics_;
  const TlsConfig* tls_;
  int listen_fd_ = -1;
  std::atomic<uint64_t> next_id_{1};
  Admission admission_;
  std::mutex tokenize_gate_;  // long prompts are rendered and tokenized one at a time
  GrammarCache grammars_;     // response_format's compiled grammars

  std::mutex conn_mutex_;
  std::condition_variable conn_done_;
  int connections_ = 0;
};

// The `ember serve` command (argv[0] = "serve").
int serve_main(int argc, char** argv);

}  // namespace ember::serve

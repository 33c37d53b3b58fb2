// The scheduler `ember serve` submits generation requests to.
//
// The interface is what the HTTP layer needs and no more: submit a request
// (prompt tokens, sampling, stop strings, a deadline, a cancellation flag,
// and two callbacks), read counters for /metrics, drain on shutdown.
//
// BatchedScheduler, the one implementation: one session holding --parallel
// sequences for running requests plus --cache-slots sequences that keep
// finished requests' tokens and KV (the prefix cache), on any backend that
// runs batched sequences (the cpu and vulkan both do). One scheduler thread;
// each step is one ember_generator_step: every decoding slot's next token
// and, for slots still prefilling, chunks of their prompts (at most --batch
// rows in all, so a long prompt delays the others by one bounded step),
// every weight read once for all of them. New requests join between steps
// and take the sequence holding the longest prefix of their prompt
// (docs/decisions.md, "Serving: the batched scheduler and the prefix cache").
//
// The scheduler is a client of the generator (ember_generator_*): the
// per-token rules (sampling, end of generation, stop strings, whole UTF-8
// characters, limits) are the runtime's, as for ember_generate.
//
// Threading: submit(), stats() and drain() may be called from any thread.
// The callbacks run on the scheduler's thread, one request's in order; they
// must not block (the HTTP layer queues what they give and returns).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember.h"
#include "tools/serve/openai_api.h"

namespace ember::serve {

struct GenerationResult {
  Finish finish = Finish::kStop;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache (not run again)
  std::string error;          // for Finish::kError
};

// A released token, for requests that report log-probabilities.
struct TokenOut {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<ember_token_logprob> top;  // the most likely first
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // exact ids (BOS included when wanted)
  // The sequence's rules: sampling (temperature, top_k, top_p, min_p,
  // penalties, seed), max_new_tokens, logprobs/top_logprobs. The prompt,
  // stop-string and logit-bias pointers are set by the scheduler from the
  // fields below.
  ember_generate_options sampling{};
  std::vector<std::string> stop;  // stop strings: the text ends before the first one found
  std::vector<ember_logit_bias> logit_bias;
  // The constraint (sampling.grammar is pointed at it by the scheduler):
  // a tool call's grammar (tool_calls.h) when tool_choice demands a call,
  // else response_format's; null for free text. Shared with the server's
  // grammar cache, or the request's own.
  std::shared_ptr<const ember_grammar> grammar;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Set by the HTTP layer (client gone); the scheduler frees the slot at its
  // next step and finishes with Finish::kCancelled.
  std::atomic<bool> cancelled{false};
  // Text as it becomes final (held back while it could be the start of a
  // stop string). Never called after on_done.
  std::function<void(std::string_view text)> on_text;
  // When set (and sampling.logprobs), each released token, before its text.
  std::function<void(const TokenOut& token)> on_token;
  // Called exactly once, when the request leaves the scheduler.
  std::function<void(const GenerationResult&)> on_done;
  // Filled by the scheduler, for metrics.
  std::chrono::steady_clock::time_point submitted{};
};

struct SchedulerStats {
  int32_t slots = 0;
  int32_t cache_slots = 0;  // sequences beyond the slots kept for the prefix cache
  int32_t active = 0;       // slots running a request
  int32_t queued = 0;       // requests waiting for a slot
  uint64_t kv_bytes_in_use = 0;   // positions held, running requests and cached prefixes
  uint64_t kv_bytes_planned = 0;  // every sequence's KV, as planned
  uint64_t prefix_cache_hits = 0;    // requests that reused cached positions
  uint64_t prefix_cache_tokens = 0;  // prompt tokens reused (not run again)
  uint64_t prefix_cache_evictions = 0;  // cached sequences overwritten (least recently used first)
};

// Observations the scheduler reports as they happen (for /metrics).
struct SchedulerObserver {
  virtual ~SchedulerObserver() = default;
  virtual void on_first_token(double seconds) = 0;     // submit to first token
  virtual void on_inter_token(double seconds) = 0;     // between a request's tokens
  virtual void on_tokens(int32_t prompt, int32_t generated) = 0;
};

class Scheduler {
 public:
  enum class Submit { kAccepted, kQueueFull, kDraining };
  virtual ~Scheduler() = default;
  // Takes the request; kAccepted means on_done will be called.
  virtual Submit submit(std::shared_ptr<GenerationRequest> request) = 0;
  virtual SchedulerStats stats() const = 0;
  // Stops taking requests, finishes those accepted, returns when idle.
  virtual void drain() = 0;
  // The context each slot holds (prompt + generated tokens).
  virtual int32_t context_length() const = 0;
};

struct BatchedConfig {
  int32_t slots = 1;        // requests decoded at once
  int32_t cache_slots = 0;  // extra sequences that keep finished requests' prefixes
  int32_t max_queue = 64;
  // A cached prefix shorter than this is not worth taking another entry's
  // sequence for (an eviction victim's own prefix is always reused).
  int32_t min_prefix = 16;
  // n_seqs is set by the scheduler (slots + cache_slots). max_batch is the
  // rows of one step: every decoding slot's token, and the rows they leave
  // for prompt chunks.
  ember_session_options session{};
  // Speculative decoding by prompt lookup for every request (session.max_draft
  // must be at least draft_max): ember_generate_options' fields of that name.
  int lookup = 0;
  int32_t draft_max = 0;
  int32_t lookup_ngram = 3;
  // Or a draft model (not owned; outlives the scheduler): the scheduler
  // makes its session of the same sequences and context, checked against
  // the target's (ember_session_check_draft), and every request drafts with
  // it (draft_max as above; lookup must be 0).
  ember_model* draft_model = nullptr;
};

// Creates the one session up front (so a start that does not fit fails
// before serving). On failure returns nullptr with *status and *error set:
// EMBER_ERR_UNSUPPORTED when the backend does not run n_seqs > 1.
std::unique_ptr<Scheduler> make_batched_scheduler(ember_model* model, const BatchedConfig& config,
                                                  SchedulerObserver* observer, ember_status* status,
                                                  std::string* error);

}  // namespace ember::serve

// The scheduler `ember serve` submits generation requests to.
//
// The interface is what the HTTP layer needs and no more: submit a request
// (prompt tokens, sampling, stop strings, a deadline, a cancellation flag,
// and two callbacks), read counters for /metrics, drain on shutdown. It is
// meant to outlive its first implementation:
//
//   RoundRobinScheduler (today): N slots, each with its own ember session and
//   KV cache, stepped one token each, in turn, by one scheduler thread.
//   Honest about the cost: it is NOT batched — every weight is read once per
//   sequence per step, so N streams decode at about 1/N the speed each.
//   Prompts are prefilled in chunks (--batch tokens per step) between the
//   other slots' tokens, so a long prompt delays the others by a chunk, not
//   the whole prompt.
//
//   A batched implementation (issue 15 item 1, later) keeps this interface:
//   one step decodes all active slots at once (each weight read once for all
//   of them), a new request joins between steps, and a prefix cache fills
//   GenerationResult::cached_tokens. Nothing above this header changes.
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
  int32_t cached_tokens = 0;  // prompt tokens whose KV came from a prefix cache (0: there is none yet)
  std::string error;          // for Finish::kError
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // exact ids (BOS included when wanted)
  // Sampling fields of ember_generate_options (temperature, top_k, top_p,
  // min_p, seed) and max_new_tokens; the prompt fields are unused.
  ember_generate_options sampling{};
  std::vector<std::string> stop;  // stop strings: the text ends before the first one found
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Set by the HTTP layer (client gone); the scheduler frees the slot at its
  // next step and finishes with Finish::kCancelled.
  std::atomic<bool> cancelled{false};
  // Text as it becomes final (held back while it could be the start of a
  // stop string). Never called after on_done.
  std::function<void(std::string_view text)> on_text;
  // Called exactly once, when the request leaves the scheduler.
  std::function<void(const GenerationResult&)> on_done;
  // Filled by the scheduler, for metrics.
  std::chrono::steady_clock::time_point submitted{};
};

struct SchedulerStats {
  int32_t slots = 0;
  int32_t active = 0;       // slots running a request
  int32_t queued = 0;       // requests waiting for a slot
  uint64_t kv_bytes_in_use = 0;
  uint64_t kv_bytes_planned = 0;
  uint64_t prefix_cache_hits = 0;  // 0: there is no prefix cache yet
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

struct RoundRobinConfig {
  int32_t slots = 1;
  int32_t max_queue = 64;
  int32_t prefill_chunk = 512;
  ember_session_options session{};  // per slot; thread_pool is set by the scheduler
};

// Creates the slots' sessions up front (so a start that does not fit fails
// before serving). On failure returns nullptr with *error set.
std::unique_ptr<Scheduler> make_round_robin_scheduler(ember_model* model, const RoundRobinConfig& config,
                                                      SchedulerObserver* observer, std::string* error);

// The longest prefix of `pending` that can be sent: all of it unless its
// tail could begin a stop string. *stop_at is set to the offset of the first
// complete stop string (npos when none); the text to send is then
// pending[0, stop_at).
size_t releasable_prefix(std::string_view pending, const std::vector<std::string>& stop, size_t* stop_at);

}  // namespace ember::serve

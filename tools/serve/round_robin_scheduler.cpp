// RoundRobinScheduler: N sessions stepped in turn by one thread (see
// scheduler.h for why this is not yet batched, and what replaces it).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "tools/serve/scheduler.h"
#include "tools/serve/text_stream.h"

namespace ember::serve {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Slot {
  ember_session* session = nullptr;
  ember_sampler* sampler = nullptr;
  std::shared_ptr<GenerationRequest> request;
  size_t prefilled = 0;         // prompt tokens run so far
  std::vector<int32_t> history; // prompt + generated, for the sampler's penalty
  int32_t last = -1;            // the last token, to decode next
  int32_t generated = 0;
  std::unique_ptr<TextStream> text;  // stop strings and whole UTF-8 characters
  Clock::time_point last_token{};
};

class RoundRobinScheduler final : public Scheduler {
 public:
  RoundRobinScheduler(ember_model* model, const RoundRobinConfig& config, SchedulerObserver* observer)
      : model_(model), config_(config), observer_(observer) {}

  ~RoundRobinScheduler() override {
    drain();
    for (auto& s : slots_) {
      ember_sampler_free(s.sampler);
      ember_session_free(s.session);
    }
    ember_threadpool_free(pool_);
  }

  bool init(std::string* error) {
    ember_model_info info;
    info.struct_size = sizeof info;
    ember_model_get_info(model_, &info);
    vocab_ = info.vocab_size;
    eos_ = info.eos_id;
    bos_ = info.bos_id;
    logits_.resize(static_cast<size_t>(vocab_));
    int32_t threads = config_.session.n_threads;
    if (threads <= 0) threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    if (ember_threadpool_create(threads, &pool_) != EMBER_OK) {
      *error = ember_last_error();
      return false;
    }
    ember_session_options so = config_.session;
    so.thread_pool = pool_;
    slots_.resize(static_cast<size_t>(config_.slots));
    for (auto& s : slots_) {
      if (ember_session_create(model_, &so, &s.session) != EMBER_OK) {
        *error = ember_last_error();
        return false;
      }
    }
    ember_memory_plan plan;
    plan.struct_size = sizeof plan;
    if (ember_plan(model_, &so, &plan) == EMBER_OK) {
      kv_planned_per_slot_ = plan.kv_bytes;
      ctx_ = plan.context_length;
    }
    thread_ = std::thread([this] { run(); });
    return true;
  }

  Submit submit(std::shared_ptr<GenerationRequest> request) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_) return Submit::kDraining;
    // Free slots take requests at the next step; only the rest wait.
    const int32_t free_slots = static_cast<int32_t>(slots_.size()) - active_;
    if (static_cast<int32_t>(queue_.size()) - free_slots >= config_.max_queue) return Submit::kQueueFull;
    request->submitted = Clock::now();
    queue_.push_back(std::move(request));
    wake_.notify_one();
    return Submit::kAccepted;
  }

  SchedulerStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    SchedulerStats s;
    s.batched = false;
    s.slots = static_cast<int32_t>(slots_.size());
    s.active = active_;
    s.queued = static_cast<int32_t>(queue_.size());
    s.kv_bytes_planned = kv_planned_per_slot_ * slots_.size();
    s.kv_bytes_in_use = kv_in_use_;
    return s;
  }

  void drain() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      draining_ = true;
      wake_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  int32_t context_length() const override { return ctx_; }

 private:
  void finish(Slot& s, Finish why, std::string error = {}) {
    GenerationRequest& r = *s.request;
    if (why != Finish::kError && why != Finish::kCancelled && s.text) {
      std::string rest;
      s.text->flush(&rest);
      if (!rest.empty() && r.on_text) r.on_text(rest);
    }
    GenerationResult res;
    res.finish = why;
    res.prompt_tokens = static_cast<int32_t>(r.prompt.size());
    res.completion_tokens = s.generated;
    res.error = std::move(error);
    if (observer_) observer_->on_tokens(static_cast<int32_t>(s.prefilled), s.generated);
    if (r.on_done) r.on_done(res);
    ember_sampler_free(s.sampler);
    ember_session* session = s.session;
    s = Slot();
    s.session = session;
    std::lock_guard<std::mutex> lock(mutex_);
    --active_;
  }

  // Takes the next queued request into a free slot; false when none.
  bool admit(Slot& s) {
    std::shared_ptr<GenerationRequest> r;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) return false;
      r = std::move(queue_.front());
      queue_.pop_front();
      ++active_;
    }
    s.request = std::move(r);
    ember_session_reset(s.session);
    if (ember_sampler_create(model_, &s.request->sampling, &s.sampler) != EMBER_OK) {
      finish(s, Finish::kError, ember_last_error());
      return true;
    }
    s.history = s.request->prompt;
    s.text = std::make_unique<TextStream>(s.request->stop);
    return true;
  }

  // Emits the token's text and decides whether the request is done.
  void take_token(Slot& s, int32_t token) {
    GenerationRequest& r = *s.request;
    const auto now = Clock::now();
    if (observer_) {
      if (s.generated == 0) {
        observer_->on_first_token(seconds_between(r.submitted, now));
      } else {
        observer_->on_inter_token(seconds_between(s.last_token, now));
      }
    }
    s.last_token = now;
    // End of generation: the vocabulary's end set (EOS, EOT, <|im_end|>,
    // ...), or BOS for llama2.c vocabularies (as ember_generate).
    if (ember_token_is_eog(model_, token) || token == eos_ || token == bos_) {
      finish(s, Finish::kStop);
      return;
    }
    ++s.generated;
    const std::string piece = token_piece(model_, s.last, token);
    s.last = token;
    s.history.push_back(token);
    std::string out;
    const bool stopped = s.text->push(token, piece, &out);
    if (!out.empty() && r.on_text) r.on_text(out);
    if (stopped) {
      s.text.reset();
      finish(s, Finish::kStop);
      return;
    }
    if (s.generated >= r.sampling.max_new_tokens || ember_session_position(s.session) >= ctx_) {
      finish(s, Finish::kLength);
    }
  }

  // One step of one slot: a prefill chunk or one decoded token.
  void step(Slot& s) {
    GenerationRequest& r = *s.request;
    if (r.cancelled.load(std::memory_order_relaxed)) return finish(s, Finish::kCancelled);
    if (Clock::now() > r.deadline) return finish(s, Finish::kTimeout);
    if (s.prefilled < r.prompt.size()) {
      const size_t n = std::min(r.prompt.size() - s.prefilled, static_cast<size_t>(config_.prefill_chunk));
      const bool last_chunk = s.prefilled + n == r.prompt.size();
      if (ember_session_prefill(s.session, r.prompt.data() + s.prefilled, n, last_chunk ? logits_.data() : nullptr) !=
          EMBER_OK) {
        return finish(s, Finish::kError, ember_last_error());
      }
      s.prefilled += n;
      if (!last_chunk) return;
      s.last = r.prompt.back();
      if (r.sampling.max_new_tokens == 0) return finish(s, Finish::kLength);
    } else {
      if (ember_session_decode(s.session, s.last, logits_.data()) != EMBER_OK) {
        return finish(s, Finish::kError, ember_last_error());
      }
    }
    int32_t token = 0;
    if (ember_sampler_sample(s.sampler, logits_.data(), s.history.data(), s.history.size(), &token) != EMBER_OK) {
      return finish(s, Finish::kError, ember_last_error());
    }
    take_token(s, token);
  }

  void update_kv_in_use() {
    uint64_t positions = 0;
    for (const auto& s : slots_) {
      if (s.request) positions += static_cast<uint64_t>(ember_session_position(s.session));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    kv_in_use_ = ctx_ > 0 ? kv_planned_per_slot_ * positions / static_cast<uint64_t>(ctx_) : 0;
  }

  void run() {
    while (true) {
      for (auto& s : slots_) {
        if (!s.request) admit(s);
      }
      bool any = false;
      for (auto& s : slots_) {
        if (!s.request) continue;
        any = true;
        step(s);
      }
      update_kv_in_use();
      if (any) continue;
      std::unique_lock<std::mutex> lock(mutex_);
      if (!queue_.empty()) continue;
      if (draining_) return;
      wake_.wait(lock, [this] { return !queue_.empty() || draining_; });
    }
  }

  ember_model* model_;
  RoundRobinConfig config_;
  SchedulerObserver* observer_;
  ember_threadpool* pool_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<float> logits_;  // one buffer: the slots step one at a time
  int32_t vocab_ = 0, eos_ = -1, bos_ = -1, ctx_ = 0;
  uint64_t kv_planned_per_slot_ = 0;
  std::thread thread_;

  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable wake_;
  std::deque<std::shared_ptr<GenerationRequest>> queue_;
  int32_t active_ = 0;
  bool draining_ = false;
  uint64_t kv_in_use_ = 0;
};

}  // namespace

std::unique_ptr<Scheduler> make_round_robin_scheduler(ember_model* model, const RoundRobinConfig& config,
                                                      SchedulerObserver* observer, std::string* error) {
  auto s = std::make_unique<RoundRobinScheduler>(model, config, observer);
  if (!s->init(error)) return nullptr;
  return s;
}

}  // namespace ember::serve

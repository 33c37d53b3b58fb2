// BatchedScheduler: every running request is a sequence of one session,
// driven by one generator (ember_generator_*), so each step runs them all
// through one batched decode and every weight is read once per step for all
// of them (scheduler.h; docs/decisions.md "Serving: the batched scheduler
// and the prefix cache"). What stays here is the serving policy: the queue,
// which sequence a request takes (the prefix cache), deadlines and
// cancellation, and the counters; the per-token rules are the generator's.
//
// Sequences: the session holds slots + cache_slots. A running request owns
// one; when it ends, the sequence keeps its tokens and KV as a cache entry
// (idle). A new request takes the sequence whose tokens share the longest
// prefix with its prompt, or a copy of it, and the generator (reuse_prefix)
// runs only the rest.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "tools/serve/scheduler.h"

namespace ember::serve {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

struct Sequence {
  int32_t slot = -1;            // the slot running on it; -1: idle (a cache entry, or empty)
  uint64_t last_used = 0;       // when it was last released (least recently used: smallest)
};

struct Slot {
  std::shared_ptr<GenerationRequest> request;
  int32_t seq = -1;
  bool timed_out = false;       // cancelled because the deadline passed
  int32_t cached = 0;           // prompt tokens reused from the cache
  int32_t generated = 0;        // tokens released; at the end, tokens produced
  Clock::time_point last_token{};
};

class BatchedScheduler final : public Scheduler {
 public:
  BatchedScheduler(ember_model* model, const BatchedConfig& config, SchedulerObserver* observer)
      : model_(model), config_(config), observer_(observer) {}

  ~BatchedScheduler() override {
    drain();
    ember_generator_free(generator_);
    ember_session_free(draft_);
    ember_session_free(session_);
  }

  ember_status init(std::string* error) {
    ember_session_options so = config_.session;
    so.n_seqs = config_.slots + config_.cache_slots;
    ember_memory_plan plan;
    plan.struct_size = sizeof plan;
    ember_status st = ember_plan(model_, &so, &plan);
    if (st == EMBER_OK) st = ember_session_create(model_, &so, &session_);
    if (st == EMBER_OK && config_.draft_model) {
      ember_session_options dso = so;
      dso.max_draft = 0;
      dso.context_length = plan.context_length;
      st = ember_session_create(config_.draft_model, &dso, &draft_);
      if (st == EMBER_OK) st = ember_session_check_draft(session_, draft_);
      if (st != EMBER_OK) {
        *error = std::string("the draft model: ") + ember_last_error();
        return st;
      }
    }
    ember_generator_options go;
    ember_generator_options_default(&go);
    go.max_step_rows = std::max<int32_t>(1, plan.max_batch);
    if (st == EMBER_OK) st = ember_generator_create(session_, &go, &generator_);
    if (st != EMBER_OK) {
      *error = ember_last_error();
      return st;
    }
    kv_planned_ = plan.kv_bytes;
    ctx_ = plan.context_length;
    ember_model_info info;
    info.struct_size = sizeof info;
    ember_model_get_info(model_, &info);
    bos_ = info.bos_id;
    seqs_.resize(static_cast<size_t>(so.n_seqs));
    slots_.resize(static_cast<size_t>(config_.slots));
    slot_of_seq_.assign(seqs_.size(), -1);
    thread_ = std::thread([this] { run(); });
    return EMBER_OK;
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
    SchedulerStats s = stats_;
    s.slots = static_cast<int32_t>(slots_.size());
    s.cache_slots = config_.cache_slots;
    s.active = active_;
    s.queued = static_cast<int32_t>(queue_.size());
    s.kv_bytes_planned = kv_planned_;
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
  // The request leaves its slot; its sequence stays as a cache entry.
  void finish(Slot& s, Finish why, std::string error = {}) {
    // Held until on_done has run, after the slot is free again: a host that
    // reads stats() once it is told the request is done sees it gone.
    const std::shared_ptr<GenerationRequest> request = s.request;
    GenerationResult res;
    res.finish = why;
    res.prompt_tokens = static_cast<int32_t>(request->prompt.size());
    res.completion_tokens = s.generated;
    res.cached_tokens = s.cached;
    res.error = std::move(error);
    if (observer_) observer_->on_tokens(res.prompt_tokens - s.cached, s.generated);
    if (s.seq >= 0) {
      seqs_[static_cast<size_t>(s.seq)].slot = -1;
      seqs_[static_cast<size_t>(s.seq)].last_used = ++tick_;
      slot_of_seq_[static_cast<size_t>(s.seq)] = -1;
    }
    s = Slot();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
    }
    if (request->on_done) request->on_done(res);
  }

  // The tokens sequence seq holds (into held_[seq]).
  const std::vector<int32_t>& held(int32_t seq) {
    std::vector<int32_t>& h = held_[static_cast<size_t>(seq)];
    size_t n = 0;
    if (ember_session_seq_tokens(session_, seq, nullptr, 0, &n) == EMBER_ERR_BUFFER_TOO_SMALL) {
      h.resize(n);
      if (ember_session_seq_tokens(session_, seq, h.data(), h.size(), &n) != EMBER_OK) n = 0;
    }
    h.resize(n);
    return h;
  }

  // Chooses the sequence slot s's request runs on: the one holding the
  // longest prefix of its prompt (at most prompt - 1 tokens: the last one
  // runs again, for its logits), taken as it is or copied to a victim; the
  // generator then keeps that prefix and runs the rest. -1 with *error set.
  int32_t place(Slot& s, std::string* error) {
    const std::vector<int32_t>& prompt = s.request->prompt;
    const size_t most = prompt.size() - 1;
    held_.resize(seqs_.size());
    for (size_t i = 0; i < seqs_.size(); ++i) held(static_cast<int32_t>(i));
    // The best source: the longest prefix; among equals an idle one (taken
    // without a copy), then the one with the least beyond it.
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < seqs_.size(); ++i) {
      const size_t len = std::min(common_prefix(held_[i], prompt), most);
      if (len == 0) continue;
      bool better = len > best_len;
      if (!better && best >= 0 && len == best_len) {
        const Sequence& q = seqs_[i];
        const Sequence& b = seqs_[static_cast<size_t>(best)];
        if ((q.slot < 0) != (b.slot < 0)) better = q.slot < 0;
        else better = held_[i].size() < held_[static_cast<size_t>(best)].size();
      }
      if (better) {
        best = static_cast<int32_t>(i);
        best_len = len;
      }
    }
    // The victim, where positions are written: an empty idle sequence, else
    // the least recently used idle one (for a copy, other than the source).
    // One exists: fewer slots run than there are sequences.
    auto victim_except = [&](int32_t except) {
      int32_t v = -1;
      for (size_t i = 0; i < seqs_.size(); ++i) {
        const Sequence& q = seqs_[i];
        if (q.slot >= 0 || static_cast<int32_t>(i) == except) continue;
        if (v >= 0) {
          const Sequence& w = seqs_[static_cast<size_t>(v)];
          if (held_[static_cast<size_t>(v)].empty() || (!held_[i].empty() && q.last_used >= w.last_used)) continue;
        }
        v = static_cast<int32_t>(i);
      }
      return v;
    };
    const int32_t victim = victim_except(best);
    const size_t min_prefix = static_cast<size_t>(std::max<int32_t>(1, config_.min_prefix));
    int32_t seq = -1;
    if (best >= 0 && best_len >= min_prefix) {
      const Sequence& src = seqs_[static_cast<size_t>(best)];
      // An idle entry is taken as it is when that loses little (what it holds
      // beyond the prefix is short) or nothing else is free; otherwise (a
      // running request's sequence, or an entry worth keeping: another
      // conversation on the same system prompt) its prefix is copied.
      const bool take =
          src.slot < 0 && (held_[static_cast<size_t>(best)].size() - best_len < min_prefix || victim < 0);
      if (take) {
        seq = best;
      } else if (victim >= 0) {
        // A sliding-window ring may no longer hold what the copy's window
        // reads (EMBER_ERR_UNSUPPORTED): then no copy, the prompt runs.
        if (ember_session_seq_copy(session_, best, victim, static_cast<int32_t>(best_len)) == EMBER_OK) {
          if (!held_[static_cast<size_t>(victim)].empty()) ++evictions_;
          seq = victim;
        }
      }
    }
    if (seq < 0) {
      // No prefix worth the trouble: the victim, with whatever prefix it has.
      seq = victim_except(-1);
      if (seq < 0) {  // unreachable: there is always an idle sequence
        *error = "no idle sequence (scheduler bug)";
        return -1;
      }
      if (held_[static_cast<size_t>(seq)].size() > std::min(common_prefix(held_[static_cast<size_t>(seq)], prompt), most)) {
        ++evictions_;
      }
    }
    return seq;
  }

  // Takes queued requests into free slots (between steps) and starts them.
  void admit() {
    for (auto& s : slots_) {
      if (s.request) continue;
      std::shared_ptr<GenerationRequest> r;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.empty()) return;
        r = std::move(queue_.front());
        queue_.pop_front();
        ++active_;
      }
      s.request = std::move(r);
      GenerationRequest& req = *s.request;
      if (req.prompt.empty()) {
        finish(s, Finish::kError, "the prompt is empty");
        continue;
      }
      std::string error;
      const int32_t seq = place(s, &error);
      if (seq < 0) {
        finish(s, Finish::kError, "the prefix cache: " + error);
        continue;
      }
      ember_generate_options o = req.sampling;
      o.struct_size = sizeof o;
      o.prompt_tokens = req.prompt.data();
      o.n_prompt_tokens = req.prompt.size();
      o.reuse_prefix = 1;
      std::vector<const char*>& stops = stop_ptrs_;
      stops.clear();
      for (const std::string& x : req.stop) stops.push_back(x.c_str());
      o.stop_strings = stops.data();
      o.n_stop_strings = stops.size();
      o.logit_bias = req.logit_bias.data();
      o.n_logit_bias = req.logit_bias.size();
      o.grammar = req.grammar.get();
      o.lookup = config_.lookup;
      o.draft_max = config_.draft_max;
      o.lookup_ngram = config_.lookup_ngram;
      o.draft_session = draft_;
      if (ember_generator_start(generator_, seq, nullptr, &o) != EMBER_OK) {
        finish(s, Finish::kError, ember_last_error());
        continue;
      }
      ember_generate_stats st;
      st.struct_size = sizeof st;
      ember_generator_seq_stats(generator_, seq, &st);
      s.seq = seq;
      s.cached = st.reused_tokens;
      seqs_[static_cast<size_t>(seq)].slot = static_cast<int32_t>(&s - slots_.data());
      slot_of_seq_[static_cast<size_t>(seq)] = static_cast<int32_t>(&s - slots_.data());
      if (s.cached > 0) {
        ++hits_;
        cached_tokens_ += static_cast<uint64_t>(s.cached);
      }
    }
  }

  static Finish finish_of(int32_t reason) {
    switch (reason) {
      case EMBER_STOP_MAX_TOKENS:
      case EMBER_STOP_CONTEXT_FULL: return Finish::kLength;
      case EMBER_STOP_CANCELLED: return Finish::kCancelled;
      case EMBER_STOP_ERROR: return Finish::kError;
      default: return Finish::kStop;  // end of generation, a stop string
    }
  }

  // The generator's events: text and tokens to the request, its end.
  static int on_event(void* self, const ember_generator_event* e) {
    auto* me = static_cast<BatchedScheduler*>(self);
    const int32_t slot = me->slot_of_seq_[static_cast<size_t>(e->seq)];
    if (slot < 0) return 0;
    Slot& s = me->slots_[static_cast<size_t>(slot)];
    GenerationRequest& r = *s.request;
    if (e->finish != EMBER_STOP_NONE) {
      if (e->text_len && r.on_text) r.on_text(std::string_view(e->text, e->text_len));
      // Usage counts every token the model produced but an end token (those
      // of a stop string too, though their text is never sent). A grammar
      // that finished ends the sequence after a text token: that one counts.
      ember_generate_stats st;
      st.struct_size = sizeof st;
      if (ember_generator_seq_stats(me->generator_, e->seq, &st) == EMBER_OK) {
        const bool end_token = e->finish == EMBER_STOP_END && st.last_token >= 0 &&
                               (ember_token_is_eog(me->model_, st.last_token) || st.last_token == me->bos_);
        s.generated = st.sampled_tokens - (end_token ? 1 : 0);
      }
      Finish why = finish_of(e->finish);
      if (why == Finish::kCancelled && s.timed_out) why = Finish::kTimeout;
      me->finish(s, why, e->status != EMBER_OK ? e->message : "");
      return 0;
    }
    const auto now = Clock::now();
    if (me->observer_) {
      if (s.generated == 0) {
        me->observer_->on_first_token(seconds_between(r.submitted, now));
      } else {
        me->observer_->on_inter_token(seconds_between(s.last_token, now));
      }
    }
    s.last_token = now;
    ++s.generated;
    if (r.on_token) {
      me->token_.token = e->token;
      me->token_.logprob = e->logprob;
      me->token_.top.assign(e->top_logprobs, e->top_logprobs + e->n_top_logprobs);
      r.on_token(me->token_);
    }
    if (e->text_len && r.on_text) r.on_text(std::string_view(e->text, e->text_len));
    return 0;
  }

  // One step: every running request's next token and prompt chunks, as one
  // generator step. False when nothing runs.
  bool step() {
    // Cancelled and late requests end at this step, before the newcomers
    // take sequences.
    for (auto& s : slots_) {
      if (!s.request || s.seq < 0) continue;
      if (s.request->cancelled.load(std::memory_order_relaxed)) {
        ember_generator_cancel(generator_, s.seq);
      } else if (Clock::now() > s.request->deadline) {
        s.timed_out = true;
        ember_generator_cancel(generator_, s.seq);
      }
    }
    admit();
    if (ember_generator_active(generator_, -1) == 0) return false;
    if (ember_generator_step(generator_, &BatchedScheduler::on_event, this) != EMBER_OK) {
      // Only a generator fault gets here: every running request fails.
      const std::string error = ember_last_error();
      for (auto& s : slots_) {
        if (s.request && s.seq >= 0) {
          ember_generator_cancel(generator_, s.seq);
          finish(s, Finish::kError, error);
        }
      }
      (void)ember_generator_step(generator_, nullptr, nullptr);  // ends the cancelled sequences
    }
    return true;
  }

  void publish_stats() {
    uint64_t positions = 0;
    for (size_t i = 0; i < seqs_.size(); ++i) {
      positions += static_cast<uint64_t>(std::max(0, ember_session_seq_position(session_, static_cast<int32_t>(i))));
    }
    const uint64_t all = static_cast<uint64_t>(ctx_) * seqs_.size();
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.kv_bytes_in_use = all ? kv_planned_ * positions / all : 0;
    stats_.prefix_cache_hits = hits_;
    stats_.prefix_cache_tokens = cached_tokens_;
    stats_.prefix_cache_evictions = evictions_;
  }

  void run() {
    while (true) {
      const bool ran = step();
      publish_stats();
      if (ran) continue;
      std::unique_lock<std::mutex> lock(mutex_);
      if (!queue_.empty()) continue;
      if (draining_ && active_ == 0) return;
      wake_.wait(lock, [this] { return !queue_.empty() || draining_; });
    }
  }

  ember_model* model_;
  BatchedConfig config_;
  SchedulerObserver* observer_;
  ember_session* session_ = nullptr;
  ember_session* draft_ = nullptr;  // config_.draft_model's session, or null
  ember_generator* generator_ = nullptr;
  std::vector<Sequence> seqs_;
  std::vector<Slot> slots_;
  std::vector<int32_t> slot_of_seq_;         // the slot running on each sequence, or -1
  std::vector<std::vector<int32_t>> held_;   // each sequence's tokens, read by place()
  std::vector<const char*> stop_ptrs_;
  TokenOut token_;                           // on_token's argument (reused)
  int32_t ctx_ = 0;
  int32_t bos_ = -1;  // ends a generation too (llama2.c vocabularies), as the generator says
  uint64_t kv_planned_ = 0, tick_ = 0;
  uint64_t hits_ = 0, cached_tokens_ = 0, evictions_ = 0;  // the scheduler thread's; published in stats_
  std::thread thread_;

  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable wake_;
  std::deque<std::shared_ptr<GenerationRequest>> queue_;
  int32_t active_ = 0;
  bool draining_ = false;
  SchedulerStats stats_;
};

}  // namespace

std::unique_ptr<Scheduler> make_batched_scheduler(ember_model* model, const BatchedConfig& config,
                                                  SchedulerObserver* observer, ember_status* status,
                                                  std::string* error) {
  auto s = std::make_unique<BatchedScheduler>(model, config, observer);
  *status = s->init(error);
  if (*status != EMBER_OK) return nullptr;
  return s;
}

}  // namespace ember::serve

// BatchedScheduler: every running request is a sequence of one session, and
// each step runs them all through one ember_session_decode_batch, so every
// weight is read once per step for all of them (scheduler.h;
// docs/decisions.md "Serving: the batched scheduler and the prefix cache").
//
// Sequences: the session holds slots + cache_slots. A running request owns
// one; when it ends, the sequence keeps its tokens and KV as a cache entry
// (idle). A new request takes the sequence whose tokens share the longest
// prefix with its prompt, or a copy of it, and runs only the rest.
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

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

struct Sequence {
  std::vector<int32_t> tokens;  // what its KV holds, position by position
  int32_t slot = -1;            // the slot running on it; -1: idle (a cache entry, or empty)
  uint64_t last_used = 0;       // when it was last released (least recently used: smallest)
};

struct Slot {
  std::shared_ptr<GenerationRequest> request;
  uint64_t admitted = 0;        // admission order: older prompts are prefilled first
  int32_t seq = -1;
  ember_sampler* sampler = nullptr;
  std::unique_ptr<TextStream> text;
  size_t prefilled = 0;         // prompt tokens in the sequence (reused or run)
  int32_t cached = 0;           // of which reused from the cache
  int32_t next = -1;            // the sampled token, run at the next step
  int32_t prev = -1;            // the token before it (for its piece)
  std::vector<int32_t> history; // prompt + generated, for the sampler's penalty
  int32_t generated = 0;
  Clock::time_point last_token{};
  std::vector<float> logits;    // vocab_size
  size_t chunk = 0;             // prompt tokens in this step's item (0: decoding)
};

class BatchedScheduler final : public Scheduler {
 public:
  BatchedScheduler(ember_model* model, const BatchedConfig& config, SchedulerObserver* observer)
      : model_(model), config_(config), observer_(observer) {}

  ~BatchedScheduler() override {
    drain();
    for (auto& s : slots_) ember_sampler_free(s.sampler);
    ember_session_free(session_);
  }

  ember_status init(std::string* error) {
    ember_model_info info;
    info.struct_size = sizeof info;
    ember_model_get_info(model_, &info);
    vocab_ = info.vocab_size;
    eos_ = info.eos_id;
    bos_ = info.bos_id;
    ember_session_options so = config_.session;
    so.n_seqs = config_.slots + config_.cache_slots;
    ember_memory_plan plan;
    plan.struct_size = sizeof plan;
    ember_status st = ember_plan(model_, &so, &plan);
    if (st == EMBER_OK) st = ember_session_create(model_, &so, &session_);
    if (st != EMBER_OK) {
      *error = ember_last_error();
      return st;
    }
    kv_planned_ = plan.kv_bytes;
    ctx_ = plan.context_length;
    step_rows_ = std::max<int32_t>(1, plan.max_batch);
    seqs_.resize(static_cast<size_t>(so.n_seqs));
    slots_.resize(static_cast<size_t>(config_.slots));
    for (auto& s : slots_) s.logits.resize(static_cast<size_t>(vocab_));
    items_.reserve(slots_.size());
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
    s.batched = true;
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
  void finish(Slot& s, Finish why, std::string error = {}) {
    // Held until on_done has run, after the slot is free again: a host that
    // reads stats() once it is told the request is done sees it gone.
    const std::shared_ptr<GenerationRequest> request = s.request;
    GenerationRequest& r = *request;
    if (why != Finish::kError && why != Finish::kCancelled && s.text) {
      std::string rest;
      s.text->flush(&rest);
      if (!rest.empty() && r.on_text) r.on_text(rest);
    }
    GenerationResult res;
    res.finish = why;
    res.prompt_tokens = static_cast<int32_t>(r.prompt.size());
    res.completion_tokens = s.generated;
    res.cached_tokens = s.cached;
    res.error = std::move(error);
    if (observer_) observer_->on_tokens(static_cast<int32_t>(s.prefilled) - s.cached, s.generated);
    ember_sampler_free(s.sampler);
    // The sequence keeps what it holds: a cache entry from now on.
    if (s.seq >= 0) {
      seqs_[static_cast<size_t>(s.seq)].slot = -1;
      seqs_[static_cast<size_t>(s.seq)].last_used = ++tick_;
    }
    std::vector<float> logits = std::move(s.logits);
    s = Slot();
    s.logits = std::move(logits);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
    }
    if (r.on_done) r.on_done(res);
  }

  // Sequence seq forgets positions from `keep` on; false (with the message
  // in ember_last_error) if the session refuses.
  bool trim(int32_t seq, size_t keep) {
    Sequence& q = seqs_[static_cast<size_t>(seq)];
    if (q.tokens.size() <= keep) return true;
    if (ember_session_seq_remove(session_, seq, static_cast<int32_t>(keep), static_cast<int32_t>(q.tokens.size())) !=
        EMBER_OK) {
      return false;
    }
    q.tokens.resize(keep);
    return true;
  }

  // Gives slot s a sequence holding the longest prefix of its prompt that
  // the cache has (at most prompt - 1 tokens: the last one runs again, for
  // its logits). Returns the tokens reused, or -1 with *error set.
  int32_t place(Slot& s, std::string* error) {
    const std::vector<int32_t>& prompt = s.request->prompt;
    const size_t most = prompt.size() - 1;
    // The best source: the longest prefix; among equals an idle one (taken
    // without a copy), then the one with the least beyond it.
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < seqs_.size(); ++i) {
      const Sequence& q = seqs_[i];
      const size_t len = std::min(common_prefix(q.tokens, prompt), most);
      if (len == 0) continue;
      bool better = len > best_len;
      if (!better && best >= 0 && len == best_len) {
        const Sequence& b = seqs_[static_cast<size_t>(best)];
        if ((q.slot < 0) != (b.slot < 0)) better = q.slot < 0;
        else better = q.tokens.size() < b.tokens.size();
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
          if (w.tokens.empty() || (!q.tokens.empty() && q.last_used >= w.last_used)) continue;
        }
        v = static_cast<int32_t>(i);
      }
      return v;
    };
    const int32_t victim = victim_except(best);
    const size_t min_prefix = static_cast<size_t>(std::max<int32_t>(1, config_.min_prefix));
    int32_t seq = -1;
    size_t reuse = 0;
    if (best >= 0 && best_len >= min_prefix) {
      const Sequence& src = seqs_[static_cast<size_t>(best)];
      // An idle entry is taken as it is when that loses little (what it holds
      // beyond the prefix is short) or nothing else is free; otherwise (a
      // running request's sequence, or an entry worth keeping: another
      // conversation on the same system prompt) its prefix is copied.
      const bool take = src.slot < 0 && (src.tokens.size() - best_len < min_prefix || victim < 0);
      if (take) {
        seq = best;
        reuse = best_len;
      } else if (victim >= 0) {
        // A sliding-window ring may no longer hold what the copy's window
        // reads (EMBER_ERR_UNSUPPORTED): then no copy, the prompt runs.
        if (ember_session_seq_copy(session_, best, victim, static_cast<int32_t>(best_len)) == EMBER_OK) {
          if (!seqs_[static_cast<size_t>(victim)].tokens.empty()) ++evictions_;
          Sequence& dst = seqs_[static_cast<size_t>(victim)];
          dst.tokens.assign(src.tokens.begin(), src.tokens.begin() + static_cast<std::ptrdiff_t>(best_len));
          seq = victim;
          reuse = best_len;
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
      const Sequence& q = seqs_[static_cast<size_t>(seq)];
      reuse = std::min(common_prefix(q.tokens, prompt), most);
      if (q.tokens.size() > reuse) ++evictions_;
    }
    if (!trim(seq, reuse)) {
      // A sliding-window ring cannot keep this prefix (its window would read
      // positions the ring dropped): the sequence starts over instead.
      reuse = 0;
      if (!trim(seq, 0)) {
        *error = ember_last_error();
        return -1;
      }
    }
    seqs_[static_cast<size_t>(seq)].slot = static_cast<int32_t>(&s - slots_.data());
    s.seq = seq;
    return static_cast<int32_t>(reuse);
  }

  // Takes queued requests into free slots (between steps).
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
      s.admitted = ++admissions_;
      if (s.request->prompt.empty()) {
        finish(s, Finish::kError, "the prompt is empty");
        continue;
      }
      if (ember_sampler_create(model_, &s.request->sampling, &s.sampler) != EMBER_OK) {
        finish(s, Finish::kError, ember_last_error());
        continue;
      }
      std::string error;
      const int32_t reuse = place(s, &error);
      if (reuse < 0) {
        finish(s, Finish::kError, "the prefix cache: " + error);
        continue;
      }
      s.cached = reuse;
      s.prefilled = static_cast<size_t>(reuse);
      s.history = s.request->prompt;
      s.prev = s.request->prompt.back();
      s.text = std::make_unique<TextStream>(s.request->stop);
      if (reuse > 0) {
        ++hits_;
        cached_tokens_ += static_cast<uint64_t>(reuse);
      }
    }
  }

  // Emits the token's text and decides whether the request is done; else
  // the token runs at the next step.
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
    if (ember_token_is_eog(model_, token) || token == eos_ || token == bos_) return finish(s, Finish::kStop);
    ++s.generated;
    const std::string piece = token_piece(model_, s.prev, token);
    s.prev = token;
    s.history.push_back(token);
    std::string out;
    const bool stopped = s.text->push(token, piece, &out);
    if (!out.empty() && r.on_text) r.on_text(out);
    if (stopped) {
      s.text.reset();
      return finish(s, Finish::kStop);
    }
    if (s.generated >= r.sampling.max_new_tokens) return finish(s, Finish::kLength);
    // The token runs at the next position: there must be one.
    if (static_cast<int32_t>(seqs_[static_cast<size_t>(s.seq)].tokens.size()) >= ctx_) {
      return finish(s, Finish::kLength);
    }
    s.next = token;
  }

  // After a step ran slot s's item: the sequence holds its tokens; sample
  // when the step gave logits.
  void after_step(Slot& s) {
    Sequence& q = seqs_[static_cast<size_t>(s.seq)];
    GenerationRequest& r = *s.request;
    if (s.chunk > 0) {
      q.tokens.insert(q.tokens.end(), r.prompt.begin() + static_cast<std::ptrdiff_t>(s.prefilled),
                      r.prompt.begin() + static_cast<std::ptrdiff_t>(s.prefilled + s.chunk));
      s.prefilled += s.chunk;
      s.chunk = 0;
      if (s.prefilled < r.prompt.size()) return;
      if (r.sampling.max_new_tokens <= 0) return finish(s, Finish::kLength);
    } else {
      q.tokens.push_back(s.next);
    }
    int32_t token = 0;
    if (ember_sampler_sample(s.sampler, s.logits.data(), s.history.data(), s.history.size(), &token) != EMBER_OK) {
      return finish(s, Finish::kError, ember_last_error());
    }
    take_token(s, token);
  }

  ember_batch_item item_of(Slot& s) const {
    ember_batch_item it;
    it.seq = s.seq;
    if (s.chunk > 0) {
      it.tokens = s.request->prompt.data() + s.prefilled;
      it.n_tokens = s.chunk;
      it.logits = s.prefilled + s.chunk == s.request->prompt.size() ? s.logits.data() : nullptr;
    } else {
      it.tokens = &s.next;
      it.n_tokens = 1;
      it.logits = s.logits.data();
    }
    return it;
  }

  // One step: every running request's next token and prompt chunks, as one
  // call. False when nothing runs.
  bool step() {
    // Cancelled and late requests leave first; their sequences are free
    // for this step's newcomers.
    for (auto& s : slots_) {
      if (!s.request) continue;
      if (s.request->cancelled.load(std::memory_order_relaxed)) finish(s, Finish::kCancelled);
      else if (Clock::now() > s.request->deadline) finish(s, Finish::kTimeout);
    }
    admit();
    // Rows: one per decoding slot; the rest of the step's rows go to
    // prompts, oldest request first (at least one row, so a prompt always
    // advances).
    int32_t decoding = 0;
    std::vector<Slot*>& order = order_;
    order.clear();
    for (auto& s : slots_) {
      if (!s.request) continue;
      if (s.prefilled < s.request->prompt.size()) order.push_back(&s);
      else ++decoding;
    }
    std::sort(order.begin(), order.end(), [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });
    size_t budget = static_cast<size_t>(std::max(1, step_rows_ - decoding));
    for (Slot* s : order) {
      if (budget == 0) break;
      s->chunk = std::min(s->request->prompt.size() - s->prefilled, budget);
      budget -= s->chunk;
    }
    items_.clear();
    running_.clear();
    for (auto& s : slots_) {
      if (!s.request) continue;
      if (s.prefilled < s.request->prompt.size() && s.chunk == 0) continue;  // waits for rows
      items_.push_back(item_of(s));
      running_.push_back(&s);
    }
    if (items_.empty()) return false;
    if (ember_session_decode_batch(session_, items_.data(), items_.size()) == EMBER_OK) {
      for (Slot* s : running_) after_step(*s);
    } else {
      // Nothing ran. Each item alone, so that one bad request fails alone.
      for (size_t i = 0; i < running_.size(); ++i) {
        Slot& s = *running_[i];
        if (ember_session_decode_batch(session_, &items_[i], 1) == EMBER_OK) {
          after_step(s);
        } else {
          s.chunk = 0;
          finish(s, Finish::kError, ember_last_error());
        }
      }
    }
    return true;
  }

  void publish_stats() {
    uint64_t positions = 0;
    for (const auto& q : seqs_) positions += q.tokens.size();
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
  std::vector<Sequence> seqs_;
  std::vector<Slot> slots_;
  std::vector<ember_batch_item> items_;  // this step's, one per running slot
  std::vector<Slot*> running_, order_;
  int32_t vocab_ = 0, eos_ = -1, bos_ = -1, ctx_ = 0, step_rows_ = 1;
  uint64_t kv_planned_ = 0, tick_ = 0, admissions_ = 0;
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

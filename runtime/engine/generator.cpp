#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace ember {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

const SequenceStats kNoStats;
const std::vector<int32_t> kNoPrompt;

}  // namespace

// One sequence's generation. Lifetime: the generator's; reused by later
// starts on the same sequence (its buffers are kept).
struct Generator::Seq {
  int32_t index = 0;
  bool active = false;
  bool cancel = false;
  uint64_t started = 0;      // start order
  std::vector<int32_t> prompt;
  size_t prefilled = 0;      // prompt tokens in the sequence (kept or run)
  size_t chunk = 0;          // prompt tokens in this step's item (0: decoding)
  int32_t next = -1;         // the sampled token, run at the next step
  int32_t prev = -1;         // the token before it (for its piece)
  SequenceParams params;
  Sampler sampler;
  TextOut text;
  std::vector<float> logits;  // vocab_size per row: this step's output rows for the sequence
  // Speculative decoding: this step's rows (next, then the drafts), the
  // draft length the acceptance so far allows, the cap.
  std::vector<int32_t> spec_tokens;
  int32_t n_draft = 0;
  int32_t draft_len = 0;
  int32_t draft_cap = 0;
  // Steps in a row whose drafts were all rejected, and the steps left
  // without drafting (a back-off that grows with them; see after_step).
  int32_t misses = 0;
  int32_t pause = 0;
  int32_t gated = 0;  // steps it skipped drafting while sharing them (see paused)
  // A draft model: positions its sequence holds that are this sequence's
  // (-1: not compared yet), its logits, the tokens of its next item.
  int32_t draft_held = -1;
  std::vector<float> draft_logits;
  std::vector<int32_t> draft_feed;
  std::vector<float> work;    // the sampler's copy (log-probabilities, a constraint)
  uint32_t grammar_state = 0; // the constraint's matcher state (params.grammar)
  // Log-probabilities of sampled tokens not yet released (held back by the
  // stop strings), oldest at `pending_head`.
  struct Pending {
    int32_t token = 0;
    float logprob = 0.0f;
    int32_t n_top = 0;
    TokenLogprob top[kMaxTopLogprobs];
  };
  std::vector<Pending> pending;
  size_t pending_head = 0;
  SequenceStats stats;
  double t0 = 0, t_first = 0;
};

// What a TextOut release needs to become a GenEvent.
struct Generator::Relay {
  Seq* q;
  GenSink sink;
  void* user;
};

Status tokenize_prompt(const Tokenizer& tokenizer, std::string_view text, bool parse_special, int add_bos,
                       std::vector<int32_t>* out) {
  out->clear();
  EncodeOptions eo;
  eo.parse_special = parse_special;
  EMBER_TRY(tokenizer.encode(text, eo, out));
  const Vocab& vocab = tokenizer.vocab();
  const bool want_bos = add_bos < 0 ? vocab.add_bos && vocab.bos_id >= 0 : add_bos != 0;
  if (want_bos && vocab.bos_id >= 0 && (out->empty() || (*out)[0] != vocab.bos_id)) {
    out->insert(out->begin(), vocab.bos_id);
  }
  return Status::ok();
}

Result<std::unique_ptr<Generator>> Generator::create(Session& session, const GeneratorOptions& options) {
  if (options.max_step_rows < 0 || options.max_step_rows > 65536) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_step_rows = %d: must be in 0..65536 (0 = the session's %d)",
                         options.max_step_rows, session.max_batch());
  }
  if (session.embeddings()) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "the session was made for embeddings (its steps output hidden states, not logits): "
                         "generation needs a session made without the embeddings option");
  }
  const int32_t rows = options.max_step_rows > 0 ? options.max_step_rows : session.max_batch();
  std::unique_ptr<Generator> g(new (std::nothrow) Generator(session, rows));
  if (!g) return Status::error(EMBER_ERR_NO_MEMORY, "cannot allocate the generator");
  g->seqs_.resize(static_cast<size_t>(session.n_seqs()));
  g->items_.reserve(g->seqs_.size());
  g->running_.reserve(g->seqs_.size());
  g->order_.reserve(g->seqs_.size());
  g->piece_.reserve(256);
  return g;
}

Generator::Generator(Session& session, int32_t rows) : session_(session), rows_(rows) {}
Generator::~Generator() = default;

bool Generator::active(int32_t seq) const {
  return seq >= 0 && static_cast<size_t>(seq) < seqs_.size() && seqs_[seq] && seqs_[seq]->active;
}

const SequenceStats& Generator::stats(int32_t seq) const {
  if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size() || !seqs_[seq]) return kNoStats;
  return seqs_[seq]->stats;
}

const std::vector<int32_t>& Generator::prompt(int32_t seq) const {
  if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size() || !seqs_[seq]) return kNoPrompt;
  return seqs_[seq]->prompt;
}

void Generator::cancel(int32_t seq) {
  if (active(seq)) seqs_[seq]->cancel = true;
}

Status Generator::start(int32_t seq, const PromptSpec& spec, const SequenceParams& params) {
  if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "seq = %d: the session holds sequences 0..%zu", seq,
                         seqs_.size() - 1);
  }
  if (active(seq)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "sequence %d is generating: cancel it or step to its end first",
                         seq);
  }
  if (!seqs_[seq]) {
    seqs_[seq].reset(new (std::nothrow) Seq());
    if (!seqs_[seq]) return Status::error(EMBER_ERR_NO_MEMORY, "cannot allocate sequence %d's state", seq);
    seqs_[seq]->index = seq;
  }
  return prepare(*seqs_[seq], seq, spec, params);
}

Status Generator::prepare(Seq& q, int32_t seq, const PromptSpec& spec, const SequenceParams& params) {
  const Model& model = session_.model();
  const int32_t vocab = static_cast<int32_t>(model.hparams().vocab_size);
  // Everything is checked into locals first: a refused start changes nothing.
  if (params.max_new_tokens < 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_new_tokens = %d: must be >= 0", params.max_new_tokens);
  }
  if (params.top_logprobs < 0 || params.top_logprobs > kMaxTopLogprobs) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "top_logprobs = %d: must be in 0..%d", params.top_logprobs,
                         kMaxTopLogprobs);
  }
  if (params.top_logprobs > 0 && !params.logprobs) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "top_logprobs = %d needs logprobs on", params.top_logprobs);
  }
  for (size_t i = 0; i < params.stop_strings.size(); ++i) {
    if (params.stop_strings[i].empty()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop string %zu is empty", i);
    }
  }
  const SpeculativeParams& sp = params.speculative;
  int32_t draft_cap = 0;
  if (sp.draft) EMBER_TRY(check_draft(session_, *sp.draft, seq));
  if (sp.lookup || sp.draft) {
    if (sp.draft_max < 0 || sp.draft_max > kMaxDraft) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "draft_max = %d: must be in 0..%d", sp.draft_max, kMaxDraft);
    }
    draft_cap = sp.draft_max > 0 ? sp.draft_max : session_.max_draft();
    if (draft_cap == 0 || draft_cap > session_.max_draft()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "draft_max = %d: speculative decoding needs a session made with max_draft >= %d (it has %d)",
                           sp.draft_max, std::max(draft_cap, 1), session_.max_draft());
    }
    if (sp.lookup && (sp.ngram < 1 || sp.ngram > kMaxLookupNgram)) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "lookup ngram = %d: must be in 1..%d", sp.ngram,
                           kMaxLookupNgram);
    }
  }
  if (params.grammar && &params.grammar->tokenizer() != &model.tokenizer()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the grammar was compiled for another model's vocabulary");
  }
  auto sampler = Sampler::create(params.sampling, vocab);
  if (!sampler.is_ok()) return sampler.status();

  std::vector<int32_t> ids;
  if (spec.tokens) {
    if (!spec.text.empty()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "both a text prompt and prompt tokens: pass one");
    }
    for (size_t i = 0; i < spec.n_tokens; ++i) {
      if (spec.tokens[i] < 0 || spec.tokens[i] >= vocab) {
        return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE, "prompt_tokens[%zu] = %d is outside the vocabulary (0..%d)",
                             i, spec.tokens[i], vocab - 1);
      }
    }
    ids.assign(spec.tokens, spec.tokens + spec.n_tokens);
  } else {
    EMBER_TRY(tokenize_prompt(model.tokenizer(), spec.text, spec.parse_special, spec.add_bos, &ids));
  }
  if (ids.empty()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the prompt is empty (and no BOS is added): nothing to run");
  }

  // What the sequence keeps: all of it (appending), or the longest common
  // prefix with the prompt, short of the prompt's last token.
  const int32_t held = session_.seq_position(seq);
  const int32_t* history = session_.seq_history(seq);
  size_t keep = static_cast<size_t>(held);
  if (spec.reuse_prefix) {
    keep = 0;
    while (keep < static_cast<size_t>(held) && keep + 1 < ids.size() && history[keep] == ids[keep]) ++keep;
  }
  const size_t fill = spec.reuse_prefix ? ids.size() : keep + ids.size();
  if (fill > static_cast<size_t>(session_.context())) {
    return Status::error(EMBER_ERR_CONTEXT_FULL, "the prompt of %zu tokens%s does not fit the context of %d", ids.size(),
                         spec.reuse_prefix ? "" : (" after the sequence's " + std::to_string(held)).c_str(),
                         session_.context());
  }
  if (keep < static_cast<size_t>(held)) {
    // A sliding-window ring may not be able to keep this prefix (its window
    // would read positions it dropped): the sequence then starts over.
    if (!session_.remove_seq(seq, static_cast<int32_t>(keep), held).is_ok()) {
      EMBER_TRY(session_.reset_seq(seq));
      keep = 0;
    }
  }

  q.active = true;
  q.cancel = false;
  q.started = ++starts_;
  q.prompt = std::move(ids);
  q.prefilled = spec.reuse_prefix ? keep : 0;
  q.chunk = 0;
  q.next = -1;
  q.prev = q.prompt.back();
  q.params = params;
  q.sampler = std::move(sampler).value();
  q.text.start(std::move(q.params.stop_strings), params.whole_characters);
  q.params.stop_strings.clear();
  q.logits.resize(static_cast<size_t>(vocab) * (1 + draft_cap));
  q.draft_cap = draft_cap;
  q.draft_len = draft_cap;
  q.misses = 0;
  q.pause = 0;
  q.gated = 0;
  q.n_draft = 0;
  q.spec_tokens.reserve(static_cast<size_t>(1 + draft_cap));
  q.draft_held = -1;
  if (sp.draft) q.draft_logits.resize(sp.draft->model().hparams().vocab_size);
  if (params.logprobs || params.grammar) q.work.resize(static_cast<size_t>(vocab));
  if (params.grammar) q.grammar_state = params.grammar->initial_state();
  q.pending.clear();
  q.pending_head = 0;
  q.stats = SequenceStats();
  q.stats.prompt_tokens = static_cast<int32_t>(q.prompt.size());
  q.stats.reused_tokens = static_cast<int32_t>(q.prefilled);
  q.t0 = now_ms();
  q.t_first = q.t0;
  ++n_active_;
  return Status::ok();
}

Status Generator::step(GenSink sink, void* user) {
  // Cancelled sequences leave first.
  for (auto& p : seqs_) {
    if (p && p->active && p->cancel) finish(*p, StopReason::Cancelled, sink, user);
  }
  // Rows: one per decoding sequence; the rest go to prompts, the oldest
  // start first (at least one row, so a prompt always advances).
  int32_t decoding = 0;
  order_.clear();
  decoding_seqs_ = 0;
  for (auto& p : seqs_) decoding_seqs_ += p && p->active && p->prefilled >= p->prompt.size() ? 1 : 0;
  for (auto& p : seqs_) {
    if (p && p->active && p->prefilled >= p->prompt.size()) draft(*p);
  }
  draft_with_models();
  for (auto& p : seqs_) {
    if (!p || !p->active) continue;
    if (p->prefilled < p->prompt.size()) {
      order_.push_back(p.get());
    } else {
      decoding += 1 + p->n_draft;
    }
  }
  std::sort(order_.begin(), order_.end(), [](const Seq* a, const Seq* b) { return a->started < b->started; });
  size_t budget = static_cast<size_t>(std::max(1, rows_ - decoding));
  for (Seq* q : order_) {
    if (budget == 0) break;
    q->chunk = std::min(q->prompt.size() - q->prefilled, budget);
    budget -= q->chunk;
  }
  items_.clear();
  running_.clear();
  for (auto& p : seqs_) {
    if (!p || !p->active) continue;
    Seq& q = *p;
    Session::BatchItem it;
    it.seq = q.index;
    if (q.prefilled < q.prompt.size()) {
      if (q.chunk == 0) continue;  // waits for rows
      it.tokens = q.prompt.data() + q.prefilled;
      it.n_tokens = static_cast<int32_t>(q.chunk);
      it.logits = q.prefilled + q.chunk == q.prompt.size() ? q.logits.data() : nullptr;
    } else if (q.n_draft > 0) {
      it.tokens = q.spec_tokens.data();
      it.n_tokens = 1 + q.n_draft;
      it.n_logits = it.n_tokens;
      it.logits = q.logits.data();
    } else {
      it.tokens = &q.next;
      it.n_tokens = 1;
      it.logits = q.logits.data();
    }
    items_.push_back(it);
    running_.push_back(&q);
  }
  if (items_.empty()) return Status::ok();
  if (session_.decode_batch(items_.data(), items_.size()).is_ok()) {
    for (Seq* q : running_) after_step(*q, sink, user);
    return Status::ok();
  }
  // Nothing ran. Each item alone, so that one sequence's failure is its own.
  for (size_t i = 0; i < running_.size(); ++i) {
    Seq& q = *running_[i];
    const Status s = session_.decode_batch(&items_[i], 1);
    if (s.is_ok()) {
      after_step(q, sink, user);
    } else {
      q.chunk = 0;
      const Status why = q.prefilled < q.prompt.size()
                             ? s.with_context("prompt of " + std::to_string(q.prompt.size()) + " tokens")
                             : s;
      finish(q, StopReason::Error, sink, user, &why);
    }
  }
  return Status::ok();
}

void Generator::fill_logprobs(Seq& q, const float* row, int32_t token) {
  // Of the model's distribution: a softmax of the raw logits, before the
  // sampling chain (bias, penalties, temperature) touches them.
  const float* l = row;
  const int32_t n = static_cast<int32_t>(session_.model().hparams().vocab_size);
  float max = -INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    if (l[i] > max) max = l[i];
  }
  double sum = 0.0;
  if (max > -INFINITY) {
    for (int32_t i = 0; i < n; ++i) {
      if (l[i] > -INFINITY) sum += std::exp(static_cast<double>(l[i]) - max);  // NaN compares false: skipped
    }
  }
  const double lse = max > -INFINITY ? static_cast<double>(max) + std::log(sum) : 0.0;
  auto logprob = [&](int32_t id) {
    const float v = l[id];
    return v > -INFINITY ? static_cast<float>(static_cast<double>(v) - lse) : -INFINITY;
  };
  if (q.pending_head == q.pending.size()) {
    q.pending.clear();
    q.pending_head = 0;
  }
  q.pending.emplace_back();
  Seq::Pending& p = q.pending.back();
  p.token = token;
  p.logprob = logprob(token);
  // The k most likely, by insertion into a sorted list (k <= 20; most
  // logits fail the first comparison).
  const int32_t k = q.params.top_logprobs;
  int32_t m = 0;
  for (int32_t i = 0; i < n && k > 0; ++i) {
    const float v = l[i];
    if (!(v > -INFINITY)) continue;
    if (m == k && v <= l[p.top[m - 1].token]) continue;
    int32_t at = m < k ? m++ : k - 1;
    while (at > 0 && l[p.top[at - 1].token] < v) {
      p.top[at] = p.top[at - 1];
      --at;
    }
    p.top[at].token = i;
  }
  for (int32_t j = 0; j < m; ++j) p.top[j].logprob = logprob(p.top[j].token);
  p.n_top = m;
}

int32_t Generator::draft_room(const Seq& q) const {
  // The tokens still to sample after this step's first, and the positions
  // left (every drafted row runs at a position of the context).
  const int32_t pos = session_.seq_position(q.index);  // where q.next runs
  return std::min({q.draft_len, q.params.max_new_tokens - q.stats.sampled_tokens - 1, session_.context() - pos - 1});
}

bool Generator::paused(Seq& q) {
  if (q.pause > 0) {
    --q.pause;
    return true;
  }
  // Sharing the step with other decoding sequences, a drafted row is no
  // longer nearly free: it costs about what a sequence's row costs. Only a
  // sequence whose drafts are often kept (acceptance so far, one kept and
  // one rejected assumed, at least 0.4) drafts then; the others try again
  // every 8th step. Measured (docs/benchmarks.md), 4 streams of 1.1b Q4_K,
  // lookup against none: at 22% acceptance 0.72x -> 0.94x, at 77% 1.10x ->
  // 1.05x (0.5 and every 16th: 0.95x and 1.05x; 0.35 and every 4th: 0.84x
  // and 1.26x; noisy).
  if (decoding_seqs_ < 2) return false;
  const int32_t drafted = q.stats.drafted_tokens, accepted = q.stats.accepted_tokens;
  if (5 * (accepted + 1) >= 2 * (drafted + 2)) return false;
  return q.gated++ % 8 != 7;
}

void Generator::draft(Seq& q) {
  q.n_draft = 0;
  if (q.draft_cap == 0 || q.params.speculative.draft) return;  // a draft model drafts in draft_with_models
  if (paused(q)) return;
  const int32_t pos = session_.seq_position(q.index);  // where q.next runs
  const int32_t room = draft_room(q);
  if (room <= 0) return;
  // Prompt lookup over the sequence's text: what it holds, then q.next.
  const int32_t* h = session_.seq_history(q.index);
  const int32_t len = pos + 1;
  auto at = [&](int32_t i) { return i == pos ? q.next : h[i]; };
  for (int32_t n = std::min(q.params.speculative.ngram, len - 1); n >= 1; --n) {
    // The latest earlier occurrence of the last n tokens with a token after it.
    for (int32_t i = len - n - 1; i >= 0; --i) {
      int32_t m = 0;
      while (m < n && at(i + m) == at(len - n + m)) ++m;
      if (m < n) continue;
      q.spec_tokens.assign(1, q.next);
      for (int32_t j = i + n; j < len && q.n_draft < room; ++j, ++q.n_draft) q.spec_tokens.push_back(at(j));
      return;
    }
  }
}

Status check_draft(const Session& ts, const Session& draft, int32_t seq) {
  const Model& target = ts.model();
  const Model& dm = draft.model();
  if (&draft == &ts) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "draft session: it is the target session");
  if (draft.embeddings()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "draft session: it was made for embeddings, not logits");
  }
  if (seq >= draft.n_seqs()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "draft session: it holds %d sequence(s), and drafting for sequence %d needs its own",
                         draft.n_seqs(), seq);
  }
  if (draft.context() < ts.context()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "draft session: its context of %d is shorter than the target's %d",
                         draft.context(), ts.context());
  }
  if (&dm == &target) return Status::ok();
  const Vocab& tv = target.tokenizer().vocab();
  const Vocab& dv = dm.tokenizer().vocab();
  if (dv.pieces.size() > tv.pieces.size()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "draft model: its vocabulary of %zu tokens is larger than the target's %zu", dv.pieces.size(),
                         tv.pieces.size());
  }
  if (dv.bos_id != tv.bos_id || dv.eos_id != tv.eos_id) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "draft model: BOS/EOS ids %d/%d differ from the target's %d/%d", dv.bos_id, dv.eos_id,
                         tv.bos_id, tv.eos_id);
  }
  for (size_t i = 0; i < dv.pieces.size(); ++i) {
    if (dv.pieces[i] != tv.pieces[i]) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "draft model: token %zu is '%s' there but '%s' in the target: not the same vocabulary", i,
                           dv.pieces[i].c_str(), tv.pieces[i].c_str());
    }
  }
  return Status::ok();
}

int32_t Generator::draft_common(Seq& q) {
  Session& d = *q.params.speculative.draft;
  const int32_t pos = session_.seq_position(q.index);
  const int32_t* h = session_.seq_history(q.index);
  // What the draft sequence holds that is this text: kept; the rest goes.
  const int32_t dpos = d.seq_position(q.index);
  int32_t held = q.draft_held;
  if (held < 0 || held > dpos || held > pos) {
    const int32_t* dh = d.seq_history(q.index);
    held = 0;
    while (held < dpos && held < pos && dh[held] == h[held]) ++held;
  }
  if (held < dpos && !d.remove_seq(q.index, held, dpos).is_ok()) {
    if (!d.reset_seq(q.index).is_ok()) return -1;
    held = 0;
  }
  return held;
}

void Generator::draft_catch_up(Seq& q) {
  Session& d = *q.params.speculative.draft;
  const int32_t pos = session_.seq_position(q.index);
  const int32_t held = draft_common(q);
  q.draft_held = -1;
  if (held < 0) return;
  if (held == pos) {
    q.draft_held = held;
    return;
  }
  if (pos > d.context()) return;
  Session::BatchItem it;
  it.seq = q.index;
  it.tokens = session_.seq_history(q.index) + held;
  it.n_tokens = pos - held;
  it.logits = nullptr;
  // On failure the first drafting round compares the histories again.
  if (d.decode_batch(&it, 1).is_ok()) q.draft_held = pos;
}

void Generator::draft_with_models() {
  drafting_.clear();
  for (auto& p : seqs_) {
    if (!p || !p->active || p->prefilled < p->prompt.size() || !p->params.speculative.draft) continue;
    Seq& q = *p;
    q.n_draft = 0;
    if (draft_room(q) <= 0 || paused(q)) continue;
    Session& d = *q.params.speculative.draft;
    const int32_t pos = session_.seq_position(q.index);
    const int32_t* h = session_.seq_history(q.index);
    const int32_t held = draft_common(q);
    if (held < 0) continue;
    // Its first round: the text it lacks, then q.next.
    q.draft_feed.assign(h + held, h + pos);
    q.draft_feed.push_back(q.next);
    if (static_cast<int32_t>(q.draft_feed.size()) > d.context() - held) continue;
    q.draft_held = held;
    q.spec_tokens.assign(1, q.next);
    drafting_.push_back(&q);
  }
  // Rounds: each drafting sequence's item in one batch per draft session
  // (greedy drafts), until every sequence has its drafts.
  while (!drafting_.empty()) {
    Session* d = drafting_[0]->params.speculative.draft;
    std::vector<Seq*>& batch = draft_batch_;
    batch.clear();
    size_t kept = 0;
    for (Seq* q : drafting_) {
      if (q->params.speculative.draft == d) {
        batch.push_back(q);
      } else {
        drafting_[kept++] = q;
      }
    }
    drafting_.resize(kept);
    draft_items_.clear();
    for (Seq* q : batch) {
      Session::BatchItem it;
      it.seq = q->index;
      it.tokens = q->draft_feed.data();
      it.n_tokens = static_cast<int32_t>(q->draft_feed.size());
      it.logits = q->draft_logits.data();
      draft_items_.push_back(it);
    }
    while (!batch.empty()) {
      if (!d->decode_batch(draft_items_.data(), draft_items_.size()).is_ok()) {
        // No drafts this step (the draft sequence is compared again next time).
        for (Seq* q : batch) {
          q->n_draft = 0;
          q->draft_held = -1;
        }
        break;
      }
      size_t w = 0;
      for (size_t i = 0; i < batch.size(); ++i) {
        Seq& q = *batch[i];
        q.draft_held += static_cast<int32_t>(q.draft_feed.size());
        const float* l = q.draft_logits.data();
        int32_t best = 0;
        for (size_t t = 1; t < q.draft_logits.size(); ++t) {
          if (l[t] > l[best]) best = static_cast<int32_t>(t);
        }
        q.spec_tokens.push_back(best);
        ++q.n_draft;
        if (q.n_draft >= draft_room(q) || q.draft_held >= d->context()) continue;  // done drafting
        q.draft_feed.assign(1, best);
        batch[w] = &q;
        draft_items_[w] = draft_items_[i];
        draft_items_[w].tokens = q.draft_feed.data();
        draft_items_[w].n_tokens = 1;
        ++w;
      }
      batch.resize(w);
      draft_items_.resize(w);
    }
  }
}

int32_t Generator::sample_row(Seq& q, float* row, size_t history_len, Status* error) {
  const int32_t* history = session_.seq_history(q.index);
  const size_t vocab = session_.model().hparams().vocab_size;
  int32_t token;
  if (q.params.grammar) {
    CompiledGrammar& g = *q.params.grammar;
    // The constraint: the chain runs over the tokens the grammar allows
    // (the log-probabilities stay the model's, from the row). First, where
    // the chain truncates nothing (greedy, or temperature alone), a draw
    // from all the logits that the grammar accepts is already a draw from
    // the allowed ones (rejection sampling: exact), and no mask is needed.
    const SamplerParams& sp = q.sampler.params();
    const bool exact_first = sp.temperature == 0.0f || (sp.top_k == 0 && sp.top_p >= 1.0f && sp.min_p <= 0.0f);
    token = -1;
    if (exact_first) {
      std::memcpy(q.work.data(), row, vocab * sizeof(float));
      const int32_t first = q.sampler.sample(q.work.data(), history, history_len);
      const Result<uint32_t> next = g.advance(q.grammar_state, first);
      if (!next.is_ok()) {
        *error = next.status();
        return -1;
      }
      if (next.value() != CompiledGrammar::kDead) {
        token = first;
        q.grammar_state = next.value();
      }
    }
    if (token < 0) {
      std::memcpy(q.work.data(), row, vocab * sizeof(float));
      const Result<int32_t> allowed = g.apply_mask(q.grammar_state, q.work.data(), static_cast<int32_t>(vocab));
      if (!allowed.is_ok()) {
        *error = allowed.status();
        return -1;
      }
      if (allowed.value() == 0) {
        const Status none = Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                          "grammar: no token of the vocabulary can continue the text here");
        *error = none;
        return -1;
      }
      token = q.sampler.sample(q.work.data(), history, history_len);
      const Result<uint32_t> next = g.advance(q.grammar_state, token);
      if (!next.is_ok()) {
        *error = next.status();
        return -1;
      }
      if (next.value() == CompiledGrammar::kDead) {
        // Only when every allowed token's logit is -inf (a logit bias).
        const Status banned = Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                            "grammar: every token the grammar allows here is banned (logit_bias)");
        *error = banned;
        return -1;
      }
      q.grammar_state = next.value();
    }
  } else if (q.params.logprobs) {
    std::memcpy(q.work.data(), row, vocab * sizeof(float));
    token = q.sampler.sample(q.work.data(), history, history_len);
  } else {
    token = q.sampler.sample(row, history, history_len);
  }
  return token;
}

void Generator::after_step(Seq& q, GenSink sink, void* user) {
  if (q.chunk > 0) {
    q.prefilled += q.chunk;
    q.chunk = 0;
    if (q.prefilled < q.prompt.size()) return;
    // The draft model runs the prompt too, before the first token (so that
    // it counts in the time to it, as the target's prompt does, not in decode).
    if (q.params.speculative.draft && q.draft_cap > 0 && q.params.max_new_tokens > 1) draft_catch_up(q);
    q.stats.prefill_ms = now_ms() - q.t0;
    q.t_first = now_ms();
    if (q.params.prompt_logits) {
      std::memcpy(q.params.prompt_logits, q.logits.data(), session_.model().hparams().vocab_size * sizeof(float));
    }
    if (q.params.max_new_tokens == 0) return finish(q, StopReason::MaxTokens, sink, user);
    Status error;
    const int32_t token = sample_row(q, q.logits.data(), static_cast<size_t>(session_.seq_position(q.index)), &error);
    if (token < 0) return finish(q, StopReason::Error, sink, user, &error);
    return take_token(q, token, q.logits.data(), true, sink, user);
  }
  // A decode step: row j holds the logits after the step's token j (q.next,
  // then the drafts). Row after row, as one token at a time would: sample,
  // and go on while the sampled token is the next draft.
  ++q.stats.decode_steps;
  const int32_t nd = q.n_draft;
  q.n_draft = 0;
  const size_t vocab = session_.model().hparams().vocab_size;
  const int32_t pos0 = session_.seq_position(q.index) - 1 - nd;  // q.next's position
  int32_t sampled[kMaxDraft + 1];
  int32_t n = 0;
  Status error;  // a row that could not be sampled: reported after the tokens before it
  for (int32_t j = 0; j <= nd; ++j) {
    const int32_t token = sample_row(q, q.logits.data() + j * vocab, static_cast<size_t>(pos0 + 1 + j), &error);
    if (token < 0) break;
    sampled[n++] = token;
    if (j == nd || token != q.spec_tokens[1 + j]) break;
  }
  if (nd > 0) {
    // Drafts that were sampled (their positions stay): all sampled tokens
    // but the last, or all of them when a row after them failed.
    const int32_t kept = error.is_ok() ? n - 1 : n;
    q.stats.drafted_tokens += nd;
    q.stats.accepted_tokens += kept;
    // The draft length: one more after a step that kept every draft, else
    // what this one kept plus one.
    q.draft_len = kept == nd ? std::min(q.draft_len + 1, q.draft_cap) : std::max(1, kept + 1);
    // A draft model that keeps missing costs its own steps and the rows
    // for nothing: after two steps in a row that kept none, drafting
    // pauses for 1, 2, 4 .. 16 steps, until a draft is kept. (Prompt
    // lookup drafts only where the text matches, for no more than rows.)
    q.misses = kept == 0 ? q.misses + 1 : 0;
    if (q.misses >= 2 && q.params.speculative.draft) q.pause = 1 << std::min(q.misses - 2, 4);
    const Status removed = session_.remove_seq(q.index, pos0 + 1 + kept, pos0 + 1 + nd);
    if (!removed.is_ok()) return finish(q, StopReason::Error, sink, user, &removed);
    // The draft model holds q.next and its drafts but the last: what the
    // target kept of them stays (compared again before the next drafts).
    if (q.params.speculative.draft) q.draft_held = std::min(q.draft_held, pos0 + 1 + kept);
  }
  for (int32_t i = 0; i < n && q.active; ++i) {
    take_token(q, sampled[i], q.logits.data() + i * vocab, i == n - 1 && error.is_ok(), sink, user);
    // Ended at a token that ran as a kept draft (a stop string, an end
    // token): the sequence holds what it would without drafts, up to the
    // token before it.
    if (!q.active && nd > 0 && session_.seq_position(q.index) > pos0 + 1 + i) {
      (void)session_.remove_seq(q.index, pos0 + 1 + i, session_.seq_position(q.index));
    }
  }
  if (!error.is_ok() && q.active) finish(q, StopReason::Error, sink, user, &error);
}

bool Generator::relay_text(void* self, int32_t token, std::string_view text) {
  Relay* r = static_cast<Relay*>(self);
  Seq& q = *r->q;
  GenEvent e;
  e.seq = q.index;
  e.token = token;
  e.text = text;
  e.logprob = NAN;
  if (q.params.logprobs && q.pending_head < q.pending.size()) {
    const Seq::Pending& p = q.pending[q.pending_head++];
    e.logprob = p.logprob;
    e.top = p.top;
    e.n_top = p.n_top;
  }
  ++q.stats.generated_tokens;
  return r->sink && r->sink(r->user, e);
}

void Generator::take_token(Seq& q, int32_t token, const float* row, bool last, GenSink sink, void* user) {
  const Tokenizer& tokenizer = session_.model().tokenizer();
  if (q.stats.sampled_tokens == 0) q.t_first = now_ms();
  ++q.stats.sampled_tokens;
  q.stats.last_token = token;
  // End of generation (eos, eot, <|im_end|>, ...: Tokenizer::is_eog);
  // llama2.c-style vocabularies also end a story at BOS.
  if (tokenizer.is_eog(token) || token == tokenizer.vocab().bos_id) return finish(q, StopReason::End, sink, user);
  if (q.params.logprobs) fill_logprobs(q, row, token);
  piece_.clear();
  const Status decoded = tokenizer.decode_token(q.prev, token, &piece_);
  if (!decoded.is_ok()) return finish(q, StopReason::Error, sink, user, &decoded);
  Relay relay{&q, sink, user};
  const TextOut::Step step = q.text.push(token, piece_, &relay_text, &relay);
  if (step != TextOut::Step::Go) {
    return finish(q, step == TextOut::Step::Matched ? StopReason::StopString : StopReason::Callback, sink, user);
  }
  q.prev = token;
  // A finished grammar allows nothing but an end: the sequence ends here.
  if (q.params.grammar && q.params.grammar->finished(q.grammar_state)) return finish(q, StopReason::End, sink, user);
  // The last token needs no forward pass.
  if (q.stats.sampled_tokens >= q.params.max_new_tokens) return finish(q, StopReason::MaxTokens, sink, user);
  // A kept draft: it has run already, at a position the context holds.
  if (!last) return;
  // It runs at the sequence's next position: there must be one.
  const int32_t pos = session_.seq_position(q.index);
  if (pos >= session_.context()) {
    if (!q.params.context_shift || session_.context() < 4) return finish(q, StopReason::ContextFull, sink, user);
    // Keep the first position (BOS) and the newer half; drop the rest.
    const int32_t keep_from = 1 + (pos - 1) / 2;
    const Status shifted = session_.remove_seq(q.index, 1, keep_from);
    if (!shifted.is_ok()) return finish(q, StopReason::Error, sink, user, &shifted);
  }
  q.next = token;
}

void Generator::finish(Seq& q, StopReason why, GenSink sink, void* user, const Status* error) {
  // Text held back for a stop string that never came is released, unless
  // the host or a stop string ended it, or it failed.
  if (why == StopReason::End || why == StopReason::MaxTokens || why == StopReason::ContextFull) {
    Relay relay{&q, sink, user};
    if (q.text.flush(&relay_text, &relay) == TextOut::Step::SinkStopped) why = StopReason::Callback;
  }
  const double t_end = now_ms();
  q.stats.first_token_ms = q.t_first - q.t0;
  q.stats.decode_ms = t_end - q.t_first;
  q.stats.stop = why;
  q.active = false;
  q.cancel = false;
  q.chunk = 0;
  q.pending.clear();
  q.pending_head = 0;
  --n_active_;
  const std::string_view rest = q.text.take_rest();
  if (sink) {
    GenEvent e;
    e.seq = q.index;
    e.token = -1;
    e.logprob = NAN;
    if (why != StopReason::Error && why != StopReason::Cancelled) e.text = rest;
    e.finish = why;
    e.error = error;
    sink(user, e);
  }
}

}  // namespace ember

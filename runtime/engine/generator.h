// The generation engine: the one place where a sequence turns logits into
// tokens and text (ARCHITECTURE.md, "Generation: one engine"). A Generator drives the
// sequences of one Session: each started with a prompt and its own rules
// (the sampling chain, end-of-generation tokens, stop strings, token and
// context limits, log-probabilities), and each step() advances every active
// sequence by one batched Session::decode_batch — prompt chunks of the
// sequences still prefilling and the pending token of each sequence
// decoding, every weight read once for all of them — then samples, cuts the
// text and reports what each sequence released through a sink.
//
// ember_generate (one sequence, a callback), the C API's ember_generator_*,
// and through them `ember run`, `ember chat` and `ember serve` all run this.
// A constraint (SequenceParams::grammar) masks the logits before the
// sampler. Speculative decoding (SequenceParams::speculative): a decoding
// sequence's token goes into the step with up to k drafted tokens after it
// (prompt lookup: the continuation of the latest earlier occurrence of the
// text's last n tokens), all rows' logits come back, and the sequence
// samples row after row as it would one step at a time, keeping a draft
// while the sampled token equals it: the output is the same, token for
// token (the rows' logits are bit-identical whatever the step: tests/
// kernels/test_step_rows.cpp), and a sampled run draws the same random
// numbers (a fixed draft is accepted exactly when the draw picks it, which
// is the standard accept/resample rule for a one-token proposal). The
// drafted positions the sample did not keep are removed.
//
// Threading: one thread at a time, like the session (whose other
// sequences the host may use directly between steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/text_out.h"
#include "grammar/matcher.h"
#include "model/session.h"
#include "sampling/sampler.h"

namespace ember {

// Why a sequence stopped (ember.h's ember_stop_reason, the same values).
enum class StopReason : int32_t {
  None = 0,         // still running, or never started
  MaxTokens = 1,    // max_new_tokens were generated
  End = 2,          // an end-of-generation token
  Callback = 3,     // the sink asked to stop
  ContextFull = 4,  // no position left and context shifting off
  StopString = 5,   // the text reached a stop string
  Cancelled = 6,    // Generator::cancel
  Error = 7,        // a step failed for this sequence (Event::error says why)
};

// The most log-probabilities of alternatives one token reports.
constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// How a sequence's prompt is given and placed.
struct PromptSpec {
  // Either text (tokenized here: parse_special, add_bos) or exact ids (run
  // as given: nothing added).
  std::string_view text;
  const int32_t* tokens = nullptr;
  size_t n_tokens = 0;
  bool parse_special = false;  // control-token text becomes control tokens
  int add_bos = -1;            // 1 yes, 0 no, -1 as the model says
  // false: the prompt follows what the sequence holds (multi-turn).
  // true: the prompt is the sequence's whole content; the longest common
  // prefix of what it holds is kept (all but the prompt's last token at
  // most: that one runs again for its logits), the rest forgotten.
  bool reuse_prefix = false;
};

// Whether `draft` can draft for sequence seq of `target`: another session
// (of the same model, or of one whose vocabulary is a prefix of the
// target's, piece for piece, with the same BOS and EOS), holding sequence
// seq, with at least the target's context. The error names what differs.
Status check_draft(const Session& target, const Session& draft, int32_t seq);

// Speculative decoding of one sequence (see the file comment).
struct SpeculativeParams {
  bool lookup = false;      // prompt lookup drafts
  // Or a draft model: this session (another model of the same vocabulary:
  // every piece of its vocabulary the target's, the same BOS and EOS) drafts
  // greedily in its sequence of the same index, which follows this one's
  // text (kept in step: what it holds that differs is removed). Not owned;
  // outlives the generation. Drafts from both: the model's.
  Session* draft = nullptr;
  // Most tokens drafted per step (1..the session's max_draft); 0: the
  // session's max_draft. The draft length adapts to the acceptance below it.
  int32_t draft_max = 0;
  int32_t ngram = 3;        // lookup: the longest suffix matched, 1..kMaxLookupNgram
};
constexpr int32_t kMaxLookupNgram = 16;

struct SequenceParams {
  SamplerParams sampling;
  int32_t max_new_tokens = 128;  // >= 0; 0 only runs the prompt
  bool context_shift = false;    // full context: drop the older half after position 0 and go on
  std::vector<std::string> stop_strings;  // none empty
  bool logprobs = false;         // report each token's log-probability
  int32_t top_logprobs = 0;      // and the n most likely (0..kMaxTopLogprobs; needs logprobs)
  float* prompt_logits = nullptr;  // vocab_size floats, written when the prompt has run
  // Text released in whole UTF-8 characters (false: each token's piece as
  // it is, which ember_generate's callback promises).
  bool whole_characters = true;
  // The constraint (structured output): when set, each step's tokens the
  // grammar rejects are masked before the sampling chain, and the sequence
  // ends (StopReason::End) once the grammar is finished; shared, the
  // compiled grammar's caches serve every sequence using it. Made for this
  // session's model's vocabulary.
  std::shared_ptr<CompiledGrammar> grammar;
  SpeculativeParams speculative;
};

// What one sequence produced, as the sink sees it. A token event releases
// a sampled token (token >= 0, finish None) with the text that became final
// with it; a sequence's last event has finish != None, token -1, and
// carries any bytes left (an unfinished UTF-8 character at the very end).
// Pointers are valid during the sink call only.
struct GenEvent {
  int32_t seq = 0;
  int32_t token = -1;
  std::string_view text;
  float logprob = 0.0f;  // NaN unless SequenceParams::logprobs
  const TokenLogprob* top = nullptr;
  int32_t n_top = 0;
  StopReason finish = StopReason::None;
  const Status* error = nullptr;  // finish Error: why
};

// Returns true to stop this sequence (StopReason::Callback; ignored on a
// finishing event).
using GenSink = bool (*)(void* user, const GenEvent& event);

struct SequenceStats {
  int32_t prompt_tokens = 0;    // the prompt's tokens (BOS included), reused ones too
  int32_t reused_tokens = 0;    // of which the sequence already held (reuse_prefix)
  int32_t generated_tokens = 0; // token events
  int32_t sampled_tokens = 0;   // tokens sampled (held-back and end tokens too)
  int32_t last_token = -1;      // the last sampled token: never run through the model
  double prefill_ms = 0;        // start to the prompt's last chunk run
  double first_token_ms = 0;    // start to the first sampled token
  double decode_ms = 0;         // first sampled token to the end
  StopReason stop = StopReason::None;
  // Speculative decoding: decode steps run (each verifying its drafts),
  // tokens drafted and drafted tokens kept.
  int32_t decode_steps = 0;
  int32_t drafted_tokens = 0;
  int32_t accepted_tokens = 0;
};

struct GeneratorOptions {
  // Rows of one step: each decoding sequence's token, the rest for prompt
  // chunks (oldest start first; at least one row, so a prompt always
  // advances). 0: the session's max_batch.
  int32_t max_step_rows = 0;
};

// Tokens of a prompt by the rule every generation uses: the text encoded
// (control-token text parsed as such when parse_special), then BOS in front
// when add_bos says so (1, or -1 and the vocabulary asks for one) and the
// tokens do not already begin with it (a rendered chat template may write
// BOS itself).
Status tokenize_prompt(const Tokenizer& tokenizer, std::string_view text, bool parse_special, int add_bos,
                       std::vector<int32_t>* out);

class Generator {
 public:
  // Lifetime: the session outlives the generator.
  static Result<std::unique_ptr<Generator>> create(Session& session, const GeneratorOptions& options);
  ~Generator();

  // Starts sequence `seq` (0 .. n_seqs - 1, not active). Everything is
  // checked before anything changes: EMBER_ERR_INVALID_ARGUMENT (seq, an
  // empty prompt, a bad option naming it), EMBER_ERR_TOKEN_OUT_OF_RANGE (an
  // id of the prompt), EMBER_ERR_CONTEXT_FULL (the prompt does not fit
  // after what the sequence keeps). Nothing runs until the next step().
  Status start(int32_t seq, const PromptSpec& prompt, const SequenceParams& params);

  // One batched step of every active sequence; events go to `sink` (may be
  // null) as they happen. A sequence the step fails for ends with an Error
  // event; the step itself fails only for the generator's own faults.
  Status step(GenSink sink, void* user);

  // Sequence seq ends at the next step (StopReason::Cancelled); no-op when
  // it is not active.
  void cancel(int32_t seq);

  bool active(int32_t seq) const;
  int32_t n_active() const { return n_active_; }
  // The last (or current) generation of sequence seq.
  const SequenceStats& stats(int32_t seq) const;
  // The prompt tokens of sequence seq's last start (BOS included).
  const std::vector<int32_t>& prompt(int32_t seq) const;
  Session& session() const { return session_; }

 private:
  struct Seq;
  struct Relay;  // a TextOut release on its way to the sink
  static bool relay_text(void* self, int32_t token, std::string_view text);
  Generator(Session& session, int32_t rows);
  Status prepare(Seq& q, int32_t seq, const PromptSpec& prompt, const SequenceParams& params);
  void after_step(Seq& q, GenSink sink, void* user);
  // Samples one row of logits (q's grammar advanced); -1 and *error when
  // it cannot.
  int32_t sample_row(Seq& q, float* row, size_t history_len, Status* error);
  // The sampled token released; last: the token the next step runs.
  void take_token(Seq& q, int32_t token, const float* row, bool last, GenSink sink, void* user);
  void finish(Seq& q, StopReason why, GenSink sink, void* user, const Status* error = nullptr);
  void fill_logprobs(Seq& q, const float* row, int32_t token);
  // This step's drafts of a decoding sequence (q.spec_tokens after q.next).
  void draft(Seq& q);
  // Whether q skips drafting this step (its back-off after misses, or a
  // low acceptance in a step shared with other sequences; counts the step).
  bool paused(Seq& q);
  // How many tokens q may draft this step.
  int32_t draft_room(const Seq& q) const;
  // How much of q's text its draft sequence holds (the rest removed from
  // it), or -1 when it cannot be made to hold a prefix of it.
  int32_t draft_common(Seq& q);
  // Runs q's text so far (its prompt) through its draft sequence.
  void draft_catch_up(Seq& q);
  // The draft model's drafts of every decoding sequence that has one, its
  // rounds batched per draft session.
  void draft_with_models();

  Session& session_;
  int32_t rows_;
  int32_t n_active_ = 0;
  uint64_t starts_ = 0;  // start order: older prompts are prefilled first
  std::vector<std::unique_ptr<Seq>> seqs_;  // one per session sequence, made on first start
  std::vector<Session::BatchItem> items_;   // this step's
  std::vector<Seq*> running_, order_, drafting_, draft_batch_;
  int32_t decoding_seqs_ = 0;  // this step's sequences past their prompts
  std::vector<Session::BatchItem> draft_items_;
  std::string piece_;                       // the current token's piece (reused)
};

}  // namespace ember

// The matcher: a grammar (grammar.h) run against one vocabulary, as the
// constraint stage of the generator (engine/generator.h): before sampling,
// the tokens whose text the grammar cannot continue with are masked out;
// after it, the sequence's state follows the chosen token.
//
// How it stays cheap. A matcher state is the set of parse stacks the text so
// far leaves (each stack a list of grammar positions, hash-consed into
// shared nodes, so equal stacks are one id) plus an unfinished UTF-8
// character; states are interned, so a sequence's whole constraint state is
// one integer. Transitions by a byte are built lazily and memoized (a DFA
// grows as the grammar is used), and each state's token mask — a bit per
// vocabulary entry — is computed once, by walking the vocabulary in sorted
// byte order (a token sharing a dead prefix with the previous one costs
// nothing), and then reused by every sequence and request of this compiled
// grammar. A JSON string's content, a number's digits, or a repeated item
// return to states already seen, so after the first tokens most steps are a
// cached mask applied to the logits.
//
// Bounds (MatcherLimits): the states, the nodes, the stacks of one state,
// the work of building one state, the work of compiling (create() checks
// the closure after every character element), and the masks' bytes are
// capped. Past any but the last, create() or a transition fails with
// EMBER_ERR_TOO_COMPLEX, its message beginning "grammar: too complex:" (the
// grammar is the caller's to simplify; a sequence ends with that error);
// past the mask budget older masks are dropped and recomputed when needed.
//
// Threading: a CompiledGrammar may be shared by sequences, generators and
// threads; its caches are guarded by one mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace ember {

struct MatcherLimits {
  uint32_t max_states = 1u << 18;
  uint32_t max_nodes = 1u << 22;
  uint32_t max_stacks = 4096;                 // per state
  // Grammar positions the closures of one transition (or of the initial
  // state) may visit: bounds the time one new state costs.
  uint64_t max_step_work = uint64_t{1} << 18;
  // Grammar positions create() may visit checking, after each character
  // element, the closure a text reaching it needs (each alone within
  // max_stacks): bounds compile time, and refuses at compile time a grammar
  // that a text through it would make slow (thousands of optional
  // properties, each comma opening one stack per property left).
  uint64_t max_compile_work = uint64_t{1} << 22;
  uint64_t max_mask_bytes = uint64_t{256} << 20;
  // What the compiled grammar may hold in all (0: no cap beyond the
  // others): its rules, its copy of the vocabulary's text, the parse-stack
  // nodes, the states and their transitions, the kept masks, the scratch of
  // a step; counted by the containers' capacities (a growth is counted at
  // its peak, old and new buffer both) and a per-entry estimate for hash
  // tables. Past it masks go first, oldest first; a growth that still does
  // not fit is EMBER_ERR_TOO_COMPLEX. set_max_bytes() changes it.
  uint64_t max_bytes = 0;
  // One state per unfinished character where every stack takes whatever it
  // becomes (off only to test that it changes no mask).
  bool collapse_characters = true;
};

class CompiledGrammar {
 public:
  static constexpr uint32_t kDead = 0xffffffffu;

  // The grammar (checked: check_grammar) against `tokenizer`'s vocabulary.
  // The tokenizer must outlive the compiled grammar.
  static Result<std::shared_ptr<CompiledGrammar>> create(Grammar grammar, const Tokenizer& tokenizer,
                                                         const MatcherLimits& limits = {});

  // The state before any text.
  uint32_t initial_state() const { return initial_; }
  // The state after `token`'s text, or kDead when the grammar rejects it.
  // An end-of-generation token is accepted (the state unchanged) only where
  // the grammar is complete.
  Result<uint32_t> advance(uint32_t state, int32_t token);
  // The state after `text` (bytes), or kDead.
  Result<uint32_t> advance_text(uint32_t state, std::string_view text);
  // Whether the text so far is a whole sentence of the grammar, and whether
  // nothing may follow it (then only an end of generation may).
  bool complete(uint32_t state) const;
  bool finished(uint32_t state) const;
  // Sets logits[t] = -inf for every token the grammar rejects in `state`;
  // returns how many tokens remain allowed.
  Result<int32_t> apply_mask(uint32_t state, float* logits, int32_t n_vocab);

  const Grammar& grammar() const { return grammar_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The bytes it holds now (as MatcherLimits::max_bytes counts them).
  uint64_t memory_bytes() const;
  // Caps what it holds (0: no cap): masks are dropped to get under it;
  // EMBER_ERR_NO_MEMORY (the cap unchanged) when what it holds without
  // masks is already more.
  Status set_max_bytes(uint64_t max_bytes);
  // Counters for tests and reports.
  struct Stats {
    uint32_t states = 0, nodes = 0, masks_computed = 0, masks_reused = 0;
    uint64_t compile_work = 0;  // the units create() spent (max_compile_work)
    double mask_ms = 0;  // time spent computing masks
  };
  Stats stats() const;

 private:
  CompiledGrammar(Grammar grammar, const Tokenizer& tokenizer, const MatcherLimits& limits);
  struct Node {
    uint32_t pos;     // index in grammar_.elems: a Chars element to match next
    uint32_t parent;  // the rest of the stack (a node whose pos is where to go on), or kNone
  };
  struct State {
    std::vector<uint32_t> stacks;  // sorted node ids; kAccept: the empty stack (complete)
    uint32_t partial = 0;          // an unfinished UTF-8 character: bits so far, or kUniform
    uint8_t need = 0;              // its continuation bytes still to come
    uint32_t lo = 0, hi = 0;       // the code points it can still become
    std::vector<uint64_t> mask;        // a bit per token, when computed
  };
  static constexpr uint32_t kNone = 0xffffffffu;
  static constexpr uint32_t kAccept = 0xfffffffeu;
  static constexpr uint32_t kUnknown = 0xfffffffdu;
  // State::partial of a character every stack takes whatever it becomes
  // (lo..hi: the range of its next byte).
  static constexpr uint32_t kUniform = 0xffffffffu;

  Status prepare_vocabulary();
  Status check_continuations();
  Result<uint32_t> node(uint32_t pos, uint32_t parent);
  // Adds to `out` the stacks that continuing at `pos` over `parent` leaves,
  // with every leading rule reference expanded (tops are Chars elements).
  Status close(uint32_t pos, uint32_t parent, std::vector<uint32_t>* out);
  Status too_many_stacks() const;
  Result<uint32_t> intern(std::vector<uint32_t>& stacks, uint32_t partial, uint8_t need, uint32_t lo, uint32_t hi);
  Result<uint32_t> step_byte(uint32_t state, uint8_t byte);
  Result<uint32_t> step_code_point(uint32_t state, uint32_t cp);
  bool accepts(uint32_t pos, uint32_t cp) const;
  bool accepts_any(uint32_t pos, uint32_t lo, uint32_t hi) const;
  bool accepts_all(uint32_t pos, uint32_t lo, uint32_t hi) const;
  Status compute_mask(uint32_t state);
  // The bytes held (memory_bytes without the lock), and room for `more`:
  // masks dropped, oldest first, until it fits max_bytes; EMBER_ERR_TOO_COMPLEX
  // naming `what` when it cannot.
  uint64_t held_bytes() const;
  Status make_room(uint64_t more, const char* what);
  void drop_oldest_mask();
  // Room for `more` entries of close()'s work list (max_bytes).
  Status work_room(size_t more);

  Grammar grammar_;
  const Tokenizer* tokenizer_;
  MatcherLimits limits_;
  uint32_t initial_ = kDead;

  // The vocabulary in byte order: each token's text and how many leading
  // bytes it shares with the one before it.
  std::vector<int32_t> order_;
  std::vector<std::string> text_;   // per token id (empty: never allowed)
  std::vector<uint16_t> shared_;    // per position in order_
  // The same texts in order_'s order, back to back (the mask walk reads
  // them in sequence): order_[k]'s bytes are sorted_[offset_[k], offset_[k + 1]).
  std::vector<uint8_t> sorted_;
  std::vector<uint32_t> offset_;
  std::vector<int32_t> eog_;

  mutable std::mutex mu_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<State> states_;
  std::vector<uint32_t> next_;  // per state, 256 transitions by byte (kUnknown until built)
  std::unordered_map<uint64_t, std::vector<uint32_t>> state_ids_;  // by hash
  std::vector<uint32_t> mask_order_;  // states holding masks, oldest first, from mask_head_ on
  size_t mask_head_ = 0;
  uint64_t mask_bytes_ = 0;
  uint64_t fixed_bytes_ = 0;   // the rules and the vocabulary's text (set by create)
  uint64_t stacks_bytes_ = 0;  // the states' stack lists
  Stats stats_;
  std::vector<uint32_t> work_;  // close()'s scratch: (pos, parent) pairs
  // close()'s visited (pos, parent) pairs: open addressing, emptied in O(1)
  // by a new generation (most closures visit a handful of pairs; the table
  // keeps the size of the largest).
  struct SeenSet {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> gens;  // an entry is live when its gen is `gen`
    uint32_t gen = 1;
    size_t count = 0;
    void clear();
    bool insert(uint64_t key);  // false when already there
  };
  SeenSet seen_;
  uint64_t step_work_ = 0;             // pairs visited by the transition being built
};

}  // namespace ember

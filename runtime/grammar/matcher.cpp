#include "grammar/matcher.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace ember {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// All 64 bits of x spread over the low ones (a table index).
uint64_t scramble(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Per-entry estimates of the hash tables' nodes (the entry, the chain
// pointer, the allocator's header); their bucket arrays are counted exactly.
constexpr uint64_t kNodeEntryBytes = 32;
constexpr uint64_t kStateEntryBytes = 80;  // with its bucket list's own allocation

// The capacity a full vector grows to on one more push (libstdc++ doubles).
uint64_t grown(size_t size, size_t capacity, size_t more) {
  if (size + more <= capacity) return capacity;
  return std::max<uint64_t>(uint64_t{capacity} * 2, size + more);
}

// The bytes of a grammar's own tables.
uint64_t grammar_bytes(const Grammar& g) {
  uint64_t b = g.elems.capacity() * sizeof(GrammarElem) + g.alts.capacity() * sizeof(g.alts[0]) +
               g.names.capacity() * sizeof(std::string) + g.char_sets.capacity() * sizeof(CharSet);
  for (const auto& a : g.alts) b += a.capacity() * sizeof(uint32_t);
  for (const auto& n : g.names) b += n.capacity() > 15 ? n.capacity() + 1 : 0;
  for (const auto& c : g.char_sets) b += c.ranges.capacity() * sizeof(CharRange);
  return b;
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, const Tokenizer& tokenizer, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), tokenizer_(&tokenizer), limits_(limits) {}

Result<std::shared_ptr<CompiledGrammar>> CompiledGrammar::create(Grammar grammar, const Tokenizer& tokenizer,
                                                                 const MatcherLimits& limits) {
  EMBER_TRY(check_grammar(grammar));
  std::shared_ptr<CompiledGrammar> g(new CompiledGrammar(std::move(grammar), tokenizer, limits));
  EMBER_TRY(g->prepare_vocabulary());
  // The part every grammar holds whatever it meets: counted once.
  g->fixed_bytes_ = grammar_bytes(g->grammar_) + g->text_.capacity() * sizeof(std::string) +
                    g->order_.capacity() * sizeof(int32_t) + g->shared_.capacity() * sizeof(uint16_t) +
                    g->sorted_.capacity() + g->offset_.capacity() * sizeof(uint32_t) +
                    g->eog_.capacity() * sizeof(int32_t);
  for (const std::string& t : g->text_) g->fixed_bytes_ += t.capacity() > 15 ? t.capacity() + 1 : 0;
  if (limits.max_bytes && g->fixed_bytes_ > limits.max_bytes) {
    return Status::error(EMBER_ERR_TOO_COMPLEX,
                         "grammar: too complex: its rules and the vocabulary's text take %llu bytes, over max_bytes "
                         "(%llu)",
                         static_cast<unsigned long long>(g->fixed_bytes_),
                         static_cast<unsigned long long>(limits.max_bytes));
  }
  EMBER_TRY(g->check_continuations());
  std::vector<uint32_t> stacks;
  g->step_work_ = 0;
  for (uint32_t a : g->grammar_.alts[g->grammar_.root]) EMBER_TRY(g->close(a, kNone, &stacks));
  EMBER_ASSIGN_OR_RETURN(g->initial_, g->intern(stacks, 0, 0, 0, 0));
  if (g->initial_ == kDead) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: the root rule matches nothing");
  return g;
}

Status CompiledGrammar::prepare_vocabulary() {
  const int32_t n = tokenizer_->size();
  text_.assign(static_cast<size_t>(n), std::string());
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer_->is_eog(id)) {
      eog_.push_back(id);
      continue;
    }
    EMBER_TRY(tokenizer_->decode_token(-1, id, &text_[static_cast<size_t>(id)]));
    if (!text_[static_cast<size_t>(id)].empty()) order_.push_back(id);
  }
  std::sort(order_.begin(), order_.end(), [this](int32_t a, int32_t b) {
    return text_[static_cast<size_t>(a)] < text_[static_cast<size_t>(b)];
  });
  offset_.assign(1, 0);
  for (int32_t id : order_) {
    const std::string& t = text_[static_cast<size_t>(id)];
    sorted_.insert(sorted_.end(), t.begin(), t.end());
    if (sorted_.size() > 0xffffffffu) return Status::error(EMBER_ERR_NO_MEMORY, "grammar: the vocabulary's text is over 4 GiB");
    offset_.push_back(static_cast<uint32_t>(sorted_.size()));
  }
  shared_.assign(order_.size(), 0);
  for (size_t k = 1; k < order_.size(); ++k) {
    const std::string& a = text_[static_cast<size_t>(order_[k - 1])];
    const std::string& b = text_[static_cast<size_t>(order_[k])];
    size_t s = 0;
    while (s < a.size() && s < b.size() && a[s] == b[s] && s < 0xffff) ++s;
    shared_[k] = static_cast<uint16_t>(s);
  }
  return Status::ok();
}

// What every transition into the grammar starts from: the closure after
// each character element, up to the end of its rule (the caller's
// continuation left out: an End there is one stack). A position whose
// closure alone holds more than max_stacks stacks is refused now, at
// compile time, rather than when a text reaches it; the positions all these
// closures visit are the compile work (max_compile_work), about what one
// text through every position would cost the matcher. The nodes they make
// are dropped: generation makes its own.
Status CompiledGrammar::check_continuations() {
  const std::vector<GrammarElem>& el = grammar_.elems;
  std::vector<uint32_t> rule_of(el.size(), 0);
  for (uint32_t r = 0; r < grammar_.alts.size(); ++r) {
    for (uint32_t a : grammar_.alts[r]) {
      for (uint32_t i = a; el[i].kind != GrammarElem::End; ++i) rule_of[i] = r;
    }
  }
  uint64_t work = 0;
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < el.size(); ++p) {
    if (el[p].kind != GrammarElem::Chars) continue;
    const size_t kept = nodes_.size();
    out.clear();
    step_work_ = 0;
    Status st = close(p + 1, kNone, &out);
    work += step_work_;
    std::sort(out.begin(), out.end());
    if (st.is_ok() && std::unique(out.begin(), out.end()) - out.begin() > std::ptrdiff_t{limits_.max_stacks}) {
      st = too_many_stacks();
    }
    for (size_t id = kept; id < nodes_.size(); ++id) node_ids_.erase((uint64_t{nodes_[id].pos} << 32) | nodes_[id].parent);
    nodes_.resize(kept);
    if (!st.is_ok()) {
      return Status::error(st.code(), "%s, after a character of rule '%s'", st.message().c_str(),
                           grammar_.names[rule_of[p]].c_str());
    }
    stats_.compile_work = work;
    if (work > limits_.max_compile_work) {
      return Status::error(EMBER_ERR_TOO_COMPLEX,
                           "grammar: too complex: compiling visits more than %llu grammar positions "
                           "(max_compile_work; by rule '%s', %u rules in all)",
                           static_cast<unsigned long long>(limits_.max_compile_work),
                           grammar_.names[rule_of[p]].c_str(), static_cast<uint32_t>(grammar_.alts.size()));
    }
  }
  return Status::ok();
}

Result<uint32_t> CompiledGrammar::node(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto it = node_ids_.find(key);
  if (it != node_ids_.end()) return it->second;
  if (nodes_.size() >= limits_.max_nodes) {
    return Status::error(EMBER_ERR_TOO_COMPLEX, "grammar: too complex: more than %u parse-stack nodes (max_nodes)",
                         limits_.max_nodes);
  }
  if (limits_.max_bytes) {
    // A growth holds the old buffer and the new one at once.
    uint64_t more = kNodeEntryBytes;
    if (nodes_.size() == nodes_.capacity()) more += grown(nodes_.size(), nodes_.capacity(), 1) * sizeof(Node);
    if (node_ids_.size() + 1 > node_ids_.bucket_count()) more += 2 * node_ids_.bucket_count() * sizeof(void*);
    EMBER_TRY(make_room(more, "parse-stack nodes"));
  }
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({pos, parent});
  node_ids_.emplace(key, id);
  return id;
}

Status CompiledGrammar::close(uint32_t pos, uint32_t parent, std::vector<uint32_t>* out) {
  const std::vector<GrammarElem>& el = grammar_.elems;
  work_.clear();
  EMBER_TRY(work_room(2));
  work_.push_back(pos);
  work_.push_back(parent);
  seen_.clear();  // (pos, parent) pairs this closure visited
  while (!work_.empty()) {
    const uint32_t par = work_.back();
    work_.pop_back();
    const uint32_t p = work_.back();
    work_.pop_back();
    if (limits_.max_bytes && (seen_.count + 1) * 2 > seen_.keys.size()) {  // the set is about to grow
      const uint64_t size = std::max<uint64_t>(64, uint64_t{seen_.keys.size()} * 2);
      EMBER_TRY(make_room(size * (sizeof(uint64_t) + sizeof(uint32_t)), "parse scratch"));
    }
    if (!seen_.insert((uint64_t{p} << 32) | par)) continue;
    // Each pair visited is a unit of the state's budget: a grammar whose
    // closures fan out (an ambiguous one) is refused, not slow.
    if (++step_work_ > limits_.max_step_work) {
      return Status::error(EMBER_ERR_TOO_COMPLEX,
                           "grammar: too complex: one matcher state expands more than %llu grammar positions "
                           "(max_step_work)",
                           static_cast<unsigned long long>(limits_.max_step_work));
    }
    const GrammarElem& e = el[p];
    // Room for what this position pushes (a rule: its alternatives).
    EMBER_TRY(work_room(e.kind == GrammarElem::Ref ? 2 * grammar_.alts[e.value].size() : 2));
    if (e.kind == GrammarElem::End) {
      if (par == kNone) {
        out->push_back(kAccept);
      } else {
        work_.push_back(nodes_[par].pos);
        work_.push_back(nodes_[par].parent);
      }
    } else if (e.kind == GrammarElem::Chars) {
      EMBER_ASSIGN_OR_RETURN(const uint32_t id, node(p, par));
      out->push_back(id);
    } else {
      // A rule: its alternatives, each going on to what follows the
      // reference (nothing to keep when the reference ends its alternative).
      uint32_t next_parent = par;
      if (el[p + 1].kind != GrammarElem::End) {
        EMBER_ASSIGN_OR_RETURN(next_parent, node(p + 1, par));
      }
      for (uint32_t a : grammar_.alts[e.value]) {
        work_.push_back(a);
        work_.push_back(next_parent);
      }
    }
  }
  return Status::ok();  // intern() counts the distinct stacks
}

void CompiledGrammar::SeenSet::clear() {
  count = 0;
  if (++gen == 0) {  // wrapped: every entry is stale again
    std::fill(gens.begin(), gens.end(), 0u);
    gen = 1;
  }
}

bool CompiledGrammar::SeenSet::insert(uint64_t key) {
  if ((count + 1) * 2 > keys.size()) {
    // Grow to twice the size (at least 64), keeping the live entries.
    std::vector<uint64_t> old_keys;
    std::vector<uint32_t> old_gens;
    old_keys.swap(keys);
    old_gens.swap(gens);
    keys.assign(std::max<size_t>(64, old_keys.size() * 2), 0);
    gens.assign(keys.size(), 0);
    count = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_gens[i] == gen) insert(old_keys[i]);
    }
  }
  const size_t mask = keys.size() - 1;
  for (size_t i = scramble(key) & mask;; i = (i + 1) & mask) {
    if (gens[i] != gen) {
      gens[i] = gen;
      keys[i] = key;
      ++count;
      return true;
    }
    if (keys[i] == key) return false;
  }
}

Status CompiledGrammar::too_many_stacks() const {
  return Status::error(EMBER_ERR_TOO_COMPLEX,
                       "grammar: too complex: more than %u parse stacks at once (max_stacks; an ambiguous grammar, "
                       "or too many optional parts that may come next)",
                       limits_.max_stacks);
}

Result<uint32_t> CompiledGrammar::intern(std::vector<uint32_t>& stacks, uint32_t partial, uint8_t need, uint32_t lo,
                                         uint32_t hi) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  if (stacks.size() > limits_.max_stacks) return too_many_stacks();
  uint64_t h = mix(mix(partial, need), (uint64_t{lo} << 32) | hi);
  for (uint32_t s : stacks) h = mix(h, s);
  std::vector<uint32_t>& bucket = state_ids_[h];
  for (uint32_t id : bucket) {
    const State& s = states_[id];
    if (s.partial == partial && s.need == need && s.lo == lo && s.hi == hi && s.stacks == stacks) return id;
  }
  if (states_.size() >= limits_.max_states) {
    return Status::error(EMBER_ERR_TOO_COMPLEX, "grammar: too complex: more than %u matcher states (max_states)",
                         limits_.max_states);
  }
  if (limits_.max_bytes) {
    uint64_t more = kStateEntryBytes + stacks.size() * sizeof(uint32_t);
    if (states_.size() == states_.capacity()) more += grown(states_.size(), states_.capacity(), 1) * sizeof(State);
    if (next_.size() + 256 > next_.capacity()) more += grown(next_.size(), next_.capacity(), 256) * sizeof(uint32_t);
    if (state_ids_.size() + 1 > state_ids_.bucket_count()) more += 2 * state_ids_.bucket_count() * sizeof(void*);
    EMBER_TRY(make_room(more, "matcher states"));
  }
  const uint32_t id = static_cast<uint32_t>(states_.size());
  stacks_bytes_ += stacks.size() * sizeof(uint32_t);
  states_.emplace_back();
  State& s = states_.back();
  s.stacks = stacks;
  s.partial = partial;
  s.need = need;
  s.lo = lo;
  s.hi = hi;
  next_.resize(next_.size() + 256, kUnknown);
  bucket.push_back(id);
  return id;
}

bool CompiledGrammar::accepts(uint32_t pos, uint32_t cp) const {
  const CharSet& cs = grammar_.char_sets[grammar_.elems[pos].value];
  bool in = false;
  for (const CharRange& r : cs.ranges) {
    if (cp >= r.lo && cp <= r.hi) {
      in = true;
      break;
    }
  }
  return in != cs.negated;
}

bool CompiledGrammar::accepts_any(uint32_t pos, uint32_t lo, uint32_t hi) const {
  const CharSet& cs = grammar_.char_sets[grammar_.elems[pos].value];
  if (!cs.negated) {
    for (const CharRange& r : cs.ranges) {
      if (r.lo <= hi && r.hi >= lo) return true;
    }
    return false;
  }
  // Negated: some code point of [lo, hi] in none of the ranges.
  uint32_t cur = lo;
  for (;;) {
    bool moved = false;
    for (const CharRange& r : cs.ranges) {
      if (cur >= r.lo && cur <= r.hi) {
        if (r.hi >= hi) return false;
        cur = r.hi + 1;
        moved = true;
      }
    }
    if (!moved) return true;
  }
}

bool CompiledGrammar::accepts_all(uint32_t pos, uint32_t lo, uint32_t hi) const {
  const CharSet& cs = grammar_.char_sets[grammar_.elems[pos].value];
  if (cs.negated) {
    for (const CharRange& r : cs.ranges) {
      if (r.lo <= hi && r.hi >= lo) return false;
    }
    return true;
  }
  // Covered by the union of the ranges.
  uint32_t cur = lo;
  for (;;) {
    bool moved = false;
    for (const CharRange& r : cs.ranges) {
      if (cur >= r.lo && cur <= r.hi) {
        if (r.hi >= hi) return true;
        cur = r.hi + 1;
        moved = true;
      }
    }
    if (!moved) return false;
  }
}

Result<uint32_t> CompiledGrammar::step_code_point(uint32_t state, uint32_t cp) {
  std::vector<uint32_t> next;
  const std::vector<uint32_t> stacks = states_[state].stacks;  // close() may grow states_' storage
  for (uint32_t s : stacks) {
    if (s == kAccept) continue;
    const Node n = nodes_[s];
    if (accepts(n.pos, cp)) EMBER_TRY(close(n.pos + 1, n.parent, &next));
  }
  return intern(next, 0, 0, 0, 0);
}

// The next byte a UTF-8 character may have after lead byte `lead`: the
// first continuation byte's range excludes overlong forms and surrogates.
static void first_continuation(uint8_t lead, uint32_t* lo, uint32_t* hi) {
  *lo = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
  *hi = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
}

Result<uint32_t> CompiledGrammar::step_byte(uint32_t state, uint8_t b) {
  {
    const uint32_t known = next_[size_t{state} * 256 + b];
    if (known != kUnknown) return known;
  }
  uint32_t result = kDead;
  step_work_ = 0;  // max_step_work is per transition
  const State& s = states_[state];
  uint32_t partial = 0, lo = 0, hi = 0;
  uint8_t need = 0;
  bool decided = false;
  if (s.need > 0 && s.partial == kUniform) {
    // Every stack takes every code point this character may become: only
    // the byte's own validity matters.
    decided = true;
    if (b >= s.lo && b <= s.hi) {
      need = static_cast<uint8_t>(s.need - 1);
      std::vector<uint32_t> keep = s.stacks;
      if (need > 0) {
        EMBER_ASSIGN_OR_RETURN(result, intern(keep, kUniform, need, 0x80, 0xbf));
      } else {
        std::vector<uint32_t> next;
        for (uint32_t st : keep) {
          const Node n = nodes_[st];
          EMBER_TRY(close(n.pos + 1, n.parent, &next));
        }
        EMBER_ASSIGN_OR_RETURN(result, intern(next, 0, 0, 0, 0));
      }
    }
  } else if (s.need > 0) {
    if ((b & 0xc0) != 0x80) {
      decided = true;
    } else {
      partial = (s.partial << 6) | (b & 0x3fu);
      need = static_cast<uint8_t>(s.need - 1);
      if (need == 0) {
        EMBER_ASSIGN_OR_RETURN(result, step_code_point(state, partial));
        decided = true;
      } else {
        lo = std::max(s.lo, partial << (6 * need));
        hi = std::min(s.hi, (partial << (6 * need)) | ((1u << (6 * need)) - 1));
      }
    }
  } else if (b < 0x80) {
    EMBER_ASSIGN_OR_RETURN(result, step_code_point(state, b));
    decided = true;
  } else if (b >= 0xc2 && b <= 0xdf) {
    partial = b & 0x1fu, need = 1, lo = partial << 6, hi = lo | 0x3f;
  } else if (b >= 0xe0 && b <= 0xef) {
    partial = b & 0x0fu, need = 2, lo = std::max(partial << 12, 0x800u), hi = (partial << 12) | 0xfff;
    if (b == 0xed) hi = 0xd7ff;  // no surrogates
  } else if (b >= 0xf0 && b <= 0xf4) {
    partial = b & 0x07u, need = 3, lo = std::max(partial << 18, 0x10000u), hi = std::min((partial << 18) | 0x3ffff, 0x10ffffu);
  } else {
    decided = true;  // not a UTF-8 lead byte
  }
  if (!decided && lo <= hi) {
    // The same stacks, waiting for the rest of the character: alive only if
    // some stack can take a code point it may become. When each one left
    // takes every such code point, the bits so far do not matter (one
    // state per remaining count, not one per prefix: vocabularies hold
    // tens of thousands of multi-byte pieces).
    std::vector<uint32_t> keep;
    bool uniform = limits_.collapse_characters;
    for (uint32_t st : states_[state].stacks) {
      if (st == kAccept || !accepts_any(nodes_[st].pos, lo, hi)) continue;
      keep.push_back(st);
      uniform = uniform && accepts_all(nodes_[st].pos, lo, hi);
    }
    if (uniform && s.need == 0) {
      uint32_t next_lo, next_hi;
      first_continuation(b, &next_lo, &next_hi);
      EMBER_ASSIGN_OR_RETURN(result, intern(keep, kUniform, need, next_lo, next_hi));
    } else if (uniform) {
      EMBER_ASSIGN_OR_RETURN(result, intern(keep, kUniform, need, 0x80, 0xbf));
    } else {
      EMBER_ASSIGN_OR_RETURN(result, intern(keep, partial, need, lo, hi));
    }
  }
  next_[size_t{state} * 256 + b] = result;
  return result;
}

Result<uint32_t> CompiledGrammar::advance_text(uint32_t state, std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  for (char c : text) {
    if (state == kDead) return kDead;
    EMBER_ASSIGN_OR_RETURN(state, step_byte(state, static_cast<uint8_t>(c)));
  }
  return state;
}

Result<uint32_t> CompiledGrammar::advance(uint32_t state, int32_t token) {
  if (state == kDead || token < 0 || static_cast<size_t>(token) >= text_.size()) return kDead;
  if (std::binary_search(eog_.begin(), eog_.end(), token)) return complete(state) ? state : kDead;
  const std::string& t = text_[static_cast<size_t>(token)];
  if (t.empty()) return kDead;
  return advance_text(state, t);
}

bool CompiledGrammar::complete(uint32_t state) const {
  if (state == kDead) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const State& s = states_[state];
  return s.need == 0 && std::binary_search(s.stacks.begin(), s.stacks.end(), kAccept);
}

bool CompiledGrammar::finished(uint32_t state) const {
  if (state == kDead) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const State& s = states_[state];
  return s.need == 0 && s.stacks.size() == 1 && s.stacks[0] == kAccept;
}

Status CompiledGrammar::compute_mask(uint32_t state) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint64_t> mask((text_.size() + 63) / 64, 0);
  // at[d]: the state after the first d bytes of the current token; valid
  // for d <= alive.
  std::vector<uint32_t> at(1, state);
  size_t alive = 0;
  const uint8_t* text = sorted_.data();
  for (size_t k = 0; k < order_.size(); ++k) {
    const size_t s = shared_[k];
    if (s > alive) continue;  // shares the prefix that died
    const size_t len = offset_[k + 1] - offset_[k];
    const uint8_t* t = text + offset_[k];
    if (at.size() < len + 1) at.resize(len + 1);
    size_t d = s;
    while (d < len) {
      // The memoized transition, else built.
      uint32_t nx = next_[size_t{at[d]} * 256 + t[d]];
      if (nx == kUnknown) {
        EMBER_ASSIGN_OR_RETURN(nx, step_byte(at[d], t[d]));
      }
      if (nx == kDead) break;
      at[++d] = nx;
    }
    alive = d;
    if (d == len) {
      const int32_t id = order_[k];
      mask[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
    }
  }
  const State& st = states_[state];
  if (st.need == 0 && std::binary_search(st.stacks.begin(), st.stacks.end(), kAccept)) {
    for (int32_t id : eog_) mask[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }
  const uint64_t bytes = mask.size() * sizeof(uint64_t);
  // Over the budget: the oldest masks go (recomputed when needed again).
  while (mask_bytes_ + bytes > limits_.max_mask_bytes && mask_head_ < mask_order_.size()) drop_oldest_mask();
  // The new mask is held already: room for the order's growth only.
  if (limits_.max_bytes) {
    const uint64_t order = mask_order_.size() == mask_order_.capacity()
                               ? grown(mask_order_.size(), mask_order_.capacity(), 1) * sizeof(uint32_t)
                               : 0;
    EMBER_TRY(make_room(bytes + order, "token masks"));
  }
  states_[state].mask = std::move(mask);
  mask_bytes_ += bytes;
  mask_order_.push_back(state);
  stats_.masks_computed++;
  stats_.mask_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::ok();
}

Result<int32_t> CompiledGrammar::apply_mask(uint32_t state, float* logits, int32_t n_vocab) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state == kDead || state >= states_.size()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: no such matcher state %u", state);
  }
  if (states_[state].mask.empty()) {
    EMBER_TRY(compute_mask(state));
  } else {
    stats_.masks_reused++;
  }
  const std::vector<uint64_t>& mask = states_[state].mask;
  const int32_t covered = std::min<int32_t>(n_vocab, static_cast<int32_t>(text_.size()));
  int32_t allowed = 0;
  for (int32_t w = 0; w * 64 < covered; ++w) {
    const uint64_t bits = mask[static_cast<size_t>(w)];
    const int32_t end = std::min(covered, (w + 1) * 64);
    if (bits == ~uint64_t{0} && end - w * 64 == 64) {
      allowed += 64;
      continue;
    }
    for (int32_t t = w * 64; t < end; ++t) {
      if (bits >> (t % 64) & 1) {
        ++allowed;
      } else {
        logits[t] = -INFINITY;
      }
    }
  }
  for (int32_t t = covered; t < n_vocab; ++t) logits[t] = -INFINITY;
  return allowed;
}

Status CompiledGrammar::work_room(size_t more) {
  if (!limits_.max_bytes || work_.size() + more <= work_.capacity()) return Status::ok();
  const uint64_t size = grown(work_.size(), work_.capacity(), more);
  EMBER_TRY(make_room(size * sizeof(uint32_t), "parse scratch"));
  work_.reserve(size);
  return Status::ok();
}

void CompiledGrammar::drop_oldest_mask() {
  State& old = states_[mask_order_[mask_head_++]];
  mask_bytes_ -= old.mask.size() * sizeof(uint64_t);
  std::vector<uint64_t>().swap(old.mask);
  // The dropped entries are cut off once they are half of the list.
  if (mask_head_ * 2 > mask_order_.size()) {
    mask_order_.erase(mask_order_.begin(), mask_order_.begin() + static_cast<std::ptrdiff_t>(mask_head_));
    mask_head_ = 0;
  }
}

uint64_t CompiledGrammar::held_bytes() const {
  return fixed_bytes_ + nodes_.capacity() * sizeof(Node) + node_ids_.size() * kNodeEntryBytes +
         node_ids_.bucket_count() * sizeof(void*) + states_.capacity() * sizeof(State) + stacks_bytes_ +
         next_.capacity() * sizeof(uint32_t) + state_ids_.size() * kStateEntryBytes +
         state_ids_.bucket_count() * sizeof(void*) + mask_bytes_ + mask_order_.capacity() * sizeof(uint32_t) +
         work_.capacity() * sizeof(uint32_t) + seen_.keys.capacity() * sizeof(uint64_t) +
         seen_.gens.capacity() * sizeof(uint32_t);
}

Status CompiledGrammar::make_room(uint64_t more, const char* what) {
  while (held_bytes() + more > limits_.max_bytes && mask_head_ < mask_order_.size()) drop_oldest_mask();
  if (held_bytes() + more <= limits_.max_bytes) return Status::ok();
  return Status::error(EMBER_ERR_TOO_COMPLEX,
                       "grammar: too complex: its %s would take it past %llu bytes (max_bytes; it holds %llu)", what,
                       static_cast<unsigned long long>(limits_.max_bytes),
                       static_cast<unsigned long long>(held_bytes()));
}

uint64_t CompiledGrammar::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes();
}

Status CompiledGrammar::set_max_bytes(uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_bytes) {
    while (held_bytes() > max_bytes && mask_head_ < mask_order_.size()) drop_oldest_mask();
    if (held_bytes() > max_bytes) {
      return Status::error(EMBER_ERR_NO_MEMORY, "grammar: it holds %llu bytes already, over max_bytes %llu",
                           static_cast<unsigned long long>(held_bytes()), static_cast<unsigned long long>(max_bytes));
    }
  }
  limits_.max_bytes = max_bytes;
  return Status::ok();
}

CompiledGrammar::Stats CompiledGrammar::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.states = static_cast<uint32_t>(states_.size());
  s.nodes = static_cast<uint32_t>(nodes_.size());
  return s;
}

}  // namespace ember

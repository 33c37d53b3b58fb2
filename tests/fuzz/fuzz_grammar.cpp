// libFuzzer: the GBNF reader over arbitrary text with small limits. Any
// input must end in a Grammar or EMBER_ERR_INVALID_ARGUMENT with a message
// (never a crash, hang or unbounded allocation). A Grammar must pass
// check_grammar, and grammar_to_gbnf of it must read back into the same
// rules: same names, alternatives, elements and character sets. Then the
// matcher runs it (small limits) over a vocabulary of every byte and some
// multi-byte pieces: the text after the first NUL byte of the input is fed
// byte by byte, and masks are taken along the way — errors are statuses
// (TOO_COMPLEX past a limit), never crashes, and a token the mask allows is
// one the grammar accepts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

#include <vector>

namespace {

bool same_set(const ember::CharSet& a, const ember::CharSet& b) {
  if (a.negated != b.negated || a.ranges.size() != b.ranges.size()) return false;
  for (size_t i = 0; i < a.ranges.size(); ++i) {
    if (a.ranges[i].lo != b.ranges[i].lo || a.ranges[i].hi != b.ranges[i].hi) return false;
  }
  return true;
}

// The same rules by name (rule numbers may differ: the reader numbers rules
// by first appearance).
bool same_rules(const ember::Grammar& a, const ember::Grammar& b) {
  if (a.alts.size() != b.alts.size() || a.elems.size() != b.elems.size()) return false;
  if (a.names[a.root] != b.names[b.root]) return false;
  std::unordered_map<std::string, uint32_t> in_b;
  for (uint32_t r = 0; r < b.names.size(); ++r) in_b.emplace(b.names[r], r);
  for (uint32_t ra = 0; ra < a.alts.size(); ++ra) {
    const auto it = in_b.find(a.names[ra]);
    if (it == in_b.end()) return false;
    const uint32_t rb = it->second;
    if (a.alts[ra].size() != b.alts[rb].size()) return false;
    for (size_t k = 0; k < a.alts[ra].size(); ++k) {
      uint32_t i = a.alts[ra][k];
      uint32_t j = b.alts[rb][k];
      for (;; ++i, ++j) {
        const ember::GrammarElem& ea = a.elems[i];
        const ember::GrammarElem& eb = b.elems[j];
        if (ea.kind != eb.kind) return false;
        if (ea.kind == ember::GrammarElem::End) break;
        if (ea.kind == ember::GrammarElem::Ref && a.names[ea.value] != b.names[eb.value]) return false;
        if (ea.kind == ember::GrammarElem::Chars && !same_set(a.char_sets[ea.value], b.char_sets[eb.value])) return false;
      }
    }
  }
  return true;
}

// A byte-level vocabulary: the 256 bytes (as BPE pieces), a few words,
// multi-byte characters and an end token.
const ember::Tokenizer& vocabulary() {
  static const ember::Tokenizer* t = [] {
    ember::Vocab v;
    v.kind = ember::TokenizerKind::BytePairBPE;
    // GPT-2's byte-to-character map: printable bytes stand for themselves.
    int unprintable = 0;
    for (int b = 0; b < 256; ++b) {
      uint32_t cp = static_cast<uint32_t>(b);
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
      if (!printable) cp = static_cast<uint32_t>(256 + unprintable++);
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
      }
      v.pieces.push_back(s);
    }
    for (const char* w : {"ab", "abc", "true", "false", "null", "\"\":", "{\"", "Ġx", "ĠĠ", "12", "Ã©"}) v.pieces.push_back(w);
    v.pieces.push_back("<|end|>");
    v.eos_id = static_cast<int32_t>(v.pieces.size() - 1);
    auto made = ember::Tokenizer::create(std::move(v));
    if (!made.is_ok()) std::abort();
    return new ember::Tokenizer(std::move(made).value());
  }();
  return *t;
}

void run_matcher(const ember::Grammar& g, std::string_view feed) {
  ember::MatcherLimits ml;
  ml.max_states = 1 << 12;
  ml.max_nodes = 1 << 14;
  ml.max_stacks = 256;
  ml.max_mask_bytes = 1 << 16;
  auto made = ember::CompiledGrammar::create(g, vocabulary(), ml);
  if (!made.is_ok()) {
    const ember_status c = made.status().code();
    if (c != EMBER_ERR_INVALID_ARGUMENT && c != EMBER_ERR_TOO_COMPLEX) std::abort();
    return;
  }
  ember::CompiledGrammar& m = *made.value();
  const int32_t n = vocabulary().size();
  std::vector<float> logits(static_cast<size_t>(n));
  uint32_t state = m.initial_state();
  for (size_t i = 0; i <= feed.size() && i < 64; ++i) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    auto allowed = m.apply_mask(state, logits.data(), n);
    if (!allowed.is_ok()) {
      if (allowed.status().code() != EMBER_ERR_TOO_COMPLEX) std::abort();
      return;
    }
    // Each allowed token is accepted.
    for (int32_t t = 0; t < n; ++t) {
      if (logits[static_cast<size_t>(t)] != 0.0f) continue;
      auto next = m.advance(state, t);
      if (next.is_ok() && next.value() == ember::CompiledGrammar::kDead) std::abort();
    }
    if (i == feed.size()) break;
    auto next = m.advance_text(state, feed.substr(i, 1));
    if (!next.is_ok() || next.value() == ember::CompiledGrammar::kDead) return;
    state = next.value();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view feed;
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    feed = text.substr(nul + 1);
    text = text.substr(0, nul);
  }
  ember::GrammarLimits limits;
  limits.max_text_bytes = 1 << 16;
  limits.max_rules = 512;
  limits.max_elements = 1 << 14;
  limits.max_nesting = 16;
  limits.max_repeat = 64;
  auto parsed = ember::parse_gbnf(text, "root", limits);
  if (!parsed.is_ok()) {
    if (parsed.status().code() != EMBER_ERR_INVALID_ARGUMENT || parsed.status().message().empty()) std::abort();
    return 0;
  }
  const ember::Grammar& g = parsed.value();
  if (!ember::check_grammar(g, limits).is_ok()) std::abort();
  // Written back, the text may be longer (escapes) but holds as many rules
  // and elements, and no parentheses.
  const std::string written = ember::grammar_to_gbnf(g);
  ember::GrammarLimits back_limits = limits;
  back_limits.max_text_bytes = written.size();
  auto back = ember::parse_gbnf(written, g.names[g.root], back_limits);
  if (!back.is_ok()) std::abort();
  if (!same_rules(g, back.value())) std::abort();
  run_matcher(g, feed);
  return 0;
}

// libFuzzer: the GBNF reader over arbitrary text with small limits. Any
// input must end in a Grammar or EMBER_ERR_INVALID_ARGUMENT with a message
// (never a crash, hang or unbounded allocation). A Grammar must pass
// check_grammar, and grammar_to_gbnf of it must read back into the same
// rules: same names, alternatives, elements and character sets.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "grammar/gbnf.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
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
  return 0;
}

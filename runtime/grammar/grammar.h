// Grammars for structured output: a context-free grammar over Unicode code
// points (the text a model writes, decoded from UTF-8), held as rules of
// alternatives of element sequences. The GBNF reader (gbnf.h) and the JSON
// Schema translator (json_schema.h) produce one; the matcher (matcher.h)
// runs it against a sequence's tokens and masks the logits it rejects.
//
// The form the matcher needs, and every producer guarantees (check_grammar):
// every Ref names a rule; the root exists; no rule reaches itself at its
// leftmost position, directly or through rules that can match nothing, with
// something left to match after the reference (left recursion: the matcher
// would never stop expanding; a reference that ends its alternative, as in
// the rule R ::= x R | of a repetition x*, is a tail call and is kept);
// sizes within GrammarLimits. Repetitions (* + ? {m,n}) and groups are already rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ember {

// An inclusive range of code points.
struct CharRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

// The code points one element accepts: any of the ranges, or (negated) any
// code point in none of them. `.` is a negated set with no ranges.
struct CharSet {
  bool negated = false;
  std::vector<CharRange> ranges;
};

struct GrammarElem {
  enum Kind : uint8_t {
    End = 0,    // the end of an alternative
    Ref = 1,    // a rule, by index (Grammar::alts)
    Chars = 2,  // one code point of a set, by index (Grammar::char_sets)
  };
  Kind kind = End;
  uint32_t value = 0;
};

struct Grammar {
  // Every alternative's elements, each alternative closed by an End (an
  // empty alternative is a lone End).
  std::vector<GrammarElem> elems;
  // Per rule: the index in `elems` of each alternative's first element
  // (at least one alternative per rule).
  std::vector<std::vector<uint32_t>> alts;
  // Per rule: its name as written, or a made-up one (for messages and
  // grammar_to_gbnf); unique.
  std::vector<std::string> names;
  std::vector<CharSet> char_sets;
  uint32_t root = 0;
};

// What a grammar (its text, or a JSON Schema) may cost before it is
// refused with EMBER_ERR_INVALID_ARGUMENT naming the limit.
struct GrammarLimits {
  size_t max_text_bytes = size_t{1} << 20;   // the GBNF text or schema
  uint32_t max_rules = 1u << 16;             // generated rules included
  uint32_t max_elements = 1u << 20;          // Grammar::elems
  uint32_t max_nesting = 64;                 // parentheses (GBNF), nesting (schema)
  uint32_t max_repeat = 1000;                // m and n of {m,n}
};

// EMBER_ERR_INVALID_ARGUMENT naming the rule when a Ref is out of range,
// the root is missing, a rule is left-recursive (directly or through
// nullable rules, other than by tail calls), or a limit is passed.
Status check_grammar(const Grammar& grammar, const GrammarLimits& limits = {});

// Per rule: whether it can match the empty string.
std::vector<bool> nullable_rules(const Grammar& grammar);

}  // namespace ember

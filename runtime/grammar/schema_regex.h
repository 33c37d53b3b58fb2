// The regular expressions of JSON Schema's `pattern` and `patternProperties`
// (an ECMA-262 subset), read into a small tree for the JSON Schema
// translator (json_schema.cpp): written out as GBNF over a JSON string's
// content, measured (length bounds), and matched against property names.
//
// Read: literals and escapes (\d \w \s and their negations, \t \n \r \f \v,
// \xHH, \uHHHH, escaped punctuation), classes [...] / [^...], `.`, groups
// ( ), (?: ), (?<name> ), alternation, * + ? {m} {m,} {m,n} (lazy `?`
// suffixes read as the same language), and anchors ^ $. Refused by name
// with EMBER_ERR_UNSUPPORTED: lookarounds, backreferences, \b \B.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace ember::schema_regex {

struct Node {
  enum Kind : uint8_t { Set, Seq, Alt, Repeat, Begin, End };
  Kind kind = Seq;
  CharSet set;                // Set
  std::vector<uint32_t> kids;  // Seq, Alt; Repeat: one
  uint32_t min = 0;           // Repeat
  uint32_t max = 0;           // Repeat; kUnbounded for none
};

constexpr uint32_t kUnbounded = UINT32_MAX;

struct Regex {
  std::vector<Node> nodes;
  uint32_t root = 0;
};

// `where` names the keyword and pointer for messages ("'pattern' at /a").
// Nesting deeper than limits.max_nesting and counts past limits.max_repeat
// are refused naming the limit.
Result<Regex> parse(std::string_view pattern, const std::string& where, const GrammarLimits& limits);

// GBNF for the JSON string content (between the quotes) of every string
// the pattern matches somewhere (JSON Schema's search semantics: an end not
// anchored by ^ / $ is open to any characters, written as rule `any_char`).
// Characters the pattern accepts that JSON must escape are written as
// their escapes (\" and \\); control characters are left out (the grammar
// may accept fewer strings than the pattern, never more). EMBER_ERR_UNSUPPORTED
// for an anchor anywhere but the start or end of a top-level alternative.
Result<std::string> to_gbnf(const Regex& re, const std::string& where, const std::string& any_char);

// The lengths (in code points) of the strings the pattern's top level can
// match, anchors aside: [min, max], max kUnbounded when unbounded; whether
// every top-level alternative is anchored at both ends.
struct LengthBounds {
  uint64_t min = 0;
  uint64_t max = 0;
  bool anchored = false;
};
LengthBounds length_bounds(const Regex& re);

// Whether `text` contains a match (search semantics).
bool search(const Regex& re, std::string_view text);

// UTF-8 (already valid: it came through the JSON reader) to code points.
std::vector<uint32_t> decode_utf8(std::string_view text);
// One code point as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

}  // namespace ember::schema_regex

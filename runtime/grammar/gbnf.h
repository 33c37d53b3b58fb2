// GBNF, llama.cpp's grammar syntax (the grammars users already have), read
// into the grammar form (grammar.h).
//
// Read: `name ::= alternatives` (names of letters, digits, '-'; one
// definition each), alternatives split by '|'; a newline ends a rule only
// where the next non-blank line begins `name ::=` (inside parentheses it is
// a space); `# comments`; literals "..." and classes [a-z] [^...] in UTF-8
// with escapes \n \r \t \\ \" \' \[ \] \- \xHH \uHHHH \UHHHHHHHH, where a raw
// newline or other control character stands for itself (as in llama.cpp;
// a raw NUL is refused: llama.cpp's text ends there); `.`; groups ( );
// repetitions * + ? {m} {m,} {m,n}; references, before or after their
// rule. Groups and repetitions become generated rules named after the rule
// they are in (`value-3`); each distinct character set is held once. A
// repetition of something that can match nothing (`("a"?)*`, `(x*)+`,
// `("" | "b")*`) means the repetition of its non-empty matches, as in
// llama.cpp (check_grammar keeps such tail-call cycles).
// Limits (GrammarLimits): text bytes, rules, elements (counted as they are
// emitted), parenthesis nesting (the reader never recurses), m and n.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace ember {

// Reads GBNF text into a Grammar whose root is rule `root`; the result
// passes check_grammar(limits). Malformed text, an undefined or doubly
// defined rule, or text past `limits`: EMBER_ERR_INVALID_ARGUMENT,
// "grammar:LINE:COL: what (near 'text')" (COL counts characters). A missing
// root, left recursion, and the text-size limit: "grammar: what".
Result<Grammar> parse_gbnf(std::string_view text, std::string_view root = "root", const GrammarLimits& limits = {});

// The grammar written back as GBNF text (generated rules included, one rule
// per line, under their names): for a grammar check_grammar accepts,
// parse_gbnf of it, rooted at the root's name, accepts the same strings.
// Names that GBNF cannot write (other than letters, digits, '-') are
// rewritten, '-' for each other character, a suffix on a clash.
std::string grammar_to_gbnf(const Grammar& grammar);

}  // namespace ember

// GBNF, llama.cpp's grammar syntax (the grammars users already have), read
// into the grammar form (grammar.h).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace ember {

// Reads GBNF text into a Grammar whose root is rule `root`. Malformed
// text, an undefined or doubly defined rule, left recursion, or text past
// `limits`: EMBER_ERR_INVALID_ARGUMENT, "grammar:LINE:COL: what".
Result<Grammar> parse_gbnf(std::string_view text, std::string_view root = "root", const GrammarLimits& limits = {});

// The grammar written back as GBNF text (generated rules included, one rule
// per line): parse_gbnf of it accepts the same strings.
std::string grammar_to_gbnf(const Grammar& grammar);

}  // namespace ember

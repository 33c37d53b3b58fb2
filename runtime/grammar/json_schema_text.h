// The GBNF text a JSON Schema translation is made of (json_schema.cpp walks
// the schema; this holds the pieces): the primitive and format rules,
// literals and repeat suffixes, exact integer and number ranges as digit
// alternatives, JSON pointer tokens. Internal to the grammar layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/schema_regex.h"

namespace ember::schema_text {

namespace rx = schema_regex;
using json = nlohmann::ordered_json;

// The primitive rules, written once each when used (with what they use).
struct Primitive {
  const char* name;
  const char* body;
  const char* uses[6];
};
inline const Primitive kPrimitives[] = {
    {"ws", "( \" \" | \"\\n\" \" \"{0,20} )?", {}},
    {"hex", "[0-9a-fA-F]", {}},
    // A \u escape of a code point: no lone surrogates.
    {"unicode-escape",
     "[0-9a-cA-Ce-fE-F] hex{3} | [dD] [0-7] hex{2} | [dD] [89abAB] hex{2} \"\\\\u\" [dD] [c-fC-F] hex{2}",
     {"hex"}},
    {"char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" unicode-escape )", {"unicode-escape"}},
    // Characters of generated extra keys: no escapes (see key_not_in).
    {"key-char", "[^\"\\\\\\x00-\\x1F]", {}},
    {"string", "\"\\\"\" char* \"\\\"\"", {"char"}},
    {"int-part", "\"0\" | [1-9] [0-9]{0,15}", {}},
    {"integer", "\"-\"? int-part", {"int-part"}},
    {"number", "\"-\"? int-part ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?", {"int-part"}},
    {"boolean", "\"true\" | \"false\"", {}},
    {"null", "\"null\"", {}},
    {"never", "[^\\x00-\\U0010FFFF]", {}},
    {"value", "object | array | string | number | boolean | null", {"object", "array", "string", "number", "boolean", "null"}},
    {"member", "string ws \":\" ws value ws", {"string", "ws", "value"}},
    {"object", "\"{\" ws ( member ( \",\" ws member )* )? \"}\"", {"member", "ws"}},
    {"array", "\"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"", {"value", "ws"}},
    {"digit", "[0-9]", {}},
    {"date", "[1-9] digit{3} \"-\" ( ( \"01\" | \"03\" | \"05\" | \"07\" | \"08\" | \"10\" | \"12\" ) \"-\" "
             "( \"0\" [1-9] | [12] digit | \"3\" [01] ) | ( \"04\" | \"06\" | \"09\" | \"11\" ) \"-\" "
             "( \"0\" [1-9] | [12] digit | \"30\" ) | \"02\" \"-\" ( \"0\" [1-9] | \"1\" digit | \"2\" [0-8] ) )",
     {"digit"}},
    {"time", "( [01] digit | \"2\" [0-3] ) \":\" [0-5] digit \":\" [0-5] digit ( \".\" digit{1,9} )? "
             "( \"Z\" | [-+] ( [01] digit | \"2\" [0-3] ) \":\" [0-5] digit )",
     {"digit"}},
    {"date-time", "date \"T\" time", {"date", "time"}},
    {"uuid", "hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}", {"hex"}},
    {"email-part", "[a-zA-Z0-9_%+-]{1,32}", {}},
    {"email-label", "[a-zA-Z0-9] ( [a-zA-Z0-9-]{0,30} [a-zA-Z0-9] )?", {}},
    {"email", "email-part ( \".\" email-part ){0,2} \"@\" email-label ( \".\" email-label ){1,3}",
     {"email-part", "email-label"}},
    {"uri", "[a-zA-Z] [a-zA-Z0-9+.-]{0,15} \":\" ( [a-zA-Z0-9._~:/?#@!$&'()*+,;=-] | \"%\" hex hex )+", {"hex"}},
    {"ipv4-octet", "\"25\" [0-5] | \"2\" [0-4] digit | \"1\" digit digit | [1-9] digit | digit", {"digit"}},
    {"ipv4", "ipv4-octet \".\" ipv4-octet \".\" ipv4-octet \".\" ipv4-octet", {"ipv4-octet"}},
};

// The formats written as grammars, with the lengths of the strings each
// accepts (for minLength/maxLength beside them).
struct Format {
  const char* name;
  uint64_t min_len, max_len;
};
inline const Format kFormats[] = {
    {"date", 10, 10},    {"time", 9, 29},   {"date-time", 20, 40},       {"uuid", 36, 36},
    {"email", 5, 230},   {"uri", 3, rx::kUnbounded}, {"ipv4", 7, 15},
};


// 10^16 - 1: numbers have at most 16 integer digits.
constexpr int64_t kCap = 9999999999999999LL;

// A bound of a number: absent, or an integer (inclusive or not).
struct Bound {
  bool present = false;
  int64_t value = 0;
  bool exclusive = false;
};

std::string escape_pointer_token(const std::string& key);
const char* at(const std::string& ptr);
std::string literal(const std::string& text);
std::string json_literal(const json& v);
std::string repeat_suffix(uint64_t lo, uint64_t hi);
void digits_between(const std::string& x, const std::string& y, std::vector<std::string>* alts, const std::string& prefix);
int64_t pow10(size_t e);
void uint_range(int64_t a, int64_t b, std::vector<std::string>* alts);
std::string join_alts(const std::vector<std::string>& alts);
void magnitudes(const Bound& lo, const Bound& hi, const std::string& sign, std::vector<std::string>* alts);

}  // namespace ember::schema_text

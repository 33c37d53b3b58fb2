// The GBNF reader (grammar/gbnf.h): every syntax feature, checked by the
// language the produced rules accept (a reference matcher written here, not
// the runtime's), the kinds of grammar users bring, the round trip through
// grammar_to_gbnf, each error with its line and column, and hostile texts
// refused quickly and within the limits.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "grammar/gbnf.h"

namespace {

using ember::CharSet;
using ember::Grammar;
using ember::GrammarElem;
using ember::GrammarLimits;

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < len && i + k < s.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(c);
    i += len;
  }
  return out;
}

// Whether the grammar derives exactly `text` from its root: for each (rule,
// position) the set of positions it can end at, memoized; recursion is
// bounded by the depth cap (a left-recursive grammar never gets here).
class ReferenceMatcher {
 public:
  ReferenceMatcher(const Grammar& g, std::string_view text) : g_(g), s_(code_points(text)) {}

  bool accepts() {
    const std::vector<size_t> ends = ends_of(g_.root, 0);
    REQUIRE_FALSE(too_deep_);
    for (size_t e : ends) {
      if (e == s_.size()) return true;
    }
    return false;
  }

 private:
  bool in_set(const CharSet& set, uint32_t c) const {
    bool in = false;
    for (const auto& r : set.ranges) in = in || (c >= r.lo && c <= r.hi);
    return in != set.negated;
  }

  std::vector<size_t> ends_of(uint32_t rule, size_t pos) {
    const auto key = std::make_pair(rule, pos);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (++depth_ > 20000) {
      too_deep_ = true;
      --depth_;
      return {};
    }
    std::set<size_t> out;
    for (uint32_t a : g_.alts[rule]) {
      std::set<size_t> cur = {pos};
      for (uint32_t i = a; g_.elems[i].kind != GrammarElem::End && !cur.empty(); ++i) {
        const GrammarElem& e = g_.elems[i];
        std::set<size_t> next;
        for (size_t p : cur) {
          if (e.kind == GrammarElem::Chars) {
            if (p < s_.size() && in_set(g_.char_sets[e.value], s_[p])) next.insert(p + 1);
          } else {
            for (size_t q : ends_of(e.value, p)) next.insert(q);
          }
        }
        cur = std::move(next);
      }
      out.insert(cur.begin(), cur.end());
    }
    --depth_;
    std::vector<size_t> v(out.begin(), out.end());
    memo_[key] = v;
    return v;
  }

  const Grammar& g_;
  std::vector<uint32_t> s_;
  std::map<std::pair<uint32_t, size_t>, std::vector<size_t>> memo_;
  int depth_ = 0;
  bool too_deep_ = false;
};

bool accepts(const Grammar& g, std::string_view text) { return ReferenceMatcher(g, text).accepts(); }

Grammar parse_ok(std::string_view text, std::string_view root = "root", const GrammarLimits& limits = {}) {
  auto r = ember::parse_gbnf(text, root, limits);
  INFO("grammar text:\n" << text.substr(0, 4000));
  INFO("status: " << r.status().message());
  REQUIRE(r.is_ok());
  REQUIRE(ember::check_grammar(r.value(), limits).is_ok());
  return std::move(r).value();
}

std::string parse_error(std::string_view text, const GrammarLimits& limits = {}, std::string_view root = "root") {
  auto r = ember::parse_gbnf(text, root, limits);
  INFO("grammar text: " << text);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == EMBER_ERR_INVALID_ARGUMENT);
  return r.status().message();
}

// The grammar accepts every string of `yes` and none of `no`, and so does
// the grammar read back from grammar_to_gbnf of it, with as many rules and
// elements.
void check_language(std::string_view text, const std::vector<std::string>& yes, const std::vector<std::string>& no) {
  const Grammar g = parse_ok(text);
  const std::string written = ember::grammar_to_gbnf(g);
  INFO("grammar text:\n" << text << "\nwritten back:\n" << written);
  const Grammar back = parse_ok(written, g.names[g.root]);
  CHECK(back.alts.size() == g.alts.size());
  CHECK(back.elems.size() == g.elems.size());
  for (const std::string& s : yes) {
    INFO("should accept '" << s << "'");
    CHECK(accepts(g, s));
    CHECK(accepts(back, s));
  }
  for (const std::string& s : no) {
    INFO("should reject '" << s << "'");
    CHECK_FALSE(accepts(g, s));
    CHECK_FALSE(accepts(back, s));
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("gbnf: literals, escapes and UTF-8 become one element per code point") {
  check_language(R"(root ::= "ab\n\t\r\\\"\'\[\]\x41\u00e9\U0001F600")",
                 {"ab\n\t\r\\\"'[]A\xC3\xA9\xF0\x9F\x98\x80"}, {"ab", "ab\n\t\r\\\"'[]A\xC3\xA9", ""});
  const Grammar g = parse_ok("root ::= \"h\xC3\xA9\"");
  REQUIRE(g.alts[g.root].size() == 1);
  CHECK(g.elems.size() == 3);  // h, é, End
  CHECK(g.char_sets[g.elems[1].value].ranges[0].lo == 0xE9);
  check_language(R"(root ::= "" "x" "")", {"x"}, {"", "xx"});
}

TEST_CASE("gbnf: character classes, ranges, negation and any") {
  check_language("root ::= [a-z0-9_]", {"a", "q", "z", "0", "9", "_"}, {"A", "-", "", "ab"});
  check_language(R"(root ::= [^"\\] [^"\\])", {"ab", "\xE6\x97\xA5x", "  "}, {"\"a", "a\\", "a"});
  check_language(R"(root ::= [\x00-\x1f] [-a] [b-])", {"\x01--", "\x1f" "ab"}, {" ab", "\x01" "cb"});
  check_language(R"(root ::= [\]\[] . .)", {"]xy", "[\xF0\x9F\x98\x80\n"}, {"a..", "]x"});
  check_language(R"(root ::= [\u3040-\u309F]+)", {"\xE3\x81\x82\xE3\x82\x93"}, {"a", ""});
}

TEST_CASE("gbnf: raw newlines and control characters in literals and classes, as llama.cpp reads them") {
  check_language("root ::= \"a\nb\"", {"a\nb"}, {"ab", "a"});
  check_language("root ::= \"\t|\r\x7f\"", {"\t|\r\x7f"}, {"\t|\r"});
  check_language("root ::= [\n\t ]+ \"x\"", {"\n\t x", "\nx"}, {"x", "\r\nx"});
  check_language("root ::= [\x01-\x1f]", {"\x05", "\x1f"}, {" ", ""});
  // A literal may run over lines; the rule after it still begins its own.
  check_language("root ::= \"a\nb\" c\nc ::= \"d\"", {"a\nbd"}, {"abd", "d"});
  // \- is an escape, as in llama.cpp.
  check_language(R"(root ::= [a\-z] "\-")", {"--", "a-", "z-"}, {"m-", "-"});
  // A NUL byte ends llama.cpp's text: refused here, where it is.
  CHECK(parse_error(std::string("root ::= \"a\0b\"", 14)).rfind("grammar:1:12: a NUL byte (write \\x00)", 0) == 0);
  CHECK(parse_error(std::string("root ::= [a\0]", 13)).rfind("grammar:1:12: a NUL byte", 0) == 0);
  CHECK(parse_error(std::string("root ::= [a-\0]", 14)).rfind("grammar:1:13: a NUL byte", 0) == 0);
}

TEST_CASE("gbnf: alternatives, groups, comments, several lines and empty alternatives") {
  const char* text = R"(# a comment line
root ::= greeting ( " " name )? # trailing comment
  | "bye"
greeting ::= "hi" |
    "hello"

name ::= (
  "ann"   # inside a group, newlines are spaces
  | "bob"
) "!"?
)";
  check_language(text, {"hi", "hello", "hi ann", "hello bob!", "bye"}, {"hi ", "hey", "bye ann", "hi carl", ""});
  check_language("root ::= \"a\" | \nother ::= \"b\"", {"a", ""}, {"b"});
  check_language("root ::= | \"a\" |", {"", "a"}, {"aa"});
  check_language("root ::=\nx ::= \"y\"", {""}, {"y"});
  check_language("root ::= (\"a\" | ) (  )\"b\"", {"ab", "b"}, {"a", ""});
  check_language("root ::= \"a\"\n  \"b\"\n\n  # more of root\n  \"c\"", {"abc"}, {"a", "ab"});
  check_language("root ::= \"a\"\r\nb ::= \"c\"\r\n", {"a"}, {"c"});
}

TEST_CASE("gbnf: repetitions * + ? {m} {m,} {m,n} and chains") {
  check_language(R"(root ::= "a"*)", {"", "a", "aaaa"}, {"b", "ab"});
  check_language(R"(root ::= "ab"+)", {"ab", "abab"}, {"", "a", "aba"});
  check_language(R"(root ::= "x" [0-9]? "y")", {"xy", "x1y"}, {"x12y"});
  check_language(R"(root ::= [a-c]{3})", {"abc", "ccc"}, {"ab", "abca"});
  check_language(R"(root ::= "z"{2,})", {"zz", "zzzzz"}, {"z", ""});
  check_language(R"(root ::= ("a" | "b"){1,3} "." {0} "!")", {"a!", "ab!", "bab!"}, {"!", "abab!", "a.!"});
  check_language(R"(root ::= "a"{ 0 , 2 })", {"", "a", "aa"}, {"aaa"});
  check_language(R"(root ::= ("ab"{2}){2})", {"abababab"}, {"abab", "ababab"});
  check_language(R"(root ::= "a"*? "b"{2}+)", {"bb", "abbbb", "aabb"}, {"b", "ab", "bbb"});
  check_language(R"(root ::= ()* "x" (())+)", {"x"}, {""});
  // {m,n} is m copies, then n - m nested optionals.
  const Grammar g = parse_ok(R"(root ::= [a]{2,5})");
  CHECK(g.alts.size() == 1 + 3);
}

TEST_CASE("gbnf: references before and after their rule, generated names, one set per distinct set") {
  const Grammar g = parse_ok(R"(root ::= value ("," value)*
value ::= [0-9]+ | "[" [0-9] "]" | "a" "a" [a] [a-a]
value-1 ::= "taken")");
  CHECK(accepts(g, "1,[2],aaaa"));
  // Rules: root, value, value-1, then generated ones named after their rule
  // and never a written name.
  std::set<std::string> names(g.names.begin(), g.names.end());
  CHECK(names.size() == g.names.size());
  CHECK(names.count("root-1") == 1);
  CHECK(names.count("value-2") + names.count("value-3") + names.count("value-4") >= 1);
  // [0-9] twice, "a" five times ([a] and [a-a] included): one set each,
  // plus ',' '[' ']' and the t k e n of "taken".
  CHECK(g.char_sets.size() == 9);
}

TEST_CASE("gbnf: a JSON grammar") {
  const char* text = R"G(root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* )? ws "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex{4} ) )* "\""
hex    ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
)G";
  check_language(text,
                 {"{}", " [1, -2.5e+3, true, null] ", R"({"a": {"b": ["c\n", "\u00e9"]}, "d": false})",
                  "\"\xE6\x97\xA5\xE6\x9C\xAC\"", "0", "-0.0"},
                 {"{", "[1,]", "01", R"({"a" 1})", "\"\x01\"", R"("\x")", "tru", "1.", "[1 2]"});
}

TEST_CASE("gbnf: an arithmetic grammar, and left recursion refused") {
  const char* text = R"G(root   ::= expr
expr   ::= term ( ws [-+] ws term )*
term   ::= factor ( ws [*/] ws factor )*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ( "." [0-9]+ )?
ws     ::= " "*
)G";
  check_language(text, {"1", "1+2*3", "(1 + 2) / -3.5", "--4", "((7))"}, {"", "1+", "(1", "1 2", "1.+2", "*3"});
  const std::string msg = parse_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]");
  CHECK(msg.find("left-recursive") != std::string::npos);
  CHECK(msg.find("expr") != std::string::npos);
  // Through a rule that can match nothing.
  CHECK(parse_error("root ::= ws root \"x\" | \"y\"\nws ::= \" \"*").find("left-recursive") != std::string::npos);
  // A repetition of what can match nothing is read (its rule calls itself
  // last: a tail call the matcher ends; the language is tested in
  // test_matcher against a regex), and written back the same.
  for (const char* text : {R"(root ::= ("a"?)*)", R"(root ::= ( "x"* )+)", R"(root ::= ("" | "b")*)",
                           "root ::= (ws \"a\"?)+ \"b\"\nws ::= \" \"*"}) {
    INFO(text);
    const Grammar g = parse_ok(text);
    const Grammar back = parse_ok(ember::grammar_to_gbnf(g));
    CHECK(back.elems.size() == g.elems.size());
  }
  // Still refused: something to match after the rule comes back to itself.
  CHECK(parse_error("root ::= x \"b\"\nx ::= (\"a\"?)* root | \"c\"").find("left-recursive") != std::string::npos);
}

TEST_CASE("gbnf: a list, a chess-move and a C identifier-list grammar") {
  check_language(R"(root ::= item+
item ::= "- " [^\n]+ "\n")",
                 {"- milk\n", "- eggs\n- bread, 2\n"}, {"", "- \n", "- milk", "milk\n", "- a\n-b\n"});
  const char* chess = R"(root ::= move (" " move)*
move ::= ( castle | piece | pawn ) check?
castle ::= "O-O" "-O"?
piece ::= [KQRBN] [a-h]? [1-8]? "x"? square
pawn ::= ( [a-h] "x" )? square promotion?
square ::= [a-h] [1-8]
promotion ::= "=" [QRBN]
check ::= [+#]
)";
  check_language(chess, {"e4 e5 Nf3 Nc6 Bb5 a6 O-O", "exd8=Q+", "Nbd7", "R1a3", "Qh4xe1#", "O-O-O"},
                 {"e9", "Ke", "O-O-O-O", "e4  e5", "e8=K", "", "Pe4"});
  const char* idents = R"(root ::= ident ( "," " "? ident )*
ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,30})";
  check_language(idents, {"foo", "foo, _bar,baz9", "x" + std::string(30, 'y')},
                 {"9foo", "a,,b", "a, ", "x" + std::string(31, 'y'), "a b"});
}

TEST_CASE("gbnf: Japanese and emoji literals and classes") {
  const char* text = "root ::= greeting \" \" emoji+\n"
                     "greeting ::= \"\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF\" | \"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\"\n"
                     "emoji ::= [\\U0001F600-\\U0001F64F] | \"\xF0\x9F\x91\x8D\"\n";
  check_language(text,
                 {"\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF \xF0\x9F\x98\x80",
                  "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x91\x8D\xF0\x9F\x98\x83"},
                 {"\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E ",
                  "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x90"});
  // Written back, the Japanese stays readable UTF-8.
  const std::string written = ember::grammar_to_gbnf(parse_ok(text));
  CHECK(written.find("\"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\"") != std::string::npos);
}

TEST_CASE("gbnf: grammar_to_gbnf writes every kind of set and name so that it reads back") {
  // Sets the reader cannot produce but another producer might: no code
  // point, past U+10FFFF, a surrogate; and names GBNF cannot write.
  Grammar g;
  g.char_sets = {CharSet{false, {}}, CharSet{false, {{0xD800, 0xD800}}}, CharSet{false, {{'-', '-'}, {'^', '^'}, {']', ']'}}},
                 CharSet{true, {{0x10FFF0, 0x20FFFF}}}, CharSet{false, {{'"', '"'}}}};
  g.names = {"my_root", "my root", "my-root"};
  g.alts = {{0, 4}, {7}, {9}};
  using E = GrammarElem;
  g.elems = {E{E::Ref, 1}, E{E::Ref, 2}, E{E::Chars, 4}, E{E::End, 0},
             E{E::Chars, 2}, E{E::Chars, 3}, E{E::End, 0},
             E{E::Chars, 0}, E{E::End, 0},
             E{E::Chars, 1}, E{E::End, 0}};
  g.root = 0;
  REQUIRE(ember::check_grammar(g).is_ok());
  const std::string text = ember::grammar_to_gbnf(g);
  INFO(text);
  const Grammar back = parse_ok(text, "my-root-1");  // "my_root" and "my root" both become "my-root": suffixes
  CHECK(back.alts.size() == 3);
  CHECK(accepts(back, "^x"));
  CHECK(accepts(back, "-a"));
  CHECK_FALSE(accepts(back, "x-"));
  CHECK(accepts(back, "]\xF4\x8F\xBF\xBF") == false);  // U+10FFFF is in the negated set
  CHECK(accepts(back, "^\xF4\x8F\xBF\xAF"));           // U+10FFEF is not
}

TEST_CASE("gbnf: each error names its line and column") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"root ::= a b\nb ::= \"x\"", "grammar:1:10: undefined rule 'a' (near 'a b')"},
      {"root ::= \"a\"\nb ::= c\n", "grammar:2:7: undefined rule 'c'"},
      {"x ::= \"a\"", "grammar: no rule 'root' (the root) is defined"},
      {"", "grammar: no rule 'root'"},
      {"root ::= \"a\"\n# again\nroot ::= \"b\"", "grammar:3:1: rule 'root' is defined twice (first on line 1)"},
      {"root ::= \"abc", "grammar:1:10: unterminated literal"},
      // A raw newline is part of a literal: the first '"' closes it, the second is unterminated.
      {"root ::= \"abc\nx ::= \"y\"", "grammar:2:9: unterminated literal"},
      {"root ::= [abc", "grammar:1:10: unterminated character class"},
      {"root ::= [a-\n]", "grammar:1:11: character range U+0061-U+000A is reversed"},
      {"root ::= [a-z\n", "grammar:1:10: unterminated character class"},
      {"root ::= ( \"a\"\n  | \"b\"\n", "grammar:1:10: unterminated group"},
      {"root ::= \"a\" )", "grammar:1:14: ')' without its '('"},
      {"root ::= \"\\q\"", "grammar:1:11: unknown escape"},
      {"root ::= \"\\xZZ\"", "grammar:1:11: escape '\\x' needs 2 hex digits"},
      {"root ::= [\\u12]", "grammar:1:11: escape '\\u' needs 4 hex digits"},
      {"root ::= \"\\U00110000\"", "grammar:1:11: escape names U+110000, past the last code point U+10FFFF"},
      {"root ::= \"a\"{3,2}", "grammar:1:13: repetition {3,2}: the minimum is past the maximum"},
      {"root ::= \"a\"{1001}", "grammar:1:13: repetition count 1001 is past the limit of 1000 (max_repeat)"},
      {"root ::= \"a\"{2,99999999999999999999999}", "grammar:1:13: repetition count 99999999999999999999999 is past"},
      {"root ::= \"a\"{x}", "grammar:1:14: expected a number in the repetition"},
      {"root ::= \"a\"{2,3", "grammar:1:17: expected '}' to close the repetition (at the end of the text)"},
      {"root ::= []", "grammar:1:10: empty character class"},
      {"root ::= [^]", "grammar:1:10: empty character class"},
      {"root ::= [z-a]", "grammar:1:11: character range U+007A-U+0061 is reversed"},
      {"root ::= \"\xFF\"", "grammar:1:11: invalid UTF-8 (near '\\xFF\"')"},
      {"root ::= [\xC3]", "grammar:1:11: invalid UTF-8"},
      {"root ::= \"\xED\xA0\x80\"", "grammar:1:11: invalid UTF-8"},  // a surrogate
      {"root ::= \"\xC0\xAF\"", "grammar:1:11: invalid UTF-8"},      // overlong
      {"root ::= \"a\" @", "grammar:1:14: unexpected character (near '@')"},
      {"root ::= \"\xE6\x97\xA5\xE6\x9C\xAC\" @", "grammar:1:15: unexpected character"},  // columns count characters
      {"root ::= \"a\"\n\n   \"b\" ;", "grammar:3:8: unexpected character"},
      {"root ::= *", "grammar:1:10: '*' with nothing before it to repeat"},
      {"root ::= \"a\" | +", "grammar:1:16: '+' with nothing before it to repeat"},
      {"root ::= \"a\" b ::= \"c\"\nb ::= \"d\"", "grammar:1:16: '::=' inside a rule"},
      {"root \"a\"", "grammar:1:6: expected '::=' after the rule name 'root'"},
      {"| \"a\"", "grammar:1:1: expected a rule name"},
      {"root ::= \"\\", "grammar:1:11: '\\' at the end of the text"},
  };
  for (const Case& c : cases) {
    const std::string msg = parse_error(c.text);
    INFO("text: " << c.text);
    CHECK(msg.rfind(c.expected, 0) == 0);
    CHECK_MESSAGE(msg.rfind(c.expected, 0) == 0, msg);
  }
}

TEST_CASE("gbnf: limits of rules, elements, nesting, repetition and text size") {
  GrammarLimits small;
  small.max_rules = 4;
  CHECK(parse_error("root ::= a b c d e\na ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"\nd ::= \"d\"\ne ::= \"e\"", small)
            .rfind("grammar:1:16: more than 4 rules (max_rules)", 0) == 0);
  CHECK(parse_error("root ::= \"a\"{0,10}", small).find("max_rules") != std::string::npos);
  small = {};
  small.max_elements = 500;
  CHECK(parse_error("root ::= \"a\"{1000}", small).find("more than 500 grammar elements (max_elements)") !=
        std::string::npos);
  CHECK(parse_ok("root ::= \"a\"{498}", "root", small).elems.size() == 499);
  small = {};
  small.max_nesting = 3;
  CHECK(parse_ok("root ::= (((\"a\")))", "root", small).alts.size() == 1);
  CHECK(parse_error("root ::= ((((\"a\"))))", small).rfind("grammar:1:13: parentheses nested deeper than 3 (max_nesting)", 0) == 0);
  small = {};
  small.max_repeat = 5;
  CHECK(parse_error("root ::= \"a\"{6}", small).find("past the limit of 5 (max_repeat)") != std::string::npos);
  small = {};
  small.max_text_bytes = 10;
  CHECK(parse_error("root ::= \"abc\"", small) == "grammar: text of 14 bytes, more than the limit of 10 (max_text_bytes)");
}

TEST_CASE("gbnf: hostile texts are refused quickly, without deep recursion or large allocations") {
  const auto t0 = std::chrono::steady_clock::now();
  // 100,000 open parentheses: a nesting error, not a stack overflow.
  CHECK(parse_error("root ::= " + std::string(100000, '(')).find("max_nesting") != std::string::npos);
  // Even with a nesting limit that high, nothing recurses.
  GrammarLimits deep;
  deep.max_nesting = 1u << 30;
  CHECK(parse_error("root ::= " + std::string(100000, '(') + "\"a\"", deep).find("unterminated group") != std::string::npos);
  const Grammar nested = parse_ok("root ::= " + std::string(100000, '(') + "\"a\" | \"b\"" + std::string(100000, ')'), "root", deep);
  CHECK(accepts(nested, "b"));
  // 1 MiB of '|': refused by the text size, and within it by max_elements.
  CHECK(parse_error("root ::= " + std::string(1 << 20, '|')).find("max_text_bytes") != std::string::npos);
  GrammarLimits big_text;
  big_text.max_text_bytes = 2u << 20;
  CHECK(parse_error("root ::= " + std::string(1 << 20, '|'), big_text).find("max_elements") != std::string::npos);
  // A long chain of repetitions: max_rules, one rule per operator.
  CHECK(parse_error("root ::= \"a\"" + std::string(200000, '*')).find("max_rules") != std::string::npos);
  CHECK(parse_error("root ::= \"a\"" + std::string(200000, '?')).find("max_rules") != std::string::npos);
  std::string chain = "root ::= \"a\"";
  for (int i = 0; i < 20000; ++i) chain += "{0,1000}";
  CHECK(parse_error(chain).find("max_") != std::string::npos);
  // Nested bounded repetitions: a repeated item is one element (a rule), so
  // a{1000}{1000}{1000} (a billion a's) costs about 3,000 elements, not 10^9.
  const Grammar huge = parse_ok(R"(root ::= "a"{1000}{1000}{1000})");
  CHECK(huge.elems.size() < 4000);
  CHECK_FALSE(accepts(parse_ok(R"(root ::= "a"{10}{10}{10})"), std::string(999, 'a')));
  CHECK(accepts(parse_ok(R"(root ::= "a"{10}{10}{10})"), std::string(1000, 'a')));
  GrammarLimits small;
  small.max_elements = 2500;
  CHECK(parse_error(R"(root ::= "a"{1000}{1000}{1000})", small).find("max_elements") != std::string::npos);
  // A megabyte-long name, and a million blank lines before a continuation.
  CHECK(parse_error("root ::= " + std::string(1000000, 'x')).find("undefined rule 'xxxxx") != std::string::npos);
  CHECK(accepts(parse_ok("root ::= \"a\"" + std::string(1000000, '\n') + " \"b\""), "ab"));
  CHECK(seconds_since(t0) < 60.0);  // no superlinear step (see the next test)
}

TEST_CASE("gbnf: a 1 MiB grammar parses in linear time") {
  std::string text = "root ::= r0";
  for (int i = 1; i < 100; ++i) text += " | r" + std::to_string(i);
  text += "\n";
  int i = 0;
  for (; text.size() < (1u << 20) - 200; ++i) {
    // Two generated rules a line: about 20,000 rules in all.
    text += "r" + std::to_string(i) + " ::= \"k" + std::to_string(i) + "\" ( [a-z] | \"\\u00e9\" ) \"padding text\" ws r" +
            std::to_string(i + 1) + "? # rule " + std::to_string(i) + " of a long generated grammar, padded\n";
  }
  text += "r" + std::to_string(i) + " ::= \"end\"\nws ::= [ \\t]*\n";
  REQUIRE(text.size() <= (1u << 20));
  const auto t0 = std::chrono::steady_clock::now();
  const Grammar g = parse_ok(text);
  const double parse_s = seconds_since(t0);
  MESSAGE("1 MiB grammar: " << g.alts.size() << " rules, " << g.elems.size() << " elements, " << parse_s << " s");
  // A bound against a superlinear parse (a quadratic one over 1 MiB would
  // run for hours), not a speed target: 0.05 s natively, under a second
  // under ASan or qemu.
  CHECK(parse_s < 30.0);
  CHECK(accepts(g, "k99xpadding text k100\xC3\xA9padding text"));
  CHECK_FALSE(accepts(g, "k99xy end"));
  const auto t1 = std::chrono::steady_clock::now();
  const Grammar back = parse_ok(ember::grammar_to_gbnf(g));
  CHECK(seconds_since(t1) < 30.0);
  CHECK(back.elems.size() == g.elems.size());
}

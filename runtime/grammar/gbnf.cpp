// The GBNF reader and writer (gbnf.h). The reader is one pass over the text
// with an explicit stack of open groups: it never recurses, so nesting is
// bounded by GrammarLimits::max_nesting and not by the thread's stack. Every
// element is counted as it is emitted, so a hostile text is refused by
// max_elements or max_rules before it costs more memory than those allow.
#include "grammar/gbnf.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tokenizer/unicode_classes.h"

namespace ember {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr size_t kNone = static_cast<size_t>(-1);

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

bool is_inline_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One UTF-8 character at s[pos]: its length, or 0 when the bytes there are
// not UTF-8 (a stray continuation byte, a cut sequence, an overlong form, a
// surrogate, past U+10FFFF).
size_t decode_utf8(std::string_view s, size_t pos, uint32_t* cp) {
  const Utf8Step step = utf8_decode(reinterpret_cast<const uint8_t*>(s.data()) + pos, s.size() - pos);
  if (step.codepoint == kInvalidCodepoint) return 0;
  *cp = step.codepoint;
  return step.length;
}

void append_utf8(std::string* out, uint32_t c) { utf8_append(c, out); }

// Text quoted in a message: at most `max` bytes, cut at a character, with
// control characters and bytes that are not UTF-8 written as \xHH.
std::string printable(std::string_view s, size_t max, bool stop_at_newline) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && i < max) {
    if (stop_at_newline && s[i] == '\n') break;
    uint32_t cp = 0;
    const size_t len = decode_utf8(s, i, &cp);
    if (len == 0 || cp < 0x20 || cp == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i]));
      out += buf;
      i += 1;
      continue;
    }
    if (i + len > max) break;
    out.append(s.substr(i, len));
    i += len;
  }
  if (i < s.size() && !(stop_at_newline && s[i] == '\n')) out += "...";
  return out;
}

std::string quoted_name(std::string_view name) { return printable(name, 48, false); }

// One rule while the text is read.
struct RuleInfo {
  std::string name;        // as written; a generated rule's is the rule it was made in
  bool generated = false;  // a group or a repetition
  bool defined = false;
  size_t def_pos = 0;      // a written rule's name at its `::=`
  size_t use_pos = kNone;  // its first reference
};

// An open rule body or parenthesised group.
struct Frame {
  size_t open_pos = 0;            // the '(' (or the rule's name)
  std::vector<GrammarElem> body;  // alternatives so far, each closed by an End
  size_t item = kNone;            // where the open alternative's last item begins in body
};

class GbnfReader {
 public:
  GbnfReader(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

  Result<Grammar> read(std::string_view root) {
    if (text_.size() > limits_.max_text_bytes) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: text of %zu bytes, more than the limit of %zu (max_text_bytes)",
                           text_.size(), limits_.max_text_bytes);
    }
    for (;;) {
      skip_to_rule();
      if (pos_ >= text_.size()) break;
      EMBER_TRY(read_rule());
    }
    // Rules are numbered in the order they first appear, so the first
    // undefined one is the one used first.
    for (const RuleInfo& r : rules_) {
      if (!r.generated && !r.defined) return fail(r.use_pos, "undefined rule '%s'", quoted_name(r.name).c_str());
    }
    const auto it = index_.find(std::string(root));
    if (it == index_.end()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar: no rule '%s' (the root) is defined",
                           quoted_name(root).c_str());
    }
    Grammar g = build();
    g.root = it->second;
    EMBER_TRY(check_grammar(g, limits_));
    return g;
  }

 private:
  __attribute__((format(printf, 3, 4))) Status fail(size_t pos, const char* fmt, ...) {
    char what[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    pos = std::min(pos, text_.size());
    const size_t line_start = pos == 0 ? 0 : text_.rfind('\n', pos - 1) + 1;  // npos + 1 == 0
    size_t line = 1;
    for (size_t i = 0; i < line_start; ++i) line += text_[i] == '\n';
    size_t col = 1;  // in characters: UTF-8 continuation bytes do not count
    for (size_t i = line_start; i < pos; ++i) col += (static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80;
    if (pos >= text_.size()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar:%zu:%zu: %s (at the end of the text)", line, col, what);
    }
    if (text_[pos] == '\n') {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar:%zu:%zu: %s (at the end of the line)", line, col, what);
    }
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "grammar:%zu:%zu: %s (near '%s')", line, col, what,
                         printable(text_.substr(pos), 24, true).c_str());
  }

  size_t line_of(size_t pos) const {
    return 1 + static_cast<size_t>(std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(pos), '\n'));
  }

  char peek(size_t at) const { return at < text_.size() ? text_[at] : '\0'; }

  // Blank text between rules: spaces, newlines, comments.
  size_t skip_blank(size_t p) const {
    while (p < text_.size()) {
      const char c = text_[p];
      if (is_inline_space(c) || c == '\n') {
        ++p;
      } else if (c == '#') {
        while (p < text_.size() && text_[p] != '\n') ++p;
      } else {
        break;
      }
    }
    return p;
  }

  void skip_to_rule() { pos_ = skip_blank(pos_); }

  // Whether `name ::=` begins at p.
  bool rule_starts_at(size_t p) const {
    const size_t name = p;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    if (p == name) return false;
    while (p < text_.size() && is_inline_space(text_[p])) ++p;
    return text_.substr(p).starts_with("::=");
  }

  // Skips spaces and comments inside a rule. A newline is a space inside
  // parentheses; outside them it ends the rule when what follows (past blank
  // lines and comments) is the end of the text or a new `name ::=`. Sets
  // *rule_end then, and at the end of the text.
  void skip_space(bool nested, bool* rule_end) {
    *rule_end = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (is_inline_space(c)) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '\n') {
        if (nested) {
          ++pos_;
          continue;
        }
        // Jumping past the blank text whatever follows keeps this linear
        // over long runs of blank lines.
        pos_ = skip_blank(pos_);
        if (pos_ >= text_.size() || rule_starts_at(pos_)) {
          *rule_end = true;
          return;
        }
      } else {
        return;
      }
    }
    *rule_end = true;
  }

  Status charge(size_t n) {
    live_elems_ += n;
    if (live_elems_ > limits_.max_elements) {
      return fail(pos_, "more than %u grammar elements (max_elements)", limits_.max_elements);
    }
    return Status::ok();
  }

  Status push(std::vector<GrammarElem>* body, GrammarElem::Kind kind, uint32_t value) {
    EMBER_TRY(charge(1));
    body->push_back(GrammarElem{kind, value});
    return Status::ok();
  }

  Result<uint32_t> add_rule(std::string name, bool generated, size_t pos) {
    if (rules_.size() >= limits_.max_rules) return fail(pos, "more than %u rules (max_rules)", limits_.max_rules);
    RuleInfo info;
    info.name = std::move(name);
    info.generated = generated;
    rules_.push_back(std::move(info));
    bodies_.emplace_back();
    return static_cast<uint32_t>(rules_.size() - 1);
  }

  // The rule named `name`, made at its first appearance.
  Result<uint32_t> named_rule(std::string_view name, size_t pos) {
    std::string key(name);
    const auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    EMBER_ASSIGN_OR_RETURN(const uint32_t r, add_rule(key, false, pos));
    index_.emplace(std::move(key), r);
    return r;
  }

  // A rule made for a group or a repetition inside the rule being read.
  Result<uint32_t> generated_rule() { return add_rule(rules_[current_].name, true, pos_); }

  // The index of the set, shared by every element with the same set.
  uint32_t intern_set(CharSet set) {
    std::sort(set.ranges.begin(), set.ranges.end(),
              [](const CharRange& a, const CharRange& b) { return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi); });
    std::vector<CharRange> merged;
    for (const CharRange& r : set.ranges) {
      if (!merged.empty() && r.lo <= merged.back().hi + 1) {
        merged.back().hi = std::max(merged.back().hi, r.hi);
      } else {
        merged.push_back(r);
      }
    }
    set.ranges = std::move(merged);
    std::string key(1, set.negated ? '^' : '=');
    for (const CharRange& r : set.ranges) {
      key.append(reinterpret_cast<const char*>(&r.lo), sizeof r.lo);
      key.append(reinterpret_cast<const char*>(&r.hi), sizeof r.hi);
    }
    const auto it = set_index_.find(key);
    if (it != set_index_.end()) return it->second;
    const auto index = static_cast<uint32_t>(sets_.size());
    sets_.push_back(std::move(set));
    set_index_.emplace(std::move(key), index);
    return index;
  }

  Status read_rule() {
    const size_t name_pos = pos_;
    if (!is_name_char(text_[pos_])) {
      if (text_[pos_] == '|' || text_[pos_] == '(' || text_[pos_] == '"' || text_[pos_] == '[') {
        return fail(pos_, "expected a rule name (a rule's text cannot begin before its `name ::=`)");
      }
      return fail(pos_, "expected a rule name (letters, digits and '-')");
    }
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    const std::string_view name = text_.substr(name_pos, pos_ - name_pos);
    while (pos_ < text_.size() && is_inline_space(text_[pos_])) ++pos_;
    if (!text_.substr(pos_).starts_with("::=")) {
      return fail(pos_, "expected '::=' after the rule name '%s'", quoted_name(name).c_str());
    }
    pos_ += 3;
    EMBER_ASSIGN_OR_RETURN(const uint32_t r, named_rule(name, name_pos));
    if (rules_[r].defined) {
      return fail(name_pos, "rule '%s' is defined twice (first on line %zu)", quoted_name(name).c_str(),
                  line_of(rules_[r].def_pos));
    }
    rules_[r].defined = true;
    rules_[r].def_pos = name_pos;
    current_ = r;
    return read_body(name_pos, r);
  }

  // The alternatives of rule r, up to its end.
  Status read_body(size_t name_pos, uint32_t r) {
    std::vector<Frame> stack(1);
    stack[0].open_pos = name_pos;
    for (;;) {
      bool rule_end = false;
      skip_space(stack.size() > 1, &rule_end);
      if (rule_end) {
        if (stack.size() > 1) return fail(stack.back().open_pos, "unterminated group: '(' without its ')'");
        EMBER_TRY(push(&stack[0].body, GrammarElem::End, 0));
        bodies_[r] = std::move(stack[0].body);
        return Status::ok();
      }
      Frame& f = stack.back();
      const char c = text_[pos_];
      if (c == '"') {
        EMBER_TRY(read_literal(&f));
      } else if (c == '[') {
        EMBER_TRY(read_class(&f));
      } else if (c == '.') {
        f.item = f.body.size();
        EMBER_TRY(push(&f.body, GrammarElem::Chars, intern_set(CharSet{true, {}})));
        ++pos_;
      } else if (is_name_char(c)) {
        const size_t start = pos_;
        while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
        EMBER_ASSIGN_OR_RETURN(const uint32_t r, named_rule(text_.substr(start, pos_ - start), start));
        if (rules_[r].use_pos == kNone) rules_[r].use_pos = start;
        f.item = f.body.size();
        EMBER_TRY(push(&f.body, GrammarElem::Ref, r));
      } else if (c == '|') {
        EMBER_TRY(push(&f.body, GrammarElem::End, 0));
        f.item = kNone;
        ++pos_;
      } else if (c == '(') {
        if (stack.size() - 1 >= limits_.max_nesting) {
          return fail(pos_, "parentheses nested deeper than %u (max_nesting)", limits_.max_nesting);
        }
        stack.emplace_back();
        stack.back().open_pos = pos_++;
      } else if (c == ')') {
        if (stack.size() == 1) return fail(pos_, "')' without its '('");
        ++pos_;
        Frame inner = std::move(stack.back());
        stack.pop_back();
        EMBER_TRY(close_group(&inner, &stack.back()));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        EMBER_TRY(read_repetition(&f));
      } else if (c == ':' && text_.substr(pos_).starts_with("::=")) {
        return fail(pos_, "'::=' inside a rule (each rule begins on a line of its own)");
      } else {
        return fail(pos_, "unexpected character");
      }
    }
  }

  // A closed group: one element stays in place; anything else becomes a
  // generated rule the outer alternative refers to.
  Status close_group(Frame* inner, Frame* outer) {
    EMBER_TRY(push(&inner->body, GrammarElem::End, 0));
    const size_t alternatives = static_cast<size_t>(
        std::count_if(inner->body.begin(), inner->body.end(), [](const GrammarElem& e) { return e.kind == GrammarElem::End; }));
    outer->item = outer->body.size();
    if (alternatives == 1 && inner->body.size() <= 2) {
      // `()` adds nothing; `(x)` is x. Their End is dropped.
      live_elems_ -= 1;
      if (inner->body.size() == 2) outer->body.push_back(inner->body[0]);
      return Status::ok();
    }
    EMBER_ASSIGN_OR_RETURN(const uint32_t r, generated_rule());
    bodies_[r] = std::move(inner->body);
    return push(&outer->body, GrammarElem::Ref, r);
  }

  // One character of a literal or class, escape or UTF-8, at pos_.
  Status read_char(uint32_t* cp) {
    const size_t at = pos_;
    if (text_[at] != '\\') {
      const size_t len = decode_utf8(text_, at, cp);
      if (len == 0) return fail(at, "invalid UTF-8");
      pos_ += len;
      return Status::ok();
    }
    const char e = peek(at + 1);
    int digits = 0;
    switch (e) {
      case 'n': *cp = '\n'; break;
      case 'r': *cp = '\r'; break;
      case 't': *cp = '\t'; break;
      case '\\': case '"': case '\'': case '[': case ']': case '-': *cp = static_cast<unsigned char>(e); break;
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default:
        if (at + 1 >= text_.size()) return fail(at, "'\\' at the end of the text");
        return fail(at, "unknown escape (known: \\n \\r \\t \\\\ \\\" \\' \\[ \\] \\- \\xHH \\uHHHH \\UHHHHHHHH)");
    }
    pos_ = at + 2;
    if (digits == 0) return Status::ok();
    uint64_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek(pos_));
      if (h < 0) return fail(at, "escape '\\%c' needs %d hex digits", e, digits);
      value = value * 16 + static_cast<uint64_t>(h);
      ++pos_;
    }
    if (value > kMaxCodePoint) {
      return fail(at, "escape names U+%llX, past the last code point U+10FFFF", static_cast<unsigned long long>(value));
    }
    *cp = static_cast<uint32_t>(value);
    return Status::ok();
  }

  // A raw byte that cannot stand in a literal or class: NUL (llama.cpp
  // reads C strings, where it ends the text). Other control characters,
  // newlines included, stand for themselves there, as in llama.cpp.
  Status check_raw_byte() {
    if (text_[pos_] == '\0') return fail(pos_, "a NUL byte (write \\x00)");
    return Status::ok();
  }

  Status read_literal(Frame* f) {
    const size_t open = pos_++;
    f->item = f->body.size();
    for (;;) {
      if (pos_ >= text_.size()) return fail(open, "unterminated literal: '\"' without its closing '\"'");
      EMBER_TRY(check_raw_byte());
      if (text_[pos_] == '"') {
        ++pos_;
        return Status::ok();
      }
      uint32_t cp = 0;
      EMBER_TRY(read_char(&cp));
      EMBER_TRY(push(&f->body, GrammarElem::Chars, intern_set(CharSet{false, {{cp, cp}}})));
    }
  }

  Status read_class(Frame* f) {
    const size_t open = pos_++;
    CharSet set;
    if (peek(pos_) == '^') {
      set.negated = true;
      ++pos_;
    }
    const auto unterminated = [&] { return fail(open, "unterminated character class: '[' without its ']'"); };
    for (;;) {
      if (pos_ >= text_.size()) return unterminated();
      EMBER_TRY(check_raw_byte());
      if (text_[pos_] == ']') {
        ++pos_;
        break;
      }
      const size_t lo_pos = pos_;
      uint32_t lo = 0;
      EMBER_TRY(read_char(&lo));
      uint32_t hi = lo;
      if (peek(pos_) == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        EMBER_TRY(check_raw_byte());
        EMBER_TRY(read_char(&hi));
        if (hi < lo) return fail(lo_pos, "character range U+%04X-U+%04X is reversed", lo, hi);
      }
      // Each range costs 8 bytes; the text bounds how many there are.
      set.ranges.push_back(CharRange{lo, hi});
    }
    if (set.ranges.empty()) return fail(open, "empty character class");
    f->item = f->body.size();
    return push(&f->body, GrammarElem::Chars, intern_set(std::move(set)));
  }

  // Reads a bound of {m,n}.
  Status read_bound(size_t op_pos, uint32_t* value) {
    if (peek(pos_) < '0' || peek(pos_) > '9') return fail(pos_, "expected a number in the repetition");
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (v <= limits_.max_repeat) v = v * 10 + static_cast<uint64_t>(text_[pos_] - '0');
      ++pos_;
    }
    if (v > limits_.max_repeat) {
      return fail(op_pos, "repetition count %s is past the limit of %u (max_repeat)",
                  printable(text_.substr(start, pos_ - start), 24, true).c_str(), limits_.max_repeat);
    }
    *value = static_cast<uint32_t>(v);
    return Status::ok();
  }

  void skip_inline() {
    while (pos_ < text_.size() && is_inline_space(text_[pos_])) ++pos_;
  }

  Status read_repetition(Frame* f) {
    const size_t op_pos = pos_;
    const char op = text_[pos_++];
    if (f->item == kNone) return fail(op_pos, "'%c' with nothing before it to repeat", op);
    uint32_t min = 0;
    uint32_t max = 0;
    bool unbounded = false;
    if (op == '*') {
      unbounded = true;
    } else if (op == '+') {
      min = 1, unbounded = true;
    } else if (op == '?') {
      max = 1;
    } else {
      skip_inline();
      EMBER_TRY(read_bound(op_pos, &min));
      skip_inline();
      max = min;
      if (peek(pos_) == ',') {
        ++pos_;
        skip_inline();
        if (peek(pos_) == '}') {
          unbounded = true;
        } else {
          EMBER_TRY(read_bound(op_pos, &max));
          skip_inline();
        }
      }
      if (peek(pos_) != '}') return fail(pos_, "expected '}' to close the repetition");
      ++pos_;
      if (!unbounded && min > max) return fail(op_pos, "repetition {%u,%u}: the minimum is past the maximum", min, max);
    }
    return repeat(f, min, max, unbounded);
  }

  // Replaces the last item x of the open alternative by min copies of x then
  // either a right-recursive rule (R ::= x R | ) or max - min nested
  // optional rules (O1 ::= x O2 | , ..., On ::= x | ).
  Status repeat(Frame* f, uint32_t min, uint32_t max, bool unbounded) {
    std::vector<GrammarElem>& body = f->body;
    const size_t k = body.size() - f->item;
    if (k == 0) return Status::ok();  // repeating nothing is nothing
    GrammarElem x = body[f->item];
    if (k > 1) {  // a literal or a group's elements: one rule, so that copies cost one element each
      EMBER_ASSIGN_OR_RETURN(const uint32_t w, generated_rule());
      bodies_[w].assign(body.begin() + static_cast<ptrdiff_t>(f->item), body.end());  // moved: already counted
      EMBER_TRY(push(&bodies_[w], GrammarElem::End, 0));
      x = GrammarElem{GrammarElem::Ref, w};
    } else {
      live_elems_ -= 1;  // x itself, emitted again below
    }
    body.resize(f->item);
    for (uint32_t i = 0; i < min; ++i) EMBER_TRY(push(&body, x.kind, x.value));
    if (unbounded) {
      EMBER_ASSIGN_OR_RETURN(const uint32_t r, generated_rule());
      std::vector<GrammarElem>& rb = bodies_[r];
      EMBER_TRY(push(&rb, x.kind, x.value));
      EMBER_TRY(push(&rb, GrammarElem::Ref, r));
      EMBER_TRY(push(&rb, GrammarElem::End, 0));
      EMBER_TRY(push(&rb, GrammarElem::End, 0));
      EMBER_TRY(push(&body, GrammarElem::Ref, r));
    } else if (max > min) {
      uint32_t inner = 0;
      for (uint32_t i = 0; i < max - min; ++i) {
        EMBER_ASSIGN_OR_RETURN(const uint32_t r, generated_rule());
        std::vector<GrammarElem>& rb = bodies_[r];
        EMBER_TRY(push(&rb, x.kind, x.value));
        if (i > 0) EMBER_TRY(push(&rb, GrammarElem::Ref, inner));
        EMBER_TRY(push(&rb, GrammarElem::End, 0));
        EMBER_TRY(push(&rb, GrammarElem::End, 0));
        inner = r;
      }
      EMBER_TRY(push(&body, GrammarElem::Ref, inner));
    }
    // The whole repetition is the item a following operator repeats.
    return Status::ok();
  }

  Grammar build() {
    Grammar g;
    g.elems.reserve(live_elems_);
    g.alts.resize(rules_.size());
    g.names.resize(rules_.size());
    std::unordered_set<std::string> taken;
    for (const RuleInfo& r : rules_) {
      if (!r.generated) taken.insert(r.name);
    }
    size_t counter = 0;
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (rules_[i].generated) {
        std::string name;
        do {
          name = rules_[i].name + "-" + std::to_string(++counter);
        } while (taken.count(name));
        taken.insert(name);
        g.names[i] = std::move(name);
      } else {
        g.names[i] = rules_[i].name;
      }
      bool start = true;
      for (const GrammarElem& e : bodies_[i]) {
        if (start) g.alts[i].push_back(static_cast<uint32_t>(g.elems.size()));
        g.elems.push_back(e);
        start = e.kind == GrammarElem::End;
      }
    }
    g.char_sets = std::move(sets_);
    return g;
  }

  std::string_view text_;
  GrammarLimits limits_;
  size_t pos_ = 0;
  size_t live_elems_ = 0;  // elements emitted and still held: what Grammar::elems will be
  uint32_t current_ = 0;   // the written rule being read
  std::vector<RuleInfo> rules_;
  std::vector<std::vector<GrammarElem>> bodies_;  // per rule, its alternatives each closed by an End
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<CharSet> sets_;
  std::unordered_map<std::string, uint32_t> set_index_;
};

// --- the writer ---

void append_escaped(std::string* out, uint32_t c, bool in_class) {
  char buf[16];
  switch (c) {
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\\': *out += "\\\\"; return;
    default: break;
  }
  if (!in_class && c == '"') {
    *out += "\\\"";
  } else if (in_class && (c == ']' || c == '[')) {
    *out += c == ']' ? "\\]" : "\\[";
  } else if (in_class && (c == '-' || c == '^')) {
    std::snprintf(buf, sizeof buf, "\\x%02X", c);  // would read as a range or a negation
    *out += buf;
  } else if (c < 0x20 || c == 0x7F) {
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    *out += buf;
  } else if (c < 0x7F) {
    out->push_back(static_cast<char>(c));
  } else if (c >= 0xD800 && c <= 0xDFFF) {
    std::snprintf(buf, sizeof buf, "\\u%04X", c);  // no UTF-8 form
    *out += buf;
  } else {
    append_utf8(out, std::min(c, kMaxCodePoint));
  }
}

bool is_single_char(const CharSet& s) { return !s.negated && s.ranges.size() == 1 && s.ranges[0].lo == s.ranges[0].hi; }

void append_set(std::string* out, const CharSet& s) {
  if (s.negated && s.ranges.empty()) {
    *out += '.';
    return;
  }
  std::string inner;
  for (const CharRange& r : s.ranges) {
    // Code points past U+10FFFF never occur in decoded text: dropping them
    // keeps the language and the text readable.
    if (r.lo > kMaxCodePoint || r.lo > r.hi) continue;
    const uint32_t hi = std::min(r.hi, kMaxCodePoint);
    append_escaped(&inner, r.lo, true);
    if (hi != r.lo) {
      inner += '-';
      append_escaped(&inner, hi, true);
    }
  }
  if (inner.empty()) {
    // A set of no code point: `[]` is not GBNF, its complement's complement is.
    *out += s.negated ? "." : "[^\\x00-\\U0010FFFF]";
    return;
  }
  *out += s.negated ? "[^" : "[";
  *out += inner;
  *out += ']';
}

// Rule names as GBNF can write them: letters, digits and '-' are kept,
// anything else becomes '-'; a clash or an empty name gets a suffix.
std::vector<std::string> writable_names(const Grammar& g) {
  std::vector<std::string> names(g.alts.size());
  std::unordered_set<std::string> taken;
  std::vector<bool> as_is(g.alts.size(), false);
  for (size_t r = 0; r < names.size(); ++r) {
    const std::string& n = r < g.names.size() ? g.names[r] : std::string();
    as_is[r] = !n.empty() && std::all_of(n.begin(), n.end(), is_name_char) && taken.insert(n).second;
    if (as_is[r]) names[r] = n;
  }
  for (size_t r = 0; r < names.size(); ++r) {
    if (as_is[r]) continue;
    std::string base = r < g.names.size() ? g.names[r] : std::string();
    for (char& c : base) {
      if (!is_name_char(c)) c = '-';
    }
    if (base.empty()) base = "rule";
    std::string name = base;
    for (size_t k = 1; !taken.insert(name).second; ++k) name = base + "-" + std::to_string(k);
    names[r] = std::move(name);
  }
  return names;
}

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, std::string_view root, const GrammarLimits& limits) {
  GbnfReader reader(text, limits);
  return reader.read(root);
}

std::string grammar_to_gbnf(const Grammar& g) {
  const std::vector<std::string> names = writable_names(g);
  std::string out;
  for (size_t r = 0; r < g.alts.size(); ++r) {
    out += names[r];
    out += " ::=";
    for (size_t a = 0; a < g.alts[r].size(); ++a) {
      if (a > 0) out += " |";
      bool in_literal = false;
      for (size_t i = g.alts[r][a]; i < g.elems.size() && g.elems[i].kind != GrammarElem::End; ++i) {
        const GrammarElem& e = g.elems[i];
        const bool single = e.kind == GrammarElem::Chars && e.value < g.char_sets.size() &&
                            is_single_char(g.char_sets[e.value]) && g.char_sets[e.value].ranges[0].lo <= kMaxCodePoint;
        if (in_literal && !single) {
          out += '"';
          in_literal = false;
        }
        if (single) {
          if (!in_literal) out += " \"";
          in_literal = true;
          append_escaped(&out, g.char_sets[e.value].ranges[0].lo, false);
        } else if (e.kind == GrammarElem::Chars) {
          out += ' ';
          if (e.value < g.char_sets.size()) {
            append_set(&out, g.char_sets[e.value]);
          } else {
            out += "[^\\x00-\\U0010FFFF]";  // not a grammar check_grammar accepts: write something that reads
          }
        } else if (e.kind == GrammarElem::Ref) {
          out += ' ';
          out += e.value < names.size() ? names[e.value] : std::string("undefined-rule");
        }
      }
      if (in_literal) out += '"';
    }
    out += '\n';
  }
  return out;
}

}  // namespace ember

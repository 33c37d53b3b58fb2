#include "grammar/schema_regex.h"

#include "tokenizer/unicode_classes.h"

#include <algorithm>
#include <cstdio>

namespace ember::schema_regex {

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Utf8Step step = utf8_decode(reinterpret_cast<const uint8_t*>(s.data()) + i, s.size() - i);
    // The schema's text was read by a JSON reader (valid UTF-8); a stray
    // byte stands for itself.
    out.push_back(step.codepoint == kInvalidCodepoint ? static_cast<unsigned char>(s[i]) : step.codepoint);
    i += step.length;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) { utf8_append(cp, &out); }

namespace {

const std::vector<CharRange> kDigit = {{'0', '9'}};
const std::vector<CharRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CharRange> kSpace = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
                                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                       {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};

class Parser {
 public:
  Parser(std::string_view pattern, const std::string& where, const GrammarLimits& limits)
      : cps_(decode_utf8(pattern)), where_(where), limits_(limits) {}

  Result<Regex> run() {
    uint32_t root = 0;
    EMBER_TRY(alternation(0, &root));
    if (pos_ < cps_.size()) return fail("unmatched ')'");
    re_.root = root;
    return std::move(re_);
  }

 private:
  Status fail(const char* what) const {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s: invalid regular expression at character %zu: %s",
                         where_.c_str(), pos_ + 1, what);
  }
  Status refuse(const char* what) const {
    return Status::error(EMBER_ERR_UNSUPPORTED, "%s: regular expression %s (character %zu) is not supported",
                         where_.c_str(), what, pos_ + 1);
  }
  bool at_end() const { return pos_ >= cps_.size(); }
  uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0; }

  uint32_t add(Node n) {
    re_.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(re_.nodes.size() - 1);
  }
  uint32_t add_set(std::vector<CharRange> ranges, bool negated) {
    Node n;
    n.kind = Node::Set;
    n.set.negated = negated;
    n.set.ranges = std::move(ranges);
    return add(std::move(n));
  }

  Status alternation(uint32_t depth, uint32_t* out) {
    if (depth > limits_.max_nesting) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s: regular expression nested deeper than limits.max_nesting (%u)",
                           where_.c_str(), limits_.max_nesting);
    }
    std::vector<uint32_t> alts;
    for (;;) {
      uint32_t seq = 0;
      EMBER_TRY(sequence(depth, &seq));
      alts.push_back(seq);
      if (at_end() || peek() != '|') break;
      ++pos_;
    }
    if (alts.size() == 1) {
      *out = alts[0];
    } else {
      Node n;
      n.kind = Node::Alt;
      n.kids = std::move(alts);
      *out = add(std::move(n));
    }
    return Status::ok();
  }

  Status sequence(uint32_t depth, uint32_t* out) {
    Node seq;
    seq.kind = Node::Seq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      uint32_t atom_id = 0;
      EMBER_TRY(atom(depth, &atom_id));
      EMBER_TRY(quantifier(&atom_id));
      seq.kids.push_back(atom_id);
    }
    *out = add(std::move(seq));
    return Status::ok();
  }

  // Reads {m}, {m,}, {m,n} at pos_ into min/max; false (pos_ unchanged) when
  // the brace is not a quantifier (ECMA-262 then reads it as a literal).
  bool braces(uint32_t* min, uint32_t* max) {
    size_t p = pos_ + 1;
    auto number = [&](uint64_t* v) {
      const size_t start = p;
      *v = 0;
      while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9' && p - start < 10) *v = *v * 10 + (cps_[p++] - '0');
      return p > start;
    };
    uint64_t lo = 0, hi = 0;
    if (!number(&lo)) return false;
    hi = lo;
    if (p < cps_.size() && cps_[p] == ',') {
      ++p;
      if (!number(&hi)) hi = kUnbounded;
    }
    if (p >= cps_.size() || cps_[p] != '}') return false;
    *min = static_cast<uint32_t>(std::min<uint64_t>(lo, UINT32_MAX - 1));
    *max = hi == kUnbounded ? kUnbounded : static_cast<uint32_t>(std::min<uint64_t>(hi, UINT32_MAX - 1));
    pos_ = p + 1;
    return true;
  }

  Status quantifier(uint32_t* atom_id) {
    while (!at_end()) {
      uint32_t min = 0, max = 0;
      const uint32_t c = peek();
      if (c == '*') {
        min = 0, max = kUnbounded, ++pos_;
      } else if (c == '+') {
        min = 1, max = kUnbounded, ++pos_;
      } else if (c == '?') {
        min = 0, max = 1, ++pos_;
      } else if (c != '{' || !braces(&min, &max)) {
        return Status::ok();
      }
      if (max != kUnbounded && min > max) return fail("a {m,n} with m > n");
      if (min > limits_.max_repeat || (max != kUnbounded && max > limits_.max_repeat)) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s: regular expression repeat count past limits.max_repeat (%u)",
                             where_.c_str(), limits_.max_repeat);
      }
      if (!at_end() && peek() == '?') ++pos_;  // lazy: the same language
      const Node::Kind k = re_.nodes[*atom_id].kind;
      if (k == Node::Begin || k == Node::End) return fail("nothing to repeat");
      Node n;
      n.kind = Node::Repeat;
      n.kids = {*atom_id};
      n.min = min;
      n.max = max;
      *atom_id = add(std::move(n));
    }
    return Status::ok();
  }

  Status atom(uint32_t depth, uint32_t* out) {
    const uint32_t c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        if (peek(1) == ':') {
          pos_ += 2;
        } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
          pos_ += 2;  // a named group: skip the name
          while (!at_end() && peek() != '>') ++pos_;
          if (at_end()) return fail("unterminated group name");
          ++pos_;
        } else if (peek(1) == '=' || peek(1) == '!' || peek(1) == '<') {
          return refuse("lookaround '(?='/'(?!'/'(?<='/'(?<!'");
        } else {
          return fail("unknown group '(?'");
        }
      }
      EMBER_TRY(alternation(depth + 1, out));
      if (at_end() || peek() != ')') return fail("missing ')'");
      ++pos_;
      return Status::ok();
    }
    if (c == '[') return char_class(out);
    if (c == '.') {
      ++pos_;
      *out = add_set({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}, true);
      return Status::ok();
    }
    if (c == '^' || c == '$') {
      ++pos_;
      Node n;
      n.kind = c == '^' ? Node::Begin : Node::End;
      *out = add(std::move(n));
      return Status::ok();
    }
    if (c == '*' || c == '+' || c == '?') return fail("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      std::vector<CharRange> ranges;
      bool negated = false;
      EMBER_TRY(escape(false, &ranges, &negated));
      *out = add_set(std::move(ranges), negated);
      return Status::ok();
    }
    ++pos_;
    *out = add_set({{c, c}}, false);
    return Status::ok();
  }

  // After a backslash: the code points it stands for.
  Status escape(bool in_class, std::vector<CharRange>* ranges, bool* negated) {
    if (at_end()) return fail("trailing '\\'");
    const uint32_t c = cps_[pos_++];
    auto hex = [&](int digits, uint32_t* v) {
      *v = 0;
      for (int i = 0; i < digits; ++i) {
        const uint32_t h = peek();
        const int d = h >= '0' && h <= '9' ? int(h - '0') : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                      : h >= 'A' && h <= 'F' ? int(h - 'A' + 10) : -1;
        if (d < 0) return false;
        *v = *v * 16 + static_cast<uint32_t>(d);
        ++pos_;
      }
      return true;
    };
    uint32_t v = 0;
    switch (c) {
      case 'd': case 'D': case 'w': case 'W': case 's': case 'S': {
        const bool neg = c == 'D' || c == 'W' || c == 'S';
        if (neg && in_class) return refuse("negated class escape inside a class ('\\D', '\\W', '\\S')");
        const auto& r = (c == 'd' || c == 'D') ? kDigit : (c == 'w' || c == 'W') ? kWord : kSpace;
        ranges->insert(ranges->end(), r.begin(), r.end());
        *negated = neg;
        return Status::ok();
      }
      case 'b':
        if (in_class) {
          ranges->push_back({8, 8});
          return Status::ok();
        }
        return refuse("word boundary '\\b'");
      case 'B': return refuse("word boundary '\\B'");
      case 'k': return refuse("backreference '\\k'");
      case 't': v = '\t'; break;
      case 'n': v = '\n'; break;
      case 'r': v = '\r'; break;
      case 'f': v = '\f'; break;
      case 'v': v = '\v'; break;
      case '0': v = 0; break;
      case 'x':
        if (!hex(2, &v)) return fail("'\\x' needs two hex digits");
        break;
      case 'u':
        if (!hex(4, &v)) return fail("'\\u' needs four hex digits");
        break;
      default:
        if (c >= '1' && c <= '9') return refuse("backreference '\\1'..'\\9'");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return fail("unknown escape");
        v = c;  // escaped punctuation stands for itself
    }
    ranges->push_back({v, v});
    return Status::ok();
  }

  Status char_class(uint32_t* out) {
    ++pos_;  // '['
    bool negated = false;
    if (peek() == '^') negated = true, ++pos_;
    std::vector<CharRange> ranges;
    bool first = true;
    for (;;) {
      if (at_end()) return fail("missing ']'");
      if (peek() == ']' && !first) break;
      first = false;
      // One item: a code point, a class escape, or a range lo-hi.
      auto item = [&](std::vector<CharRange>* got) -> Status {
        if (peek() == '\\') {
          ++pos_;
          bool neg = false;
          return escape(true, got, &neg);
        }
        got->push_back({peek(), peek()});
        ++pos_;
        return Status::ok();
      };
      std::vector<CharRange> lo;
      EMBER_TRY(item(&lo));
      if (lo.size() == 1 && lo[0].lo == lo[0].hi && peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
        ++pos_;
        std::vector<CharRange> hi;
        EMBER_TRY(item(&hi));
        if (hi.size() != 1 || hi[0].lo != hi[0].hi) return fail("a class escape as a range end");
        if (hi[0].lo < lo[0].lo) return fail("a range out of order");
        ranges.push_back({lo[0].lo, hi[0].lo});
      } else {
        ranges.insert(ranges.end(), lo.begin(), lo.end());
      }
    }
    ++pos_;  // ']'
    *out = add_set(std::move(ranges), negated);
    return Status::ok();
  }

  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  const std::string& where_;
  const GrammarLimits& limits_;
  Regex re_;
};

bool contains(const CharSet& s, uint32_t cp) {
  bool in = false;
  for (const CharRange& r : s.ranges) in = in || (cp >= r.lo && cp <= r.hi);
  return in != s.negated;
}

// Sorted, merged ranges.
std::vector<CharRange> normalized(std::vector<CharRange> r) {
  std::sort(r.begin(), r.end(), [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  std::vector<CharRange> out;
  for (const CharRange& x : r) {
    if (!out.empty() && x.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, x.hi);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// One code point inside a GBNF class: letters and digits as themselves,
// everything else escaped (so ] ^ - \ need no special cases).
void class_char(std::string& out, uint32_t cp) {
  char buf[16];
  if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
    out += static_cast<char>(cp);
    return;
  }
  if (cp < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  }
  out += buf;
}

void class_ranges(std::string& out, const std::vector<CharRange>& ranges) {
  for (const CharRange& r : ranges) {
    class_char(out, r.lo);
    if (r.hi != r.lo) {
      out += '-';
      class_char(out, r.hi);
    }
  }
}

// A set of a pattern as GBNF over JSON string content: raw characters
// except those JSON must escape, plus \" and \\ when the set has them.
Result<std::string> set_gbnf(const CharSet& set, const std::string& where) {
  const bool quote = contains(set, '"');
  const bool backslash = contains(set, '\\');
  std::string cls;
  if (set.negated) {
    cls = "[^";
    class_ranges(cls, normalized(set.ranges));
    cls += "\\x00-\\x1F\\x22\\x5C]";
  } else {
    std::vector<CharRange> keep;
    for (CharRange r : normalized(set.ranges)) {
      // Cut out 0x00-0x1F, '"' (0x22) and '\' (0x5C).
      const CharRange cuts[] = {{0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}};
      std::vector<CharRange> parts = {r};
      for (const CharRange& cut : cuts) {
        std::vector<CharRange> next;
        for (const CharRange& p : parts) {
          if (p.hi < cut.lo || p.lo > cut.hi) {
            next.push_back(p);
            continue;
          }
          if (p.lo < cut.lo) next.push_back({p.lo, cut.lo - 1});
          if (p.hi > cut.hi) next.push_back({cut.hi + 1, p.hi});
        }
        parts = std::move(next);
      }
      keep.insert(keep.end(), parts.begin(), parts.end());
    }
    if (!keep.empty()) {
      cls = "[";
      class_ranges(cls, keep);
      cls += "]";
    }
  }
  std::vector<std::string> alts;
  if (!cls.empty()) alts.push_back(cls);
  if (quote) alts.push_back("\"\\\\\\\"\"");
  if (backslash) alts.push_back("\"\\\\\\\\\"");
  if (alts.empty()) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "%s: a character class of control characters only is not supported",
                         where.c_str());
  }
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

bool has_anchor(const Regex& re, uint32_t id) {
  const Node& n = re.nodes[id];
  if (n.kind == Node::Begin || n.kind == Node::End) return true;
  for (uint32_t k : n.kids)
    if (has_anchor(re, k)) return true;
  return false;
}

Result<std::string> node_gbnf(const Regex& re, uint32_t id, const std::string& where) {
  const Node& n = re.nodes[id];
  switch (n.kind) {
    case Node::Set: return set_gbnf(n.set, where);
    case Node::Begin:
    case Node::End:
      return Status::error(EMBER_ERR_UNSUPPORTED, "%s: an anchor ('^' or '$') inside the pattern is not supported",
                           where.c_str());
    case Node::Seq: {
      if (n.kids.empty()) return std::string("\"\"");
      std::string out;
      for (uint32_t k : n.kids) {
        EMBER_ASSIGN_OR_RETURN(std::string part, node_gbnf(re, k, where));
        if (!out.empty()) out += ' ';
        out += re.nodes[k].kind == Node::Seq && re.nodes[k].kids.size() > 1 ? "(" + part + ")" : part;
      }
      return out;
    }
    case Node::Alt: {
      std::string out = "(";
      for (size_t i = 0; i < n.kids.size(); ++i) {
        EMBER_ASSIGN_OR_RETURN(std::string part, node_gbnf(re, n.kids[i], where));
        out += (i ? " | " : "") + part;
      }
      return out + ")";
    }
    case Node::Repeat: {
      EMBER_ASSIGN_OR_RETURN(std::string part, node_gbnf(re, n.kids[0], where));
      std::string out = "(" + part + ")";
      if (n.min == 0 && n.max == kUnbounded) return out + "*";
      if (n.min == 1 && n.max == kUnbounded) return out + "+";
      if (n.min == 0 && n.max == 1) return out + "?";
      if (n.max == kUnbounded) return out + "{" + std::to_string(n.min) + ",}";
      if (n.min == n.max) return out + "{" + std::to_string(n.min) + "}";
      return out + "{" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
    }
  }
  return std::string("\"\"");
}

std::vector<uint32_t> top_alternatives(const Regex& re) {
  const Node& root = re.nodes[re.root];
  if (root.kind == Node::Alt) return root.kids;
  return {re.root};
}

uint64_t sat_add(uint64_t a, uint64_t b) { return a == kUnbounded || b == kUnbounded ? kUnbounded : std::min<uint64_t>(a + b, kUnbounded); }
uint64_t sat_mul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a == kUnbounded || b == kUnbounded) return kUnbounded;
  return std::min<uint64_t>(a * b, kUnbounded);
}

void bounds(const Regex& re, uint32_t id, uint64_t* lo, uint64_t* hi) {
  const Node& n = re.nodes[id];
  switch (n.kind) {
    case Node::Set: *lo = *hi = 1; return;
    case Node::Begin:
    case Node::End: *lo = *hi = 0; return;
    case Node::Seq:
      *lo = *hi = 0;
      for (uint32_t k : n.kids) {
        uint64_t a = 0, b = 0;
        bounds(re, k, &a, &b);
        *lo = sat_add(*lo, a);
        *hi = sat_add(*hi, b);
      }
      return;
    case Node::Alt:
      *lo = kUnbounded, *hi = 0;
      for (uint32_t k : n.kids) {
        uint64_t a = 0, b = 0;
        bounds(re, k, &a, &b);
        *lo = std::min(*lo, a);
        *hi = std::max(*hi, b);
      }
      return;
    case Node::Repeat: {
      uint64_t a = 0, b = 0;
      bounds(re, n.kids[0], &a, &b);
      *lo = sat_mul(a, n.min);
      *hi = n.max == kUnbounded ? (b == 0 ? 0 : kUnbounded) : sat_mul(b, n.max);
      return;
    }
  }
}

// Positions reachable after matching node `id` from any position in `in`.
std::vector<bool> step(const Regex& re, uint32_t id, const std::vector<uint32_t>& text, const std::vector<bool>& in) {
  const Node& n = re.nodes[id];
  const size_t len = text.size();
  std::vector<bool> out(len + 1, false);
  switch (n.kind) {
    case Node::Set:
      for (size_t p = 0; p < len; ++p) out[p + 1] = in[p] && contains(n.set, text[p]);
      return out;
    case Node::Begin: out[0] = in[0]; return out;
    case Node::End: out[len] = in[len]; return out;
    case Node::Seq: {
      std::vector<bool> cur = in;
      for (uint32_t k : n.kids) cur = step(re, k, text, cur);
      return cur;
    }
    case Node::Alt:
      for (uint32_t k : n.kids) {
        const std::vector<bool> got = step(re, k, text, in);
        for (size_t p = 0; p <= len; ++p) out[p] = out[p] || got[p];
      }
      return out;
    case Node::Repeat: {
      std::vector<bool> cur = in;
      if (n.min == 0) out = in;
      for (uint64_t i = 1; n.max == kUnbounded || i <= n.max; ++i) {
        cur = step(re, n.kids[0], text, cur);
        if (i < n.min) continue;
        bool grew = false;
        for (size_t p = 0; p <= len; ++p) {
          if (cur[p] && !out[p]) out[p] = grew = true;
        }
        // Past min, a round that adds nothing new adds nothing later either.
        if (!grew) break;
      }
      return out;
    }
  }
  return out;
}

}  // namespace

Result<Regex> parse(std::string_view pattern, const std::string& where, const GrammarLimits& limits) {
  return Parser(pattern, where, limits).run();
}

Result<std::string> to_gbnf(const Regex& re, const std::string& where, const std::string& any_char) {
  std::string out;
  const std::vector<uint32_t> alts = top_alternatives(re);
  for (size_t i = 0; i < alts.size(); ++i) {
    const Node& seq = re.nodes[alts[i]];
    std::vector<uint32_t> kids = seq.kind == Node::Seq ? seq.kids : std::vector<uint32_t>{alts[i]};
    const bool begin = !kids.empty() && re.nodes[kids.front()].kind == Node::Begin;
    if (begin) kids.erase(kids.begin());
    const bool end = !kids.empty() && re.nodes[kids.back()].kind == Node::End;
    if (end) kids.pop_back();
    std::string body;
    for (uint32_t k : kids) {
      if (has_anchor(re, k)) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "%s: an anchor ('^' or '$') inside the pattern is not supported",
                             where.c_str());
      }
      EMBER_ASSIGN_OR_RETURN(std::string part, node_gbnf(re, k, where));
      if (!body.empty()) body += ' ';
      body += re.nodes[k].kind == Node::Seq && re.nodes[k].kids.size() > 1 ? "(" + part + ")" : part;
    }
    std::string branch;
    if (!begin) branch += any_char + "* ";
    branch += body.empty() ? "\"\"" : body;
    if (!end) branch += " " + any_char + "*";
    out += (i ? " | " : "") + branch;
  }
  return alts.size() > 1 ? "(" + out + ")" : out;
}

LengthBounds length_bounds(const Regex& re) {
  LengthBounds b;
  bounds(re, re.root, &b.min, &b.max);
  b.anchored = true;
  for (uint32_t a : top_alternatives(re)) {
    const Node& seq = re.nodes[a];
    const bool both = seq.kind == Node::Seq && seq.kids.size() >= 2 && re.nodes[seq.kids.front()].kind == Node::Begin &&
                      re.nodes[seq.kids.back()].kind == Node::End;
    b.anchored = b.anchored && both;
  }
  if (!b.anchored) b.max = kUnbounded;
  return b;
}

bool search(const Regex& re, std::string_view text) {
  const std::vector<uint32_t> cps = decode_utf8(text);
  const std::vector<bool> all(cps.size() + 1, true);
  const std::vector<bool> out = step(re, re.root, cps, all);
  return std::find(out.begin(), out.end(), true) != out.end();
}

}  // namespace ember::schema_regex

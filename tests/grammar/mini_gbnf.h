// A test-only GBNF reader and matcher, small enough to trust by reading:
// it checks the language of the GBNF text json_schema_to_gbnf writes
// without the runtime's reader or matcher. One rule per line
// ("name ::= expr"); literals, classes, groups, rule names, * + ? {m,n}.
// The matcher computes, per rule and start position, every end position
// (memoized), so ambiguity costs time, not correctness. Not for grammars
// with left recursion (a rule seen again at the same position matches
// nothing there).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mini_gbnf {

struct Node {
  enum Kind { Lit, Class, Ref, Seq, Alt, Rep } kind = Seq;
  std::vector<uint32_t> text;                       // Lit
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // Class
  bool negated = false;                             // Class
  std::string name;                                 // Ref
  size_t rule = 0;                                  // Ref, after linking
  std::vector<std::unique_ptr<Node>> kids;          // Seq, Alt, Rep (one)
  uint64_t min = 0, max = 0;                        // Rep; max UINT64_MAX: none
};

inline std::vector<uint32_t> utf8(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

class Grammar {
 public:
  // False (with error()) when the text is not in the subset.
  bool parse(std::string_view text) {
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view line = text.substr(start, end - start);
      start = end + 1;
      if (line.empty() || line[0] == '#') continue;
      const size_t def = line.find(" ::= ");
      if (def == std::string_view::npos) return fail("no ' ::= ' in: " + std::string(line));
      const std::string name(line.substr(0, def));
      if (index_.count(name)) return fail("rule defined twice: " + name);
      src_ = utf8(line.substr(def + 5));
      pos_ = 0;
      auto node = alternation();
      if (!node) return false;
      skip();
      if (pos_ != src_.size()) return fail("trailing text in rule " + name);
      index_[name] = rules_.size();
      names_.push_back(name);
      rules_.push_back(std::move(node));
    }
    for (auto& r : rules_)
      if (!link(*r)) return false;
    return true;
  }
  const std::string& error() const { return error_; }
  size_t rule_count() const { return rules_.size(); }
  bool has_rule(const std::string& name) const { return index_.count(name) > 0; }

  // Whether rule `root` matches all of `text`.
  bool accepts(std::string_view text, const std::string& root = "root") {
    auto it = index_.find(root);
    if (it == index_.end()) return false;
    input_ = utf8(text);
    memo_.clear();
    const std::set<size_t> ends = rule_ends(it->second, 0);
    return ends.count(input_.size()) > 0;
  }

 private:
  bool fail(const std::string& what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void skip() {
    while (pos_ < src_.size() && src_[pos_] == ' ') ++pos_;
  }
  bool at(uint32_t c) {
    skip();
    return pos_ < src_.size() && src_[pos_] == c;
  }

  uint32_t escape() {
    // After a backslash.
    const uint32_t c = src_[pos_++];
    auto hex = [&](int n) {
      uint32_t v = 0;
      for (int i = 0; i < n && pos_ < src_.size(); ++i) {
        const uint32_t h = src_[pos_++];
        v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      return v;
    };
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: return c;
    }
  }

  std::unique_ptr<Node> alternation() {
    auto alt = std::make_unique<Node>();
    alt->kind = Node::Alt;
    for (;;) {
      auto seq = sequence();
      if (!seq) return nullptr;
      alt->kids.push_back(std::move(seq));
      if (!at('|')) break;
      ++pos_;
    }
    return alt;
  }

  std::unique_ptr<Node> sequence() {
    auto seq = std::make_unique<Node>();
    seq->kind = Node::Seq;
    while (!at('|') && !at(')') && pos_ < src_.size()) {
      std::unique_ptr<Node> atom;
      const uint32_t c = src_[pos_];
      if (c == '"') {
        ++pos_;
        atom = std::make_unique<Node>();
        atom->kind = Node::Lit;
        while (pos_ < src_.size() && src_[pos_] != '"') {
          if (src_[pos_] == '\\') {
            ++pos_;
            atom->text.push_back(escape());
          } else {
            atom->text.push_back(src_[pos_++]);
          }
        }
        if (pos_ >= src_.size()) return fail("unterminated literal"), nullptr;
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        atom = std::make_unique<Node>();
        atom->kind = Node::Class;
        if (pos_ < src_.size() && src_[pos_] == '^') atom->negated = true, ++pos_;
        while (pos_ < src_.size() && src_[pos_] != ']') {
          uint32_t lo = src_[pos_++];
          if (lo == '\\') lo = escape();
          uint32_t hi = lo;
          if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
            ++pos_;
            hi = src_[pos_++];
            if (hi == '\\') hi = escape();
          }
          atom->ranges.emplace_back(lo, hi);
        }
        if (pos_ >= src_.size()) return fail("unterminated class"), nullptr;
        ++pos_;
      } else if (c == '.') {
        ++pos_;
        atom = std::make_unique<Node>();
        atom->kind = Node::Class;
        atom->negated = true;
      } else if (c == '(') {
        ++pos_;
        atom = alternation();
        if (!atom) return nullptr;
        if (!at(')')) return fail("missing ')'"), nullptr;
        ++pos_;
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
        atom = std::make_unique<Node>();
        atom->kind = Node::Ref;
        while (pos_ < src_.size() && ((src_[pos_] >= 'a' && src_[pos_] <= 'z') || (src_[pos_] >= 'A' && src_[pos_] <= 'Z') ||
                                      (src_[pos_] >= '0' && src_[pos_] <= '9') || src_[pos_] == '-')) {
          atom->name += static_cast<char>(src_[pos_++]);
        }
      } else {
        return fail("unexpected character in grammar"), nullptr;
      }
      // Quantifiers directly after the atom.
      while (pos_ < src_.size() && (src_[pos_] == '*' || src_[pos_] == '+' || src_[pos_] == '?' || src_[pos_] == '{')) {
        auto rep = std::make_unique<Node>();
        rep->kind = Node::Rep;
        const uint32_t q = src_[pos_++];
        if (q == '*') rep->min = 0, rep->max = UINT64_MAX;
        if (q == '+') rep->min = 1, rep->max = UINT64_MAX;
        if (q == '?') rep->min = 0, rep->max = 1;
        if (q == '{') {
          auto number = [&] {
            uint64_t v = 0;
            while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') v = v * 10 + (src_[pos_++] - '0');
            return v;
          };
          rep->min = rep->max = number();
          if (src_[pos_] == ',') {
            ++pos_;
            rep->max = src_[pos_] == '}' ? UINT64_MAX : number();
          }
          if (src_[pos_] != '}') return fail("bad {m,n}"), nullptr;
          ++pos_;
        }
        rep->kids.push_back(std::move(atom));
        atom = std::move(rep);
      }
      seq->kids.push_back(std::move(atom));
    }
    return seq;
  }

  bool link(Node& n) {
    if (n.kind == Node::Ref) {
      auto it = index_.find(n.name);
      if (it == index_.end()) return fail("undefined rule " + n.name);
      n.rule = it->second;
    }
    for (auto& k : n.kids)
      if (!link(*k)) return false;
    return true;
  }

  std::set<size_t> rule_ends(size_t rule, size_t pos) {
    const uint64_t key = (uint64_t(rule) << 32) | pos;
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    memo_[key] = {};  // in progress: left recursion matches nothing
    std::set<size_t> ends = node_ends(*rules_[rule], pos);
    memo_[key] = ends;
    return ends;
  }

  std::set<size_t> node_ends(const Node& n, size_t pos) {
    std::set<size_t> out;
    switch (n.kind) {
      case Node::Lit:
        if (pos + n.text.size() <= input_.size() &&
            std::equal(n.text.begin(), n.text.end(), input_.begin() + static_cast<long>(pos))) {
          out.insert(pos + n.text.size());
        }
        return out;
      case Node::Class: {
        if (pos >= input_.size()) return out;
        bool in = false;
        for (const auto& [lo, hi] : n.ranges) in = in || (input_[pos] >= lo && input_[pos] <= hi);
        if (in != n.negated) out.insert(pos + 1);
        return out;
      }
      case Node::Ref: return rule_ends(n.rule, pos);
      case Node::Seq: {
        std::set<size_t> cur = {pos};
        for (const auto& k : n.kids) {
          std::set<size_t> next;
          for (size_t p : cur)
            for (size_t e : node_ends(*k, p)) next.insert(e);
          cur = std::move(next);
          if (cur.empty()) break;
        }
        return cur;
      }
      case Node::Alt:
        for (const auto& k : n.kids)
          for (size_t e : node_ends(*k, pos)) out.insert(e);
        return out;
      case Node::Rep: {
        std::set<size_t> cur = {pos};
        if (n.min == 0) out.insert(pos);
        for (uint64_t i = 1; i <= n.max; ++i) {
          std::set<size_t> next;
          for (size_t p : cur)
            for (size_t e : node_ends(*n.kids[0], p)) next.insert(e);
          cur = std::move(next);
          if (cur.empty()) break;
          if (i < n.min) continue;
          size_t before = out.size();
          out.insert(cur.begin(), cur.end());
          if (out.size() == before) break;  // nothing new now, nothing new later
        }
        return out;
      }
    }
    return out;
  }

  std::vector<std::unique_ptr<Node>> rules_;
  std::vector<std::string> names_;
  std::map<std::string, size_t> index_;
  std::vector<uint32_t> src_;
  size_t pos_ = 0;
  std::string error_;
  std::vector<uint32_t> input_;
  std::unordered_map<uint64_t, std::set<size_t>> memo_;
};

}  // namespace mini_gbnf

// The pre-tokenizer regex subset and the table of families. Matching is
// leftmost-first backtracking (Perl/ECMAScript/Oniguruma order: the first
// alternative that lets the rest match wins, quantifiers are greedy), over
// codepoints, bounded by the piece being split: a lookahead or $ never sees
// past it, as when llama.cpp runs std::regex on each piece.
#include "tokenizer/pretokenizer.h"

#include <climits>

#include "tokenizer/unicode_classes.h"

namespace ember {
namespace {

constexpr uint8_t kClassLetter = 1;
constexpr uint8_t kClassNumber = 2;
constexpr uint8_t kClassPunct = 4;
constexpr uint8_t kClassMark = 8;
constexpr uint8_t kClassSpace = 16;

uint8_t classes_of(uint32_t cp) {
  if (cp == kInvalidCodepoint) return 0;  // a stray byte: in no class
  uint8_t c = 0;
  if (is_unicode_whitespace(cp)) c |= kClassSpace;
  if (cp < 0x80) {  // fast path: ASCII
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return c | kClassLetter;
    if (cp >= '0' && cp <= '9') return c | kClassNumber;
    return c | (is_unicode_punctuation(cp) ? kClassPunct : 0);
  }
  if (is_unicode_letter(cp)) c |= kClassLetter;
  else if (is_unicode_number(cp)) c |= kClassNumber;
  else if (is_unicode_punctuation(cp)) c |= kClassPunct;
  else if (is_unicode_mark(cp)) c |= kClassMark;
  return c;
}

bool set_has(const PreTokenizerRegex::CharSet& set, uint32_t cp, uint8_t cls) {
  bool in = (set.classes & cls) != 0 || (set.not_classes & ~cls) != 0;
  for (size_t i = 0; !in && i < set.ranges.size(); ++i) {
    in = cp >= set.ranges[i].first && cp <= set.ranges[i].second;
  }
  return in != set.negate;
}

}  // namespace

// Recursive descent over the pattern's codepoints.
struct PreTokenizerRegex::Parser {
  std::vector<uint32_t> p;
  size_t i = 0;
  PreTokenizerRegex* rx;
  std::string_view pattern;

  Status fail(const char* what) const {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "pre-tokenizer regex '%.*s': %s at character %zu",
                         static_cast<int>(pattern.size() < 200 ? pattern.size() : 200),
                         pattern.data(), what, i);
  }
  bool at_end() const { return i >= p.size(); }
  uint32_t peek(size_t ahead = 0) const { return i + ahead < p.size() ? p[i + ahead] : 0; }

  int add_set(CharSet s, uint32_t min = 1, uint32_t max = 1) {
    rx->sets_.push_back(std::move(s));
    Node n;
    n.kind = Node::Set;
    n.set = static_cast<int>(rx->sets_.size() - 1);
    n.min = min;
    n.max = max;
    rx->nodes_.push_back(std::move(n));
    return static_cast<int>(rx->nodes_.size() - 1);
  }

  // \p{X} after "\p" has been consumed.
  Status category(uint8_t* bits) {
    if (peek() != '{') return fail("expected { after \\p");
    size_t j = i + 1;
    std::string name;
    while (j < p.size() && p[j] != '}') name.push_back(static_cast<char>(p[j++]));
    if (j >= p.size()) return fail("unterminated \\p{");
    if (name == "L") *bits = kClassLetter;
    else if (name == "N") *bits = kClassNumber;
    else if (name == "P") *bits = kClassPunct;
    else if (name == "M") *bits = kClassMark;
    else return fail("unsupported \\p category");
    i = j + 1;
    return Status::ok();
  }

  // One escape after '\': a class (bits / not_bits) or a literal (*cp).
  Status escape(uint8_t* bits, uint8_t* not_bits, uint32_t* cp) {
    if (at_end()) return fail("trailing backslash");
    const uint32_t c = p[i++];
    *bits = 0, *not_bits = 0, *cp = 0;
    switch (c) {
      case 's': *bits = kClassSpace; return Status::ok();
      case 'S': *not_bits = kClassSpace; return Status::ok();
      case 'p': return category(bits);
      case 'r': *cp = '\r'; return Status::ok();
      case 'n': *cp = '\n'; return Status::ok();
      case 't': *cp = '\t'; return Status::ok();
      default:
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return fail("unsupported escape");
        *cp = c;  // an escaped punctuation character stands for itself
        return Status::ok();
    }
  }

  Status bracket(CharSet* set) {
    ++i;  // '['
    if (peek() == '^') set->negate = true, ++i;
    bool first = true;
    while (true) {
      if (at_end()) return fail("unterminated [");
      if (p[i] == ']' && !first) break;
      first = false;
      uint32_t lo;
      if (p[i] == '\\') {
        ++i;
        uint8_t bits, not_bits;
        EMBER_TRY(escape(&bits, &not_bits, &lo));
        if (bits || not_bits) {
          set->classes |= bits;
          set->not_classes |= not_bits;
          continue;
        }
      } else {
        lo = p[i++];
      }
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && i + 1 < p.size()) {
        ++i;
        if (p[i] == '\\') {
          ++i;
          uint8_t bits, not_bits;
          EMBER_TRY(escape(&bits, &not_bits, &hi));
          if (bits || not_bits) return fail("class as a range end");
        } else {
          hi = p[i++];
        }
        if (hi < lo) return fail("reversed range");
      }
      set->ranges.emplace_back(lo, hi);
    }
    ++i;  // ']'
    return Status::ok();
  }

  Status number(uint32_t* v) {
    *v = 0;
    if (at_end() || p[i] < '0' || p[i] > '9') return fail("expected a number");
    uint64_t n = 0;
    while (!at_end() && p[i] >= '0' && p[i] <= '9') {
      n = n * 10 + (p[i++] - '0');
      if (n > 100000) return fail("repeat count too large");
    }
    *v = static_cast<uint32_t>(n);
    return Status::ok();
  }

  Status quantifier(int node) {
    uint32_t min = 1, max = 1;
    const uint32_t c = peek();
    if (c == '?') min = 0, max = 1, ++i;
    else if (c == '*') min = 0, max = UINT32_MAX, ++i;
    else if (c == '+') min = 1, max = UINT32_MAX, ++i;
    else if (c == '{') {
      ++i;
      EMBER_TRY(number(&min));
      max = min;
      if (peek() == ',') {
        ++i;
        EMBER_TRY(number(&max));
        if (max < min) return fail("{n,m} with m < n");
      }
      if (peek() != '}') return fail("expected }");
      ++i;
    } else {
      return Status::ok();
    }
    if (peek() == '?' || peek() == '+') return fail("lazy or possessive quantifier");
    Node& n = rx->nodes_[node];
    if (n.kind != Node::Set || n.min != 1 || n.max != 1) return fail("quantifier on a group");
    n.min = min, n.max = max;
    return Status::ok();
  }

  Status sequence(std::vector<int>* seq) {
    while (!at_end() && p[i] != '|' && p[i] != ')') {
      const uint32_t c = p[i];
      int node;
      if (c == '(') {
        Node n;
        if (peek(1) == '?' && peek(2) == ':') n.kind = Node::Alt;
        else if (peek(1) == '?' && peek(2) == '!') n.kind = Node::NegAhead;
        else if (peek(1) == '?' && peek(2) == '=') n.kind = Node::PosAhead;
        else return fail("capturing or unsupported group");
        i += 3;
        EMBER_TRY(alternation(&n.branches));
        if (peek() != ')') return fail("expected )");
        ++i;
        rx->nodes_.push_back(std::move(n));
        node = static_cast<int>(rx->nodes_.size() - 1);
      } else if (c == '[') {
        CharSet set;
        EMBER_TRY(bracket(&set));
        node = add_set(std::move(set));
      } else if (c == '$') {
        ++i;
        Node n;
        n.kind = Node::End;
        rx->nodes_.push_back(std::move(n));
        node = static_cast<int>(rx->nodes_.size() - 1);
      } else if (c == '\\') {
        ++i;
        CharSet set;
        uint32_t cp;
        EMBER_TRY(escape(&set.classes, &set.not_classes, &cp));
        if (set.not_classes) {  // \S: everything but the class
          set.negate = true;
          set.classes = set.not_classes;
          set.not_classes = 0;
        }
        if (!set.classes) set.ranges.emplace_back(cp, cp);
        node = add_set(std::move(set));
      } else if (c == '.' || c == '^' || c == '*' || c == '+' || c == '?' || c == '{') {
        return fail("unsupported or misplaced operator");
      } else {
        ++i;
        CharSet set;
        set.ranges.emplace_back(c, c);
        node = add_set(std::move(set));
      }
      EMBER_TRY(quantifier(node));
      seq->push_back(node);
    }
    return Status::ok();
  }

  Status alternation(std::vector<std::vector<int>>* branches) {
    while (true) {
      branches->emplace_back();
      EMBER_TRY(sequence(&branches->back()));
      if (peek() != '|') return Status::ok();
      ++i;
    }
  }
};

Result<PreTokenizerRegex> PreTokenizerRegex::compile(std::string_view pattern) {
  PreTokenizerRegex rx;
  Parser ps;
  ps.rx = &rx;
  ps.pattern = pattern;
  const uint8_t* d = reinterpret_cast<const uint8_t*>(pattern.data());
  for (size_t j = 0; j < pattern.size();) {
    const Utf8Step st = utf8_decode(d + j, pattern.size() - j);
    if (st.codepoint == kInvalidCodepoint) return ps.fail("invalid UTF-8");
    ps.p.push_back(st.codepoint);
    j += st.length;
  }
  if (ps.p.empty()) return ps.fail("empty pattern");
  Node top;
  top.kind = Node::Alt;
  EMBER_TRY(ps.alternation(&top.branches));
  if (!ps.at_end()) return ps.fail("unbalanced )");
  rx.nodes_.push_back(std::move(top));
  rx.root_.push_back(static_cast<int>(rx.nodes_.size() - 1));
  return rx;
}

void PreTokenizerRegex::prepare(std::string_view text, Subject* s) {
  s->cps.clear();
  s->classes.clear();
  s->offsets.clear();
  const uint8_t* d = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const Utf8Step st = utf8_decode(d + i, text.size() - i);
    s->cps.push_back(st.codepoint);
    s->classes.push_back(classes_of(st.codepoint));
    s->offsets.push_back(i);
    i += st.length;
  }
  s->offsets.push_back(text.size());
}

// The rest of a match: the nodes of `seq` from `idx` on, then `next`.
struct PreTokenizerRegex::Cont {
  const std::vector<int>* seq;
  size_t idx;
  const Cont* next;
};

// Recursion depth is bounded by the pattern's nesting, not by the text: a
// repeated set counts its run in a loop and backtracks over it in a loop.
bool PreTokenizerRegex::match_rest(const Subject& s, size_t end, const Cont* k, size_t pos,
                                   size_t* out) const {
  while (k != nullptr && k->idx == k->seq->size()) k = k->next;
  if (k == nullptr) {
    *out = pos;
    return true;
  }
  const Node& n = nodes_[(*k->seq)[k->idx]];
  const Cont rest{k->seq, k->idx + 1, k->next};
  switch (n.kind) {
    case Node::Set: {
      const CharSet& set = sets_[n.set];
      size_t run = 0;
      while (run < n.max && pos + run < end && set_has(set, s.cps[pos + run], s.classes[pos + run])) {
        ++run;
      }
      if (run < n.min) return false;
      for (size_t r = run;; --r) {
        if (match_rest(s, end, &rest, pos + r, out)) return true;
        if (r == n.min) return false;
      }
    }
    case Node::Alt:
      for (const auto& b : n.branches) {
        const Cont c{&b, 0, &rest};
        if (match_rest(s, end, &c, pos, out)) return true;
      }
      return false;
    case Node::NegAhead:
    case Node::PosAhead: {
      bool any = false;
      size_t ignored;
      for (size_t j = 0; !any && j < n.branches.size(); ++j) {
        const Cont c{&n.branches[j], 0, nullptr};
        any = match_rest(s, end, &c, pos, &ignored);
      }
      if (any != (n.kind == Node::PosAhead)) return false;
      return match_rest(s, end, &rest, pos, out);
    }
    case Node::End:
      return pos == end && match_rest(s, end, &rest, pos, out);
  }
  return false;
}

long PreTokenizerRegex::match_at(const Subject& s, size_t pos, size_t end) const {
  const Cont c{&root_, 0, nullptr};
  size_t e;
  if (!match_rest(s, end, &c, pos, &e)) return -1;
  return static_cast<long>(e - pos);
}

void PreTokenizerRegex::split(const Subject& s, const std::vector<std::pair<size_t, size_t>>& in,
                              std::vector<std::pair<size_t, size_t>>* out) const {
  for (const auto& [begin, end] : in) {
    size_t gap = begin;
    size_t pos = begin;
    while (pos < end) {
      const long len = match_at(s, pos, end);
      if (len <= 0) {  // no match here (none of the families matches empty)
        ++pos;
        continue;
      }
      if (pos > gap) out->emplace_back(gap, pos);
      out->emplace_back(pos, pos + static_cast<size_t>(len));
      pos += static_cast<size_t>(len);
      gap = pos;
    }
    if (end > gap) out->emplace_back(gap, end);
  }
}

// ---------------------------------------------------------------------------
// The families. The regexes are those of each model's tokenizer.json (Llama
// 3's and Qwen2's case-insensitive group spelled out as [sS] pairs); which
// GGUF names share a family follows llama.cpp's llama-vocab.cpp.
namespace {

#define EMBER_GPT2_RE \
  R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"
#define EMBER_CONTRACTIONS_RE R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
#define EMBER_CJK_RE "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+"
#define EMBER_PORO_RE " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+"

struct Family {
  const char* names[12];  // GGUF tokenizer.ggml.pre values; nullptr ends
  const char* regexes[6];
  bool ignore_merges;
  bool default_add_bos;
  bool byte_encode = true;  // false: also newline runs taken whole
};

const Family kFamilies[] = {
    // GPT-2 and the families that kept its regex.
    {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "gigachat",
      "a.x-4.0", "mellum", "exaone4", nullptr},
     {EMBER_GPT2_RE},
     false, false},
    // The legacy "" of .ember files converted before tokenizer.pre was stored.
    {{"", nullptr}, {EMBER_GPT2_RE}, false, false},
    // Llama 3 (tiktoken cl100k-style): up to three digits per word.
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
      "jina-v5-nano", nullptr},
     {EMBER_CONTRACTIONS_RE
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     true, true},
    {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe", nullptr},
     {EMBER_CONTRACTIONS_RE
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     false, false},
    // Qwen2 (and SmolLM's cousins that copied it): one digit per word.
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "megrez",
      "solar-open", nullptr},
     {EMBER_CONTRACTIONS_RE
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     false, false},
    // Qwen3.5: combining marks join the letters around them.
    {{"qwen35", nullptr},
     {EMBER_CONTRACTIONS_RE
      R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     false, false},
    // StarCoder, SmolLM, Refact, Command-R: digits one by one, then GPT-2.
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
      "mellum2", nullptr},
     {R"(\p{N})", EMBER_GPT2_RE},
     false, false},
    // Falcon: punctuation runs first, then GPT-2, then digits in threes.
    {{"falcon", nullptr},
     {R"([\p{P}\$\+<=>\^~\|`]+)", EMBER_GPT2_RE, "[0-9][0-9][0-9]"},
     false, false},
    // DeepSeek LLM: newlines, Latin/Greek/Cyrillic... letters, ASCII and
    // full-width punctuation, trailing spaces, CJK runs, digit runs.
    {{"deepseek-llm", nullptr},
     {"[\r\n]",
      "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293"
      "\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C"
      "\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5"
      "\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77"
      "\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59"
      "\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC"
      "\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107"
      "\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
      "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE"
      "\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E"
      "\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F"
      "\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2"
      "\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
      "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+",
      "\\s+$",
      EMBER_CJK_RE,
      "\\p{N}+"},
     false, false},
    // DeepSeek Coder: like DeepSeek LLM with classes, one digit per word.
    {{"deepseek-coder", nullptr},
     {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", EMBER_CJK_RE, "\\p{N}"},
     false, false},
    // BLOOM, Poro, GPT-3 Finnish: words are runs of anything but spaces and
    // sentence punctuation.
    {{"bloom", "poro-chat", "gpt3-finnish", nullptr}, {EMBER_PORO_RE}, false, false},
    {{"viking", nullptr}, {EMBER_PORO_RE, "\\p{N}"}, false, false},
    // Gemma 4: SentencePiece-style BPE over raw UTF-8 with spaces as "▁";
    // only newline runs are cut out.
    {{"gemma4", "granite-embed-multi-311m", nullptr}, {"[^\n]+|[\n]+"}, false, true, false},
    // llama.cpp's "default" (also what it assumes when a BPE GGUF names no
    // pre-tokenizer).
    {{"default", nullptr},
     {R"([\p{P}\$\+<=>\^~\|]+)", EMBER_GPT2_RE, R"(\p{N}+)", "[0-9][0-9][0-9]"},
     false, false},
};

const Family* find_family(std::string_view name) {
  for (const Family& f : kFamilies) {
    for (const char* const* n = f.names; *n != nullptr; ++n) {
      if (name == *n) return &f;
    }
  }
  return nullptr;
}

}  // namespace

bool PreTokenizer::known(std::string_view name) { return find_family(name) != nullptr; }

Result<PreTokenizer> PreTokenizer::create(std::string_view name) {
  const Family* f = find_family(name);
  if (f == nullptr) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "tokenizer.ggml.pre '%.*s' is not a pre-tokenizer ember implements",
                         static_cast<int>(name.size() < 64 ? name.size() : 64), name.data());
  }
  PreTokenizer t;
  t.name_ = std::string(name);
  t.ignore_merges_ = f->ignore_merges;
  t.default_add_bos_ = f->default_add_bos;
  t.byte_encode_ = f->byte_encode;
  t.newline_words_whole_ = !f->byte_encode;
  for (const char* re : f->regexes) {
    if (re == nullptr) break;
    EMBER_ASSIGN_OR_RETURN(PreTokenizerRegex compiled, PreTokenizerRegex::compile(re));
    t.regexes_.push_back(std::move(compiled));
  }
  return t;
}

void PreTokenizer::split(std::string_view text, std::vector<std::pair<size_t, size_t>>* words) const {
  PreTokenizerRegex::Subject s;
  PreTokenizerRegex::prepare(text, &s);
  std::vector<std::pair<size_t, size_t>> pieces{{0, s.cps.size()}};
  std::vector<std::pair<size_t, size_t>> next;
  for (const PreTokenizerRegex& rx : regexes_) {
    next.clear();
    rx.split(s, pieces, &next);
    pieces.swap(next);
  }
  for (const auto& [b, e] : pieces) {
    if (e > b) words->emplace_back(s.offsets[b], s.offsets[e]);
  }
}

}  // namespace ember

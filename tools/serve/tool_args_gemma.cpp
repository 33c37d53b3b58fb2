#include "tools/serve/tool_args_gemma.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace ember::serve {
namespace {

using ojson = nlohmann::ordered_json;  // a schema's properties in the order written

constexpr char kMark[] = "<|\"|>";  // Gemma's string delimiter (a token of its own)
constexpr size_t kMarkLen = sizeof kMark - 1;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// 1: the mark starts at buf[i]; 0: it does not; -1: buf ends inside what may be it.
int mark_at(std::string_view buf, size_t i) {
  const size_t n = std::min(kMarkLen, buf.size() - i);
  if (buf.compare(i, n, kMark, n) != 0) return 0;
  return n == kMarkLen ? 1 : -1;
}

// The content of a JSON string (no quotes) for raw text.
void append_escaped(std::string* out, std::string_view s) {
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += ch;
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      *out += esc;
    } else {
      *out += ch;
    }
  }
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  append_escaped(&out, s);
  out += '"';
  return out;
}

// A bare value as JSON: a literal, a number, else the word as a string.
std::string bare_value(std::string_view word) {
  if (word == "true" || word == "false" || word == "null") return std::string(word);
  if (word == "None" || word == "none") return "null";
  const char c = word.front();
  if ((c == '-' || (c >= '0' && c <= '9')) && ojson::accept(word)) return std::string(word);
  return quoted(word);
}

}  // namespace

std::string GemmaArgsReader::add(std::string_view text) {
  std::string out;
  if (done_ || failed_) return out;
  pending_.append(text);
  size_t i = 0;
  while (!done_ && !failed_ && i < pending_.size() && step(pending_, &i, &out)) {
  }
  if (done_) used_ = fed_ + i;
  fed_ += i;
  pending_.erase(0, i);
  return out;
}

bool GemmaArgsReader::step(std::string_view buf, size_t* i, std::string* out) {
  const char c = buf[*i];
  const bool between = mode_ != Mode::kString && mode_ != Mode::kJsonString;
  if (between && mode_ != Mode::kStart && is_space(c)) {
    ++*i;
    return true;
  }
  switch (mode_) {
    case Mode::kStart:
      if (c != '{') {
        fail();
        return false;
      }
      open_.push_back('{');
      *out += '{';
      ++*i;
      mode_ = Mode::kKeyOrClose;
      return true;
    case Mode::kValueOrClose:
    case Mode::kKeyOrClose:
      if (c == (mode_ == Mode::kValueOrClose ? ']' : '}')) {
        ++*i;
        close(c, out);
        return true;
      }
      mode_ = mode_ == Mode::kValueOrClose ? Mode::kValue : Mode::kKey;
      return true;
    case Mode::kValue: return value(buf, i, out);
    case Mode::kKey: return key(buf, i, out);
    case Mode::kString: return string_body(buf, i, out);
    case Mode::kJsonString:
      while (*i < buf.size()) {
        const char x = buf[(*i)++];
        *out += x;
        if (escaped_) {
          escaped_ = false;
        } else if (x == '\\') {
          escaped_ = true;
        } else if (x == '"') {
          mode_ = Mode::kAfter;
          return true;
        }
      }
      return false;
    case Mode::kAfter: return after(buf, i, out);
  }
  return false;
}

bool GemmaArgsReader::value(std::string_view buf, size_t* i, std::string* out) {
  const char c = buf[*i];
  const int mark = mark_at(buf, *i);
  if (mark < 0) return false;
  if (mark > 0) {
    *out += '"';
    *i += kMarkLen;
    mode_ = Mode::kString;
    return true;
  }
  if (c == '"') {
    *out += '"';
    ++*i;
    escaped_ = false;
    mode_ = Mode::kJsonString;
    return true;
  }
  if (c == '{' || c == '[') {
    if (open_.size() >= kMaxDepth) {
      fail();
      return false;
    }
    open_.push_back(c);
    *out += c;
    ++*i;
    mode_ = c == '{' ? Mode::kKeyOrClose : Mode::kValueOrClose;
    return true;
  }
  // A bare word: decided when what ends it comes.
  const size_t end = buf.find_first_of(",}]", *i);
  if (end == std::string_view::npos) return false;
  const std::string_view word = trim(buf.substr(*i, end - *i));
  if (word.empty()) {
    fail();
    return false;
  }
  *out += bare_value(word);
  *i = end;
  mode_ = Mode::kAfter;
  return true;
}

bool GemmaArgsReader::key(std::string_view buf, size_t* i, std::string* out) {
  const int mark = mark_at(buf, *i);
  if (mark < 0) return false;
  std::string name;
  size_t j;
  if (mark > 0 || buf[*i] == '"') {  // <|"|>key<|"|> or "key"
    size_t close;
    if (mark > 0) {
      close = buf.find(kMark, *i + kMarkLen);
      if (close == std::string_view::npos) return false;
      name = quoted(buf.substr(*i + kMarkLen, close - *i - kMarkLen));
      j = close + kMarkLen;
    } else {
      close = *i + 1;
      bool esc = false;
      while (close < buf.size() && (esc || buf[close] != '"')) {
        esc = !esc && buf[close] == '\\';
        ++close;
      }
      if (close >= buf.size()) return false;
      name = std::string(buf.substr(*i, close + 1 - *i));
      j = close + 1;
    }
    while (j < buf.size() && is_space(buf[j])) ++j;
    if (j >= buf.size()) return false;
    if (buf[j] != ':') {
      fail();
      return false;
    }
  } else {
    j = buf.find_first_of(":{}[],<\"", *i);
    if (j == std::string_view::npos) return false;
    const std::string_view bare = trim(buf.substr(*i, j - *i));
    if (buf[j] != ':' || bare.empty()) {
      fail();
      return false;
    }
    name = quoted(bare);
  }
  *out += name;
  *out += ':';
  *i = j + 1;
  mode_ = Mode::kValue;
  return true;
}

bool GemmaArgsReader::string_body(std::string_view buf, size_t* i, std::string* out) {
  const size_t close = buf.find(kMark, *i);
  if (close != std::string_view::npos) {
    append_escaped(out, buf.substr(*i, close - *i));
    *out += '"';
    *i = close + kMarkLen;
    mode_ = Mode::kAfter;
    return true;
  }
  // Everything but an ending that may be the start of the mark.
  size_t keep = buf.size();
  for (size_t k = std::max(*i, buf.size() >= kMarkLen ? buf.size() - kMarkLen + 1 : size_t{0}); k < buf.size(); ++k) {
    if (mark_at(buf, k) < 0) {
      keep = k;
      break;
    }
  }
  append_escaped(out, buf.substr(*i, keep - *i));
  *i = keep;
  return false;
}

bool GemmaArgsReader::after(std::string_view buf, size_t* i, std::string* out) {
  const char c = buf[*i];
  const char top = open_.back();
  if (c == ',') {
    *out += ',';
    ++*i;
    mode_ = top == '{' ? Mode::kKey : Mode::kValue;
    return true;
  }
  if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
    ++*i;
    close(c, out);
    return true;
  }
  fail();
  return false;
}

void GemmaArgsReader::close(char c, std::string* out) {
  *out += c;
  open_.pop_back();
  if (open_.empty()) {
    done_ = true;
  } else {
    mode_ = Mode::kAfter;
  }
}

bool gemma_args_to_json(std::string_view text, std::string* json, size_t* used) {
  GemmaArgsReader r;
  *json = r.add(text);
  *used = r.used();
  // The reader writes JSON by construction; checked all the same (a
  // JSON-quoted key or string is copied as it came).
  return r.done() && !r.failed() && ojson::accept(*json);
}

// ---- The grammar --------------------------------------------------------

const char kGemmaValueRules[] =
    "gemma-value ::= gemma-string | gemma-number | gemma-bool | gemma-null | gemma-array | gemma-object\n"
    "gemma-object ::= \"{\" ( gemma-kv ( \",\" gemma-kv )* )? \"}\"\n"
    "gemma-kv ::= gemma-key \":\" gemma-value\n"
    "gemma-key ::= [A-Za-z0-9_.$-]+\n"
    "gemma-array ::= \"[\" ( gemma-value ( \",\" gemma-value )* )? \"]\"\n"
    // Content never holds "<|" (so never the closing mark).
    "gemma-string ::= \"<|\\\"|>\" gemma-char* \"<|\\\"|>\"\n"
    "gemma-char ::= [^<] | \"<\" [^|<]\n"
    "gemma-number ::= gemma-integer ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?\n"
    "gemma-integer ::= \"-\"? ( \"0\" | [1-9] [0-9]* )\n"
    "gemma-bool ::= \"true\" | \"false\"\n"
    "gemma-null ::= \"null\"\n";

namespace {

// A GBNF literal of raw text.
std::string literal(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02X", c);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Jinja's dictsort: case-folded keys (ASCII), then as written.
std::vector<std::string> sorted_keys(const ojson& o) {
  std::vector<std::string> keys;
  for (auto it = o.begin(); it != o.end(); ++it) keys.push_back(it.key());
  auto folded = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
    const std::string fa = folded(a), fb = folded(b);
    return fa != fb ? fa < fb : a < b;
  });
  return keys;
}

// A key as Gemma's template writes it (bare), or between marks when it
// holds what would end a bare key.
std::string key_text(const std::string& k) {
  const bool bare = !k.empty() && k.find_first_of(":{}[],<\" \n\t") == std::string::npos;
  return bare ? k : std::string(kMark) + k + kMark;
}

// A value as Gemma's template writes it (format_argument, keys bare).
std::string gemma_text(const ojson& v, int depth) {
  if (v.is_string()) return std::string(kMark) + v.get_ref<const std::string&>() + kMark;
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null() || depth > 16) return "null";
  if (v.is_number()) return v.dump();
  std::string out;
  if (v.is_array()) {
    out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + gemma_text(v[i], depth + 1);
    return out + "]";
  }
  out = "{";
  bool first = true;
  for (const std::string& k : sorted_keys(v)) {
    out += (first ? "" : ",") + key_text(k) + ":" + gemma_text(v[k], depth + 1);
    first = false;
  }
  return out + "}";
}

class Translator {
 public:
  explicit Translator(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string rules;

  std::string expr(const ojson& s, int depth) {
    if (!s.is_object() || depth > 16) return "gemma-value";
    if (s.contains("const")) return literal(gemma_text(s["const"], 0));
    if (const auto e = s.find("enum"); e != s.end() && e->is_array() && !e->empty()) {
      std::string alts;
      for (const ojson& v : *e) alts += (alts.empty() ? "" : " | ") + literal(gemma_text(v, 0));
      return "( " + alts + " )";
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (const auto a = s.find(k); a != s.end() && a->is_array() && !a->empty()) {
        std::string alts;
        for (const ojson& v : *a) alts += (alts.empty() ? "" : " | ") + expr(v, depth + 1);
        return "( " + alts + " )";
      }
    }
    const auto type = s.find("type");
    if (type != s.end() && type->is_array()) {
      std::string alts;
      for (const ojson& t : *type) {
        if (t.is_string()) alts += (alts.empty() ? "" : " | ") + of_type(s, t.get_ref<const std::string&>(), depth);
      }
      return alts.empty() ? "gemma-value" : "( " + alts + " )";
    }
    if (type != s.end() && type->is_string()) return of_type(s, type->get_ref<const std::string&>(), depth);
    if (s.contains("properties")) return of_type(s, "object", depth);
    return "gemma-value";
  }

  std::string object(const ojson& s, int depth) {
    const auto props = s.find("properties");
    if (props == s.end() || !props->is_object() || props->empty()) return "gemma-object";
    std::vector<std::string> required;
    if (const auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (const ojson& k : *r) {
        if (k.is_string()) required.push_back(k.get<std::string>());
      }
    }
    const std::vector<std::string> keys = sorted_keys(*props);
    const std::string base = prefix_ + "-o" + std::to_string(objects_++);
    const size_t n = keys.size();
    std::vector<std::string> kv(n);
    std::vector<bool> must(n);
    for (size_t i = 0; i < n; ++i) {
      kv[i] = literal(key_text(keys[i]) + ":") + " " + expr((*props)[keys[i]], depth + 1);
      must[i] = std::find(required.begin(), required.end(), keys[i]) != required.end();
    }
    // f(i): the members from i on, none written yet; r(i): the same after
    // one was (each begins with a comma). Keys in the template's order.
    auto f = [&](size_t i) { return i < n ? base + "-f" + std::to_string(i) : std::string(); };
    auto r = [&](size_t i) { return i < n ? base + "-r" + std::to_string(i) : std::string(); };
    for (size_t i = n; i-- > 0;) {
      const std::string rest = r(i + 1).empty() ? "" : " " + r(i + 1);
      if (must[i]) {
        rules += f(i) + " ::= " + kv[i] + rest + "\n";
        rules += r(i) + " ::= \",\" " + kv[i] + rest + "\n";
      } else {
        const std::string skip = f(i + 1);
        rules += f(i) + " ::= " + (skip.empty() ? "( " + kv[i] + rest + " )?" : kv[i] + rest + " | " + skip) + "\n";
        rules += r(i) + " ::= ( \",\" " + kv[i] + " )?" + rest + "\n";
      }
    }
    return "\"{\" " + f(0) + " \"}\"";
  }

 private:
  std::string of_type(const ojson& s, const std::string& t, int depth) {
    if (t == "string") return "gemma-string";
    if (t == "integer") return "gemma-integer";
    if (t == "number") return "gemma-number";
    if (t == "boolean") return "gemma-bool";
    if (t == "null") return "gemma-null";
    if (t == "object") return object(s, depth);
    if (t == "array") {
      const auto items = s.find("items");
      if (items == s.end() || !items->is_object()) return "gemma-array";
      const std::string item = expr(*items, depth + 1);
      const auto min = s.find("minItems");
      const bool some = min != s.end() && min->is_number_unsigned() && min->get<uint64_t>() > 0;
      const std::string list = item + " ( \",\" " + item + " )*";
      return "\"[\" " + (some ? list : "( " + list + " )?") + " \"]\"";
    }
    return "gemma-value";
  }

  std::string prefix_;
  size_t objects_ = 0;
};

}  // namespace

bool gemma_arguments_gbnf(const std::string& schema, const std::string& root_name, std::string* out,
                          std::string* error) {
  if (schema.empty()) {
    *out += root_name + " ::= gemma-object\n";
    return true;
  }
  const ojson s = ojson::parse(schema, nullptr, false);
  if (s.is_discarded()) {
    *error = "its parameters schema is not JSON";
    return false;
  }
  Translator t(root_name);
  // The arguments are an object whatever the schema says.
  std::string root = t.expr(s, 0);
  if (root.rfind("\"{\"", 0) != 0) root = "gemma-object";
  *out += root_name + " ::= " + root + "\n" + t.rules;
  return true;
}

}  // namespace ember::serve

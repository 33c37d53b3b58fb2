// Filters, tests and methods with Jinja2 3.1 / Python semantics as Hugging
// Face's renderer sees them. Case mapping is ASCII-only, so text with other
// bytes is refused by the case filters rather than mapped differently.
#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace ember::chat {

const Value* Args::get(size_t i, const char* name) const {
  if (i < pos.size()) return &pos[i];
  for (const auto& kv : kw)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

Status at_error(const Expr& at, ember_status code, const char* fmt, ...) {
  char buf[768];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return Status::error(code, "template %d:%d: %s", at.line, at.col, buf);
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t k = 0; k < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[k]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (k + n > s.size()) n = 1;
    out.push_back(s.substr(k, n));
    k += n;
  }
  return out;
}

namespace {

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

bool py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

Status need_string(const Value& v, const char* what, const Expr& at) {
  if (v.is_string()) return Status::ok();
  return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s expects a string, got %s", what, kind_name(v.kind));
}

Status check_size(const std::string& s, const Limits& limits, const Expr& at) {
  if (s.size() > limits.max_output_bytes)
    return at_error(at, EMBER_ERR_NO_MEMORY, "a string grows past the output limit of %zu bytes",
                    limits.max_output_bytes);
  return Status::ok();
}

// Python's strip family: whitespace, or the code points in `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  if (!chars || chars->is_none() || chars->is_undefined()) {
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && py_space(static_cast<unsigned char>(s[b]))) ++b;
    if (right)
      while (e > b && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
  }
  std::vector<std::string> set = utf8_chars(chars->s), cps = utf8_chars(s);
  auto in = [&](const std::string& c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && in(cps[b])) ++b;
  if (right)
    while (e > b && in(cps[e - 1])) --e;
  std::string out;
  for (size_t k = b; k < e; ++k) out += cps[k];
  return out;
}

Result<std::string> case_map(const std::string& s, const char* how, const Expr& at) {
  if (!ascii(s))
    return at_error(at, EMBER_ERR_UNSUPPORTED, "'%s' of non-ASCII text is not supported", how);
  std::string out = s;
  std::string h = how;
  if (h == "upper") {
    for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  } else if (h == "lower") {
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  } else if (h == "capitalize") {
    for (size_t k = 0; k < out.size(); ++k)
      out[k] = char(k == 0 ? std::toupper(static_cast<unsigned char>(out[k])) : std::tolower(static_cast<unsigned char>(out[k])));
  } else if (h == "str.title") {  // Python: a letter after a non-letter starts a word
    bool prev_alpha = false;
    for (char& c : out) {
      bool a = std::isalpha(static_cast<unsigned char>(c));
      c = char(a && !prev_alpha ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
      prev_alpha = a;
    }
  } else {  // Jinja's title filter: words begin after whitespace, '-', '(', '{', '[', '<'
    bool start = true;
    for (char& c : out) {
      bool sep = py_space(static_cast<unsigned char>(c)) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
      c = char(start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
      start = sep;
    }
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every code point
    std::vector<std::string> cps = utf8_chars(s);
    int64_t n = 0;
    for (const auto& c : cps) {
      if (count < 0 || n < count) { out += to; ++n; }
      out += c;
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    ++n;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

Result<Value> split(const std::string& s, const Value* sep, const Value* maxsplit, const Expr& at) {
  int64_t max = -1;
  if (maxsplit && maxsplit->kind == Value::Kind::Int) max = maxsplit->i;
  List parts;
  if (!sep || sep->is_none()) {
    size_t k = 0;
    while (true) {
      while (k < s.size() && py_space(static_cast<unsigned char>(s[k]))) ++k;
      if (k >= s.size()) break;
      if (max >= 0 && int64_t(parts.size()) == max) {
        size_t e = s.size();
        while (e > k && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
        parts.push_back(Value::string(s.substr(k, e - k)));
        break;
      }
      size_t b = k;
      while (k < s.size() && !py_space(static_cast<unsigned char>(s[k]))) ++k;
      parts.push_back(Value::string(s.substr(b, k - b)));
    }
    return Value::make_list(std::move(parts));
  }
  if (!sep->is_string()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "split: the separator must be a string");
  if (sep->s.empty()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "split: empty separator");
  size_t pos = 0;
  while (true) {
    size_t f = (max >= 0 && int64_t(parts.size()) == max) ? std::string::npos : s.find(sep->s, pos);
    if (f == std::string::npos) {
      parts.push_back(Value::string(s.substr(pos)));
      break;
    }
    parts.push_back(Value::string(s.substr(pos, f - pos)));
    pos = f + sep->s.size();
  }
  return Value::make_list(std::move(parts));
}

// The items a filter like map or join walks: a list's items, a dict's keys,
// a string's code points; undefined is empty.
Result<List> iterate(const Value& v, const char* what, const Expr& at) {
  switch (v.kind) {
    case Value::Kind::Undefined: return List{};
    case Value::Kind::List: return *v.list;
    case Value::Kind::Dict: {
      List out;
      for (const auto& kv : *v.dict) out.push_back(Value::string(kv.first));
      return out;
    }
    case Value::Kind::String: {
      List out;
      for (auto& c : utf8_chars(v.s)) out.push_back(Value::string(std::move(c)));
      return out;
    }
    default:
      return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s: a %s is not iterable", what, kind_name(v.kind));
  }
}

// Jinja's attribute lookup for filters (`attribute='a.b'` walks dots).
Value get_attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (cur.is_mapping()) {
      const Value* f = cur.find(part);
      cur = f ? *f : Value::undefined(part);
    } else if (cur.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      size_t idx = size_t(std::strtoull(part.c_str(), nullptr, 10));
      cur = idx < cur.list->size() ? (*cur.list)[idx] : Value::undefined(part);
    } else {
      return Value::undefined(part);
    }
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

// Sort key comparison: strings case-insensitive unless asked.
Result<int> sort_compare(const Value& a, const Value& b, bool case_sensitive) {
  if (!case_sensitive && a.is_string() && b.is_string() && (!ascii(a.s) || !ascii(b.s)))
    return Status::error(EMBER_ERR_UNSUPPORTED, "case-insensitive sorting of non-ASCII text is not supported");
  if (!case_sensitive && a.is_string() && b.is_string()) {
    std::string x = a.s, y = b.s;
    for (char& c : x) c = char(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : y) c = char(std::tolower(static_cast<unsigned char>(c)));
    return compare(Value::string(x), Value::string(y));
  }
  return compare(a, b);
}

Status sort_values(List* items, bool case_sensitive, bool reverse, const std::string& attribute, int pair_index,
                   const Expr& at) {
  Status failure;
  auto key = [&](const Value& v) -> Value {
    if (pair_index >= 0) return (*v.list)[size_t(pair_index)];
    return attribute.empty() ? v : get_attribute(v, attribute);
  };
  std::stable_sort(items->begin(), items->end(), [&](const Value& x, const Value& y) {
    if (!failure.is_ok()) return false;
    Result<int> c = reverse ? sort_compare(key(y), key(x), case_sensitive) : sort_compare(key(x), key(y), case_sensitive);
    if (!c.is_ok()) {
      failure = c.status();
      return false;
    }
    return c.value() < 0;
  });
  if (!failure.is_ok()) return at_error(at, failure.code(), "sort: %s", failure.message().c_str());
  return Status::ok();
}

bool arg_bool(const Args& a, size_t i, const char* name, bool def) {
  const Value* v = a.get(i, name);
  return v ? truthy(*v) : def;
}

Result<Value> str_format(const std::string& fmt, const Args& a, const Expr& at) {
  std::string out;
  size_t auto_index = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    char c = fmt[k];
    if (c == '{' && k + 1 < fmt.size() && fmt[k + 1] == '{') { out += '{'; ++k; continue; }
    if (c == '}' && k + 1 < fmt.size() && fmt[k + 1] == '}') { out += '}'; ++k; continue; }
    if (c != '{') { out += c; continue; }
    size_t e = fmt.find('}', k);
    if (e == std::string::npos) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "format: a '{' is never closed");
    std::string field = fmt.substr(k + 1, e - k - 1);
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < a.pos.size() ? &a.pos[auto_index] : nullptr;
      ++auto_index;
    } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t idx = size_t(std::strtoull(field.c_str(), nullptr, 10));
      v = idx < a.pos.size() ? &a.pos[idx] : nullptr;
    } else if (field.find_first_of(":!.[") == std::string::npos) {
      v = a.get(size_t(-1), field.c_str());
    } else {
      return at_error(at, EMBER_ERR_UNSUPPORTED, "format: field '{%s}' (specs and conversions) is not supported",
                      field.c_str());
    }
    if (!v) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "format: no argument for '{%s}'", field.c_str());
    out += to_str(*v);
    k = e;
  }
  return Value::string(std::move(out));
}

Result<int64_t> to_index(const Value* v, const char* what, const Expr& at) {
  if (!v || v->kind != Value::Kind::Int)
    return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s expects an integer", what);
  return v->i;
}

}  // namespace

Result<bool> apply_test(const std::string& name, const Value& v, const Args& a, const Expr& at) {
  using K = Value::Kind;
  const Value* arg = a.get(0, "value");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_mapping();
  if (name == "iterable") return v.is_list() || v.is_string() || v.kind == K::Dict || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_string() || v.kind == K::Dict || v.is_undefined();
  if (name == "number") return v.is_number() || v.kind == K::Bool;
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "callable") return v.kind == K::Macro;
  if (name == "odd" || name == "even") {
    if (v.kind != K::Int) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test '%s' expects an integer", name.c_str());
    return ((v.i % 2) != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    if (v.kind != K::Int || !arg || arg->kind != K::Int || arg->i == 0)
      return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test 'divisibleby' expects non-zero integers");
    return v.i % arg->i == 0;
  }
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    bool cased = false;
    for (unsigned char c : v.s) {
      if (c >= 0x80) return at_error(at, EMBER_ERR_UNSUPPORTED, "test '%s' of non-ASCII text is not supported", name.c_str());
      if (std::isalpha(c)) {
        cased = true;
        if (name == "lower" ? std::isupper(c) : std::islower(c)) return false;
      }
    }
    return cased;
  }
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas" || name == "ne" || name == "!=") {
    if (!arg) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test '%s' needs an argument", name.c_str());
    if (name == "sameas") {
      if (v.is_list() || v.is_mapping()) return v.kind == arg->kind && (v.list ? v.list == arg->list : v.dict == arg->dict);
      return v.kind == arg->kind && equals(v, *arg);
    }
    bool eq = equals(v, *arg);
    return (name == "ne" || name == "!=") ? !eq : eq;
  }
  if (name == "gt" || name == "lt" || name == "ge" || name == "le" || name == "greaterthan" || name == "lessthan" ||
      name == ">" || name == "<" || name == ">=" || name == "<=") {
    if (!arg) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test '%s' needs an argument", name.c_str());
    Result<int> c = compare(v, *arg);
    if (!c.is_ok()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test '%s': %s", name.c_str(), c.status().message().c_str());
    if (name == "gt" || name == "greaterthan" || name == ">") return c.value() > 0;
    if (name == "lt" || name == "lessthan" || name == "<") return c.value() < 0;
    if (name == "ge" || name == ">=") return c.value() >= 0;
    return c.value() <= 0;
  }
  if (name == "in") {
    if (!arg) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test 'in' needs an argument");
    if (arg->is_string()) {
      if (!v.is_string()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test 'in': a string holds only strings");
      return arg->s.find(v.s) != std::string::npos;
    }
    if (arg->is_list()) {
      for (const auto& x : *arg->list)
        if (equals(x, v)) return true;
      return false;
    }
    if (arg->is_mapping()) return v.is_string() && arg->find(v.s) != nullptr;
    return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "test 'in': a %s is not a container", kind_name(arg->kind));
  }
  return at_error(at, EMBER_ERR_UNSUPPORTED, "test '%s' is not supported", name.c_str());
}

Result<Value> apply_filter(const std::string& name, const Value& v, const Args& a, const Expr& at,
                           const Limits& limits) {
  using K = Value::Kind;
  if (name == "safe") {
    Value m = v.is_string() ? v : Value::string(to_str(v));
    m.safe = true;
    return m;
  }
  if (name == "list" && v.is_list()) return Value::make_list(*v.list);
  if (name == "list") {
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, "list", at));
    return Value::make_list(std::move(items));
  }
  if (name == "string") return v.is_string() ? v : Value::string(to_str(v));
  if (name == "trim") {
    if (v.is_undefined()) return Value::string("");
    Value m = Value::string(strip(v.is_string() ? v.s : to_str(v), a.get(0, "chars"), true, true));
    m.safe = v.is_string() && v.safe;  // Markup.strip() stays a Markup
    return m;
  }
  if (name == "length" || name == "count") {
    switch (v.kind) {
      case K::Undefined: return Value::integer(0);
      case K::String: return Value::integer(int64_t(utf8_length(v.s)));
      case K::List: return Value::integer(int64_t(v.list->size()));
      case K::Dict: case K::Namespace: return Value::integer(int64_t(v.dict->size()));
      default: return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "length of a %s", kind_name(v.kind));
    }
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    EMBER_ASSIGN_OR_RETURN(std::string s, case_map(to_str(v), name.c_str(), at));
    return Value::string(std::move(s));
  }
  if (name == "tojson") {
    const Value* indent = a.get(size_t(-1), "indent");
    if (!indent && !a.pos.empty()) indent = &a.pos[0];  // tojson(4)
    const Value* ensure = a.get(size_t(-1), "ensure_ascii");
    const Value* seps = a.get(size_t(-1), "separators");
    if (seps && !seps->is_none())
      return at_error(at, EMBER_ERR_UNSUPPORTED, "tojson(separators=...) is not supported");
    int ind = -1;
    if (indent && !indent->is_none()) {
      if (indent->kind != K::Int || indent->i < 0 || indent->i > 64)
        return at_error(at, EMBER_ERR_UNSUPPORTED, "tojson: indent must be an integer in [0, 64]");
      ind = int(indent->i);
    }
    std::string out;
    Status s = to_json(v, ind, arg_bool(a, size_t(-1), "sort_keys", false), &out);
    if (!s.is_ok()) return at_error(at, s.code(), "%s", s.message().c_str());
    if (ensure && truthy(*ensure) && !ascii(out))
      return at_error(at, EMBER_ERR_UNSUPPORTED, "tojson(ensure_ascii=true) of non-ASCII text is not supported");
    EMBER_TRY(check_size(out, limits, at));
    return Value::string(std::move(out));
  }
  if (name == "first" || name == "last") {
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, name.c_str(), at));
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    const Value* sep = a.get(0, "d");
    const Value* attr = a.get(1, "attribute");
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, "join", at));
    std::string out, s = sep ? to_str(*sep) : "";
    for (size_t k = 0; k < items.size(); ++k) {
      if (k) out += s;
      out += to_str(attr ? get_attribute(items[k], to_str(*attr)) : items[k]);
      EMBER_TRY(check_size(out, limits, at));
    }
    return Value::string(std::move(out));
  }
  if (name == "default" || name == "d") {
    const Value* def = a.get(0, "default_value");
    bool boolean = arg_bool(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !truthy(v))) return def ? *def : Value::string("");
    return v;
  }
  if (name == "replace") {
    const Value* from = a.get(0, "old");
    const Value* to = a.get(1, "new");
    const Value* count = a.get(2, "count");
    if (!from || !to || !from->is_string() || !to->is_string())
      return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "replace expects two strings");
    std::string out = replace_all(to_str(v), from->s, to->s, count && count->kind == K::Int ? count->i : -1);
    EMBER_TRY(check_size(out, limits, at));
    return Value::string(std::move(out));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (!v.is_mapping()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "items of a %s", kind_name(v.kind));
    List out;
    for (const auto& kv : *v.dict) out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
    return Value::make_list(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_mapping()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "dictsort of a %s", kind_name(v.kind));
    const Value* by = a.get(1, "by");
    int index = by && by->is_string() && by->s == "value" ? 1 : 0;
    List out;
    for (const auto& kv : *v.dict) out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
    EMBER_TRY(sort_values(&out, arg_bool(a, 0, "case_sensitive", false), arg_bool(a, 2, "reverse", false), "", index, at));
    return Value::make_list(std::move(out));
  }
  if (name == "sort") {
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, "sort", at));
    const Value* attr = a.get(2, "attribute");
    EMBER_TRY(sort_values(&items, arg_bool(a, 1, "case_sensitive", false), arg_bool(a, 0, "reverse", false),
                          attr ? to_str(*attr) : "", -1, at));
    return Value::make_list(std::move(items));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string> cps = utf8_chars(v.s);
      std::string out;
      for (size_t k = cps.size(); k-- > 0;) out += cps[k];
      return Value::string(std::move(out));
    }
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, "reverse", at));
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "unique") {
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, "unique", at));
    bool cs = arg_bool(a, 0, "case_sensitive", false);
    const Value* attr = a.get(1, "attribute");
    List out;
    for (const auto& x : items) {
      Value key = attr ? get_attribute(x, to_str(*attr)) : x;
      bool seen = false;
      for (const auto& y : out) {
        Value other = attr ? get_attribute(y, to_str(*attr)) : y;
        if (!cs && key.is_string() && other.is_string()) {
          EMBER_ASSIGN_OR_RETURN(int c, sort_compare(key, other, false));
          if (c == 0) seen = true;
        } else if (equals(key, other)) {
          seen = true;
        }
      }
      if (!seen) out.push_back(x);
    }
    return Value::make_list(std::move(out));
  }
  if (name == "int") {
    const Value* def = a.get(0, "default");
    Value fallback = def ? *def : Value::integer(0);
    if (v.kind == K::Int) return v;
    if (v.kind == K::Bool) return Value::integer(v.b);
    if (v.kind == K::Float) {
      if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) return fallback;
      return Value::integer(int64_t(v.f));
    }
    if (v.is_string()) {
      std::string s = strip(v.s, nullptr, true, true);
      char* end = nullptr;
      long long x = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0') return Value::integer(x);
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::integer(int64_t(d));
    }
    return fallback;
  }
  if (name == "float") {
    const Value* def = a.get(0, "default");
    if (v.kind == K::Float) return v;
    if (v.kind == K::Int) return Value::real(double(v.i));
    if (v.kind == K::Bool) return Value::real(v.b);
    if (v.is_string()) {
      std::string s = strip(v.s, nullptr, true, true);
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value::real(d);
    }
    return def ? *def : Value::real(0);
  }
  if (name == "abs") {
    if (v.kind == K::Int) {
      if (v.i == INT64_MIN) return at_error(at, EMBER_ERR_UNSUPPORTED, "abs: integer overflow");
      return Value::integer(v.i < 0 ? -v.i : v.i);
    }
    if (v.kind == K::Float) return Value::real(std::fabs(v.f));
    return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "abs of a %s", kind_name(v.kind));
  }
  if (name == "round") {
    const Value* prec = a.get(0, "precision");
    const Value* method = a.get(1, "method");
    if (!v.is_number()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "round of a %s", kind_name(v.kind));
    int64_t p = prec && prec->kind == K::Int ? prec->i : 0;
    if (p < 0 || p > 15) return at_error(at, EMBER_ERR_UNSUPPORTED, "round: precision outside [0, 15]");
    std::string m = method && method->is_string() ? method->s : "common";
    double x = v.kind == K::Int ? double(v.i) : v.f, scale = std::pow(10.0, double(p));
    double r = m == "floor" ? std::floor(x * scale) / scale : m == "ceil" ? std::ceil(x * scale) / scale
                                                                         : std::nearbyint(x * scale) / scale;
    if (m != "common" && m != "floor" && m != "ceil")
      return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "round: method must be common, ceil or floor");
    return Value::real(r);
  }
  if (name == "indent") {
    const Value* width = a.get(0, "width");
    std::string pad = width && width->is_string() ? width->s : std::string(size_t(width && width->kind == K::Int ? std::clamp<int64_t>(width->i, 0, 256) : 4), ' ');
    bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
    std::string s = to_str(v) + "\n";
    std::vector<std::string> lines;
    size_t pos = 0;
    while (pos < s.size()) {  // Python's splitlines for \n, \r\n and \r
      size_t e = s.find_first_of("\r\n", pos);
      lines.push_back(s.substr(pos, e - pos));
      pos = e + ((s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n') ? 2 : 1);
    }
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) out += "\n";
      if (k && (blank || !lines[k].empty())) out += pad;
      out += lines[k];
    }
    if (first) out = pad + out;
    EMBER_TRY(check_size(out, limits, at));
    return Value::string(std::move(out));
  }
  if (name == "escape" || name == "e") {
    if (v.is_string() && v.safe) return v;
    Value m = Value::string(html_escape(to_str(v)));
    m.safe = true;
    return m;
  }

  if (name == "map" || name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    // Jinja2 walks these only `if value`: none and other false values give nothing.
    List items;
    if (truthy(v)) {
      EMBER_ASSIGN_OR_RETURN(items, iterate(v, name.c_str(), at));
    }
    List out;
    if (name == "map") {
      const Value* attr = a.get(size_t(-1), "attribute");
      if (attr) {
        const Value* def = a.get(size_t(-1), "default");
        for (const auto& x : items) {
          Value y = get_attribute(x, to_str(*attr));
          out.push_back(y.is_undefined() && def ? *def : y);
        }
        return Value::make_list(std::move(out));
      }
      if (a.pos.empty() || !a.pos[0].is_string())
        return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "map expects a filter name or attribute=");
      Args rest;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      for (const auto& x : items) {
        EMBER_ASSIGN_OR_RETURN(Value y, apply_filter(a.pos[0].s, x, rest, at, limits));
        out.push_back(std::move(y));
      }
      return Value::make_list(std::move(out));
    }
    bool by_attr = name == "selectattr" || name == "rejectattr";
    bool keep_if = name == "select" || name == "selectattr";
    size_t first_test = by_attr ? 1 : 0;
    if (by_attr && (a.pos.empty() || !a.pos[0].is_string()))
      return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s expects an attribute name", name.c_str());
    Args rest;
    if (a.pos.size() > first_test + 1) rest.pos.assign(a.pos.begin() + long(first_test) + 1, a.pos.end());
    for (const auto& x : items) {
      Value subject = by_attr ? get_attribute(x, a.pos[0].s) : x;
      bool r;
      if (a.pos.size() > first_test) {
        if (!a.pos[first_test].is_string())
          return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s expects a test name", name.c_str());
        EMBER_ASSIGN_OR_RETURN(r, apply_test(a.pos[first_test].s, subject, rest, at));
      } else {
        r = truthy(subject);
      }
      if (r == keep_if) out.push_back(x);
    }
    return Value::make_list(std::move(out));
  }
  if (name == "sum" || name == "min" || name == "max") {
    EMBER_ASSIGN_OR_RETURN(List items, iterate(v, name.c_str(), at));
    const Value* attr = a.get(size_t(-1), "attribute");
    if (name == "sum") {
      const Value* start = a.get(size_t(-1), "start");
      Value acc = start ? *start : Value::integer(0);
      for (const auto& x0 : items) {
        Value x = attr ? get_attribute(x0, to_str(*attr)) : x0;
        if (!x.is_number() || !acc.is_number()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "sum of non-numbers");
        if (acc.kind == K::Int && x.kind == K::Int) {
          if (__builtin_add_overflow(acc.i, x.i, &acc.i)) return at_error(at, EMBER_ERR_UNSUPPORTED, "sum: integer overflow");
        } else {
          acc = Value::real((acc.kind == K::Int ? double(acc.i) : acc.f) + (x.kind == K::Int ? double(x.i) : x.f));
        }
      }
      return acc;
    }
    if (items.empty()) return Value::undefined(name);
    Value best = items[0];
    for (size_t k = 1; k < items.size(); ++k) {
      EMBER_ASSIGN_OR_RETURN(int c, sort_compare(items[k], best, arg_bool(a, 0, "case_sensitive", false)));
      if (name == "min" ? c < 0 : c > 0) best = items[k];
    }
    return best;
  }
  return at_error(at, EMBER_ERR_UNSUPPORTED, "filter '%s' is not supported", name.c_str());
}

Result<Value> call_method(Value& obj, const std::string& name, const Args& a, const Expr& at, const Limits& limits,
                          bool* handled) {
  using K = Value::Kind;
  *handled = true;
  if (obj.is_string()) {
    const std::string& s = obj.s;
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const Value* chars = a.get(0, "chars");
      if (chars && !chars->is_none() && !chars->is_string())
        return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s expects a string", name.c_str());
      return Value::string(strip(s, chars, name != "rstrip", name != "lstrip"));
    }
    if (name == "startswith" || name == "endswith") {
      const Value* p = a.get(0, "prefix");
      if (!p) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s needs an argument", name.c_str());
      List options = p->is_list() ? *p->list : List{*p};
      for (const auto& o : options) {
        EMBER_TRY(need_string(o, name.c_str(), at));
        bool m = name == "startswith" ? s.compare(0, o.s.size(), o.s) == 0
                                      : s.size() >= o.s.size() && s.compare(s.size() - o.s.size(), o.s.size(), o.s) == 0;
        if (m) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") return split(s, a.get(0, "sep"), a.get(1, "maxsplit"), at);
    if (name == "rsplit") {
      const Value* max = a.get(1, "maxsplit");
      if (max && !(max->kind == K::Int && max->i < 0))
        return at_error(at, EMBER_ERR_UNSUPPORTED, "rsplit with maxsplit is not supported");
      return split(s, a.get(0, "sep"), nullptr, at);
    }
    if (name == "replace") {
      const Value* from = a.get(0, "old");
      const Value* to = a.get(1, "new");
      const Value* count = a.get(2, "count");
      if (!from || !to || !from->is_string() || !to->is_string())
        return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "replace expects two strings");
      std::string out = replace_all(s, from->s, to->s, count && count->kind == K::Int ? count->i : -1);
      EMBER_TRY(check_size(out, limits, at));
      return Value::string(std::move(out));
    }
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
      EMBER_ASSIGN_OR_RETURN(std::string out, case_map(s, name == "title" ? "str.title" : name.c_str(), at));
      return Value::string(std::move(out));
    }
    if (name == "find" || name == "rfind" || name == "count" || name == "index") {
      const Value* sub = a.get(0, "sub");
      if (!sub || !sub->is_string()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s expects a string", name.c_str());
      if (a.pos.size() > 1) return at_error(at, EMBER_ERR_UNSUPPORTED, "str.%s with start/end is not supported", name.c_str());
      if (!ascii(s)) return at_error(at, EMBER_ERR_UNSUPPORTED, "str.%s of non-ASCII text is not supported", name.c_str());
      if (name == "count") {
        if (sub->s.empty()) return Value::integer(int64_t(s.size()) + 1);
        int64_t n = 0;
        for (size_t p = s.find(sub->s); p != std::string::npos; p = s.find(sub->s, p + sub->s.size())) ++n;
        return Value::integer(n);
      }
      size_t p = name == "rfind" ? s.rfind(sub->s) : s.find(sub->s);
      if (p == std::string::npos && name == "index") return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "str.index: substring not found");
      return Value::integer(p == std::string::npos ? -1 : int64_t(p));
    }
    if (name == "format") {
      EMBER_ASSIGN_OR_RETURN(Value out, str_format(s, a, at));
      EMBER_TRY(check_size(out.s, limits, at));
      return out;
    }
    if (name == "join") {
      const Value* items = a.get(0, "iterable");
      if (!items) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "join needs an argument");
      EMBER_ASSIGN_OR_RETURN(List xs, iterate(*items, "join", at));
      std::string out;
      for (size_t k = 0; k < xs.size(); ++k) {
        EMBER_TRY(need_string(xs[k], "str.join", at));
        if (k) out += s;
        out += xs[k].s;
        EMBER_TRY(check_size(out, limits, at));
      }
      return Value::string(std::move(out));
    }
    if (name == "splitlines") {
      List out;
      size_t pos = 0;
      while (pos < s.size()) {
        size_t e = s.find_first_of("\r\n", pos);
        if (e == std::string::npos) { out.push_back(Value::string(s.substr(pos))); break; }
        out.push_back(Value::string(s.substr(pos, e - pos)));
        pos = e + ((s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n') ? 2 : 1);
      }
      return Value::make_list(std::move(out));
    }
    if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
      if (!ascii(s)) return at_error(at, EMBER_ERR_UNSUPPORTED, "str.%s of non-ASCII text is not supported", name.c_str());
      if (s.empty()) return Value::boolean(false);
      for (unsigned char c : s) {
        bool ok = name == "isdigit" ? std::isdigit(c) : name == "isalpha" ? std::isalpha(c)
                : name == "isspace" ? py_space(c) : std::isalnum(c);
        if (!ok) return Value::boolean(false);
      }
      return Value::boolean(true);
    }
  } else if (obj.kind == K::Dict) {
    if (name == "get") {
      const Value* key = a.get(0, "key");
      const Value* def = a.get(1, "default");
      if (!key) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "get needs a key");
      const Value* f = key->is_string() ? obj.find(key->s) : nullptr;
      return f ? *f : def ? *def : Value::none();
    }
    if (name == "items" || name == "keys" || name == "values") {
      List out;
      for (const auto& kv : *obj.dict) {
        if (name == "items") out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
        else out.push_back(name == "keys" ? Value::string(kv.first) : kv.second);
      }
      return Value::make_list(std::move(out));
    }
    if (name == "pop") {
      const Value* key = a.get(0, "key");
      const Value* def = a.get(1, "default");
      if (!key || !key->is_string()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "pop needs a string key");
      for (size_t k = 0; k < obj.dict->size(); ++k) {
        if ((*obj.dict)[k].first == key->s) {
          Value v = (*obj.dict)[k].second;
          obj.dict->erase(obj.dict->begin() + long(k));
          return v;
        }
      }
      if (def) return *def;
      return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "pop: no key '%s'", key->s.c_str());
    }
  } else if (obj.is_list()) {
    List& l = *obj.list;
    if (name == "append") {
      if (a.pos.size() != 1) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "append takes one argument");
      if (l.size() >= limits.max_list_items)
        return at_error(at, EMBER_ERR_NO_MEMORY, "a list grows past %zu items", limits.max_list_items);
      l.push_back(a.pos[0]);
      return Value::none();
    }
    if (name == "pop") {
      if (l.empty()) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "pop from an empty list");
      int64_t i = -1;
      if (const Value* x = a.get(0, "index")) {
        EMBER_ASSIGN_OR_RETURN(i, to_index(x, "pop", at));
      }
      if (i < 0) i += int64_t(l.size());
      if (i < 0 || i >= int64_t(l.size())) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "pop index out of range");
      Value v = l[size_t(i)];
      l.erase(l.begin() + i);
      return v;
    }
    if (name == "index" || name == "count") {
      const Value* x = a.get(0, "value");
      if (!x) return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "%s needs an argument", name.c_str());
      int64_t n = 0;
      for (size_t k = 0; k < l.size(); ++k) {
        if (equals(l[k], *x)) {
          if (name == "index") return Value::integer(int64_t(k));
          ++n;
        }
      }
      if (name == "index") return at_error(at, EMBER_ERR_INVALID_ARGUMENT, "list.index: value not in list");
      return Value::integer(n);
    }
  }
  *handled = false;
  return Value::none();
}

}  // namespace ember::chat

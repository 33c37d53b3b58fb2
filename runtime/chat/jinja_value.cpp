#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ember::chat {

const Value* Value::find(const std::string& key) const {
  if (!dict) return nullptr;
  for (const auto& kv : *dict)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void Value::set(const std::string& key, Value v) {
  for (auto& kv : *dict)
    if (kv.first == key) { kv.second = std::move(v); return; }
  dict->emplace_back(key, std::move(v));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Undefined: return "undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Namespace: return "namespace";
    case Value::Kind::Macro: return "macro";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::String: return !v.s.empty();
    case Value::Kind::List: return !v.list->empty();
    case Value::Kind::Dict: return !v.dict->empty();
    case Value::Kind::Namespace: case Value::Kind::Macro: return true;
  }
  return false;
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for
  // decimal exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string out;
  size_t pos = 0;
  if (sci[0] == '-') { out = "-"; pos = 1; }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t k = pos; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  int exp = std::atoi(sci.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out += digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return out;
}

static void repr_string(const std::string& s, std::string* out) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  *out += q;
  for (unsigned char c : s) {
    if (c == '\\') *out += "\\\\";
    else if (c == q) { *out += '\\'; *out += char(c); }
    else if (c == '\n') *out += "\\n";
    else if (c == '\r') *out += "\\r";
    else if (c == '\t') *out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      *out += b;
    } else {
      *out += char(c);
    }
  }
  *out += q;
}

static void repr_into(const Value& v, std::string* out) {
  switch (v.kind) {
    case Value::Kind::String: repr_string(v.s, out); return;
    case Value::Kind::List: {
      *out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) *out += ", ";
        repr_into((*v.list)[k], out);
      }
      *out += ']';
      return;
    }
    case Value::Kind::Dict: {
      *out += '{';
      for (size_t k = 0; k < v.dict->size(); ++k) {
        if (k) *out += ", ";
        repr_string((*v.dict)[k].first, out);
        *out += ": ";
        repr_into((*v.dict)[k].second, out);
      }
      *out += '}';
      return;
    }
    default: *out += to_str(v); return;
  }
}

std::string to_repr(const Value& v) {
  std::string out;
  repr_into(v, &out);
  return out;
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return float_repr(v.f);
    case Value::Kind::String: return v.s;
    case Value::Kind::List: case Value::Kind::Dict: return to_repr(v);
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Macro: return "<Macro>";
  }
  return "";
}

static double as_double(const Value& v) {
  return v.kind == Value::Kind::Int ? double(v.i) : v.kind == Value::Kind::Bool ? double(v.b) : v.f;
}
static bool numeric(const Value& v) { return v.is_number() || v.kind == Value::Kind::Bool; }

bool equals(const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) {
      int64_t x = a.kind == Value::Kind::Bool ? a.b : a.i, y = b.kind == Value::Kind::Bool ? b.b : b.i;
      return x == y;
    }
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined: case Value::Kind::None: return true;
    case Value::Kind::String: return a.s == b.s;
    case Value::Kind::List:
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::Dict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& kv : *a.dict) {
        const Value* o = b.find(kv.first);
        if (!o || !equals(kv.second, *o)) return false;
      }
      return true;
    case Value::Kind::Namespace: return a.dict == b.dict;
    case Value::Kind::Macro: return a.macro == b.macro;
    default: return false;
  }
}

Result<int> compare(const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) {
    if (a.kind == Value::Kind::Int && b.kind == Value::Kind::Int) return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    double x = as_double(a), y = as_double(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.s.compare(b.s);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      EMBER_ASSIGN_OR_RETURN(int c, compare((*a.list)[k], (*b.list)[k]));
      if (c) return c;
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "cannot order %s and %s", kind_name(a.kind),
                       kind_name(b.kind));
}

static void json_string(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          *out += b;
        } else {
          *out += char(c);
        }
    }
  }
  *out += '"';
}

static Status json_into(const Value& v, int indent, bool sort_keys, int depth, std::string* out) {
  if (depth > 256) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "tojson: nesting deeper than 256");
  auto newline = [&](int d) {
    *out += '\n';
    out->append(size_t(indent) * size_t(d), ' ');
  };
  switch (v.kind) {
    case Value::Kind::None: *out += "null"; return Status::ok();
    case Value::Kind::Bool: *out += v.b ? "true" : "false"; return Status::ok();
    case Value::Kind::Int: *out += std::to_string(v.i); return Status::ok();
    case Value::Kind::Float:
      if (std::isnan(v.f)) *out += "NaN";
      else if (std::isinf(v.f)) *out += v.f > 0 ? "Infinity" : "-Infinity";
      else *out += float_repr(v.f);
      return Status::ok();
    case Value::Kind::String: json_string(v.s, out); return Status::ok();
    case Value::Kind::List: {
      if (v.list->empty()) { *out += "[]"; return Status::ok(); }
      *out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) *out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        EMBER_TRY(json_into((*v.list)[k], indent, sort_keys, depth + 1, out));
      }
      if (indent >= 0) newline(depth);
      *out += ']';
      return Status::ok();
    }
    case Value::Kind::Dict: case Value::Kind::Namespace: {
      if (v.dict->empty()) { *out += "{}"; return Status::ok(); }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : *v.dict) items.push_back(&kv);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* x, auto* y) { return x->first < y->first; });
      *out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) *out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        json_string(items[k]->first, out);
        *out += ": ";
        EMBER_TRY(json_into(items[k]->second, indent, sort_keys, depth + 1, out));
      }
      if (indent >= 0) newline(depth);
      *out += '}';
      return Status::ok();
    }
    case Value::Kind::Undefined:
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "tojson: '%s' is undefined", v.s.c_str());
    case Value::Kind::Macro:
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "tojson: a macro is not JSON serializable");
  }
  return Status::ok();
}

Status to_json(const Value& v, int indent, bool sort_keys, std::string* out) {
  return json_into(v, indent, sort_keys, 0, out);
}

}  // namespace ember::chat

// Values of the chat-template language (a Jinja2 subset): what expressions
// evaluate to and what the context holds. Python semantics where templates
// can see them: str() of values, truthiness, ==, ordering, json.dumps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ember::chat {

struct Value;
struct MacroDef;  // jinja_ast.h
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // insertion order, as Python's dict

// Lists, dicts and namespaces are shared like Python objects (`ns.x = ...`
// and `xs.append(...)` are seen through every name bound to them).
struct Value {
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Macro };
  Kind kind = Kind::Undefined;
  bool b = false;
  // String: a Markup (from `safe` or `escape`). Python's Markup escapes the
  // plain string it is joined with by `+`; templates rely on it.
  bool safe = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                 // String; the name of an undefined value
  std::shared_ptr<List> list;    // List
  std::shared_ptr<Dict> dict;    // Dict, Namespace
  const MacroDef* macro = nullptr;  // Macro (owned by the parsed template)

  static Value undefined(std::string name = {}) { Value v; v.s = std::move(name); return v; }
  static Value none() { Value v; v.kind = Kind::None; return v; }
  static Value boolean(bool x) { Value v; v.kind = Kind::Bool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = Kind::Int; v.i = x; return v; }
  static Value real(double x) { Value v; v.kind = Kind::Float; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.kind = Kind::String; v.s = std::move(x); return v; }
  static Value make_list(List items = {}) {
    Value v; v.kind = Kind::List; v.list = std::make_shared<List>(std::move(items)); return v;
  }
  static Value make_dict(Dict items = {}) {
    Value v; v.kind = Kind::Dict; v.dict = std::make_shared<Dict>(std::move(items)); return v;
  }

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_list() const { return kind == Kind::List; }
  bool is_mapping() const { return kind == Kind::Dict || kind == Kind::Namespace; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }

  // The entry for `key` in a mapping, or nullptr.
  const Value* find(const std::string& key) const;
  // Sets (or appends) `key` in a mapping.
  void set(const std::string& key, Value v);
};

// HTML escaping as markupsafe.escape (& < > ' ").
std::string html_escape(const std::string& s);

// Python's name for the kind ("str", "list", "dict", ...), for messages.
const char* kind_name(Value::Kind k);
// Python truthiness (undefined is false).
bool truthy(const Value& v);
// str(v) as Jinja prints it (None → "None", lists as Python's repr);
// undefined prints as "".
std::string to_str(const Value& v);
// repr(v): strings quoted with Python's rules.
std::string to_repr(const Value& v);
// Python's == (1 == 1.0, deep for lists and dicts).
bool equals(const Value& a, const Value& b);
// Python's ordering for numbers and strings; a failure for other kinds.
Result<int> compare(const Value& a, const Value& b);
// json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as
// Hugging Face's tojson filter calls it; indent < 0: one line with ", " and
// ": ". Undefined and macros are refused.
Status to_json(const Value& v, int indent, bool sort_keys, std::string* out);
// Python's repr of a float ("1.0", "0.1", "1e+20").
std::string float_repr(double f);

}  // namespace ember::chat

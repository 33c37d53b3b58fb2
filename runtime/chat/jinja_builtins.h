// Filters, tests, methods and global functions of the chat-template subset
// (internal to runtime/chat). Anything not listed in jinja_builtins.cpp is
// EMBER_ERR_UNSUPPORTED naming it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"

namespace ember::chat {

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Positional argument i, else keyword `name`, else nullptr.
  const Value* get(size_t i, const char* name) const;
};

// "template L:C: " + the formatted message.
Status at_error(const Expr& at, ember_status code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

Result<bool> apply_test(const std::string& name, const Value& v, const Args& a, const Expr& at);
Result<Value> apply_filter(const std::string& name, const Value& v, const Args& a, const Expr& at,
                           const Limits& limits);
// obj.name(args) for strings, lists and dicts; *handled false when `obj`
// has no such method (the caller then reports it).
Result<Value> call_method(Value& obj, const std::string& name, const Args& a, const Expr& at, const Limits& limits,
                          bool* handled);
// Splits UTF-8 into code points (Python's iteration over a str).
std::vector<std::string> utf8_chars(const std::string& s);

}  // namespace ember::chat

// The parsed form of a chat template: expressions and statements, owned by
// a Program. Built by parse_template (jinja_parse.cpp), walked by
// render_program (jinja_eval.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_value.h"
#include "core/status.h"

namespace ember::chat {

struct Expr {
  enum class Op {
    Literal,  // literal
    Name,     // name
    GetAttr,  // args[0].name
    GetItem,  // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]] (nullptr for an omitted part)
    Call,     // args[0](args[1..], kwargs)
    Filter,   // args[0] | name(args[1..], kwargs)
    Test,     // args[0] is [not] name(args[1..])
    Unary,    // name ("-", "+", "not") args[0]
    Binary,   // args[0] name args[1]; name is the operator ("+", "in", "not in", ...)
    And, Or,  // short-circuit
    Cond,     // args[0] if args[1] else args[2] (args[2] may be nullptr)
    List,     // [args...] and tuples
    Dict,     // {args[0]: args[1], ...}
  };
  Op op = Op::Literal;
  int line = 0, col = 0;
  Value literal;
  std::string name;
  std::vector<Expr*> args;
  std::vector<std::pair<std::string, Expr*>> kwargs;
  bool negated = false;  // Test: `is not`
};

struct Node;
using Body = std::vector<Node*>;

struct MacroDef {
  std::string name;
  std::vector<std::pair<std::string, Expr*>> params;  // default nullptr: required
  Body body;
};

struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, FilterBlock, Transparent };
  Kind kind = Kind::Text;
  int line = 0, col = 0;
  std::string text;                              // Text
  Expr* expr = nullptr;                          // Output; Set value; For iterable; FilterBlock filter
  std::vector<std::pair<Expr*, Body>> branches;  // If: conditions and bodies
  Body body;                                     // For, SetBlock, FilterBlock, Transparent
  Body else_body;                                // If, For
  std::vector<std::string> targets;              // For, Set, SetBlock: names bound
  std::string target_attr;                       // Set: `set targets[0].target_attr = ...`
  Expr* cond = nullptr;                          // For: `for x in xs if cond`
  bool recursive = false;                        // For: `recursive` (refused)
  MacroDef* macro = nullptr;                     // Macro
};

// Hostile-template bounds (docs/decisions.md "Chat templates").
struct Limits {
  size_t max_template_bytes = 1u << 20;    // template text
  size_t max_nodes = 200000;               // expressions + statements
  int max_parse_depth = 200;               // nesting of expressions and blocks
  size_t max_output_bytes = 8u << 20;      // rendered text, and any one string value
  uint64_t max_iterations = 1000000;       // loop iterations, all loops together
  int max_call_depth = 64;                 // macro calls
  size_t max_list_items = 1u << 20;        // one list built by the template
};

// A parsed template; nodes live as long as it does.
struct Program {
  Body body;
  std::vector<std::unique_ptr<Expr>> exprs;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::unique_ptr<MacroDef>> macros;
};

// Parses template text with Hugging Face's settings (trim_blocks and
// lstrip_blocks on). Syntax errors are EMBER_ERR_FORMAT, constructs this
// subset does not implement EMBER_ERR_UNSUPPORTED, bounds EMBER_ERR_NO_MEMORY;
// messages give line:column.
Status parse_template(const std::string& text, const Limits& limits, Program* out);

}  // namespace ember::chat

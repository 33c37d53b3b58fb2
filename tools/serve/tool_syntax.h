// The families' tool-call forms (ember_chat_tool_syntax), for `ember serve`
// and `ember chat`: the grammar that makes a model call a function, reading
// calls back out of generated text (whole, or as it streams), and call ids.
//
//   HERMES        <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>
//   LLAMA3        {"name": N, "parameters": {...}}   (one call per message)
//   MISTRAL       [TOOL_CALLS][{"name": N, "arguments": {...}}, ...]
//   MISTRAL_ARGS  [TOOL_CALLS]N[ARGS]{...}  once per call ([CALL_ID]id may
//                 come before [ARGS])
//   PHI4          <|tool_call|>[{"name": N, "arguments": {...}}]<|/tool_call|>
//   GEMMA4        <|tool_call>call:N{key:value,...}<tool_call|>  (keys bare,
//                 strings between <|"|> marks: tool_args_gemma.h)
//
// Mistral's and Phi's markers are control tokens, printed as nothing: the
// readers take each form without them too, and the grammars make them
// optional (a grammar can only ask for text).
//
// Reading is total: any text gives calls, or no calls and the text as
// content; nothing aborts. Needs nlohmann-json (header-only) and ember.h.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ember.h"
#include "tools/serve/tool_args_gemma.h"

namespace ember::serve {

// A function call an assistant message made (or a response reports).
struct ToolCall {
  std::string id;         // "call_..."
  std::string name;
  std::string arguments;  // JSON text, as OpenAI sends it (a string)
};

// One entry of a request's tools (type "function").
struct ToolFunction {
  std::string name;
  std::string description;
  std::string parameters;  // its JSON Schema as compact JSON text; "" when absent
};

// The GBNF (root rule "root") that admits only calls of `tools` (of the one
// named `only`, when not empty) in `syntax`: one call, or one or more when
// `parallel` (Llama 3.x's templates render one call per message, so it is
// always one). Each function's arguments follow its parameters schema
// (ember_json_schema_to_gbnf, rules renamed apart; none: any object); for
// Gemma 4 the subset tool_args_gemma.h translates. Function names must be
// [A-Za-z0-9_-] (the serve reader and `ember chat` check). False with
// *error naming the function when its schema is refused.
bool tool_call_grammar(const std::vector<ToolFunction>& tools, const std::string& only, bool parallel, int syntax,
                       std::string* gbnf, std::string* error);

// A GBNF text with every rule name prefixed (definitions and references;
// literals, classes and comments untouched), so grammars can be combined.
std::string prefix_gbnf_rules(const std::string& gbnf, const std::string& prefix);

// Generated text read back: the calls found, and the text around them
// (trimmed; empty when there is none).
struct ParsedReply {
  std::string content;
  std::vector<ToolCall> calls;
};
// `names` (may be empty): the functions offered; MISTRAL_ARGS uses them to
// cut a call id printed right after the name (its [CALL_ID] marker printed
// as nothing). Arguments are compact JSON text of an object (Gemma's form
// converted).
ParsedReply parse_tool_calls(const std::string& text, int syntax, const std::vector<std::string>& names = {});

// "call_" and 24 random letters and digits; for Mistral's forms 9 letters
// and digits (their templates refuse other ids).
std::string new_tool_call_id(int syntax = EMBER_TOOL_SYNTAX_HERMES);

// A call id as the template of `syntax` takes it: Mistral's a stand-in of
// 9 letters and digits (derived from the id, so an assistant's call and the
// tool message answering it agree) unless it is one already; others as is.
std::string template_call_id(const std::string& id, int syntax);

// Streaming with tools: text that is surely not part of a call is released
// as content as it comes; a call (or what may become one) is held until
// the end, then read by parse_tool_calls. With tool_choice required or
// named the text is all calls (the grammar's form): each call is announced
// (id, name) as soon as its name is whole and its arguments follow piece by
// piece as they are generated (deltas()), the pieces adding up to the
// call's arguments as JSON text (Gemma's form converted as it comes).
class ToolCallStream {
 public:
  ToolCallStream(int syntax, bool all_calls, std::vector<std::string> names = {})
      : syntax_(syntax), all_calls_(all_calls), names_(std::move(names)) {}
  ~ToolCallStream();
  ToolCallStream(const ToolCallStream&) = delete;
  ToolCallStream& operator=(const ToolCallStream&) = delete;
  // Adds generated text; returns what may be sent as content now.
  std::string add(const std::string& text);
  // The end: the rest, read for calls (its content not yet sent); with
  // calls streamed, nothing (they were sent as deltas).
  ParsedReply finish();

  // What of the calls became known since the last call: a call's start
  // (first: its id and name, arguments "") or a piece of its arguments.
  struct Delta {
    size_t index = 0;
    bool first = false;
    std::string id, name, arguments;
  };
  std::vector<Delta> deltas();
  // Calls announced so far (all_calls).
  size_t streamed_calls() const { return calls_; }

 private:
  // Whether the text from its first non-space byte may be a call that
  // begins without a marker: 1 yes, 0 no, -1 not known yet.
  int may_start_call(size_t first) const;
  void scan_calls();
  bool scan_call_start();
  void scan_arguments();
  void add_piece(const std::string& piece);

  int syntax_;
  bool all_calls_;
  std::vector<std::string> names_;
  std::string text_;      // everything generated
  size_t released_ = 0;   // bytes of it sent as content
  bool holding_ = false;  // a call has begun: nothing more is released
  // all_calls: the scan of text_ for calls and their arguments.
  size_t scan_ = 0;            // bytes of text_ read
  bool in_arguments_ = false;  // inside a call's arguments value
  size_t depth_ = 0;           // its open objects and arrays
  bool in_string_ = false, escaped_ = false;
  size_t calls_ = 0;
  std::vector<Delta> deltas_;
  std::unique_ptr<GemmaArgsReader> gemma_;  // Gemma 4: the arguments being converted
  size_t args_at_ = 0;                      // where they begin in text_
};

}  // namespace ember::serve

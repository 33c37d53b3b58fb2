// Tool calls in `ember serve`: the grammar that makes a model call a
// function (tool_choice "required" or a named function), the call syntax
// of its family (ember_chat_tool_syntax: Hermes/Qwen <tool_call> JSON
// </tool_call>, Llama 3.x's bare {"name", "parameters"} object, or
// Mistral's [TOOL_CALLS] and a JSON array of {"name", "arguments"}), and
// reading calls back out of generated text, whole or as it streams.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ember.h"
#include "tools/serve/openai_api.h"

namespace ember::serve {

// The GBNF (root rule "root") that admits only the calls `r` asks for:
// tool_choice kNamed that function, kRequired any of r.tools; one call, or
// one or more when r.parallel_tool_calls (Hermes and Mistral: Llama 3.x's
// templates render one call per message, so it is always one). Each
// function's arguments follow its parameters schema
// (ember_json_schema_to_gbnf, rules renamed apart; none: any object).
// False with *error naming the function when its schema is refused.
bool tool_call_grammar(const CompletionRequest& r, int syntax, std::string* gbnf, std::string* error);

// A GBNF text with every rule name prefixed (definitions and references;
// literals, classes and comments untouched), so grammars can be combined.
std::string prefix_gbnf_rules(const std::string& gbnf, const std::string& prefix);

// Generated text read back: the calls found, and the text around them
// (trimmed; empty when there is none).
struct ParsedReply {
  std::string content;
  std::vector<ToolCall> calls;
};
ParsedReply parse_tool_calls(const std::string& text, int syntax);

// "call_" and 24 random letters and digits; for Mistral 9 letters and
// digits (its templates refuse other ids).
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
// call's arguments text.
class ToolCallStream {
 public:
  ToolCallStream(int syntax, bool all_calls) : syntax_(syntax), all_calls_(all_calls) {}
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
  void scan_calls();
  bool scan_call_start();
  void scan_arguments();

  int syntax_;
  bool all_calls_;
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
};

// A chat response body with the calls read out of `text` (tools on): calls
// found make finish kToolCalls (when it was kStop) and the content what is
// around them; else the text as it is.
std::string tool_completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                                 const std::string& model, const std::string& text, int syntax, Finish finish,
                                 const Usage& usage, const std::vector<TokenLogprobs>* logprobs);

// The chunks of the calls' deltas since the last call (delta.tool_calls:
// a call's start, then pieces of its arguments); "" when there are none.
std::string tool_stream_deltas(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, ToolCallStream* calls);

// The chunks that end a stream with tools on: the held-back text's content
// and its calls (delta.tool_calls), or the last deltas of streamed calls;
// *finish becomes kToolCalls when there are calls and it was kStop.
std::string tool_stream_tail(const CompletionRequest& r, const std::string& id, int64_t created,
                             const std::string& model, ToolCallStream* calls, Finish* finish);

}  // namespace ember::serve

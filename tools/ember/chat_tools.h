// `ember chat --tools FILE [--tool-choice C]`: functions offered to the
// model through its chat template, the grammar of a demanded call, and a
// reply read for calls as it streams (tools/serve/tool_syntax.h, the same
// forms `ember serve` reads). A call is printed as one line of JSON,
// {"tool_call": {"id", "name", "arguments"}}; the user answers it with
// `/tool RESULT`, which becomes a role "tool" message.
#pragma once

#include <string>
#include <vector>

#include "ember.h"
#include "tools/serve/tool_syntax.h"

namespace ember::cli {

struct ChatTools {
  std::vector<serve::ToolFunction> functions;
  std::string json;            // the tools array, compact, for the template
  std::string choice = "auto";  // auto, none, required, or a function's name
  bool on() const { return !functions.empty(); }
  // Whether a reply to a user message must be a call (a grammar holds it).
  bool demanded() const { return on() && choice != "auto" && choice != "none"; }
};

// Reads `path` (an OpenAI tools array: [{"type": "function", "function":
// {name, description, parameters}}]) and `choice` ("" for auto). False
// with *error naming the file and element ("tools[1].function.name") or
// the value.
bool read_chat_tools(const std::string& path, const std::string& choice, ChatTools* out, std::string* error);

// The grammar of a demanded call in `syntax` for `model` (parallel calls
// allowed). 0, or the exit code (reported).
int make_tool_grammar(const ember_model* model, const ChatTools& tools, int syntax, ember_grammar** out);

// One reply with tools on: content released as it streams, calls held and
// read when the reply ends.
class ReplyReader {
 public:
  ReplyReader(int syntax, bool all_calls, const ChatTools& tools);
  // Generated text in; the content that may be printed now out.
  std::string add(const std::string& piece) { return stream_.add(piece); }
  // The end: the content still to print (*rest) and the calls.
  std::vector<serve::ToolCall> finish(std::string* rest);

 private:
  serve::ToolCallStream stream_;
};

// A call as the line `ember chat` prints: {"tool_call": {"id": ..., "name":
// ..., "arguments": {...}}} (arguments as an object when they are one).
std::string tool_call_line(const serve::ToolCall& call);

}  // namespace ember::cli

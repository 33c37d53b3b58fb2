// The chat template a command renders with (ember chat, ember run --chat):
// the model's own (GGUF tokenizer.chat_template), a built-in name, or a
// Jinja file, through the C API's ember_chat_format; with tools, calls or
// tool results, through ember_chat_format_json (the OpenAI shapes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ember.h"
#include "tools/serve/tool_syntax.h"

namespace ember::cli {

struct ChatTurn {
  ChatTurn() = default;
  ChatTurn(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}
  std::string role;
  std::string content;
  std::vector<serve::ToolCall> tool_calls;  // an assistant's calls
  std::string tool_call_id;                 // a tool message: the call it answers
};

class ChatRenderer {
 public:
  // template_arg: "" (the model's own, else the family's built-in), a
  // built-in name, or the path of a Jinja file. Returns 0, or the exit code
  // after reporting the error.
  int init(const ember_model* model, const std::string& template_arg);
  // What is used, for the user ("the model's own", "built-in 'chatml' (...)").
  const std::string& description() const { return description_; }
  // The conversation as the template renders it. 0, or the reported exit code.
  int render(const std::vector<ChatTurn>& messages, bool add_generation_prompt, std::string* out) const;
  // The tools every rendering offers: an OpenAI tools array's JSON text
  // ("" for none).
  void set_tools(std::string tools_json) { tools_ = std::move(tools_json); }
  // How the template's model writes a call (ember_chat_tool_syntax).
  int tool_syntax() const;

 private:
  int render_json(const std::vector<ChatTurn>& messages, bool add_generation_prompt, std::string* out) const;

  const ember_model* model_ = nullptr;
  std::string template_;  // "" = the model's own (or its family's built-in)
  std::string description_;
  std::string tools_;
};

}  // namespace ember::cli

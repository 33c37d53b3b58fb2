// The chat template a command renders with (ember chat, ember run --chat):
// the model's own (GGUF tokenizer.chat_template), a built-in name, or a
// Jinja file, through the C API's ember_chat_format.
#pragma once

#include <string>
#include <vector>

#include "ember.h"

namespace ember::cli {

struct ChatTurn {
  std::string role;
  std::string content;
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

 private:
  const ember_model* model_ = nullptr;
  std::string template_;  // "" = the model's own (or its family's built-in)
  std::string description_;
};

}  // namespace ember::cli

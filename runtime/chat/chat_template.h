// Chat formatting: a conversation (messages) rendered through a model's
// Jinja chat template (GGUF tokenizer.chat_template) or a named built-in
// one, the way Hugging Face's apply_chat_template renders it.
#pragma once

#include <string>
#include <vector>

#include "chat/jinja_eval.h"
#include "core/status.h"

namespace ember::chat {

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  RenderEnv env;
};

// The text of a built-in template ("chatml", "llama3", ...), or nullptr.
const char* builtin_chat_template(const std::string& name);
// The built-in names, for help texts and errors.
const std::vector<std::string>& builtin_chat_template_names();

// Renders `tmpl` with the context Hugging Face gives a chat template:
// messages (a list of dicts), add_generation_prompt, bos_token, eos_token,
// plus the entries of `extra` (a dict, or undefined: tools, documents, ...
// stay undefined unless given there). Errors as parse_template and
// render_program.
Status render_chat(const std::string& tmpl, const Value& messages, const ChatOptions& opt, const Value& extra,
                   std::string* out);
// The same with plain role/content messages.
Status render_chat(const std::string& tmpl, const std::vector<ChatMessage>& messages, const ChatOptions& opt,
                   std::string* out);

}  // namespace ember::chat

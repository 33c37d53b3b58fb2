#include "tools/ember/chat_render.h"

#include <sys/stat.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "tools/ember/args.h"
#include "tools/ember/files.h"

namespace ember::cli {

int ChatRenderer::init(const ember_model* model, const std::string& template_arg) {
  model_ = model;
  struct stat st;
  if (template_arg.empty()) {
    const char* builtin = ember_chat_default_template(model);
    description_ = builtin ? std::string("built-in '") + builtin + "' (the model file has none)"
                           : "the model's own (tokenizer.chat_template)";
  } else if (::stat(template_arg.c_str(), &st) == 0) {
    std::string error;
    const ember_status st = read_file(template_arg, &template_, &error);
    if (st != EMBER_OK) return report(st, error);
    description_ = "'" + template_arg + "'";
  } else {
    template_ = template_arg;
    description_ = "built-in '" + template_arg + "'";
  }
  // Rendered once here, so that a bad name or a template that cannot render
  // a plain exchange is reported before the first turn.
  std::string probe;
  return render({{"user", "hi"}}, true, &probe);
}

int ChatRenderer::tool_syntax() const {
  return ember_chat_tool_syntax(model_, template_.empty() ? nullptr : template_.c_str());
}

int ChatRenderer::render_json(const std::vector<ChatTurn>& messages, bool add_generation_prompt,
                              std::string* out) const {
  using ojson = nlohmann::ordered_json;
  const int syntax = tool_syntax();
  ojson list = ojson::array();
  for (const ChatTurn& m : messages) {
    ojson j = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const serve::ToolCall& c : m.tool_calls) {
        calls.push_back({{"id", serve::template_call_id(c.id, syntax)},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      j["tool_calls"] = std::move(calls);
    }
    if (!m.tool_call_id.empty()) j["tool_call_id"] = serve::template_call_id(m.tool_call_id, syntax);
    list.push_back(std::move(j));
  }
  const std::string text = list.dump(-1, ' ', false, ojson::error_handler_t::replace);
  const char* tmpl = template_.empty() ? nullptr : template_.c_str();
  const char* tools = tools_.empty() ? nullptr : tools_.c_str();
  const int gen = add_generation_prompt ? 1 : 0;
  size_t len = 0;
  ember_status st = ember_chat_format_json(model_, tmpl, text.c_str(), tools, gen, nullptr, 0, &len);
  if (st == EMBER_ERR_BUFFER_TOO_SMALL || st == EMBER_OK) {
    out->resize(len);
    st = ember_chat_format_json(model_, tmpl, text.c_str(), tools, gen, out->data(), out->size(), &len);
  }
  return st == EMBER_OK ? 0 : report_last(st);
}

int ChatRenderer::render(const std::vector<ChatTurn>& messages, bool add_generation_prompt, std::string* out) const {
  bool json = !tools_.empty();
  for (const ChatTurn& m : messages) json = json || !m.tool_calls.empty() || !m.tool_call_id.empty();
  if (json) return render_json(messages, add_generation_prompt, out);
  std::vector<ember_chat_message> msgs(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) msgs[i] = {messages[i].role.c_str(), messages[i].content.c_str()};
  const char* tmpl = template_.empty() ? nullptr : template_.c_str();
  size_t len = 0;
  ember_status st = ember_chat_format(model_, tmpl, msgs.data(), msgs.size(), add_generation_prompt ? 1 : 0, nullptr,
                                      0, &len);
  if (st == EMBER_ERR_BUFFER_TOO_SMALL || st == EMBER_OK) {
    out->resize(len);
    st = ember_chat_format(model_, tmpl, msgs.data(), msgs.size(), add_generation_prompt ? 1 : 0, out->data(),
                           out->size(), &len);
  }
  return st == EMBER_OK ? 0 : report_last(st);
}

}  // namespace ember::cli

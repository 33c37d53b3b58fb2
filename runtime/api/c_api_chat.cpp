// ember_chat_format: the C face of runtime/chat.
#include <cstring>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "chat/chat_json.h"
#include "chat/chat_template.h"
#include "core/hparams.h"

namespace {

ember_status fail(ember_status code, const std::string& message) {
  return ember::set_last_error(ember::Status::error(code, "%s", message.c_str()));
}

bool looks_like_template(const char* s) { return std::strstr(s, "{{") || std::strstr(s, "{%"); }

bool has_piece(const ember::Vocab& v, const char* piece) {
  for (const std::string& p : v.pieces) {
    if (p == piece) return true;
  }
  return false;
}

}  // namespace

// The built-in for a file without a template (ember_chat_default_template).
const char* ember::default_chat_template(const ember_model* model) {
  const ember::Vocab& v = ember::model_vocab(model);
  switch (static_cast<ember::ModelArch>(ember::model_arch(model))) {
    case ember::ModelArch::Qwen2:
    case ember::ModelArch::Qwen3: return "chatml";
    case ember::ModelArch::Phi3: return has_piece(v, "<|/tool|>") ? "phi4-mini" : "phi3";
    case ember::ModelArch::Gemma2:
    case ember::ModelArch::Gemma3: return "gemma";
    case ember::ModelArch::Llama: break;
    default: break;
  }
  if (has_piece(v, "<start_of_turn>")) return "gemma";
  if (has_piece(v, "<|eot_id|>")) return "llama3";
  if (has_piece(v, "<|im_start|>")) return "chatml";
  if (v.kind == ember::TokenizerKind::SentencePiece) return "llama2";
  return "chatml";
}

extern "C" const char* ember_chat_default_template(const ember_model* model) {
  if (!model || !ember::model_vocab(model).chat_template.empty()) return nullptr;
  return ember::model_default_chat_template(model);
}

namespace {

// bos_token and eos_token of `model` (empty without one).
ember::chat::ChatOptions options_of(const ember_model* model, int add_generation_prompt) {
  ember::chat::ChatOptions opt;
  opt.add_generation_prompt = add_generation_prompt != 0;
  if (model) {
    const ember::Vocab& v = ember::model_vocab(model);
    auto piece = [&](int32_t id) {
      return id >= 0 && size_t(id) < v.pieces.size() ? v.pieces[size_t(id)] : std::string();
    };
    opt.bos_token = piece(v.bos_id);
    opt.eos_token = piece(v.eos_id);
  }
  return opt;
}

// The template text ember_chat_format's chat_template argument names.
ember_status resolve_template(const ember_model* model, const char* chat_template, std::string* tmpl) {
  if (!chat_template) {
    *tmpl = ember::model_vocab(model).chat_template;
    if (tmpl->empty()) *tmpl = ember::chat::builtin_chat_template(ember::model_default_chat_template(model));
  } else if (looks_like_template(chat_template)) {
    *tmpl = chat_template;
  } else {
    const char* b = ember::chat::builtin_chat_template(chat_template);
    if (!b) {
      std::string names;
      for (const auto& n : ember::chat::builtin_chat_template_names()) names += (names.empty() ? "" : ", ") + n;
      return fail(EMBER_ERR_INVALID_ARGUMENT,
                  std::string("chat_template '") + chat_template + "' is not a built-in template (" + names + ")");
    }
    *tmpl = b;
  }
  return EMBER_OK;
}

ember_status copy_out(const std::string& out, char* text, size_t capacity, size_t* out_len) {
  *out_len = out.size();
  if (out.size() > capacity)
    return ember::set_last_error(ember::Status::error(
        EMBER_ERR_BUFFER_TOO_SMALL, "capacity = %zu bytes but the text needs %zu", capacity, out.size()));
  if (!out.empty()) std::memcpy(text, out.data(), out.size());
  return EMBER_OK;
}

}  // namespace

extern "C" ember_status ember_chat_format(const ember_model* model, const char* chat_template,
                                          const ember_chat_message* messages, size_t n_messages,
                                          int add_generation_prompt, char* text, size_t capacity,
                                          size_t* out_len) {
  ember::clear_last_error();
  if (!out_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_len is NULL");
  *out_len = 0;
  if (!text && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "text is NULL but capacity > 0");
  if (!messages && n_messages) return fail(EMBER_ERR_INVALID_ARGUMENT, "messages is NULL but n_messages > 0");
  if (!model && !chat_template)
    return fail(EMBER_ERR_INVALID_ARGUMENT, "model and chat_template are both NULL: one names the template");
  std::vector<ember::chat::ChatMessage> msgs(n_messages);
  for (size_t i = 0; i < n_messages; ++i) {
    if (!messages[i].role || !messages[i].content)
      return fail(EMBER_ERR_INVALID_ARGUMENT,
                  "messages[" + std::to_string(i) + "]." + (messages[i].role ? "content" : "role") + " is NULL");
    msgs[i].role = messages[i].role;
    msgs[i].content = messages[i].content;
  }
  const ember::chat::ChatOptions opt = options_of(model, add_generation_prompt);
  std::string tmpl;
  if (ember_status st = resolve_template(model, chat_template, &tmpl); st != EMBER_OK) return st;
  std::string out;
  ember::Status s = ember::chat::render_chat(tmpl, msgs, opt, &out);
  if (!s.is_ok()) return ember::set_last_error(s);
  return copy_out(out, text, capacity, out_len);
}

extern "C" ember_status ember_chat_format_json(const ember_model* model, const char* chat_template,
                                               const char* messages_json, const char* tools_json,
                                               int add_generation_prompt, char* text, size_t capacity,
                                               size_t* out_len) {
  ember::clear_last_error();
  if (!out_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_len is NULL");
  *out_len = 0;
  if (!text && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "text is NULL but capacity > 0");
  if (!messages_json) return fail(EMBER_ERR_INVALID_ARGUMENT, "messages_json is NULL");
  if (!model && !chat_template)
    return fail(EMBER_ERR_INVALID_ARGUMENT, "model and chat_template are both NULL: one names the template");
  const ember::chat::JsonReadLimits limits;
  ember::chat::Value messages, tools;
  ember::Status s = ember::chat::chat_messages_from_json(messages_json, limits, &messages);
  if (!s.is_ok()) return ember::set_last_error(s);
  s = ember::chat::chat_tools_from_json(tools_json ? tools_json : "", limits, &tools);
  if (!s.is_ok()) return ember::set_last_error(s);
  const ember::chat::ChatOptions opt = options_of(model, add_generation_prompt);
  std::string tmpl;
  if (ember_status st = resolve_template(model, chat_template, &tmpl); st != EMBER_OK) return st;
  // Phi-4-mini's template reads the tools from the system message.
  s = ember::chat::put_tools_in_system_message(tmpl, tools, &messages);
  if (!s.is_ok()) return ember::set_last_error(s);
  // Gemma 4's first template reads results as the assistant's tool_responses.
  ember::chat::fold_tool_results(tmpl, limits, &messages);
  ember::chat::Value extra = ember::chat::Value::make_dict();
  if (!tools.is_undefined()) extra.set("tools", tools);
  std::string out;
  s = ember::chat::render_chat(tmpl, messages, opt, extra, &out);
  if (!s.is_ok()) return ember::set_last_error(s);
  return copy_out(out, text, capacity, out_len);
}

extern "C" int ember_chat_tool_syntax(const ember_model* model, const char* chat_template) {
  if (!model && !chat_template) return EMBER_TOOL_SYNTAX_HERMES;
  std::string tmpl;
  if (resolve_template(model, chat_template, &tmpl) != EMBER_OK) return EMBER_TOOL_SYNTAX_HERMES;
  return static_cast<int>(ember::chat::tool_syntax_of_template(tmpl));
}

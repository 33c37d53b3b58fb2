#include "tools/serve/openai_api.h"

#include <nlohmann/json.hpp>

#include "tools/serve/tool_calls.h"

namespace ember::serve {
namespace {

using json = nlohmann::json;

// Serializes without ever throwing (exceptions are off: an invalid UTF-8
// byte from a token piece would otherwise abort): bad bytes become U+FFFD.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string chat_template_name(const ember_model* model) {
  if (const char* builtin = ember_chat_default_template(model)) {
    return std::string("built-in '") + builtin + "' (the model file has no tokenizer.chat_template)";
  }
  return "the model's own (tokenizer.chat_template)";
}

ember_status format_chat(const ember_model* model, const std::vector<ChatMessage>& messages, std::string* out) {
  out->clear();
  std::vector<ember_chat_message> msgs(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    // OpenAI's "developer" role is the system prompt of newer clients.
    msgs[i].role = messages[i].role == "developer" ? "system" : messages[i].role.c_str();
    msgs[i].content = messages[i].content.c_str();
  }
  size_t len = 0;
  ember_status st = ember_chat_format(model, nullptr, msgs.data(), msgs.size(), 1, nullptr, 0, &len);
  if (st != EMBER_ERR_BUFFER_TOO_SMALL && st != EMBER_OK) return st;
  out->resize(len);
  st = ember_chat_format(model, nullptr, msgs.data(), msgs.size(), 1, out->data(), out->size(), &len);
  if (st != EMBER_OK) out->clear();
  return st;
}

ember_status format_chat(const ember_model* model, const CompletionRequest& request, std::string* out,
                         const char* chat_template) {
  using ojson = nlohmann::ordered_json;  // a schema's properties reach the template in their order
  out->clear();
  // Mistral's templates take only 9-character ids: other ids are mapped.
  const int syntax = ember_chat_tool_syntax(model, chat_template);
  ojson messages = ojson::array();
  for (const ChatMessage& m : request.messages) {
    ojson j = {{"role", m.role}};
    j["content"] = m.content.empty() && !m.tool_calls.empty() ? ojson(nullptr) : ojson(m.content);
    if (!m.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const ToolCall& c : m.tool_calls) {
        calls.push_back({{"id", template_call_id(c.id, syntax)},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      j["tool_calls"] = std::move(calls);
    }
    if (!m.tool_call_id.empty()) j["tool_call_id"] = template_call_id(m.tool_call_id, syntax);
    messages.push_back(std::move(j));
  }
  std::string tools_text;
  if (!request.tools.empty()) {
    ojson tools = ojson::array();
    for (const ToolFunction& t : request.tools) {
      ojson f = {{"name", t.name}};
      if (!t.description.empty()) f["description"] = t.description;
      if (!t.parameters.empty()) f["parameters"] = ojson::parse(t.parameters, nullptr, false);  // in the order written
      tools.push_back({{"type", "function"}, {"function", std::move(f)}});
    }
    tools_text = tools.dump(-1, ' ', false, ojson::error_handler_t::replace);
  }
  const std::string messages_text = messages.dump(-1, ' ', false, ojson::error_handler_t::replace);
  const char* tools_arg = tools_text.empty() ? nullptr : tools_text.c_str();
  size_t len = 0;
  ember_status st =
      ember_chat_format_json(model, chat_template, messages_text.c_str(), tools_arg, 1, nullptr, 0, &len);
  if (st != EMBER_ERR_BUFFER_TOO_SMALL && st != EMBER_OK) return st;
  out->resize(len);
  st = ember_chat_format_json(model, chat_template, messages_text.c_str(), tools_arg, 1, out->data(), out->size(),
                              &len);
  if (st != EMBER_OK) out->clear();
  return st;
}

std::string error_body(int http_status, std::string_view message, std::string_view param, std::string_view code) {
  const char* type = http_status == 401   ? "authentication_error"
                     : http_status == 404 ? "not_found_error"
                     : http_status == 429 ? "rate_limit_error"
                     : http_status >= 500 ? "server_error"
                                          : "invalid_request_error";
  auto or_null = [](std::string_view s) { return s.empty() ? json(nullptr) : json(std::string(s)); };
  json j = {{"error",
             {{"message", std::string(message)}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
  return dump(j);
}

std::string error_body(const RequestError& error) {
  return error_body(error.status, error.message, error.param, error.code);
}

const char* finish_reason_name(Finish f) {
  switch (f) {
    case Finish::kStop: return "stop";
    case Finish::kLength: return "length";
    case Finish::kCancelled: return "cancelled";
    case Finish::kTimeout: return "timeout";
    case Finish::kError: return "error";
    case Finish::kToolCalls: return "tool_calls";
  }
  return "error";
}

namespace {

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// OpenAI's two shapes: chat's {"content": [{token, logprob, bytes,
// top_logprobs}]}, the completions API's parallel arrays.
json logprobs_json(bool chat, const std::vector<TokenLogprobs>* lp) {
  if (!lp) return nullptr;
  if (chat) {
    json content = json::array();
    for (const TokenLogprobs& t : *lp) {
      json top = json::array();
      for (const auto& [tok, l] : t.top) top.push_back({{"token", tok}, {"logprob", l}, {"bytes", bytes_of(tok)}});
      content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_of(t.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenLogprobs& t : *lp) {
    tokens.push_back(t.token);
    logprobs.push_back(t.logprob);
    json top = json::object();
    for (const auto& [tok, l] : t.top) top[tok] = l;
    tops.push_back(top);
    offsets.push_back(t.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace

std::string completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                            const std::string& model, const std::string& text, Finish finish, const Usage& usage,
                            const std::vector<TokenLogprobs>* logprobs, const std::vector<ToolCall>* tool_calls) {
  json choice;
  if (r.chat) {
    json message = {{"role", "assistant"}, {"content", text}};
    if (tool_calls && !tool_calls->empty()) {
      if (text.empty()) message["content"] = nullptr;
      json calls = json::array();
      for (const ToolCall& c : *tool_calls) {
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    choice = {{"index", 0},
              {"message", std::move(message)},
              {"logprobs", logprobs_json(true, logprobs)},
              {"finish_reason", finish_reason_name(finish)}};
  } else {
    choice = {{"index", 0},
              {"text", text},
              {"logprobs", logprobs_json(false, logprobs)},
              {"finish_reason", finish_reason_name(finish)}};
  }
  json j = {{"id", id},
            {"object", r.chat ? "chat.completion" : "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})},
            {"usage", usage_json(usage)}};
  return dump(j);
}

std::string stream_chunk(const CompletionRequest& r, const std::string& id, int64_t created, const std::string& model,
                         const std::string& text, const Finish* finish, bool first,
                         const std::vector<TokenLogprobs>* logprobs) {
  json choice = {{"index", 0}, {"logprobs", logprobs_json(r.chat, logprobs)}};
  if (r.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!finish) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["finish_reason"] = finish ? json(finish_reason_name(*finish)) : json(nullptr);
  json j = {{"id", id},
            {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})}};
  return "data: " + dump(j) + "\n\n";
}

namespace {

// A chunk whose delta holds one entry of tool_calls.
std::string tool_call_chunk(const std::string& id, int64_t created, const std::string& model, json delta_call) {
  json choice = {{"index", 0},
                 {"delta", {{"tool_calls", json::array({std::move(delta_call)})}}},
                 {"logprobs", nullptr},
                 {"finish_reason", nullptr}};
  json j = {{"id", id},
            {"object", "chat.completion.chunk"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})}};
  return "data: " + dump(j) + "\n\n";
}

}  // namespace

std::string stream_tool_call_start(const CompletionRequest& r, const std::string& id, int64_t created,
                                   const std::string& model, const ToolCall& call, size_t index) {
  return tool_call_chunk(id, created, model,
                         {{"index", index}, {"id", call.id}, {"type", "function"},
                          {"function", {{"name", call.name}, {"arguments", ""}}}});
}

std::string stream_tool_call_arguments(const CompletionRequest& r, const std::string& id, int64_t created,
                                       const std::string& model, const std::string& piece, size_t index) {
  return tool_call_chunk(id, created, model, {{"index", index}, {"function", {{"arguments", piece}}}});
}

std::string stream_tool_call_chunks(const CompletionRequest& r, const std::string& id, int64_t created,
                                    const std::string& model, const ToolCall& call, size_t index) {
  return stream_tool_call_start(r, id, created, model, call, index) +
         stream_tool_call_arguments(r, id, created, model, call.arguments, index);
}

std::string stream_usage_chunk(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, const Usage& usage) {
  json j = {{"id", id},
            {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array()},
            {"usage", usage_json(usage)}};
  return "data: " + dump(j) + "\n\n";
}

std::string models_body(const std::string& model, int64_t created) {
  json j = {{"object", "list"},
            {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "ember"}}})}};
  return dump(j);
}

}  // namespace ember::serve

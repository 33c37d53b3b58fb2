#include "tools/serve/openai_api.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace ember::serve {
namespace {

using json = nlohmann::json;

// Serializes without ever throwing (exceptions are off: an invalid UTF-8
// byte from a token piece would otherwise abort): bad bytes become U+FFFD.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string show(const json& v) {
  std::string s = dump(v);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

bool get_number(const json& body, const char* field, double lo, double hi, double* out, std::string* error) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_number()) {
    *error = std::string("'") + field + "' must be a number, got " + show(*it);
    return false;
  }
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    *error = std::string("'") + field + "' = " + show(*it) + " is outside [" + show(json(lo)) + ", " +
             show(json(hi)) + "]";
    return false;
  }
  *out = v;
  return true;
}

bool get_int(const json& body, const char* field, int64_t lo, int64_t hi, int64_t* out, bool* present,
             std::string* error) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return true;
  double v = 0;
  if (it->is_number_integer() || it->is_number_unsigned()) {
    if (it->is_number_unsigned()) {
      const uint64_t u = it->get<uint64_t>();
      v = static_cast<double>(u);
      if (u > static_cast<uint64_t>(hi)) v = static_cast<double>(hi) + 1;
    } else {
      v = static_cast<double>(it->get<int64_t>());
    }
  } else if (it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()) {
    v = it->get<double>();
  } else {
    *error = std::string("'") + field + "' must be an integer, got " + show(*it);
    return false;
  }
  if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
    *error = std::string("'") + field + "' = " + show(*it) + " is outside [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]";
    return false;
  }
  if (it->is_number_integer() && !it->is_number_unsigned()) {
    *out = it->get<int64_t>();
  } else if (it->is_number_unsigned()) {
    *out = static_cast<int64_t>(it->get<uint64_t>());
  } else {
    *out = static_cast<int64_t>(v);
  }
  if (present) *present = true;
  return true;
}

// "content" is a string or an array of parts {"type":"text","text":...}.
bool message_text(const json& content, size_t index, std::string* out, std::string* error) {
  const std::string where = "'messages[" + std::to_string(index) + "].content'";
  if (content.is_null()) return true;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return true;
  }
  if (!content.is_array()) {
    *error = where + " must be a string or an array of text parts, got " + show(content);
    return false;
  }
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    auto type = part.is_object() ? part.find("type") : part.end();
    auto text = part.is_object() ? part.find("text") : part.end();
    if (!part.is_object() || type == part.end() || !type->is_string() || type->get<std::string>() != "text" ||
        text == part.end() || !text->is_string()) {
      *error = where + "[" + std::to_string(i) + "] must be {\"type\":\"text\",\"text\":...} (only text is supported), got " +
               show(part);
      return false;
    }
    out->append(text->get<std::string>());
  }
  return true;
}

}  // namespace

bool parse_completion_request(std::string_view body, bool chat, CompletionRequest* out, std::string* error) {
  *out = CompletionRequest();
  out->chat = chat;
  const json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) {
    *error = "the request body is not valid JSON";
    return false;
  }
  if (!j.is_object()) {
    *error = "the request body must be a JSON object, got " + show(j);
    return false;
  }
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) {
      *error = "'model' must be a string, got " + show(*it);
      return false;
    }
    out->model = it->get<std::string>();
  }
  if (chat) {
    auto it = j.find("messages");
    if (it == j.end() || !it->is_array() || it->empty()) {
      *error = "'messages' must be a non-empty array of {role, content}";
      return false;
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& m = (*it)[i];
      auto role = m.is_object() ? m.find("role") : m.end();
      if (!m.is_object() || role == m.end() || !role->is_string()) {
        *error = "'messages[" + std::to_string(i) + "]' must be an object with a string 'role', got " + show(m);
        return false;
      }
      ChatMessage msg;
      msg.role = role->get<std::string>();
      if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "developer" &&
          msg.role != "tool") {
        *error = "'messages[" + std::to_string(i) + "].role' = " + show(*role) +
                 " is not one of system, developer, user, assistant, tool";
        return false;
      }
      auto content = m.find("content");
      if (content != m.end() && !message_text(*content, i, &msg.content, error)) return false;
      out->messages.push_back(std::move(msg));
    }
  } else {
    auto it = j.find("prompt");
    if (it == j.end() || it->is_null()) {
      *error = "'prompt' is required";
      return false;
    }
    if (it->is_string()) {
      out->prompt = it->get<std::string>();
    } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
      out->prompt = (*it)[0].get<std::string>();
    } else if (it->is_array() && !it->empty() && (*it)[0].is_number()) {
      out->prompt_is_tokens = true;
      for (size_t i = 0; i < it->size(); ++i) {
        const json& t = (*it)[i];
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
          *error = "'prompt[" + std::to_string(i) + "]' must be a token id (a non-negative integer), got " + show(t);
          return false;
        }
        out->prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
      }
    } else {
      *error = "'prompt' must be a string, an array of one string, or an array of token ids (one prompt per "
               "request), got " + show(*it);
      return false;
    }
  }
  int64_t v = 0;
  bool present = false;
  if (!get_int(j, chat && j.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens", 0,
               INT32_MAX, &v, &present, error)) {
    return false;
  }
  if (present) out->max_tokens = static_cast<int32_t>(v);
  present = false;
  if (!get_int(j, "n", 1, 1, &v, &present, error)) {
    *error += " (one choice per request)";
    return false;
  }
  double d = out->temperature;
  if (!get_number(j, "temperature", 0.0, 100.0, &d, error)) return false;
  out->temperature = static_cast<float>(d);
  d = out->top_p;
  if (!get_number(j, "top_p", 0.0, 1.0, &d, error)) return false;
  out->top_p = static_cast<float>(d);
  d = out->min_p;
  if (!get_number(j, "min_p", 0.0, 1.0, &d, error)) return false;
  out->min_p = static_cast<float>(d);
  v = 0;
  if (!get_int(j, "top_k", -1, INT32_MAX, &v, nullptr, error)) return false;
  out->top_k = v < 0 ? 0 : static_cast<int32_t>(v);  // -1: off, as llama.cpp's server takes it
  if (!get_int(j, "seed", INT64_MIN, INT64_MAX, &v, &out->has_seed, error)) return false;
  out->seed = static_cast<uint64_t>(v);
  if (auto it = j.find("stop"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      if (!it->get<std::string>().empty()) out->stop.push_back(it->get<std::string>());
    } else if (it->is_array() && it->size() <= 16) {
      for (size_t i = 0; i < it->size(); ++i) {
        if (!(*it)[i].is_string() || (*it)[i].get<std::string>().empty()) {
          *error = "'stop[" + std::to_string(i) + "]' must be a non-empty string, got " + show((*it)[i]);
          return false;
        }
        out->stop.push_back((*it)[i].get<std::string>());
      }
    } else {
      *error = "'stop' must be a string or an array of at most 16 strings, got " + show(*it);
      return false;
    }
  }
  for (const char* flag : {"stream", "echo"}) {
    auto it = j.find(flag);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_boolean()) {
      *error = std::string("'") + flag + "' must be true or false, got " + show(*it);
      return false;
    }
    (flag[0] == 's' ? out->stream : out->echo) = it->get<bool>();
  }
  if (chat && out->echo) {
    *error = "'echo' is only for /v1/completions";
    return false;
  }
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    auto u = it->is_object() ? it->find("include_usage") : it->end();
    if (!it->is_object() || (u != it->end() && !u->is_boolean())) {
      *error = "'stream_options' must be {\"include_usage\": true|false}, got " + show(*it);
      return false;
    }
    out->include_usage = u != it->end() && u->get<bool>();
  }
  return true;
}

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

std::string error_body(int http_status, std::string_view message) {
  const char* type = http_status == 401   ? "authentication_error"
                     : http_status == 404 ? "not_found_error"
                     : http_status == 429 ? "rate_limit_error"
                     : http_status >= 500 ? "server_error"
                                          : "invalid_request_error";
  json j = {{"error", {{"message", std::string(message)}, {"type", type}, {"param", nullptr}, {"code", http_status}}}};
  return dump(j);
}

const char* finish_reason_name(Finish f) {
  switch (f) {
    case Finish::kStop: return "stop";
    case Finish::kLength: return "length";
    case Finish::kCancelled: return "cancelled";
    case Finish::kTimeout: return "timeout";
    case Finish::kError: return "error";
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

}  // namespace

std::string completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                            const std::string& model, const std::string& text, Finish finish, const Usage& usage) {
  json choice;
  if (r.chat) {
    choice = {{"index", 0},
              {"message", {{"role", "assistant"}, {"content", text}}},
              {"logprobs", nullptr},
              {"finish_reason", finish_reason_name(finish)}};
  } else {
    choice = {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_reason_name(finish)}};
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
                         const std::string& text, const Finish* finish, bool first) {
  json choice = {{"index", 0}, {"logprobs", nullptr}};
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

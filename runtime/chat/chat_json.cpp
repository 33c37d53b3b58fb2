#include "chat/chat_json.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::chat {
namespace {

using json = nlohmann::json;

// line:column (1-based) of a byte offset, for messages.
std::string line_col(std::string_view text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Builds Values from SAX events. Containers on the stack share their list
// or dict with the element already placed in the parent.
class Builder final : public nlohmann::json_sax<json> {
 public:
  Builder(size_t max_depth, Value* root) : max_depth_(max_depth), root_(root) {}

  bool null() override { return put(Value::none()); }
  bool boolean(bool b) override { return put(Value::boolean(b)); }
  bool number_integer(number_integer_t i) override { return put(Value::integer(i)); }
  bool number_unsigned(number_unsigned_t u) override {
    return put(u <= static_cast<uint64_t>(INT64_MAX) ? Value::integer(static_cast<int64_t>(u))
                                                     : Value::real(static_cast<double>(u)));
  }
  bool number_float(number_float_t d, const string_t&) override { return put(Value::real(d)); }
  bool string(string_t& s) override { return put(Value::string(std::move(s))); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return open(Value::make_dict()); }
  bool start_array(std::size_t) override { return open(Value::make_list()); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    error_offset_ = position == 0 ? 0 : position - 1;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  size_t error_offset() const { return error_offset_; }

 private:
  bool put(Value v) {
    if (stack_.empty()) {
      *root_ = std::move(v);
      return true;
    }
    Value& top = stack_.back();
    if (top.is_list()) {
      top.list->push_back(std::move(v));
    } else {
      top.dict->emplace_back(std::move(key_), std::move(v));  // a repeated key: the template sees the first
      key_.clear();
    }
    return true;
  }
  bool open(Value v) {
    if (stack_.size() >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    Value shared = v;  // shares the container
    put(std::move(v));
    stack_.push_back(std::move(shared));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  size_t max_depth_;
  Value* root_;
  std::vector<Value> stack_;
  std::string key_;
  bool too_deep_ = false;
  size_t error_offset_ = 0;
};

Status bad(const std::string& where, const std::string& what) {
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s %s", where.c_str(), what.c_str());
}

bool is_string(const Value* v) { return v && v->is_string(); }

// One tool call of an assistant message: {id?, type?, function {name,
// arguments}}; arguments given as a JSON object's text become that object.
Status read_tool_call(Value& call, const std::string& where, const JsonReadLimits& limits) {
  if (!call.is_mapping()) return bad(where, "must be an object {id, type, function}");
  const Value* type = call.find("type");
  if (type && !type->is_none() && !(type->is_string() && type->s == "function")) {
    return bad(where + ".type", "must be \"function\"");
  }
  Value* function = nullptr;
  for (auto& kv : *call.dict) {
    if (kv.first == "function") function = &kv.second;
  }
  if (!function || !function->is_mapping()) return bad(where + ".function", "must be an object {name, arguments}");
  if (!is_string(function->find("name"))) return bad(where + ".function.name", "must be a string");
  for (auto& kv : *function->dict) {
    if (kv.first != "arguments" || !kv.second.is_string()) continue;
    Value parsed;
    JsonReadLimits l = limits;
    if (json_to_value(kv.second.s, "arguments", l, &parsed).is_ok() && parsed.is_mapping()) kv.second = parsed;
  }
  return Status::ok();
}

}  // namespace

Status json_to_value(std::string_view text, const char* what, const JsonReadLimits& limits, Value* out) {
  *out = Value::undefined();
  if (text.size() > limits.max_bytes) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s is %zu bytes: at most %zu", what, text.size(),
                         limits.max_bytes);
  }
  Value root;
  Builder b(limits.max_depth, &root);
  const bool ok = json::sax_parse(text.begin(), text.end(), &b, json::input_format_t::json, true, false);
  if (!ok) {
    if (b.too_deep()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s nests deeper than %zu arrays and objects", what,
                           limits.max_depth);
    }
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s is not valid JSON (at %s)", what,
                         line_col(text, b.error_offset()).c_str());
  }
  *out = std::move(root);
  return Status::ok();
}

Status chat_messages_from_json(std::string_view text, const JsonReadLimits& limits, Value* out) {
  Value v;
  EMBER_TRY(json_to_value(text, "messages", limits, &v));
  if (!v.is_list()) return bad("messages", "must be an array of {role, content}");
  for (size_t i = 0; i < v.list->size(); ++i) {
    Value& m = (*v.list)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_mapping()) return bad(where, "must be an object {role, content}");
    bool has_role = false;
    for (auto& kv : *m.dict) {
      if (kv.first == "role") {
        if (!kv.second.is_string()) return bad(where + ".role", "must be a string");
        if (kv.second.s == "developer") kv.second.s = "system";  // OpenAI's newer name for it
        has_role = true;
      } else if (kv.first == "content") {
        Value& c = kv.second;
        if (!c.is_string() && !c.is_none() && !c.is_list()) {
          return bad(where + ".content", "must be a string, null or an array of parts");
        }
        // An assistant's null content (only calls): templates concatenate
        // and search it (Qwen3's `'</think>' in message.content`).
        if (c.is_none()) c = Value::string("");
      } else if (kv.first == "tool_calls" && !kv.second.is_none()) {
        if (!kv.second.is_list()) return bad(where + ".tool_calls", "must be an array");
        for (size_t j = 0; j < kv.second.list->size(); ++j) {
          EMBER_TRY(read_tool_call((*kv.second.list)[j], where + ".tool_calls[" + std::to_string(j) + "]", limits));
        }
      }
    }
    if (!has_role) return bad(where, "has no 'role'");
  }
  *out = std::move(v);
  return Status::ok();
}

Status chat_tools_from_json(std::string_view text, const JsonReadLimits& limits, Value* out) {
  *out = Value::undefined();
  if (text.empty() || text == "null") return Status::ok();
  Value v;
  EMBER_TRY(json_to_value(text, "tools", limits, &v));
  if (v.is_none()) return Status::ok();
  if (!v.is_list()) return bad("tools", "must be an array of {type: \"function\", function: {...}}");
  for (size_t i = 0; i < v.list->size(); ++i) {
    const Value& t = (*v.list)[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_mapping()) return bad(where, "must be an object {type: \"function\", function: {...}}");
    const Value* type = t.find("type");
    if (!type || !type->is_string() || type->s != "function") return bad(where + ".type", "must be \"function\"");
    const Value* f = t.find("function");
    if (!f || !f->is_mapping()) return bad(where + ".function", "must be an object {name, description, parameters}");
    if (!is_string(f->find("name"))) return bad(where + ".function.name", "must be a string");
  }
  if (v.list->empty()) return Status::ok();  // no tools: as if none were given
  *out = std::move(v);
  return Status::ok();
}

ToolSyntax tool_syntax_of_template(std::string_view tmpl) {
  // Mistral v3's templates write the marker and the array's bracket as one
  // literal; the later "[TOOL_CALLS]name[ARGS]" form does not match.
  if (tmpl.find("[TOOL_CALLS][") != std::string_view::npos) return ToolSyntax::Mistral;
  if (tmpl.find("<tool_call>") != std::string_view::npos) return ToolSyntax::Hermes;
  if (tmpl.find("<|start_header_id|>") != std::string_view::npos) return ToolSyntax::Llama3;
  return ToolSyntax::Hermes;
}

}  // namespace ember::chat

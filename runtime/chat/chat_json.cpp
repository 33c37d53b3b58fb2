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
  auto has = [tmpl](const char* s) { return tmpl.find(s) != std::string_view::npos; };
  // Mistral v3's templates write the marker and the array's bracket as one
  // literal; the later form writes the name after the marker, then [ARGS]
  // (Small 3.2 with [CALL_ID] and the id between them).
  if (has("[TOOL_CALLS][")) return ToolSyntax::Mistral;
  if (has("[TOOL_CALLS]") && has("[ARGS]")) return ToolSyntax::MistralArgs;
  // Gemma 4 writes '<|tool_call>call:' + name; Gemma 2 and 3 have no call
  // form (the default below).
  if (has("<|tool_call>call:")) return ToolSyntax::Gemma4;
  // Phi-4-mini's tools sit between <|tool|> and <|/tool|>; Granite 3.x
  // asks for "<|tool_call|> followed by a JSON list", the same form.
  if (has("<|/tool|>") || has("<|tool_call|>")) return ToolSyntax::Phi4;
  if (has("<tool_call>")) return ToolSyntax::Hermes;
  if (has("<|start_header_id|>")) return ToolSyntax::Llama3;
  return ToolSyntax::Hermes;
}

Status put_tools_in_system_message(std::string_view tmpl, const Value& tools, Value* messages) {
  auto has = [tmpl](const char* s) { return tmpl.find(s) != std::string_view::npos; };
  if (!messages->is_list() || !(has("message['tools']") || has("message[\"tools\"]") || has("message.tools"))) {
    return Status::ok();
  }
  if (tools.is_list() && !tools.list->empty()) {
    // Microsoft's documented form: the functions themselves, not wrapped in
    // {"type": "function", "function": ...}.
    List functions;
    for (const Value& t : *tools.list) {
      const Value* f = t.find("function");
      if (f) functions.push_back(*f);
    }
    std::string text;
    EMBER_TRY(to_json(Value::make_list(std::move(functions)), -1, false, &text));
    List& list = *messages->list;
    const Value* role = list.empty() ? nullptr : list[0].find("role");
    if (!role || !role->is_string() || role->s != "system") {
      list.insert(list.begin(), Value::make_dict({{"role", Value::string("system")},
                                                  {"content", Value::string("You are a helpful assistant with some tools.")}}));
    }
    list[0].set("tools", Value::string(std::move(text)));
  }
  if (has("tool_calls")) return Status::ok();
  for (Value& m : *messages->list) {
    const Value* calls = m.find("tool_calls");
    const Value* content = m.find("content");
    if (!calls || !calls->is_list() || calls->list->empty() || !content || !content->is_string()) continue;
    List written;
    for (const Value& c : *calls->list) {
      const Value* f = c.find("function");
      if (!f || !f->is_mapping()) continue;
      const Value* name = f->find("name");
      const Value* args = f->find("arguments");
      written.push_back(Value::make_dict({{"name", name ? *name : Value::string("")},
                                          {"arguments", args ? *args : Value::make_dict()}}));
    }
    std::string text;
    EMBER_TRY(to_json(Value::make_list(std::move(written)), -1, false, &text));
    m.set("content", Value::string(content->s + "<|tool_call|>" + text + "<|/tool_call|>"));
  }
  return Status::ok();
}

namespace {

bool has_role(const Value& m, const char* role) {
  const Value* r = m.find("role");
  return r && r->is_string() && r->s == role;
}

bool non_empty_list(const Value* v) { return v && v->is_list() && !v->list->empty(); }

// The function name of the call `result` answers: by its tool_call_id,
// else the index-th call's.
Value answered_name(const List& calls, const Value& result, size_t index) {
  const Value* id = result.find("tool_call_id");
  const Value* by_order = nullptr;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Value* f = calls[i].find("function");
    const Value* name = f && f->is_mapping() ? f->find("name") : nullptr;
    if (!name) continue;
    const Value* cid = calls[i].find("id");
    if (id && cid && equals(*id, *cid)) return *name;
    if (i == index) by_order = name;
  }
  if (by_order) return *by_order;
  return id && id->is_string() ? *id : Value::string("unknown");
}

}  // namespace

void fold_tool_results(std::string_view tmpl, const JsonReadLimits& limits, Value* messages) {
  auto has = [tmpl](const char* s) { return tmpl.find(s) != std::string_view::npos; };
  if (!messages->is_list() || !has("tool_responses")) return;
  for (const char* reads_tool : {"== 'tool'", "!= 'tool'", "== \"tool\"", "!= \"tool\""}) {
    if (has(reads_tool)) return;
  }
  List out;
  const List& in = *messages->list;
  for (size_t i = 0; i < in.size(); ++i) {
    const Value& m = in[i];
    const Value* calls = m.find("tool_calls");
    if (!has_role(m, "assistant") || !non_empty_list(calls)) {
      out.push_back(m);
      continue;
    }
    Value turn = Value::make_dict(*m.dict);  // a copy: the caller's message untouched
    List responses;
    while (i + 1 < in.size() && has_role(in[i + 1], "tool")) {
      const Value& result = in[++i];
      const Value* content = result.find("content");
      Value response = content ? *content : Value::string("");
      if (content && content->is_string()) {
        Value parsed;
        if (json_to_value(content->s, "content", limits, &parsed).is_ok()) response = parsed;
      }
      responses.push_back(Value::make_dict({{"name", answered_name(*calls->list, result, responses.size())},
                                            {"response", std::move(response)}}));
    }
    if (!responses.empty()) turn.set("tool_responses", Value::make_list(std::move(responses)));
    // The model's answer after the results belongs to the same turn.
    if (i + 1 < in.size() && has_role(in[i + 1], "assistant") && !non_empty_list(in[i + 1].find("tool_calls"))) {
      const Value* text = in[i + 1].find("content");
      if (text && text->is_string() && !text->s.empty()) {
        turn.set("content", *text);
        ++i;
      }
    }
    out.push_back(std::move(turn));
  }
  *messages = Value::make_list(std::move(out));
}

}  // namespace ember::chat

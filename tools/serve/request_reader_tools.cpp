// The request reader (request_reader_sax.h): tools, tool_choice and a
// message's tool_calls. Captured as compact JSON text while they are read
// (charged to the budget, at most kMaxCapturedBytes), then read from that
// text as a document when they end: small, bounded, and read in one place.
#include "tools/serve/request_reader_sax.h"

namespace ember::serve::sax {
namespace {

// Tools (OpenAI allows 128), calls per message, and the captured text: a
// tools array, one function's parameters schema, a message's tool_calls.
constexpr size_t kMaxTools = 128;
constexpr size_t kMaxToolCalls = 128;
constexpr size_t kMaxCapturedBytes = 1 << 20;
constexpr size_t kMaxParametersBytes = 64 << 10;

// A function name as OpenAI allows it: 1..64 of [A-Za-z0-9_-].
bool function_name_ok(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

// A top-level member about tools (field_): tools, tool_choice,
// parallel_tool_calls, and the legacy functions and function_call.
bool RequestReader::tool_field(const Value& v) {
  switch (field_) {
    case Field::kTools:
      if (v.kind != Value::kArray) return type_error("an array of {type: \"function\", function: {...}}", v);
      tools_seen_ = true;
      return start_capture(Capture::kTools, v);
    case Field::kToolChoice:
      tool_choice_seen_ = true;
      if (v.kind == Value::kObject) return start_capture(Capture::kToolChoice, v);
      return tool_choice_string(v);
    case Field::kFunctions:
      if (v.kind != Value::kArray) return type_error("an array of {name, description, parameters}", v);
      functions_seen_ = true;
      return start_capture(Capture::kFunctions, v);
    case Field::kFunctionCall:
      function_call_seen_ = true;
      if (v.kind == Value::kObject) return start_capture(Capture::kFunctionCall, v);
      return tool_choice_string(v);
    case Field::kParallelToolCalls:
      if (v.kind != Value::kBool) return type_error("true or false", v);
      out_->parallel_tool_calls = v.b;
      return true;
    default: return skip(v);
  }
}

bool RequestReader::start_capture(Capture what, const Value& v) {
  capture_ = what;
  capture_depth_ = 0;
  captured_.clear();
  after_key_ = false;
  return capture_value(v);
}

bool RequestReader::captured(size_t before) {
  if (captured_.size() > kMaxCapturedBytes) {
    return fail(400, capture_name() + " is over " + std::to_string(kMaxCapturedBytes >> 10) + " KiB as compact JSON",
                capture_param());
  }
  return charge(captured_.size() - before);
}

bool RequestReader::capture_value(const Value& v) {
  const size_t before = captured_.size();
  if (capture_depth_ > 0 && !after_key_) {
    if (!capture_open_[capture_depth_ - 1].first) captured_ += ',';
    capture_open_[capture_depth_ - 1].first = false;
  }
  after_key_ = false;
  switch (v.kind) {
    case Value::kNull: captured_ += "null"; break;
    case Value::kBool: captured_ += v.b ? "true" : "false"; break;
    case Value::kInt:
    case Value::kUint:
    case Value::kFloat: captured_ += describe(v); break;
    case Value::kString: captured_ += json(*v.s).dump(-1, ' ', false, json::error_handler_t::replace); break;
    case Value::kArray:
    case Value::kObject:
      captured_ += v.kind == Value::kArray ? '[' : '{';
      capture_open_.push_back({v.kind == Value::kObject, true});
      ++capture_depth_;
      break;
  }
  return captured(before);
}

bool RequestReader::capture_key(const std::string& k) {
  const size_t before = captured_.size();
  if (!capture_open_[capture_depth_ - 1].first) captured_ += ',';
  capture_open_[capture_depth_ - 1].first = false;
  captured_ += json(k).dump(-1, ' ', false, json::error_handler_t::replace);
  captured_ += ':';
  after_key_ = true;
  return captured(before);
}

bool RequestReader::capture_end() {
  captured_ += capture_open_.back().object ? '}' : ']';
  capture_open_.pop_back();
  if (--capture_depth_ > 0) return captured(captured_.size() - 1);
  const Capture what = capture_;
  capture_ = Capture::kNone;
  // Ordered: a schema's properties keep their order (the grammar follows it).
  const ojson doc = ojson::parse(captured_, nullptr, false);
  std::string().swap(captured_);
  if (doc.is_discarded()) return fail(400, capture_name() + " is not valid JSON", capture_param());  // cannot happen
  switch (what) {
    case Capture::kTools: return read_tools(doc);
    case Capture::kToolChoice: return read_tool_choice(doc);
    case Capture::kToolCalls: return read_tool_calls(doc);
    case Capture::kFunctions: return read_functions(doc);
    case Capture::kFunctionCall: return read_function_call(doc);
    case Capture::kNone: break;
  }
  return true;
}

std::string RequestReader::capture_name() const {
  return capture_ == Capture::kToolCalls ? where_message() + ".tool_calls'" : quoted(top_name_);
}

// The string member `key` of object `o` into *out: absent or null leaves
// it; another type is a 400 naming where.
bool RequestReader::string_member(const ojson& o, const char* key, const std::string& where, const char* param, std::string* out) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return true;
  if (!it->is_string()) return fail(400, where + "." + key + "' must be a string", param);
  *out = it->get_ref<const std::string&>();
  return charge(out->size());
}

// One function's declaration {name, description, parameters}; `where` names
// it for messages ("'tools[0].function", "'functions[0]").
bool RequestReader::read_function(const ojson& f, const std::string& where, const char* p) {
  if (!charge(sizeof(ToolFunction))) return false;
  ToolFunction tf;
  const auto name = f.find("name");
  if (name == f.end() || !name->is_string() || !function_name_ok(name->get_ref<const std::string&>())) {
    return fail(400, where + ".name' must be 1 to 64 letters, digits, '_' or '-'", p);
  }
  tf.name = name->get_ref<const std::string&>();
  for (const ToolFunction& other : out_->tools) {
    if (other.name == tf.name) return fail(400, where + ".name' = \"" + tf.name + "\" is given twice", p);
  }
  if (!string_member(f, "description", where, p, &tf.description)) return false;
  const auto params = f.find("parameters");
  if (params != f.end() && !params->is_null()) {
    if (!params->is_object()) return fail(400, where + ".parameters' must be a JSON Schema object", p);
    tf.parameters = params->dump();
    if (tf.parameters.size() > kMaxParametersBytes) {
      return fail(400, where + ".parameters' is over " + std::to_string(kMaxParametersBytes >> 10) +
                           " KiB as compact JSON", p);
    }
    if (!charge(tf.parameters.size())) return false;
  }
  out_->tools.push_back(std::move(tf));
  return true;
}

bool RequestReader::read_tools(const ojson& doc) {
  const char* p = "tools";
  if (doc.size() > kMaxTools) {
    return fail(400, "'tools' has " + std::to_string(doc.size()) + " entries: at most " + std::to_string(kMaxTools), p);
  }
  out_->tools.clear();
  for (size_t i = 0; i < doc.size(); ++i) {
    const ojson& t = doc[i];
    const std::string where = "'tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return fail(400, where + "' must be {\"type\": \"function\", \"function\": {...}}", p);
    const auto type = t.find("type");
    if (type == t.end() || !type->is_string() || type->get_ref<const std::string&>() != "function") {
      return fail(400, where + ".type' must be \"function\" (the only tool type ember serves)", p);
    }
    const auto f = t.find("function");
    if (f == t.end() || !f->is_object()) {
      return fail(400, where + ".function' must be an object {name, description, parameters}", p);
    }
    if (!read_function(*f, where + ".function", p)) return false;
  }
  return true;
}

// The legacy form of tools: an array of the functions themselves.
bool RequestReader::read_functions(const ojson& doc) {
  const char* p = "functions";
  if (doc.size() > kMaxTools) {
    return fail(400, "'functions' has " + std::to_string(doc.size()) + " entries: at most " + std::to_string(kMaxTools),
                p);
  }
  out_->tools.clear();
  for (size_t i = 0; i < doc.size(); ++i) {
    const std::string where = "'functions[" + std::to_string(i) + "]";
    if (!doc[i].is_object()) return fail(400, where + "' must be an object {name, description, parameters}", p);
    if (!read_function(doc[i], where, p)) return false;
  }
  return true;
}

bool RequestReader::tool_choice_string(const Value& v) {
  if (v.kind == Value::kString) {
    const std::string& c = *v.s;
    const bool known = c == "none" || c == "auto" || (c == "required" && field_ == Field::kToolChoice);
    if (known) {
      out_->tool_choice = c == "none" ? ToolChoice::kNone : c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
      return true;
    }
  }
  if (field_ == Field::kFunctionCall) {
    return fail(400, "'function_call' must be \"none\", \"auto\" or {\"name\": ...}, got " + describe(v), "function_call");
  }
  return fail(400, "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                   "\"function\": {\"name\": ...}}, got " + describe(v),
              "tool_choice");
}

// function_call {"name": ...}: the legacy form of a named tool_choice.
bool RequestReader::read_function_call(const ojson& doc) {
  const auto name = doc.find("name");
  if (name == doc.end() || !name->is_string()) {
    return fail(400, "'function_call' as an object must be {\"name\": ...} with a string name", "function_call");
  }
  out_->tool_choice = ToolChoice::kNamed;
  out_->tool_choice_name = name->get_ref<const std::string&>();
  return charge(out_->tool_choice_name.size());
}

bool RequestReader::read_tool_choice(const ojson& doc) {
  const auto type = doc.find("type");
  const auto f = doc.find("function");
  if (type == doc.end() || !type->is_string() || type->get_ref<const std::string&>() != "function" ||
      f == doc.end() || !f->is_object()) {
    return fail(400, "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                "tool_choice");
  }
  const auto name = f->find("name");
  if (name == f->end() || !name->is_string()) {
    return fail(400, "'tool_choice.function.name' must be a string", "tool_choice");
  }
  out_->tool_choice = ToolChoice::kNamed;
  out_->tool_choice_name = name->get_ref<const std::string&>();
  return charge(out_->tool_choice_name.size());
}

bool RequestReader::read_tool_calls(const ojson& doc) {
  ChatMessage& m = out_->messages.back();
  const std::string base = where_message() + ".tool_calls";
  if (doc.size() > kMaxToolCalls) {
    return fail(400, base + "' has more than " + std::to_string(kMaxToolCalls) + " calls", "messages");
  }
  if (!charge(doc.size() * sizeof(ToolCall))) return false;
  m.tool_calls.clear();
  for (size_t i = 0; i < doc.size(); ++i) {
    const ojson& c = doc[i];
    const std::string where = base + "[" + std::to_string(i) + "]";
    if (!c.is_object()) return fail(400, where + "' must be {id, type: \"function\", function: {name, arguments}}", "messages");
    const auto type = c.find("type");
    if (type != c.end() && !type->is_null() &&
        !(type->is_string() && type->get_ref<const std::string&>() == "function")) {
      return fail(400, where + ".type' must be \"function\"", "messages");
    }
    const auto f = c.find("function");
    if (f == c.end() || !f->is_object()) return fail(400, where + ".function' must be {name, arguments}", "messages");
    ToolCall call;
    if (!string_member(c, "id", where, "messages", &call.id)) return false;
    const auto name = f->find("name");
    if (name == f->end() || !name->is_string()) return fail(400, where + ".function.name' must be a string", "messages");
    call.name = name->get_ref<const std::string&>();
    const auto args = f->find("arguments");
    if (args != f->end() && args->is_object()) {
      call.arguments = args->dump();  // some clients send the object itself
    } else if (!string_member(*f, "arguments", where + ".function", "messages", &call.arguments)) {
      return false;
    }
    if (!charge(call.name.size() + call.arguments.size())) return false;
    m.tool_calls.push_back(std::move(call));
  }
  return true;
}

// At the root's end: tool_choice's default and agreement with tools; the
// completions API takes neither.
bool RequestReader::tools_end() {
  CompletionRequest& r = *out_;
  // The legacy fields are another spelling of the same request: not both.
  if (tools_seen_ && functions_seen_) {
    return fail(400, "'functions' and 'tools' are both given: 'functions' is the legacy form of 'tools', give one",
                "functions");
  }
  if (tool_choice_seen_ && function_call_seen_) {
    return fail(400, "'function_call' and 'tool_choice' are both given: 'function_call' is the legacy form of "
                     "'tool_choice', give one",
                "function_call");
  }
  // Messages name the fields as the request spelled them (legacy or not).
  const bool legacy = functions_seen_ || (function_call_seen_ && !tools_seen_);
  const char* tools_name = legacy ? "functions" : "tools";
  const char* choice_name = function_call_seen_ ? "function_call" : "tool_choice";
  if (!chat_) {
    if (!r.tools.empty()) {
      return fail(400, std::string("Unsupported parameter: '") + tools_name + "' is only for /v1/chat/completions",
                  tools_name, "unsupported_parameter");
    }
    if ((tool_choice_seen_ || function_call_seen_) && r.tool_choice != ToolChoice::kNone) {
      return fail(400, std::string("Unsupported parameter: '") + choice_name + "' is only for /v1/chat/completions",
                  choice_name, "unsupported_parameter");
    }
    r.tool_choice = ToolChoice::kNone;
    return true;
  }
  if (functions_seen_) r.parallel_tool_calls = false;  // a legacy reply holds one function_call
  if (!tool_choice_seen_ && !function_call_seen_) {
    r.tool_choice = r.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  }
  if ((r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed) && r.tools.empty()) {
    return fail(400, std::string("'") + choice_name + "' asks for a call but '" + tools_name + "' is empty", choice_name);
  }
  if (r.tool_choice == ToolChoice::kNamed) {
    for (const ToolFunction& t : r.tools) {
      if (t.name == r.tool_choice_name) return true;
    }
    return fail(400, std::string("'") + choice_name + (function_call_seen_ ? ".name' = " : ".function.name' = ") +
                         preview_string(r.tool_choice_name) + " is not one of the functions in '" + tools_name + "'",
                choice_name);
  }
  return true;
}

}  // namespace ember::serve::sax

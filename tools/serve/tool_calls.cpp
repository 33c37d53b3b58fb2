#include "tools/serve/tool_calls.h"

#include <random>

#include <nlohmann/json.hpp>

namespace ember::serve {
namespace {

using json = nlohmann::ordered_json;  // arguments keep the order they were written in

constexpr char kCallOpen[] = "<tool_call>";
constexpr char kCallClose[] = "</tool_call>";
constexpr char kPythonTag[] = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

// The arguments grammar of one function (its rules prefixed "t<i>-").
bool arguments_gbnf(const ToolFunction& f, size_t i, std::string* out, std::string* error) {
  const char* schema = f.parameters.empty() ? nullptr : f.parameters.c_str();
  size_t needed = 0;
  ember_status st = ember_json_schema_to_gbnf(schema, nullptr, 0, &needed);
  std::string text;
  if (st == EMBER_ERR_BUFFER_TOO_SMALL || st == EMBER_OK) {
    text.resize(needed);
    st = ember_json_schema_to_gbnf(schema, text.data(), text.size(), &needed);
  }
  if (st != EMBER_OK) {
    *error = "'tools' function '" + f.name + "': its parameters schema: " + ember_last_error();
    return false;
  }
  if (!text.empty() && text.back() == '\0') text.pop_back();
  *out += prefix_gbnf_rules(text, "t" + std::to_string(i) + "-");
  *out += '\n';
  return true;
}

// One call object read from JSON text: {"name": ..., "arguments"|"parameters": {...}}.
bool call_of(const std::string& body, ToolCall* call) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  // Arguments are an object, or (some models) a string holding one's JSON text.
  const bool ok = args != j.end() && (args->is_object() || (args->is_string() && json::accept(args->get_ref<const std::string&>())));
  if (!ok) return false;
  call->name = name->get_ref<const std::string&>();
  call->arguments = args->is_string() ? args->get_ref<const std::string&>()
                                      : args->dump(-1, ' ', false, json::error_handler_t::replace);
  call->id = new_tool_call_id();
  return true;
}

}  // namespace

std::string prefix_gbnf_rules(const std::string& gbnf, const std::string& prefix) {
  std::string out;
  out.reserve(gbnf.size() + gbnf.size() / 4);
  size_t i = 0;
  const size_t n = gbnf.size();
  while (i < n) {
    const char c = gbnf[i];
    if (c == '"' || c == '[') {  // a literal or a class: copied to its unescaped end
      const char close = c == '"' ? '"' : ']';
      out += c;
      ++i;
      while (i < n && gbnf[i] != close) {
        if (gbnf[i] == '\\' && i + 1 < n) out += gbnf[i++];
        out += gbnf[i++];
      }
      if (i < n) out += gbnf[i++];
    } else if (c == '#') {  // a comment, to the line's end
      while (i < n && gbnf[i] != '\n') out += gbnf[i++];
    } else if (ident_start(c)) {
      out += prefix;
      while (i < n && ident_char(gbnf[i])) out += gbnf[i++];
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

bool tool_call_grammar(const CompletionRequest& r, int syntax, std::string* gbnf, std::string* error) {
  std::string rules, alternatives;
  for (size_t i = 0; i < r.tools.size(); ++i) {
    const ToolFunction& f = r.tools[i];
    if (r.tool_choice == ToolChoice::kNamed && f.name != r.tool_choice_name) continue;
    if (!arguments_gbnf(f, i, &rules, error)) return false;
    // Names are [A-Za-z0-9_-] (the reader checks): nothing to escape.
    const std::string call = "call-" + std::to_string(i);
    alternatives += (alternatives.empty() ? "" : " | ") + call;
    const char* key = syntax == EMBER_TOOL_SYNTAX_LLAMA3 ? "parameters" : "arguments";
    rules += call + " ::= \"\\\"" + f.name + "\\\", \\\"" + key + "\\\": \" t" + std::to_string(i) + "-root\n";
  }
  if (syntax == EMBER_TOOL_SYNTAX_LLAMA3) {
    *gbnf = "root ::= \"{\\\"name\\\": \" ( " + alternatives + " ) \"}\"\n" + rules;
  } else {
    *gbnf = std::string("root ::= tool-call") + (r.parallel_tool_calls ? " ( \"\\n\" tool-call )*" : "") + "\n" +
            "tool-call ::= \"<tool_call>\\n{\\\"name\\\": \" ( " + alternatives + " ) \"}\\n</tool_call>\"\n" + rules;
  }
  return true;
}

ParsedReply parse_tool_calls(const std::string& text, int syntax) {
  ParsedReply out;
  if (syntax == EMBER_TOOL_SYNTAX_LLAMA3) {
    std::string body = trim(text);
    if (body.rfind(kPythonTag, 0) == 0) body = trim(body.substr(sizeof kPythonTag - 1));
    ToolCall call;
    if (!body.empty() && body[0] == '{' && call_of(body, &call)) {
      out.calls.push_back(std::move(call));
    } else {
      out.content = trim(text);
    }
    return out;
  }
  std::string content;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find(kCallOpen, at);
    if (open == std::string::npos) {
      content += text.substr(at);
      break;
    }
    content += text.substr(at, open - at);
    const size_t body = open + sizeof kCallOpen - 1;
    const size_t close = text.find(kCallClose, body);
    const size_t end = close == std::string::npos ? text.size() : close + sizeof kCallClose - 1;
    ToolCall call;
    if (call_of(trim(text.substr(body, (close == std::string::npos ? text.size() : close) - body)), &call)) {
      out.calls.push_back(std::move(call));
    } else {
      content += text.substr(open, end - open);  // not a call after all: left as text
    }
    at = end;
  }
  out.content = trim(content);
  return out;
}

std::string new_tool_call_id() {
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

std::string ToolCallStream::add(const std::string& text) {
  text_ += text;
  if (all_calls_ || holding_) return {};
  size_t safe = text_.size();
  if (syntax_ == EMBER_TOOL_SYNTAX_LLAMA3) {
    // A call is the whole reply: decided by its first character that is not space.
    size_t first = 0;
    while (first < text_.size() && is_space(text_[first])) ++first;
    if (first == text_.size()) return {};
    if (text_[first] == '{' || text_[first] == '<') {
      holding_ = true;
      return {};
    }
  } else {
    const size_t open = text_.find(kCallOpen, released_);
    if (open != std::string::npos) {
      holding_ = true;
      safe = open;
    } else {
      // Hold back an ending that may be the start of "<tool_call>".
      for (size_t k = sizeof kCallOpen - 2; k > 0; --k) {
        if (text_.size() >= k && text_.compare(text_.size() - k, k, kCallOpen, k) == 0) {
          safe = text_.size() - k;
          break;
        }
      }
    }
  }
  if (safe <= released_) return {};
  std::string out = text_.substr(released_, safe - released_);
  released_ = safe;
  return out;
}

std::string tool_completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                                 const std::string& model, const std::string& text, int syntax, Finish finish,
                                 const Usage& usage, const std::vector<TokenLogprobs>* logprobs) {
  ParsedReply parsed = parse_tool_calls(text, syntax);
  if (parsed.calls.empty()) return completion_body(r, id, created, model, text, finish, usage, logprobs);
  if (finish == Finish::kStop) finish = Finish::kToolCalls;
  return completion_body(r, id, created, model, parsed.content, finish, usage, logprobs, &parsed.calls);
}

std::string tool_stream_tail(const CompletionRequest& r, const std::string& id, int64_t created,
                             const std::string& model, ToolCallStream* calls, Finish* finish) {
  const ParsedReply rest = calls->finish();
  std::string out;
  if (!rest.content.empty()) out += stream_chunk(r, id, created, model, rest.content, nullptr, false);
  for (size_t i = 0; i < rest.calls.size(); ++i) out += stream_tool_call_chunks(r, id, created, model, rest.calls[i], i);
  if (!rest.calls.empty() && *finish == Finish::kStop) *finish = Finish::kToolCalls;
  return out;
}

ParsedReply ToolCallStream::finish() {
  const std::string rest = text_.substr(released_);
  released_ = text_.size();
  ParsedReply p = parse_tool_calls(rest, syntax_);
  if (p.calls.empty()) p.content = rest;  // no call: the text as it came
  return p;
}

}  // namespace ember::serve

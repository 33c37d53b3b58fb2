#include "tools/serve/tool_calls.h"

#include <algorithm>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

namespace ember::serve {
namespace {

using json = nlohmann::ordered_json;  // arguments keep the order they were written in

constexpr char kCallOpen[] = "<tool_call>";
constexpr char kCallClose[] = "</tool_call>";
constexpr char kPythonTag[] = "<|python_tag|>";
constexpr char kMistralCalls[] = "[TOOL_CALLS]";  // a control token: often printed as nothing
constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";  // call ids

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

// One call object: {"name": ..., "arguments"|"parameters": {...}}.
bool call_of(const json& j, int syntax, ToolCall* call) {
  if (!j.is_object()) return false;
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
  call->id = new_tool_call_id(syntax);
  return true;
}

// The same from JSON text.
bool call_of(const std::string& body, int syntax, ToolCall* call) {
  const json j = json::parse(body, nullptr, false);
  return !j.is_discarded() && call_of(j, syntax, call);
}

// The complete elements of a JSON array's text (body[0] is '['), each as
// its text: a cut array (a token limit) gives those before the cut. Found
// by brackets and strings; each element is parsed by the caller.
std::vector<std::string> array_elements(const std::string& body) {
  std::vector<std::string> out;
  size_t depth = 0, start = 1;
  bool in_string = false, escaped = false;
  for (size_t i = 1; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == ',' || c == ']') && depth == 0) {
      out.push_back(trim(body.substr(start, i - start)));
      if (c == ']') break;
      start = i + 1;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return out;
}

// Mistral's calls: "[TOOL_CALLS]" (or nothing, the control token printed
// as nothing) and a JSON array of call objects, every one a call (those
// before a cut, when the array was cut).
ParsedReply parse_mistral(const std::string& text) {
  ParsedReply out;
  const size_t marker = text.find(kMistralCalls);
  const std::string before = marker == std::string::npos ? "" : text.substr(0, marker);
  const std::string body = trim(marker == std::string::npos ? text : text.substr(marker + sizeof kMistralCalls - 1));
  const std::vector<std::string> elements = body.empty() || body[0] != '[' ? std::vector<std::string>()
                                                                           : array_elements(body);
  bool ok = !elements.empty();
  for (size_t i = 0; ok && i < elements.size(); ++i) {
    ToolCall call;
    ok = call_of(elements[i], EMBER_TOOL_SYNTAX_MISTRAL, &call);
    out.calls.push_back(std::move(call));
  }
  if (!ok) {
    out.calls.clear();
    out.content = trim(text);
    return out;
  }
  out.content = trim(before);
  return out;
}

// Llama 3.x: the whole reply is one call object, perhaps after <|python_tag|>.
ParsedReply parse_llama3(const std::string& text) {
  ParsedReply out;
  std::string body = trim(text);
  if (body.rfind(kPythonTag, 0) == 0) body = trim(body.substr(sizeof kPythonTag - 1));
  ToolCall call;
  if (!body.empty() && body[0] == '{' && call_of(body, EMBER_TOOL_SYNTAX_LLAMA3, &call)) {
    out.calls.push_back(std::move(call));
  } else {
    out.content = trim(text);
  }
  return out;
}

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

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
  const std::string object = "\"{\\\"name\\\": \" ( " + alternatives + " ) \"}\"";
  auto more = [&](const char* separator) {  // the calls after the first, when parallel
    return r.parallel_tool_calls ? std::string(" ( ") + separator + " tool-call )*" : std::string();
  };
  if (syntax == EMBER_TOOL_SYNTAX_LLAMA3) {
    // One call: Llama 3.x's templates render one call per assistant message
    // ("This model only supports single tool-calls at once!"), so
    // parallel_tool_calls cannot ask for more.
    *gbnf = "root ::= " + object + "\n" + rules;
  } else if (syntax == EMBER_TOOL_SYNTAX_MISTRAL) {
    // The marker is a control token in Mistral's vocabularies (its text is
    // empty, so no token spells it): optional, the array is the call.
    *gbnf = "root ::= \"[TOOL_CALLS]\"? \"[\" tool-call" + more("\", \"") + " \"]\"\n" +
            "tool-call ::= " + object + "\n" + rules;
  } else {
    *gbnf = "root ::= tool-call" + more("\"\\n\"") + "\n" +
            "tool-call ::= \"<tool_call>\\n\" " + object + " \"\\n</tool_call>\"\n" + rules;
  }
  return true;
}

ParsedReply parse_tool_calls(const std::string& text, int syntax) {
  if (syntax == EMBER_TOOL_SYNTAX_LLAMA3) return parse_llama3(text);
  if (syntax == EMBER_TOOL_SYNTAX_MISTRAL) return parse_mistral(text);
  ParsedReply out;
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
    const size_t body_end = close == std::string::npos ? text.size() : close;
    if (call_of(trim(text.substr(body, body_end - body)), EMBER_TOOL_SYNTAX_HERMES, &call)) {
      out.calls.push_back(std::move(call));
    } else {
      content += text.substr(open, end - open);  // not a call after all: left as text
    }
    at = end;
  }
  out.content = trim(content);
  return out;
}

std::string new_tool_call_id(int syntax) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const bool mistral = syntax == EMBER_TOOL_SYNTAX_MISTRAL;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

std::string template_call_id(const std::string& id, int syntax) {
  if (syntax != EMBER_TOOL_SYNTAX_MISTRAL) return id;
  if (id.size() == 9 && std::all_of(id.begin(), id.end(), alnum)) return id;
  // FNV-1a of the id, as 9 base-62 digits: the same id, the same stand-in.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ull;
  std::string out;
  for (int i = 0; i < 9; ++i, h /= 62) out += kChars[h % 62];
  return out;
}

std::string ToolCallStream::add(const std::string& text) {
  text_ += text;
  if (all_calls_) {
    scan_calls();
    return {};
  }
  if (holding_) return {};
  size_t safe = text_.size();
  if (syntax_ != EMBER_TOOL_SYNTAX_HERMES) {
    // Llama 3.x's call is the whole reply, Mistral's may be (its marker
    // printed as nothing): decided by the first character that is not space.
    size_t first = 0;
    while (first < text_.size() && is_space(text_[first])) ++first;
    if (first == text_.size()) return {};
    const char c = text_[first];
    const bool may_call = syntax_ == EMBER_TOOL_SYNTAX_LLAMA3 ? c == '{' || c == '<' : c == '[';
    if (may_call) {
      holding_ = true;
      return {};
    }
  }
  if (syntax_ != EMBER_TOOL_SYNTAX_LLAMA3) {
    const char* marker = syntax_ == EMBER_TOOL_SYNTAX_MISTRAL ? kMistralCalls : kCallOpen;
    const size_t len = std::strlen(marker);
    const size_t open = text_.find(marker, released_);
    if (open != std::string::npos) {
      holding_ = true;
      safe = open;
    } else {
      // Hold back an ending that may be the start of the marker.
      for (size_t k = len - 1; k > 0; --k) {
        if (text_.size() >= k && text_.compare(text_.size() - k, k, marker, k) == 0) {
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

std::string tool_stream_deltas(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, ToolCallStream* calls) {
  std::string out;
  for (const ToolCallStream::Delta& d : calls->deltas()) {
    if (d.first) {
      ToolCall call{d.id, d.name, ""};
      out += stream_tool_call_start(r, id, created, model, call, d.index);
    }
    if (!d.arguments.empty()) out += stream_tool_call_arguments(r, id, created, model, d.arguments, d.index);
  }
  return out;
}

std::string tool_stream_tail(const CompletionRequest& r, const std::string& id, int64_t created,
                             const std::string& model, ToolCallStream* calls, Finish* finish) {
  std::string out = tool_stream_deltas(r, id, created, model, calls);
  const ParsedReply rest = calls->finish();
  if (!rest.content.empty()) out += stream_chunk(r, id, created, model, rest.content, nullptr, false);
  for (size_t i = 0; i < rest.calls.size(); ++i) out += stream_tool_call_chunks(r, id, created, model, rest.calls[i], i);
  const bool called = !rest.calls.empty() || calls->streamed_calls() > 0;
  if (called && *finish == Finish::kStop) *finish = Finish::kToolCalls;
  return out;
}

ParsedReply ToolCallStream::finish() {
  if (calls_ > 0) return {};  // streamed as deltas
  const std::string rest = text_.substr(released_);
  released_ = text_.size();
  ParsedReply p = parse_tool_calls(rest, syntax_);
  if (p.calls.empty()) p.content = rest;  // no call: the text as it came
  return p;
}

std::vector<ToolCallStream::Delta> ToolCallStream::deltas() {
  std::vector<Delta> out;
  out.swap(deltas_);
  return out;
}

// The text is the call grammar's (tool_call_grammar): every call object
// writes {"name": "NAME", "arguments"|"parameters": VALUE}, names without
// escapes; the value is followed to its end by its brackets and strings.
void ToolCallStream::scan_calls() {
  while (scan_ < text_.size()) {
    if (in_arguments_) {
      scan_arguments();
    } else if (!scan_call_start()) {
      return;  // the next call's name is not whole yet
    }
  }
}

bool ToolCallStream::scan_call_start() {
  static const char kName[] = "\"name\": \"";
  const size_t at = text_.find(kName, scan_);
  if (at == std::string::npos) return false;
  const size_t name = at + sizeof kName - 1;
  const size_t name_end = text_.find('"', name);
  if (name_end == std::string::npos) return false;
  const size_t colon = text_.find("\": ", name_end + 1);  // the end of "arguments": or "parameters":
  if (colon == std::string::npos) return false;
  Delta d;
  d.index = calls_++;
  d.first = true;
  d.id = new_tool_call_id(syntax_);
  d.name = text_.substr(name, name_end - name);
  deltas_.push_back(std::move(d));
  scan_ = colon + 3;
  in_arguments_ = true;
  depth_ = 0;
  in_string_ = escaped_ = false;
  return true;
}

void ToolCallStream::scan_arguments() {
  const size_t from = scan_;
  bool done = false;
  while (scan_ < text_.size() && !done) {
    const char c = text_[scan_++];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
        done = depth_ == 0;  // a string value (a schema may ask for one)
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']' || c == ',') {
      if (depth_ == 0) {  // the end of a number or literal value: not its text
        --scan_;
        done = true;
      } else if (c != ',') {
        done = --depth_ == 0;
      }
    }
  }
  // One delta per call per add: pieces of the same call are joined.
  const std::string piece = text_.substr(from, scan_ - from);
  if (!deltas_.empty() && deltas_.back().index == calls_ - 1) {
    deltas_.back().arguments += piece;
  } else {
    Delta d;
    d.index = calls_ - 1;
    d.arguments = piece;
    deltas_.push_back(std::move(d));
  }
  if (done) in_arguments_ = false;
}

}  // namespace ember::serve

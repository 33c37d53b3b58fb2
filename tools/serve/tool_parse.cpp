// Calls read back out of generated text, one reader per family's form
// (tool_syntax.h). Every reader is total: calls, or none and the text as
// content.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "tools/serve/tool_args_gemma.h"
#include "tools/serve/tool_syntax.h"

namespace ember::serve {
namespace {

using json = nlohmann::ordered_json;  // arguments keep the order they were written in

constexpr char kCallOpen[] = "<tool_call>";
constexpr char kCallClose[] = "</tool_call>";
constexpr char kPythonTag[] = "<|python_tag|>";
constexpr char kMistralCalls[] = "[TOOL_CALLS]";  // a control token: often printed as nothing
constexpr char kMistralArgs[] = "[ARGS]";
constexpr char kMistralCallId[] = "[CALL_ID]";
constexpr char kPhiOpen[] = "<|tool_call|>";
constexpr char kPhiClose[] = "<|/tool_call|>";
constexpr char kGemmaOpen[] = "<|tool_call>";
constexpr char kGemmaClose[] = "<tool_call|>";
constexpr char kGemmaCall[] = "call:";
constexpr char kGemmaResponse[] = "<|tool_response>";  // what Gemma 4 writes after its calls

template <size_t N>
constexpr size_t len(const char (&)[N]) {
  return N - 1;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool name_char(char c) { return alnum(c) || c == '_' || c == '-' || c == '.'; }

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

bool starts_at(const std::string& s, size_t i, const char* lit, size_t n) { return s.compare(i, n, lit, n) == 0; }

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

// Where the JSON value at text[at] ('{' or '[') ends (one past its closing
// bracket), found by brackets and strings; npos when it does not end.
size_t json_value_end(const std::string& text, size_t at) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
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

// A JSON array of call objects (or, as Phi-4-mini may write them, objects
// separated by commas without the brackets), every element a call: those
// before a cut when it was cut. False when any element is not a call.
bool calls_of_array(std::string body, int syntax, std::vector<ToolCall>* calls) {
  body = trim(body);
  if (!body.empty() && body[0] == '{') body = "[" + body + "]";
  if (body.empty() || body[0] != '[') return false;
  const std::vector<std::string> elements = array_elements(body);
  if (elements.empty()) return false;
  for (const std::string& e : elements) {
    ToolCall call;
    if (!call_of(e, syntax, &call)) return false;
    calls->push_back(std::move(call));
  }
  return true;
}

ParsedReply plain(const std::string& text) {
  ParsedReply out;
  out.content = trim(text);
  return out;
}

// Hermes/Qwen: <tool_call> JSON </tool_call>, anywhere, any number.
ParsedReply parse_hermes(const std::string& text) {
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
    const size_t body = open + len(kCallOpen);
    const size_t close = text.find(kCallClose, body);
    const size_t end = close == std::string::npos ? text.size() : close + len(kCallClose);
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

// Llama 3.x: the whole reply is one call object, perhaps after <|python_tag|>.
ParsedReply parse_llama3(const std::string& text) {
  ParsedReply out;
  std::string body = trim(text);
  if (body.rfind(kPythonTag, 0) == 0) body = trim(body.substr(len(kPythonTag)));
  ToolCall call;
  if (!body.empty() && body[0] == '{' && call_of(body, EMBER_TOOL_SYNTAX_LLAMA3, &call)) {
    out.calls.push_back(std::move(call));
  } else {
    out.content = trim(text);
  }
  return out;
}

// Mistral v3: "[TOOL_CALLS]" (or nothing, the control token printed as
// nothing) and a JSON array of call objects.
ParsedReply parse_mistral(const std::string& text) {
  ParsedReply out;
  const size_t marker = text.find(kMistralCalls);
  const std::string before = marker == std::string::npos ? "" : text.substr(0, marker);
  const std::string body = marker == std::string::npos ? text : text.substr(marker + len(kMistralCalls));
  if (trim(body).rfind('[', 0) != 0 || !calls_of_array(body, EMBER_TOOL_SYNTAX_MISTRAL, &out.calls)) {
    return plain(text);
  }
  out.content = trim(before);
  return out;
}

// Phi-4-mini (and Granite 3.x): "<|tool_call|>" and a JSON array of call
// objects, perhaps closed by "<|/tool_call|>"; the markers may be control
// tokens printed as nothing (then the reply is the array).
ParsedReply parse_phi4(const std::string& text) {
  ParsedReply out;
  if (text.find(kPhiOpen) == std::string::npos) {
    const std::string body = trim(text);
    if (body.empty() || (body[0] != '[' && body[0] != '{') ||
        !calls_of_array(body, EMBER_TOOL_SYNTAX_PHI4, &out.calls)) {
      return plain(text);
    }
    return out;
  }
  std::string content;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find(kPhiOpen, at);
    if (open == std::string::npos) {
      content += text.substr(at);
      break;
    }
    content += text.substr(at, open - at);
    const size_t body = open + len(kPhiOpen);
    const size_t close = text.find(kPhiClose, body);
    const size_t body_end = close == std::string::npos ? text.size() : close;
    const size_t end = close == std::string::npos ? text.size() : close + len(kPhiClose);
    std::vector<ToolCall> calls;
    if (calls_of_array(text.substr(body, body_end - body), EMBER_TOOL_SYNTAX_PHI4, &calls)) {
      for (ToolCall& c : calls) out.calls.push_back(std::move(c));
    } else {
      content += text.substr(open, end - open);  // not calls after all: left as text
    }
    at = end;
  }
  out.content = trim(content);
  return out;
}

// A name printed with the id of an invisible [CALL_ID] glued to it
// ("get_weather" + "a1B2c3D4e"): the name offered and the id, when `names`
// says so.
void split_glued_id(const std::vector<std::string>& names, ToolCall* call) {
  if (names.empty() || std::find(names.begin(), names.end(), call->name) != names.end()) return;
  const std::string& n = call->name;
  if (n.size() <= 9) return;
  const std::string head = n.substr(0, n.size() - 9), id = n.substr(n.size() - 9);
  if (std::all_of(id.begin(), id.end(), alnum) && std::find(names.begin(), names.end(), head) != names.end()) {
    call->name = head;
    call->id = id;
  }
}

// One call of Mistral's later form at text[at]: [TOOL_CALLS]? NAME
// ([CALL_ID]ID)? [ARGS]? {...}. Where it ends, or npos (*cut: its object
// began but did not end, as a token limit leaves it).
size_t mistral_args_call(const std::string& text, size_t at, ToolCall* call, bool* cut) {
  *cut = false;
  if (starts_at(text, at, kMistralCalls, len(kMistralCalls))) at = skip_space(text, at + len(kMistralCalls));
  const size_t name = at;
  while (at < text.size() && name_char(text[at])) ++at;
  call->name = text.substr(name, at - name);
  call->id = new_tool_call_id(EMBER_TOOL_SYNTAX_MISTRAL_ARGS);
  if (starts_at(text, at, kMistralCallId, len(kMistralCallId))) {
    at += len(kMistralCallId);
    const size_t id = at;
    while (at < text.size() && alnum(text[at])) ++at;
    if (at - id == 9) call->id = text.substr(id, 9);
  }
  if (starts_at(text, at, kMistralArgs, len(kMistralArgs))) at += len(kMistralArgs);
  at = skip_space(text, at);
  if (call->name.empty() || at >= text.size() || text[at] != '{') return std::string::npos;
  const size_t end = json_value_end(text, at);
  if (end == std::string::npos) {
    *cut = true;
    return end;
  }
  const json args = json::parse(text.substr(at, end - at), nullptr, false);
  if (!args.is_object()) return std::string::npos;
  call->arguments = args.dump(-1, ' ', false, json::error_handler_t::replace);
  return end;
}

// Mistral's later form, once per call; each marker optional (control
// tokens printed as nothing). The reply begins with a call, or text before
// the first visible [TOOL_CALLS] is content; text after the calls too. A
// call cut by a token limit after whole ones: those.
ParsedReply parse_mistral_args(const std::string& text, const std::vector<std::string>& names) {
  ParsedReply out;
  ToolCall probe;
  bool cut = false;
  size_t at = skip_space(text, 0);
  std::string before, after;
  if (mistral_args_call(text, at, &probe, &cut) == std::string::npos && !cut) {
    const size_t marker = text.find(kMistralCalls);
    if (marker == std::string::npos) return plain(text);
    before = text.substr(0, marker);
    at = marker;
  }
  while ((at = skip_space(text, at)) < text.size()) {
    ToolCall call;
    const size_t end = mistral_args_call(text, at, &call, &cut);
    if (end == std::string::npos) {
      if (out.calls.empty()) return plain(text);
      if (!cut) after = trim(text.substr(at));  // text after the calls
      break;
    }
    split_glued_id(names, &call);
    out.calls.push_back(std::move(call));
    at = end;
  }
  if (out.calls.empty()) return plain(text);
  out.content = trim(before);
  if (!after.empty()) out.content += (out.content.empty() ? "" : "\n") + after;
  return out;
}

// Gemma 4: <|tool_call>call:NAME{key:value,...}<tool_call|>, anywhere, any
// number (the marks printed: llama.cpp's GGUFs make them user-defined); a
// reply that begins with "call:" is read as one too.
ParsedReply parse_gemma4(const std::string& text) {
  ParsedReply out;
  std::string content;
  size_t at = 0;
  const size_t first = skip_space(text, 0);
  const bool bare = starts_at(text, first, kGemmaCall, len(kGemmaCall));
  while (at < text.size()) {
    size_t open = text.find(kGemmaOpen, at);
    size_t body = open + len(kGemmaOpen);
    if (bare && at == 0) {
      open = 0;
      body = first;
    }
    if (open == std::string::npos) {
      content += text.substr(at);
      break;
    }
    content += text.substr(at, open - at);
    size_t i = body;
    ToolCall call;
    std::string args;
    size_t used = 0;
    bool ok = starts_at(text, i, kGemmaCall, len(kGemmaCall));
    if (ok) {
      i += len(kGemmaCall);
      const size_t name = i;
      while (i < text.size() && name_char(text[i])) ++i;
      call.name = text.substr(name, i - name);
      ok = !call.name.empty() && gemma_args_to_json(std::string_view(text).substr(i), &args, &used);
    }
    if (!ok) {  // not a call after all: left as text, from its mark on
      const size_t next = text.find(kGemmaOpen, body);
      const size_t end = next == std::string::npos ? text.size() : next;
      content += text.substr(open, end - open);
      at = end;
      continue;
    }
    call.arguments = std::move(args);
    call.id = new_tool_call_id(EMBER_TOOL_SYNTAX_GEMMA4);
    out.calls.push_back(std::move(call));
    at = i + used;
    if (starts_at(text, at, kGemmaClose, len(kGemmaClose))) at += len(kGemmaClose);
    if (starts_at(text, at, kGemmaResponse, len(kGemmaResponse))) at += len(kGemmaResponse);
  }
  out.content = trim(content);
  return out;
}

}  // namespace

ParsedReply parse_tool_calls(const std::string& text, int syntax, const std::vector<std::string>& names) {
  switch (syntax) {
    case EMBER_TOOL_SYNTAX_LLAMA3: return parse_llama3(text);
    case EMBER_TOOL_SYNTAX_MISTRAL: return parse_mistral(text);
    case EMBER_TOOL_SYNTAX_MISTRAL_ARGS: return parse_mistral_args(text, names);
    case EMBER_TOOL_SYNTAX_PHI4: return parse_phi4(text);
    case EMBER_TOOL_SYNTAX_GEMMA4: return parse_gemma4(text);
    default: return parse_hermes(text);
  }
}

}  // namespace ember::serve

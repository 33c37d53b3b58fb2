// ToolCallStream (tool_syntax.h): with tool_choice "auto", releasing the
// text that cannot be part of a call and holding the rest for
// parse_tool_calls; with a demanded call, announcing each call and
// streaming its arguments from the grammar's text.
#include <cstring>

#include "tools/serve/tool_args_gemma.h"
#include "tools/serve/tool_syntax.h"

namespace ember::serve {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

// The mark a call begins with in the middle of a reply (nullptr: Llama 3.x,
// whose call is the whole reply).
const char* call_marker(int syntax) {
  switch (syntax) {
    case EMBER_TOOL_SYNTAX_LLAMA3: return nullptr;
    case EMBER_TOOL_SYNTAX_MISTRAL:
    case EMBER_TOOL_SYNTAX_MISTRAL_ARGS: return "[TOOL_CALLS]";
    case EMBER_TOOL_SYNTAX_PHI4: return "<|tool_call|>";
    case EMBER_TOOL_SYNTAX_GEMMA4: return "<|tool_call>";
    default: return "<tool_call>";
  }
}

// 1: text[at...] begins with `lit`; -1: text ends inside a prefix of it; 0: neither.
int literal_at(const std::string& text, size_t at, const char* lit) {
  const size_t n = std::strlen(lit);
  const size_t have = text.size() - at < n ? text.size() - at : n;
  if (text.compare(at, have, lit, have) != 0) return 0;
  return have == n ? 1 : -1;
}

}  // namespace

ToolCallStream::~ToolCallStream() = default;

int ToolCallStream::may_start_call(size_t first) const {
  const char c = text_[first];
  switch (syntax_) {
    case EMBER_TOOL_SYNTAX_LLAMA3: return c == '{' || c == '<' ? 1 : 0;
    case EMBER_TOOL_SYNTAX_MISTRAL: return c == '[' ? 1 : 0;
    case EMBER_TOOL_SYNTAX_PHI4: return c == '[' || c == '{' ? 1 : 0;
    case EMBER_TOOL_SYNTAX_GEMMA4: return literal_at(text_, first, "call:");
    case EMBER_TOOL_SYNTAX_MISTRAL_ARGS: {
      // Its markers printed as nothing, a call is a name and its object.
      if (c == '[') return 1;
      size_t i = first;
      while (i < text_.size() && name_char(text_[i])) ++i;
      if (i == first) return 0;
      if (i == text_.size()) return i - first > 80 ? 0 : -1;
      return text_[i] == '{' || text_[i] == '[' ? 1 : 0;
    }
    default: return 0;  // Hermes: a call has its marker
  }
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
    // A call without a marker is the whole reply: decided by how the text
    // begins (after space).
    size_t first = 0;
    while (first < text_.size() && is_space(text_[first])) ++first;
    if (first == text_.size()) return {};
    const int may = may_start_call(first);
    if (may != 0) {
      holding_ = may > 0;
      return {};
    }
  }
  if (const char* marker = call_marker(syntax_)) {
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

ParsedReply ToolCallStream::finish() {
  if (calls_ > 0) return {};  // streamed as deltas
  const std::string rest = text_.substr(released_);
  released_ = text_.size();
  ParsedReply p = parse_tool_calls(rest, syntax_, names_);
  if (p.calls.empty()) p.content = rest;  // no call: the text as it came
  return p;
}

std::vector<ToolCallStream::Delta> ToolCallStream::deltas() {
  std::vector<Delta> out;
  out.swap(deltas_);
  return out;
}

// The text is the call grammar's (tool_call_grammar): every call writes its
// name where its form puts it, then its arguments, followed to their end
// by brackets and strings (Gemma's converted as they come).
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
  size_t name = 0, name_end = 0, args = 0;  // the name, and where the arguments begin
  if (syntax_ == EMBER_TOOL_SYNTAX_MISTRAL_ARGS || syntax_ == EMBER_TOOL_SYNTAX_GEMMA4) {
    const bool gemma = syntax_ == EMBER_TOOL_SYNTAX_GEMMA4;
    size_t at = scan_;
    while (at < text_.size() && is_space(text_[at])) ++at;
    if (gemma) {  // the end of the call before
      const int end = literal_at(text_, at, "<tool_call|>");
      if (end < 0) return false;
      if (end > 0) at += 12;
    }
    const int mark = literal_at(text_, at, gemma ? "<|tool_call>call:" : "[TOOL_CALLS]");
    if (mark < 0) return false;
    if (mark > 0) at += gemma ? 17 : 12;
    name = at;
    while (at < text_.size() && name_char(text_[at])) ++at;
    name_end = at;
    if (at < text_.size() && text_[at] == '[' && !gemma) {
      const int tag = literal_at(text_, at, "[ARGS]");
      if (tag < 0) return false;
      if (tag > 0) at += 6;
    }
    if (at >= text_.size()) return false;
    if (text_[at] != '{' || name_end == name) {  // not the grammar's text: nothing more is read
      scan_ = text_.size();
      return false;
    }
    args = at;
  } else {
    static const char kName[] = "\"name\": \"";
    const size_t at = text_.find(kName, scan_);
    if (at == std::string::npos) return false;
    name = at + sizeof kName - 1;
    name_end = text_.find('"', name);
    if (name_end == std::string::npos) return false;
    const size_t colon = text_.find("\": ", name_end + 1);  // the end of "arguments": or "parameters":
    if (colon == std::string::npos) return false;
    args = colon + 3;
  }
  Delta d;
  d.index = calls_++;
  d.first = true;
  d.id = new_tool_call_id(syntax_);
  d.name = text_.substr(name, name_end - name);
  deltas_.push_back(std::move(d));
  scan_ = args;
  in_arguments_ = true;
  depth_ = 0;
  in_string_ = escaped_ = false;
  if (syntax_ == EMBER_TOOL_SYNTAX_GEMMA4) {
    gemma_ = std::make_unique<GemmaArgsReader>();
    args_at_ = args;
  }
  return true;
}

void ToolCallStream::add_piece(const std::string& piece) {
  // One delta per call per add: pieces of the same call are joined.
  if (!deltas_.empty() && deltas_.back().index == calls_ - 1) {
    deltas_.back().arguments += piece;
  } else {
    Delta d;
    d.index = calls_ - 1;
    d.arguments = piece;
    deltas_.push_back(std::move(d));
  }
}

void ToolCallStream::scan_arguments() {
  if (gemma_) {
    add_piece(gemma_->add(std::string_view(text_).substr(scan_)));
    scan_ = text_.size();
    if (gemma_->done() || gemma_->failed()) {
      if (gemma_->done()) scan_ = args_at_ + gemma_->used();
      in_arguments_ = false;
      gemma_.reset();
    }
    return;
  }
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
  add_piece(text_.substr(from, scan_ - from));
  if (done) in_arguments_ = false;
}

}  // namespace ember::serve

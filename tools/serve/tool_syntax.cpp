// The call grammars of the families' forms, GBNF rule renaming, call ids.
// Reading calls back: tool_parse.cpp; streaming: tool_call_stream.cpp.
#include <algorithm>
#include <random>

#include "tools/serve/tool_args_gemma.h"
#include "tools/serve/tool_syntax.h"

namespace ember::serve {
namespace {

constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";  // call ids

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '_'; }
bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool mistral(int syntax) { return syntax == EMBER_TOOL_SYNTAX_MISTRAL || syntax == EMBER_TOOL_SYNTAX_MISTRAL_ARGS; }

// The arguments grammar of one function (its rules prefixed "t<i>-"): its
// schema's JSON, or for Gemma 4 its own form.
bool arguments_gbnf(const ToolFunction& f, size_t i, int syntax, std::string* out, std::string* error) {
  const std::string prefix = "t" + std::to_string(i) + "-";
  if (syntax == EMBER_TOOL_SYNTAX_GEMMA4) {
    std::string why;
    if (!gemma_arguments_gbnf(f.parameters, prefix + "root", out, &why)) {
      *error = "'tools' function '" + f.name + "': " + why;
      return false;
    }
    return true;
  }
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
  *out += prefix_gbnf_rules(text, prefix);
  *out += '\n';
  return true;
}

// The calls after the first, when parallel.
std::string more(bool parallel, const std::string& separator) {
  return parallel ? " ( " + separator + (separator.empty() ? "" : " ") + "tool-call )*" : std::string();
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

bool tool_call_grammar(const std::vector<ToolFunction>& tools, const std::string& only, bool parallel, int syntax,
                       std::string* gbnf, std::string* error) {
  std::string rules, alternatives;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolFunction& f = tools[i];
    if (!only.empty() && f.name != only) continue;
    if (!arguments_gbnf(f, i, syntax, &rules, error)) return false;
    // Names are [A-Za-z0-9_-] (checked by the callers): nothing to escape.
    const std::string call = "call-" + std::to_string(i);
    const std::string args = "t" + std::to_string(i) + "-root";
    alternatives += (alternatives.empty() ? "" : " | ") + call;
    if (syntax == EMBER_TOOL_SYNTAX_MISTRAL_ARGS) {
      // [ARGS] is a control token too: optional, the object follows the name.
      rules += call + " ::= \"" + f.name + "\" \"[ARGS]\"? " + args + "\n";
    } else if (syntax == EMBER_TOOL_SYNTAX_GEMMA4) {
      rules += call + " ::= \"" + f.name + "\" " + args + "\n";
    } else {
      const char* key = syntax == EMBER_TOOL_SYNTAX_LLAMA3 ? "parameters" : "arguments";
      rules += call + " ::= \"\\\"" + f.name + "\\\", \\\"" + key + "\\\": \" " + args + "\n";
    }
  }
  if (alternatives.empty()) {
    *error = "'tool_choice' names '" + only + "', which is not one of the tools";
    return false;
  }
  const std::string object = "\"{\\\"name\\\": \" ( " + alternatives + " ) \"}\"";
  switch (syntax) {
    case EMBER_TOOL_SYNTAX_LLAMA3:
      // One call: Llama 3.x's templates render one call per assistant message
      // ("This model only supports single tool-calls at once!").
      *gbnf = "root ::= " + object + "\n" + rules;
      break;
    case EMBER_TOOL_SYNTAX_MISTRAL:
      // The marker is a control token in Mistral's vocabularies (its text is
      // empty, so no token spells it): optional, the array is the call.
      *gbnf = "root ::= \"[TOOL_CALLS]\"? \"[\" tool-call" + more(parallel, "\", \"") + " \"]\"\n" +
              "tool-call ::= " + object + "\n" + rules;
      break;
    case EMBER_TOOL_SYNTAX_MISTRAL_ARGS:
      *gbnf = "root ::= tool-call" + more(parallel, "") + "\n" + "tool-call ::= \"[TOOL_CALLS]\"? ( " + alternatives +
              " )\n" + rules;
      break;
    case EMBER_TOOL_SYNTAX_PHI4:
      // Phi's markers may be control tokens as well: optional.
      *gbnf = "root ::= \"<|tool_call|>\"? \"[\" tool-call" + more(parallel, "\", \"") +
              " \"]\" \"<|/tool_call|>\"?\n" + "tool-call ::= " + object + "\n" + rules;
      break;
    case EMBER_TOOL_SYNTAX_GEMMA4:
      // Gemma 4's markers are tokens that print (llama.cpp's GGUFs make them
      // user-defined), its calls back to back.
      *gbnf = "root ::= tool-call" + more(parallel, "") + "\n" + "tool-call ::= \"<|tool_call>call:\" ( " +
              alternatives + " ) \"<tool_call|>\"\n" + rules + kGemmaValueRules;
      break;
    default:
      *gbnf = "root ::= tool-call" + more(parallel, "\"\\n\"") + "\n" +
              "tool-call ::= \"<tool_call>\\n\" " + object + " \"\\n</tool_call>\"\n" + rules;
      break;
  }
  return true;
}

std::string new_tool_call_id(int syntax) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const bool nine = mistral(syntax);
  std::string id = nine ? "" : "call_";
  for (int i = 0; i < (nine ? 9 : 24); ++i) id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

std::string template_call_id(const std::string& id, int syntax) {
  if (!mistral(syntax)) return id;
  if (id.size() == 9 && std::all_of(id.begin(), id.end(), alnum)) return id;
  // FNV-1a of the id, as 9 base-62 digits: the same id, the same stand-in.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ull;
  std::string out;
  for (int i = 0; i < 9; ++i, h /= 62) out += kChars[h % 62];
  return out;
}

}  // namespace ember::serve

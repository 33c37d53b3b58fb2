#include "tools/ember/chat_tools.h"

#include <nlohmann/json.hpp>

#include "tools/ember/args.h"
#include "tools/ember/files.h"

namespace ember::cli {
namespace {

using ojson = nlohmann::ordered_json;  // a schema's properties in the order written

// OpenAI's rule for a function name: 1..64 of [A-Za-z0-9_-].
bool function_name_ok(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool read_function(const ojson& t, const std::string& where, ChatTools* out, std::string* error) {
  const auto type = t.find("type");
  if (!t.is_object() || type == t.end() || !type->is_string() || type->get_ref<const std::string&>() != "function") {
    *error = where + ".type must be \"function\"";
    return false;
  }
  const auto f = t.find("function");
  if (f == t.end() || !f->is_object()) {
    *error = where + ".function must be an object {name, description, parameters}";
    return false;
  }
  serve::ToolFunction fn;
  const auto name = f->find("name");
  if (name == f->end() || !name->is_string() || !function_name_ok(name->get_ref<const std::string&>())) {
    *error = where + ".function.name must be 1 to 64 letters, digits, '_' or '-'";
    return false;
  }
  fn.name = name->get_ref<const std::string&>();
  for (const serve::ToolFunction& other : out->functions) {
    if (other.name == fn.name) {
      *error = where + ".function.name = \"" + fn.name + "\" is given twice";
      return false;
    }
  }
  if (const auto d = f->find("description"); d != f->end() && d->is_string()) fn.description = d->get<std::string>();
  if (const auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
    if (!p->is_object()) {
      *error = where + ".function.parameters must be a JSON Schema object";
      return false;
    }
    fn.parameters = p->dump();
  }
  out->functions.push_back(std::move(fn));
  return true;
}

}  // namespace

bool read_chat_tools(const std::string& path, const std::string& choice, ChatTools* out, std::string* error) {
  std::string text;
  if (read_file(path, &text, error) != EMBER_OK) return false;
  const ojson doc = ojson::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_array()) {
    *error = "--tools '" + path + "' is not a JSON array of {\"type\": \"function\", \"function\": {...}}";
    return false;
  }
  if (doc.size() > 128) {
    *error = "--tools '" + path + "' has " + std::to_string(doc.size()) + " tools: at most 128";
    return false;
  }
  for (size_t i = 0; i < doc.size(); ++i) {
    std::string why;
    if (!read_function(doc[i], "tools[" + std::to_string(i) + "]", out, &why)) {
      *error = "--tools '" + path + "': " + why;
      return false;
    }
  }
  out->json = doc.dump(-1, ' ', false, ojson::error_handler_t::replace);
  out->choice = choice.empty() ? "auto" : choice;
  if (out->demanded()) {
    bool known = out->choice == "required";
    for (const serve::ToolFunction& f : out->functions) known = known || f.name == out->choice;
    if (!known) {
      *error = "--tool-choice '" + out->choice + "' must be auto, none, required or the name of a function in '" +
               path + "'";
      return false;
    }
  }
  return true;
}

int make_tool_grammar(const ember_model* model, const ChatTools& tools, int syntax, ember_grammar** out) {
  *out = nullptr;
  if (!tools.demanded()) return 0;
  std::string gbnf, why;
  const std::string only = tools.choice == "required" ? "" : tools.choice;
  if (!serve::tool_call_grammar(tools.functions, only, /*parallel=*/true, syntax, &gbnf, &why)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--tools: " + why);
  }
  const ember_status st = ember_grammar_create(model, gbnf.c_str(), "root", out);
  if (st != EMBER_OK) return report(st, std::string("--tools: the call grammar: ") + ember_last_error());
  return 0;
}

ReplyReader::ReplyReader(int syntax, bool all_calls, const ChatTools& tools)
    : stream_(syntax, all_calls, [&] {
        std::vector<std::string> names;
        for (const serve::ToolFunction& f : tools.functions) names.push_back(f.name);
        return names;
      }()) {}

std::vector<serve::ToolCall> ReplyReader::finish(std::string* rest) {
  // A demanded call streams as deltas: gathered here.
  std::vector<serve::ToolCall> calls;
  for (const serve::ToolCallStream::Delta& d : stream_.deltas()) {
    if (d.first) calls.push_back({d.id, d.name, ""});
    if (d.index < calls.size()) calls[d.index].arguments += d.arguments;
  }
  serve::ParsedReply p = stream_.finish();
  *rest = p.content;
  for (serve::ToolCall& c : p.calls) calls.push_back(std::move(c));
  return calls;
}

std::string tool_call_line(const serve::ToolCall& call) {
  ojson args = ojson::parse(call.arguments, nullptr, false);
  if (args.is_discarded()) args = call.arguments;  // not JSON (a cut call): its text
  const ojson line = {{"tool_call", {{"id", call.id}, {"name", call.name}, {"arguments", args}}}};
  return line.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace ember::cli

#include "tools/ember/grammar_flags.h"

#include "tools/ember/commands.h"
#include "tools/ember/files.h"

namespace ember::cli {

const char* const kGrammarValueFlags[] = {"--grammar-file", "--json-schema", nullptr};
const char* const kGrammarSwitch = "--json-object";
const char* const kGrammarHelp =
    "  --grammar-file F   the output follows the GBNF grammar in F (llama.cpp's syntax, rule root)\n"
    "  --json-schema F    the output is JSON valid under the JSON Schema in F\n"
    "  --json-object      the output is a JSON object\n";

bool read_grammar_flags(const Args& args, GrammarFlags* out, std::string* error) {
  out->grammar_file = args.get("--grammar-file");
  out->schema_file = args.get("--json-schema");
  out->json_object = args.has("--json-object");
  if (!out->grammar_file.empty() + !out->schema_file.empty() + out->json_object > 1) {
    *error = "--grammar-file, --json-schema and --json-object: pass one";
    return false;
  }
  return true;
}

int make_grammar(const ember_model* model, const GrammarFlags& flags, ember_grammar** grammar) {
  *grammar = nullptr;
  if (!flags.any()) return 0;
  std::string text, error;
  const std::string& file = flags.grammar_file.empty() ? flags.schema_file : flags.grammar_file;
  if (!file.empty()) {
    const ember_status st = read_file(file, &text, &error);
    if (st != EMBER_OK) return report(st, error);
  }
  const ember_status st = flags.grammar_file.empty() ? ember_grammar_create_json_schema(model, text.c_str(), grammar)
                                                     : ember_grammar_create(model, text.c_str(), "root", grammar);
  if (st != EMBER_OK) return report(st, (file.empty() ? std::string("--json-object") : file) + ": " + ember_last_error());
  return 0;
}

}  // namespace ember::cli

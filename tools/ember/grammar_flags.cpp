#include "tools/ember/grammar_flags.h"

#include <chrono>
#include <cstdio>

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
  const auto t0 = std::chrono::steady_clock::now();
  const ember_status st = flags.grammar_file.empty() ? ember_grammar_create_json_schema(model, text.c_str(), grammar)
                                                     : ember_grammar_create(model, text.c_str(), "root", grammar);
  const std::string what = file.empty() ? std::string("--json-object") : file;
  if (st != EMBER_OK) return report(st, what + ": " + ember_last_error());
  // The one-time cost (translation, parse, checks, the vocabulary's index);
  // each state's token mask is computed the first time a sequence reaches it.
  std::fprintf(stderr, "grammar: %s compiled in %.1f ms\n", what.c_str(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

}  // namespace ember::cli

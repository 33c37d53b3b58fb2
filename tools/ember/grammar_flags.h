// --grammar-file F | --json-schema F | --json-object (ember run, ember chat):
// the constraint a command's generations follow.
#pragma once

#include <string>

#include "ember.h"
#include "tools/ember/args.h"

namespace ember::cli {

struct GrammarFlags {
  std::string grammar_file, schema_file;
  bool json_object = false;
  bool any() const { return !grammar_file.empty() || !schema_file.empty() || json_object; }
};

// The flags' names (for Args' lists): with a value, and without.
extern const char* const kGrammarValueFlags[];  // null-terminated
extern const char* const kGrammarSwitch;
// The help lines.
extern const char* const kGrammarHelp;

// Reads the flags; false (with *error) when more than one is given.
bool read_grammar_flags(const Args& args, GrammarFlags* out, std::string* error);

// The constraint compiled for `model` (null when no flag asked for one).
// 0 or the exit code (reported).
int make_grammar(const ember_model* model, const GrammarFlags& flags, ember_grammar** grammar);

}  // namespace ember::cli

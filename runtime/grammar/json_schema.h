// JSON Schema to grammar: the JSON texts a schema accepts, as GBNF text
// (readable, editable: `ember grammar --json-schema F` prints it).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace ember {

// The JSON texts `schema_json` accepts, as GBNF text with root rule "root".
// EMBER_ERR_UNSUPPORTED "schema keyword 'uniqueItems' at /properties/tags"
// for a validation keyword it cannot honour; EMBER_ERR_INVALID_ARGUMENT for
// malformed JSON (line, column) or a malformed schema ("'required' at /:
// must be an array of strings").
Result<std::string> json_schema_to_gbnf(std::string_view schema_json, const GrammarLimits& limits = {});

// Any JSON object (response_format json_object).
std::string json_object_gbnf();
// Any JSON value.
std::string json_value_gbnf();

}  // namespace ember

// The schema-level half of the JSON Schema translation (json_schema.cpp
// walks the schema and writes the grammar; this holds what looks at schema
// objects only): the keyword lists, the check of one object's keywords
// (refused validation keywords, the form of the values read), local
// `$ref` resolution, and merging `allOf` members into one schema. Internal
// to the grammar layer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace ember::schema_keywords {

using json = nlohmann::ordered_json;

// Validation keywords the grammar cannot honour. A listed keyword whose
// value constrains nothing (uniqueItems: false, minProperties: 0) passes.
inline const char* const kRefused[] = {
    "uniqueItems", "not", "dependencies", "dependentRequired", "dependentSchemas", "if", "then", "else",
    "contains", "minContains", "maxContains", "multipleOf", "propertyNames", "minProperties",
    "maxProperties", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
};

// Keywords that say nothing about which values validate.
inline const char* const kAnnotations[] = {
    "title", "description", "default", "examples", "example", "$comment", "$schema", "$id", "id",
    "$anchor", "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding",
    "discriminator", "xml", "externalDocs", "$defs", "definitions", "$vocabulary", "$dynamicAnchor",
};

inline const char* const kObjectKeys[] = {"properties", "required", "additionalProperties", "patternProperties"};
inline const char* const kArrayKeys[] = {"items", "prefixItems", "additionalItems", "minItems", "maxItems"};
inline const char* const kStringKeys[] = {"minLength", "maxLength", "pattern", "format"};
inline const char* const kNumberKeys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

template <size_t N>
bool in_list(const char* const (&list)[N], const std::string& key) {
  for (const char* k : list)
    if (key == k) return true;
  return false;
}

inline bool is_annotation(const std::string& key) {
  return in_list(kAnnotations, key) || key.rfind("x-", 0) == 0;
}

// A local JSON pointer ("#/$defs/a", "#") to the value it names in `root`.
Status resolve_pointer(const json& root, const std::string& ref, const json** out);

// EMBER_ERR_INVALID_ARGUMENT "'key' at PTR: what".
Status malformed(const char* key, const std::string& ptr, const char* what);

// Checks the keywords of one schema object: refused ones, and the form of
// the values the translator reads.
Status check_keywords(const json& s, const std::string& ptr);

// Whether `s` has a keyword that is not an annotation.
bool has_validation(const json& s);

// The schema `s`'s `$ref` names, merged with the keywords beside it.
Status resolved_copy(const json& root, const json& s, const std::string& ptr, json* out);

// allOf: one schema with every member's constraints, or a refusal naming
// what cannot be merged.
Status merge_all(const json& root, const json& members, const std::string& ptr, json* out);

}  // namespace ember::schema_keywords

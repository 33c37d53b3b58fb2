// ember.h's structured output: grammars from GBNF text or a JSON Schema,
// compiled for a model's vocabulary (grammar/matcher.h).
#include "c_api_internal.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

using ember::Status;

namespace {

ember_status compile(const ember_model* model, std::string_view gbnf, std::string_view root, ember_grammar** out) {
  auto grammar = ember::parse_gbnf(gbnf, root);
  if (!grammar.is_ok()) return ember::done(grammar.status());
  auto compiled = ember::CompiledGrammar::create(std::move(grammar).value(), model->model->tokenizer());
  if (!compiled.is_ok()) return ember::done(compiled.status());
  *out = new ember_grammar{std::move(compiled).value()};
  return EMBER_OK;
}

}  // namespace

ember_status ember_grammar_create(const ember_model* model, const char* gbnf, const char* root, ember_grammar** out) {
  if (out) *out = nullptr;
  if (!model || !gbnf || !out) {
    return ember::fail(EMBER_ERR_INVALID_ARGUMENT, !model ? "model is NULL" : !gbnf ? "gbnf is NULL" : "out is NULL");
  }
  return compile(model, gbnf, root ? root : "root", out);
}

ember_status ember_grammar_create_json_schema(const ember_model* model, const char* schema, ember_grammar** out) {
  if (out) *out = nullptr;
  if (!model || !out) return ember::fail(EMBER_ERR_INVALID_ARGUMENT, !model ? "model is NULL" : "out is NULL");
  if (!schema || !*schema) return compile(model, ember::json_object_gbnf(), "root", out);
  auto gbnf = ember::json_schema_to_gbnf(schema);
  if (!gbnf.is_ok()) return ember::done(gbnf.status());
  return compile(model, gbnf.value(), "root", out);
}

ember_status ember_json_schema_to_gbnf(const char* schema, char* buf, size_t buf_size, size_t* needed) {
  std::string text;
  if (!schema || !*schema) {
    text = ember::json_object_gbnf();
  } else {
    auto gbnf = ember::json_schema_to_gbnf(schema);
    if (!gbnf.is_ok()) return ember::done(gbnf.status());
    text = std::move(gbnf).value();
  }
  if (needed) *needed = text.size() + 1;
  if (!buf || buf_size < text.size() + 1) {
    return ember::fail(EMBER_ERR_BUFFER_TOO_SMALL, "the grammar takes more than buf_size bytes: see *needed");
  }
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return EMBER_OK;
}

void ember_grammar_free(ember_grammar* grammar) { delete grammar; }

uint64_t ember_grammar_memory(const ember_grammar* grammar) {
  return grammar ? grammar->grammar->memory_bytes() : 0;
}

ember_status ember_grammar_set_max_bytes(ember_grammar* grammar, uint64_t max_bytes) {
  if (!grammar) return ember::fail(EMBER_ERR_INVALID_ARGUMENT, "grammar is NULL");
  return ember::done(grammar->grammar->set_max_bytes(max_bytes));
}

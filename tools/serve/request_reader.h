// Reading a completion or chat request body with bounded cost.
//
// The body is first scanned (json_check.h: grammar, nesting depth, number
// length), then read by nlohmann-json's SAX interface straight into a
// CompletionRequest: no document tree is built, fields the server does not
// read are skipped without being stored, and what is kept (strings, messages,
// token ids, stop strings) is charged against a budget of
// kept_per_body_byte x the body + kept_slack (a response_format's JSON
// Schema too: kept as compact JSON text written event by event, no tree,
// cut at max_schema_bytes). So the memory one request holds while it is
// read is at most: the body, the JSON lexer's buffer for the
// longest string (<= the body), and the budget: 4x the body + 64 KiB with the
// defaults (measured by tests/serve/hostile_client_test.mjs).
//
// Refusals carry the HTTP status, a message naming the field (values are
// shown cut to a few dozen bytes, never serialized whole), and OpenAI's
// error.param and error.code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/serve/openai_api.h"

namespace ember::serve {

struct ReadLimits {
  size_t max_depth = 64;
  size_t kept_per_body_byte = 2;  // what is kept may cost this many bytes per byte of body
  size_t kept_slack = 64 << 10;   // ... plus this many (for small bodies)
  // Token ids in a prompt and chat messages: more cannot fit the context
  // (the server passes its slots' context length).
  size_t max_prompt_tokens = SIZE_MAX;
  size_t max_messages = SIZE_MAX;
  // response_format.json_schema.schema, as the compact JSON text kept for
  // the grammar (and the grammar cache's key): at most this many bytes.
  size_t max_schema_bytes = 256 << 10;
};

// The parameters of OpenAI's API that ember does not honour (yet): each is
// refused with 400 naming it, unless absent, null or its neutral value (the
// one that asks for nothing: n = 1, tools [], ...). One table
// (request_reader.cpp, kUnsupported): remove an entry when its parameter is
// honoured.
struct UnsupportedParameter {
  const char* name;
  const char* neutral;  // the values accepted, for the message ("1", "false or 0", "[]", ...)
};
// The table's entries, ending with {nullptr, nullptr}.
const UnsupportedParameter* unsupported_parameters();

// Reads a request body. On failure returns false with *error set (status
// 400 unless the message says otherwise).
bool read_completion_request(std::string_view body, bool chat, const ReadLimits& limits, CompletionRequest* out,
                             RequestError* error);

// The same with default limits, the error's message only.
bool parse_completion_request(std::string_view body, bool chat, CompletionRequest* out, std::string* error);

// A value as it may appear in an error message: at most max_bytes of it,
// "..." after a cut, JSON-quoted when it is a string.
std::string preview_string(std::string_view s, size_t max_bytes = 40);

}  // namespace ember::serve

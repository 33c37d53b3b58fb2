// OpenAI-shaped JSON (a conversation's messages, a request's tools) as the
// values a chat template sees, the way Hugging Face templates expect them:
// messages keep every member (tool_calls, tool_call_id, name, ...), a tool
// call's "arguments" given as a JSON string become the object it holds
// (templates write `tool_call.arguments | tojson`), "developer" is "system".
//
// Read with nlohmann-json's SAX interface into Values with an explicit
// stack: no recursion, nesting bounded, exceptions off.
#pragma once

#include <cstddef>
#include <string_view>

#include "chat/jinja_value.h"
#include "core/status.h"

namespace ember::chat {

struct JsonReadLimits {
  size_t max_depth = 64;              // nesting of arrays and objects
  size_t max_bytes = 16u << 20;       // the text
};

// Any JSON text as a Value (null -> None, numbers -> Int or Float).
// EMBER_ERR_INVALID_ARGUMENT naming `what`, with line:column, for text that
// is not JSON or nests past the limit.
Status json_to_value(std::string_view text, const char* what, const JsonReadLimits& limits, Value* out);

// A messages array: every element an object with a string role; content a
// string, null (given to the template as "") or an array; tool_calls (assistant) an array of
// {id, type, function {name, arguments}}. Errors name "messages[i].field".
Status chat_messages_from_json(std::string_view text, const JsonReadLimits& limits, Value* out);

// A tools array: every element {"type": "function", "function": {"name",
// "description"?, "parameters"?}}. Empty text or "null": undefined (the
// template sees no tools). Errors name "tools[i].field".
Status chat_tools_from_json(std::string_view text, const JsonReadLimits& limits, Value* out);

// How a template's model writes a tool call: Hermes/Qwen (<tool_call> JSON
// </tool_call>), Llama 3.x (a bare {"name", "parameters"} object) or
// Mistral ("[TOOL_CALLS]" and a JSON array of {"name", "arguments"}).
enum class ToolSyntax { Hermes = 0, Llama3 = 1, Mistral = 2 };
ToolSyntax tool_syntax_of_template(std::string_view tmpl);

}  // namespace ember::chat

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
// </tool_call>), Llama 3.x (a bare {"name", "parameters"} object), Mistral
// v3 ("[TOOL_CALLS]" and a JSON array of {"name", "arguments"}), Mistral's
// later "[TOOL_CALLS]name[ARGS]{...}", Phi-4-mini ("<|tool_call|>" and a
// JSON array of {"name", "arguments"}) or Gemma 4 ("<|tool_call>call:name{
// key:value,...}<tool_call|>"). The values are ember.h's
// EMBER_TOOL_SYNTAX_*.
enum class ToolSyntax { Hermes = 0, Llama3 = 1, Mistral = 2, MistralArgs = 3, Phi4 = 4, Gemma4 = 5 };
ToolSyntax tool_syntax_of_template(std::string_view tmpl);

// Phi-4-mini's template reads the tools from the system message (its
// `tools` member, the functions' JSON text between <|tool|> and <|/tool|>)
// and renders only an assistant message's content. For such a template
// (`tmpl` reads message['tools'] or message.tools) this puts `tools` (the
// OpenAI tools array, or undefined) where it looks: the functions {name,
// description, parameters} as JSON text in the first message's `tools`
// when it is a system message, else in a system message put first with
// the text of Microsoft's example ("You are a helpful assistant with some
// tools."); and when the template never reads tool_calls, an assistant's
// calls are appended to its content as the model writes them,
// "<|tool_call|>[{"name": ..., "arguments": {...}}]<|/tool_call|>".
// Other templates: nothing changes. Errors: those of to_json.
Status put_tools_in_system_message(std::string_view tmpl, const Value& tools, Value* messages);

// Gemma 4's first template reads a call's results only as the assistant
// message's `tool_responses` ([{name, response}], Google's form) and never
// looks at a role "tool" message. For such a template (`tmpl` reads
// tool_responses and compares no role with 'tool') the tool messages after
// an assistant's calls become its tool_responses (name: the call answered,
// by tool_call_id, else by order; response: the content's JSON when it is
// JSON, else its text), and an assistant message of text right after them
// becomes that message's content (the same model turn). Other templates:
// nothing changes.
void fold_tool_results(std::string_view tmpl, const JsonReadLimits& limits, Value* messages);

}  // namespace ember::chat

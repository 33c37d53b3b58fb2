// The OpenAI-compatible request and response bodies of `ember serve`: what
// a request asks for (read by request_reader.h), the chat formatting, and
// the response and error bodies (nlohmann-json, exceptions off).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ember.h"
#include "tools/serve/tool_syntax.h"  // ToolCall, ToolFunction

namespace ember::serve {

struct ChatMessage {
  std::string role;     // system, user, assistant, tool, developer
  std::string content;  // text parts joined
  std::vector<ToolCall> tool_calls;  // an assistant's calls
  std::string tool_call_id;          // a tool message: the call it answers
};

// tool_choice: none (no call), auto (the model decides; calls are parsed
// out of the text), required (at least one call) or one named function;
// the last two constrained by a grammar (tools/serve/tool_calls.h).
enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct CompletionRequest {
  bool chat = false;
  std::string model;
  std::string prompt;                 // /v1/completions with a text prompt
  std::vector<int32_t> prompt_tokens; // /v1/completions with token ids
  bool prompt_is_tokens = false;
  std::vector<ChatMessage> messages;  // /v1/chat/completions
  int32_t max_tokens = -1;            // -1: the default (16 for completions, the context for chat)
  float temperature = 1.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  float min_p = 0.0f;
  bool has_seed = false;
  uint64_t seed = 0;
  std::vector<std::string> stop;
  float presence_penalty = 0.0f;    // [-2, 2]
  float frequency_penalty = 0.0f;   // [-2, 2]
  std::vector<ember_logit_bias> logit_bias;  // token id -> bias in [-100, 100]
  bool logprobs = false;            // report each token's log-probability
  int32_t top_logprobs = 0;         // and the n most likely (0..EMBER_MAX_TOP_LOGPROBS)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;
  // response_format: free text, any JSON object (json_object, or json_schema
  // without a schema), or the JSON Schema in json_schema (json_schema.schema
  // as compact JSON text, as the request gave it).
  enum class Format { kText, kJsonObject, kJsonSchema };
  Format format = Format::kText;
  std::string json_schema;
  std::vector<ToolFunction> tools;           // /v1/chat/completions
  ToolChoice tool_choice = ToolChoice::kNone;  // absent: auto with tools, else none
  std::string tool_choice_name;              // kNamed: the function
  bool parallel_tool_calls = true;           // more than one call allowed
};

// A refusal: the HTTP status, the message (naming the field and what is
// wrong), and OpenAI's error.param and error.code (null when empty).
struct RequestError {
  int status = 400;
  std::string message;
  std::string param;
  std::string code;
};

// Reading a request body: request_reader.h.

// Chat messages to a prompt. FALLBACK until the chat-template engine
// (ember_chat_format) lands: the integrator replaces this one function. It
// writes a plain "role: text" transcript ending with "assistant:". *name is
// the template used, printed at start.
ember_status format_chat(const ember_model* model, const std::vector<ChatMessage>& messages, std::string* out);
// A chat request's messages (tool calls and tool results included) and its
// tools through the model's template (ember_chat_format_json), or through
// chat_template (a name or template text, as ember_chat_format takes it)
// when not NULL. Call ids are given as the template takes them
// (template_call_id, tool_calls.h).
ember_status format_chat(const ember_model* model, const CompletionRequest& request, std::string* out,
                         const char* chat_template = nullptr);
std::string chat_template_name(const ember_model* model);

// {"error":{"message":...,"type":...,"param":...,"code":...}}: param and
// code are strings, or null when empty (OpenAI's clients read code as a
// string such as "invalid_api_key", never a number).
std::string error_body(int http_status, std::string_view message, std::string_view param = {},
                       std::string_view code = {});
std::string error_body(const RequestError& error);

enum class Finish { kStop, kLength, kCancelled, kTimeout, kError, kToolCalls };
const char* finish_reason_name(Finish f);

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
};

// One generated token's log-probabilities as a response reports them (the
// request asked for logprobs): its text, and the most likely tokens'.
struct TokenLogprobs {
  std::string token;      // the bytes it prints as (JSON shows bad UTF-8 as U+FFFD; chat adds "bytes")
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // the most likely first
  size_t text_offset = 0;  // where its text starts in the choice's text (the completions API)
};

// Non-streaming response bodies. logprobs: null for "logprobs": null.
// tool_calls (chat): the message's calls; with calls and no text its
// content is null.
std::string completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                            const std::string& model, const std::string& text, Finish finish, const Usage& usage,
                            const std::vector<TokenLogprobs>* logprobs = nullptr,
                            const std::vector<ToolCall>* tool_calls = nullptr);
// One server-sent event ("data: {...}\n\n"): a text delta (finish null) with
// its tokens' log-probabilities when asked, the final chunk with the finish
// reason (text empty), or the usage chunk.
std::string stream_chunk(const CompletionRequest& r, const std::string& id, int64_t created, const std::string& model,
                         const std::string& text, const Finish* finish, bool first,
                         const std::vector<TokenLogprobs>* logprobs = nullptr);
// The chunks of one call, as OpenAI streams them: delta.tool_calls [{index,
// id, type, function {name, arguments ""}}] (stream_tool_call_start), then
// its arguments, whole or in pieces (stream_tool_call_arguments: [{index,
// function {arguments: piece}}]).
std::string stream_tool_call_chunks(const CompletionRequest& r, const std::string& id, int64_t created,
                                    const std::string& model, const ToolCall& call, size_t index);
std::string stream_tool_call_start(const CompletionRequest& r, const std::string& id, int64_t created,
                                   const std::string& model, const ToolCall& call, size_t index);
std::string stream_tool_call_arguments(const CompletionRequest& r, const std::string& id, int64_t created,
                                       const std::string& model, const std::string& piece, size_t index);
std::string stream_usage_chunk(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, const Usage& usage);

std::string models_body(const std::string& model, int64_t created);

}  // namespace ember::serve

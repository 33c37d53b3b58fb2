// The SAX reader behind read_completion_request (request_reader.h), internal
// to tools/serve: nlohmann's json_sax events read straight into a
// CompletionRequest. Where a value lands is known from a short stack of what
// the enclosing containers are (the root object, messages, one message, its
// content parts, one part, the prompt array, the stop array, stream_options,
// response_format and its json_schema, logit_bias); any other value is
// skipped, counted but not stored. response_format.json_schema.schema is
// copied out as compact JSON text while it streams past; tools, tool_choice
// objects and a message's tool_calls are captured as compact text and read
// as one small document when they end.
//
// Its members are defined by responsibility:
//   request_reader.cpp           the events, the root object's core and
//                                sampling fields, prompt, stop, logit_bias,
//                                stream_options, unsupported parameters
//   request_reader_messages.cpp  messages and their content parts
//   request_reader_tools.cpp     tools, tool_choice, a message's tool_calls
//   request_reader_format.cpp    response_format and its schema
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/serve/openai_api.h"
#include "tools/serve/request_reader.h"

namespace ember::serve::sax {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The top-level fields the reader stores; everything else is skipped.
enum class Field {
  kOther,
  kModel,
  kMessages,
  kPrompt,
  kMaxTokens,
  kMaxCompletionTokens,
  kTemperature,
  kTopP,
  kMinP,
  kTopK,
  kSeed,
  kStop,
  kStream,
  kEcho,
  kStreamOptions,
  kPresencePenalty,
  kFrequencyPenalty,
  kLogitBias,
  kLogprobs,
  kTopLogprobs,
  kResponseFormat,
  kTools,
  kToolChoice,
  kParallelToolCalls,
  kFunctions,     // legacy tools
  kFunctionCall,  // legacy tool_choice
  kUnsupported,
};

// What a container is, for the values inside it.
enum class Frame {
  kRoot, kMessages, kMessage, kContent, kPart, kPrompt, kStop, kStreamOptions, kResponseFormat, kJsonSchema,
  kLogitBias
};

// What a captured value (compact JSON text, read when it ends) is.
enum class Capture { kNone, kTools, kToolChoice, kToolCalls, kFunctions, kFunctionCall };

// One value as the SAX interface gives it.
struct Value {
  enum Kind { kNull, kBool, kInt, kUint, kFloat, kString, kArray, kObject } kind = kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string* s = nullptr;  // the lexer's buffer: may be moved from
  const std::string* raw = nullptr;  // kFloat: the number as written
  bool container() const { return kind == kArray || kind == kObject; }
  bool number() const { return kind == kInt || kind == kUint || kind == kFloat; }
  double as_double() const { return kind == kInt ? static_cast<double>(i) : kind == kUint ? static_cast<double>(u) : d; }
};

// A value for a message: its JSON text, strings cut (preview_string).
std::string describe(const Value& v);
// 'field'
std::string quoted(const char* field);

class RequestReader final : public nlohmann::json_sax<json> {
 public:
  // body_size: what the budget of kept bytes is reckoned from (ReadLimits).
  RequestReader(bool chat, const ReadLimits& limits, size_t body_size, CompletionRequest* out, RequestError* error);

  bool failed() const { return failed_; }
  bool finished() const { return finished_; }

  bool null() override { return value(Value{}); }
  bool boolean(bool b) override;
  bool number_integer(number_integer_t i) override;
  bool number_unsigned(number_unsigned_t u) override;
  bool number_float(number_float_t d, const string_t& raw) override;
  bool string(string_t& s) override;
  bool start_object(std::size_t) override;
  bool start_array(std::size_t) override;
  bool binary(binary_t&) override { return fail(400, "the request body is not JSON text"); }
  bool key(string_t& k) override;
  bool end_object() override { return end('}'); }
  bool end_array() override { return end(']'); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override;

 private:
  // ---- request_reader.cpp: the events, the root object, its scalar fields ----
  const char* top_name() const { return top_name_; }
  bool fail(int status, std::string message, std::string param = {}, std::string code = {});
  bool charge(size_t bytes);
  bool keep_string(std::string* to, std::string* from);
  void push(Frame f);
  bool value(const Value& v);
  bool skip(const Value& v);
  bool end(char close);
  bool top_value(const Value& v);
  bool root_end();
  bool type_error(const char* want, const Value& v);
  bool integer(const Value& v, int64_t lo, int64_t hi, int64_t* out);
  bool real(const Value& v, double lo, double hi, bool open_low, float* out);
  bool unsupported_value(const Value& v);
  bool unsupported_end();
  bool refuse_unsupported(int index, const std::string& got);
  bool prompt_shape(const std::string& got);
  bool prompt_element(const Value& v);
  bool stop_shape(const std::string& got);
  bool stop_fits(const std::string& s, const std::string& where);
  bool stop_element(const Value& v);
  bool logit_bias_entry(const Value& v);
  bool stream_options_shape(const std::string& got);
  bool stream_option(const Value& v);
  // The current logit_bias member's name as a token id (key()).
  void set_bias_key(const std::string& k);

  // ---- request_reader_messages.cpp ----
  std::string where_message() const { return "'messages[" + std::to_string(messages_ - 1) + "]"; }
  std::string where_part() const;
  bool message(const Value& v);
  bool message_field(const Value& v);
  bool part(const Value& v);
  bool part_field(const Value& v);

  // ---- request_reader_tools.cpp ----
  bool tool_field(const Value& v);
  bool start_capture(Capture what, const Value& v);
  bool captured(size_t before);
  bool capture_value(const Value& v);
  bool capture_key(const std::string& k);
  bool capture_end();
  std::string capture_name() const;
  bool string_member(const ojson& o, const char* key, const std::string& where, const char* param, std::string* out);
  bool read_function(const ojson& f, const std::string& where, const char* param);
  bool read_tools(const ojson& doc);
  bool read_functions(const ojson& doc);
  bool read_function_call(const ojson& doc);
  bool tool_choice_string(const Value& v);
  bool read_tool_choice(const ojson& doc);
  bool read_tool_calls(const ojson& doc);
  bool tools_end();
  std::string capture_param() const { return capture_ == Capture::kToolCalls ? "messages" : top_name_; }

  // ---- request_reader_format.cpp ----
  bool response_format_shape(const std::string& got);
  bool response_format_field(const Value& v);
  bool json_schema_field(const Value& v);
  bool response_format_end();
  bool schema_append(std::string_view text);
  bool schema_value(const Value& v);
  bool schema_key(const std::string& k);
  bool schema_end(char close);

  bool chat_;
  ReadLimits limits_;
  CompletionRequest* out_;
  RequestError* error_;
  bool failed_ = false;
  bool finished_ = false;
  size_t budget_ = 0;
  size_t kept_ = 0;

  // The open containers read into (at most 5 deep), and for an object the
  // meaning of its current member's name (0: not read).
  std::array<Frame, 8> frames_{};
  std::array<int, 8> keys_{};
  size_t depth_ = 0;
  size_t skip_ = 0;              // > 0: inside a skipped container, this deep
  size_t skipped_children_ = 0;  // direct elements of the skipped container
  bool judge_skipped_ = false;   // the skipped container is an unsupported parameter's value

  Field field_ = Field::kOther;  // the root's current member
  const char* top_name_ = "";    // its name when it is one the reader knows
  int unsupported_index_ = -1;   // kUnsupported's row of the current member
  int unsupported_ = -1;         // the row whose container value is being read
  int format_type_ = 0;          // response_format.type: 0 absent, 1 text, 2 json_object, 3 json_schema
  bool json_schema_seen_ = false;  // response_format.json_schema given
  bool schema_seen_ = false;       // ... and its schema
  size_t schema_depth_ = 0;        // > 0: inside the schema being copied, this deep
  bool schema_comma_ = false;      // the copy's next value or key follows another

  Capture capture_ = Capture::kNone;  // a value being captured as text
  size_t capture_depth_ = 0;          // its open containers
  struct Open {
    bool object;
    bool first;  // nothing written in it yet
  };
  std::vector<Open> capture_open_;    // at most the body's depth (json_check)
  std::string captured_;
  bool after_key_ = false;            // the next value follows a member name
  bool tool_choice_seen_ = false;
  bool tools_seen_ = false, functions_seen_ = false, function_call_seen_ = false;  // given, not null

  bool messages_seen_ = false, prompt_seen_ = false;
  size_t messages_ = 0, parts_ = 0, prompt_elements_ = 0;
  bool has_role_ = false, part_text_ = false;
  int part_type_ = 0;
  int32_t max_tokens_ = -1, max_completion_tokens_ = -1;
  int32_t logprobs_count_ = 0;   // logprobs given as a count (the completions API)
  int32_t top_logprobs_ = -1;    // -1: not given
  int32_t bias_token_ = -1;      // logit_bias: the current member's token id, -1 when its name is not one
  std::string bias_key_;         // that name, cut, for the message
};

}  // namespace ember::serve::sax

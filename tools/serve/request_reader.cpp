// Reading a request body: see request_reader.h. A SAX reader (nlohmann's
// json_sax) that knows where each value lands from a short stack of what
// the enclosing containers are (the root object, messages, one message, its
// content parts, one part, the prompt array, the stop array, stream_options,
// response_format and its json_schema); any other value is skipped, counted
// but not stored. response_format.json_schema.schema is copied out as
// compact JSON text while it streams past (capture_).
#include "tools/serve/request_reader.h"

#include <array>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/serve/json_check.h"

namespace ember::serve {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The unsupported parameters (see request_reader.h): what counts as asking
// for nothing.
enum class Neutral {
  kOne,          // the number 1 (n, best_of)
  kEmpty,        // [] or {} (tools, functions)
  kNone,         // the string "none" (tool_choice, function_call)
  kEmptyString,  // "" (suffix)
};

struct Unsupported {
  UnsupportedParameter parameter;
  Neutral neutral;
};

// THE table: remove a row when its parameter is honoured.
const Unsupported kUnsupported[] = {
    {{"n", "1 (one choice per request)"}, Neutral::kOne},
    {{"best_of", "1"}, Neutral::kOne},
    {{"functions", "[]"}, Neutral::kEmpty},
    {{"function_call", "\"none\""}, Neutral::kNone},
    {{"suffix", "\"\""}, Neutral::kEmptyString},
};
constexpr size_t kUnsupportedCount = sizeof kUnsupported / sizeof kUnsupported[0];

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
  kUnsupported,
};

struct FieldName {
  const char* name;
  Field field;
};
const FieldName kFields[] = {
    {"model", Field::kModel},
    {"messages", Field::kMessages},
    {"prompt", Field::kPrompt},
    {"max_tokens", Field::kMaxTokens},
    {"max_completion_tokens", Field::kMaxCompletionTokens},
    {"temperature", Field::kTemperature},
    {"top_p", Field::kTopP},
    {"min_p", Field::kMinP},
    {"top_k", Field::kTopK},
    {"seed", Field::kSeed},
    {"stop", Field::kStop},
    {"stream", Field::kStream},
    {"echo", Field::kEcho},
    {"stream_options", Field::kStreamOptions},
    {"presence_penalty", Field::kPresencePenalty},
    {"frequency_penalty", Field::kFrequencyPenalty},
    {"logit_bias", Field::kLogitBias},
    {"logprobs", Field::kLogprobs},
    {"top_logprobs", Field::kTopLogprobs},
    {"response_format", Field::kResponseFormat},
    {"tools", Field::kTools},
    {"tool_choice", Field::kToolChoice},
    {"parallel_tool_calls", Field::kParallelToolCalls},
};

// What a container is, for the values inside it.
enum class Frame {
  kRoot, kMessages, kMessage, kContent, kPart, kPrompt, kStop, kStreamOptions, kResponseFormat, kJsonSchema,
  kLogitBias
};

// The most logit_bias entries a request may give (OpenAI's own limit is 300).
constexpr size_t kMaxLogitBias = 1024;

// Tools (OpenAI allows 128), calls per message, and the captured text: a
// tools array, one function's parameters schema, a message's tool_calls.
constexpr size_t kMaxTools = 128;
constexpr size_t kMaxToolCalls = 128;
constexpr size_t kMaxCapturedBytes = 1 << 20;
constexpr size_t kMaxParametersBytes = 64 << 10;

// What a captured value (compact JSON text, read when it ends) is.
enum class Capture { kNone, kTools, kToolChoice, kToolCalls };

// The runtime's limits on stop strings (ember.h): the server checks them
// here so that what it accepts the scheduler runs.
constexpr size_t kMaxStop = 16;
static_assert(kMaxStop <= EMBER_MAX_STOP_STRINGS, "the server's stop strings must fit the runtime's");

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

std::string describe(const Value& v) {
  char buf[64];
  switch (v.kind) {
    case Value::kNull: return "null";
    case Value::kBool: return v.b ? "true" : "false";
    case Value::kInt: std::snprintf(buf, sizeof buf, "%" PRId64, v.i); return buf;
    case Value::kUint: std::snprintf(buf, sizeof buf, "%" PRIu64, v.u); return buf;
    case Value::kFloat: return json(v.d).dump();
    case Value::kString: return preview_string(*v.s);
    case Value::kArray: return "an array";
    case Value::kObject: return "an object";
  }
  return "?";
}

std::string quoted(const char* field) { return std::string("'") + field + "'"; }

class Reader final : public nlohmann::json_sax<json> {
 public:
  Reader(bool chat, const ReadLimits& limits, size_t body_size, CompletionRequest* out, RequestError* error)
      : chat_(chat), limits_(limits), out_(out), error_(error) {
    budget_ = limits.kept_slack;
    if (body_size > (SIZE_MAX - budget_) / (limits.kept_per_body_byte ? limits.kept_per_body_byte : 1)) {
      budget_ = SIZE_MAX;
    } else {
      budget_ += body_size * limits.kept_per_body_byte;
    }
  }

  bool failed() const { return failed_; }
  bool finished() const { return finished_; }

  bool null() override { return value(Value{}); }
  bool boolean(bool b) override {
    Value v;
    v.kind = Value::kBool;
    v.b = b;
    return value(v);
  }
  bool number_integer(number_integer_t i) override {
    Value v;
    v.kind = Value::kInt;
    v.i = i;
    return value(v);
  }
  bool number_unsigned(number_unsigned_t u) override {
    Value v;
    v.kind = Value::kUint;
    v.u = u;
    return value(v);
  }
  bool number_float(number_float_t d, const string_t& raw) override {
    if (!std::isfinite(d)) return fail(400, "a number in the request is outside the range of a double", top_name());
    Value v;
    v.kind = Value::kFloat;
    v.d = d;
    v.raw = &raw;
    return value(v);
  }
  bool string(string_t& s) override {
    Value v;
    v.kind = Value::kString;
    v.s = &s;
    return value(v);
  }
  bool binary(binary_t&) override { return fail(400, "the request body is not JSON text"); }
  bool start_object(std::size_t) override {
    Value v;
    v.kind = Value::kObject;
    return value(v);
  }
  bool start_array(std::size_t) override {
    Value v;
    v.kind = Value::kArray;
    return value(v);
  }
  bool key(string_t& k) override;
  bool end_object() override { return end('}'); }
  bool end_array() override { return end(']'); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    return fail(400, "the request body is not valid JSON (at byte " + std::to_string(position) + ")");
  }

 private:
  bool fail(int status, std::string message, std::string param = {}, std::string code = {}) {
    if (!failed_) {
      failed_ = true;
      error_->status = status;
      error_->message = std::move(message);
      error_->param = std::move(param);
      error_->code = std::move(code);
    }
    return false;
  }

  const char* top_name() const { return top_name_; }

  bool charge(size_t bytes) {
    kept_ += bytes;
    if (kept_ <= budget_) return true;
    return fail(400,
                quoted(top_name_) + ": the request holds more than its size allows: what is kept of it takes over " +
                    std::to_string(limits_.kept_per_body_byte) + " bytes per byte of body + " +
                    std::to_string(limits_.kept_slack >> 10) + " KiB (too many small elements)",
                top_name_);
  }
  bool keep_string(std::string* to, std::string* from) {
    *to = std::move(*from);
    return charge(to->size());
  }

  void push(Frame f) {
    frames_[depth_] = f;
    keys_[depth_] = 0;
    ++depth_;
  }

  // Every value event (a scalar, or the start of an array or object).
  bool value(const Value& v) {
    if (schema_depth_ > 0) return schema_value(v);
    if (capture_ != Capture::kNone) return capture_value(v);
    if (skip_ > 0) {
      if (skip_ == 1) ++skipped_children_;
      if (v.container()) ++skip_;
      return true;
    }
    if (depth_ == 0) {
      if (v.kind != Value::kObject) return fail(400, "the request body must be a JSON object, got " + describe(v));
      push(Frame::kRoot);
      return true;
    }
    switch (frames_[depth_ - 1]) {
      case Frame::kRoot: return top_value(v);
      case Frame::kMessages: return message(v);
      case Frame::kMessage: return message_field(v);
      case Frame::kContent: return part(v);
      case Frame::kPart: return part_field(v);
      case Frame::kPrompt: return prompt_element(v);
      case Frame::kStop: return stop_element(v);
      case Frame::kStreamOptions: return stream_option(v);
      case Frame::kResponseFormat: return response_format_field(v);
      case Frame::kJsonSchema: return json_schema_field(v);
      case Frame::kLogitBias: return logit_bias_entry(v);
    }
    return true;
  }

  // A value that is not read: a container is skipped to its end.
  bool skip(const Value& v) {
    if (v.container()) {
      skip_ = 1;
      skipped_children_ = 0;
    }
    return true;
  }

  // The end of an object ('}') or an array (']').
  bool end(char close) {
    if (schema_depth_ > 0) return schema_end(close);
    if (capture_ != Capture::kNone) return capture_end();
    if (skip_ > 0) {
      if (--skip_ == 0 && judge_skipped_) {
        judge_skipped_ = false;
        return unsupported_end();
      }
      return true;
    }
    --depth_;
    switch (frames_[depth_]) {
      case Frame::kRoot: return root_end();
      case Frame::kMessage:
        if (!has_role_) {
          return fail(400, "'messages[" + std::to_string(messages_ - 1) + "]' must be an object with a string 'role'",
                      "messages");
        }
        if (out_->messages.back().role == "tool" && out_->messages.back().tool_call_id.empty()) {
          return fail(400, where_message() + "' (role tool) needs 'tool_call_id', the id of the call it answers",
                      "messages");
        }
        return true;
      case Frame::kPart:
        if (part_type_ != 1 || !part_text_) {
          return fail(400, where_part() + " must be {\"type\":\"text\",\"text\":...} (only text is supported)",
                      "messages");
        }
        return true;
      case Frame::kPrompt:
        if (prompt_elements_ == 0) return prompt_shape("an empty array");
        return true;
      case Frame::kResponseFormat: return response_format_end();
      default: return true;
    }
  }

  // ---- the root object ----

  bool top_value(const Value& v) {
    const Field f = field_;
    if (f == Field::kOther) return skip(v);
    if (f == Field::kUnsupported) return unsupported_value(v);
    // null means absent, as OpenAI takes it.
    if (v.kind == Value::kNull) {
      if (f == Field::kResponseFormat) {
        out_->format = CompletionRequest::Format::kText;
        out_->json_schema.clear();
      }
      if (f == Field::kMessages && chat_) messages_seen_ = false;
      if (f == Field::kPrompt && !chat_) prompt_seen_ = false;
      return true;
    }
    switch (f) {
      case Field::kModel:
        if (v.kind != Value::kString) return type_error("a string", v);
        return keep_string(&out_->model, v.s);
      case Field::kMessages:
        if (!chat_) return skip(v);
        if (v.kind != Value::kArray) {
          return fail(400, "'messages' must be a non-empty array of {role, content}, got " + describe(v), "messages");
        }
        out_->messages.clear();
        messages_ = 0;
        messages_seen_ = true;
        push(Frame::kMessages);
        return true;
      case Field::kPrompt:
        if (chat_) return skip(v);
        prompt_seen_ = true;
        out_->prompt.clear();
        out_->prompt_tokens.clear();
        out_->prompt_is_tokens = false;
        if (v.kind == Value::kString) return keep_string(&out_->prompt, v.s);
        if (v.kind != Value::kArray) return prompt_shape(describe(v));
        prompt_elements_ = 0;
        push(Frame::kPrompt);
        return true;
      case Field::kMaxTokens:
      case Field::kMaxCompletionTokens: {
        int64_t n = 0;
        if (!integer(v, 0, INT32_MAX, &n)) return false;
        (f == Field::kMaxTokens ? max_tokens_ : max_completion_tokens_) = static_cast<int32_t>(n);
        return true;
      }
      case Field::kTools:
        if (v.kind != Value::kArray) return type_error("an array of {type: \"function\", function: {...}}", v);
        return start_capture(Capture::kTools, v);
      case Field::kToolChoice:
        tool_choice_seen_ = true;
        if (v.kind == Value::kObject) return start_capture(Capture::kToolChoice, v);
        return tool_choice_string(v);
      case Field::kParallelToolCalls:
        if (v.kind != Value::kBool) return type_error("true or false", v);
        out_->parallel_tool_calls = v.b;
        return true;
      case Field::kTemperature: return real(v, 0.0, 100.0, false, &out_->temperature);
      case Field::kTopP: return real(v, 0.0, 1.0, true, &out_->top_p);
      case Field::kMinP: return real(v, 0.0, 1.0, false, &out_->min_p);
      case Field::kTopK: {
        int64_t n = 0;
        if (!integer(v, -1, INT32_MAX, &n)) return false;
        out_->top_k = n < 0 ? 0 : static_cast<int32_t>(n);  // -1: off, as llama.cpp's server takes it
        return true;
      }
      case Field::kSeed:
        if (v.kind == Value::kInt) {
          out_->seed = static_cast<uint64_t>(v.i);
        } else if (v.kind == Value::kUint) {
          out_->seed = v.u;
        } else {
          return type_error("an integer", v);
        }
        out_->has_seed = true;
        return true;
      case Field::kStop:
        out_->stop.clear();
        if (v.kind == Value::kString) {
          if (v.s->empty()) return true;
          if (!stop_fits(*v.s, "'stop'")) return false;
          out_->stop.emplace_back();
          return charge(sizeof(std::string)) && keep_string(&out_->stop.back(), v.s);
        }
        if (v.kind != Value::kArray) return stop_shape(describe(v));
        push(Frame::kStop);
        return true;
      case Field::kStream:
      case Field::kEcho:
        if (v.kind != Value::kBool) return fail(400, quoted(top_name_) + " must be true or false, got " + describe(v), top_name_);
        (f == Field::kStream ? out_->stream : out_->echo) = v.b;
        return true;
      case Field::kStreamOptions:
        if (v.kind != Value::kObject) return stream_options_shape(describe(v));
        push(Frame::kStreamOptions);
        return true;
      case Field::kPresencePenalty: return real(v, -2.0, 2.0, false, &out_->presence_penalty);
      case Field::kFrequencyPenalty: return real(v, -2.0, 2.0, false, &out_->frequency_penalty);
      case Field::kLogitBias:
        if (v.kind != Value::kObject) {
          return fail(400, "'logit_bias' must be an object of token id -> bias, got " + describe(v), "logit_bias");
        }
        out_->logit_bias.clear();
        push(Frame::kLogitBias);
        return true;
      case Field::kLogprobs:
        // Chat's true/false, or the completions API's count of alternatives.
        if (v.kind == Value::kBool) {
          out_->logprobs = v.b;
          return true;
        } else {
          int64_t n = 0;
          if (!integer(v, 0, EMBER_MAX_TOP_LOGPROBS, &n)) return false;
          out_->logprobs = true;
          logprobs_count_ = static_cast<int32_t>(n);
          return true;
        }
      case Field::kTopLogprobs: {
        int64_t n = 0;
        if (!integer(v, 0, EMBER_MAX_TOP_LOGPROBS, &n)) return false;
        top_logprobs_ = static_cast<int32_t>(n);
        return true;
      }
      case Field::kResponseFormat:
        if (v.kind != Value::kObject) return response_format_shape(describe(v));
        format_type_ = 0;
        json_schema_seen_ = false;
        schema_seen_ = false;
        out_->json_schema.clear();
        push(Frame::kResponseFormat);
        return true;
      default: return skip(v);
    }
  }

  bool root_end() {
    finished_ = true;
    if (!tools_end()) return false;
    if (top_logprobs_ > 0 && !out_->logprobs) {
      return fail(400, "'top_logprobs' = " + std::to_string(top_logprobs_) + " needs 'logprobs' on", "top_logprobs");
    }
    out_->top_logprobs = top_logprobs_ >= 0 ? top_logprobs_ : out_->logprobs ? logprobs_count_ : 0;
    if (chat_) {
      if (!messages_seen_ || out_->messages.empty()) {
        return fail(400, "'messages' must be a non-empty array of {role, content}", "messages");
      }
      if (out_->echo) return fail(400, "'echo' is only for /v1/completions", "echo");
      if (max_completion_tokens_ >= 0) {
        out_->max_tokens = max_completion_tokens_;
      } else if (max_tokens_ >= 0) {
        out_->max_tokens = max_tokens_;
      }
    } else {
      if (!prompt_seen_) return fail(400, "'prompt' is required", "prompt");
      if (max_tokens_ >= 0) out_->max_tokens = max_tokens_;
    }
    return true;
  }

  bool type_error(const char* want, const Value& v) {
    return fail(400, quoted(top_name_) + " must be " + want + ", got " + describe(v), top_name_);
  }

  bool integer(const Value& v, int64_t lo, int64_t hi, int64_t* out) {
    const std::string name = quoted(top_name_);
    if (!v.number() || (v.kind == Value::kFloat && std::floor(v.d) != v.d)) return type_error("an integer", v);
    const double d = v.as_double();
    const bool in = v.kind == Value::kInt    ? v.i >= lo && v.i <= hi
                    : v.kind == Value::kUint ? v.u >= static_cast<uint64_t>(lo < 0 ? 0 : lo) &&
                                                   v.u <= static_cast<uint64_t>(hi)
                                             : d >= static_cast<double>(lo) && d <= static_cast<double>(hi);
    if (!in) {
      return fail(400, name + " = " + describe(v) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                  top_name_);
    }
    *out = v.kind == Value::kInt ? v.i : v.kind == Value::kUint ? static_cast<int64_t>(v.u) : static_cast<int64_t>(d);
    return true;
  }

  // A number in [lo, hi], or (lo, hi] when open_low.
  bool real(const Value& v, double lo, double hi, bool open_low, float* out) {
    if (!v.number()) return type_error("a number", v);
    // Checked as the float the sampler gets (5e-324 is above 0, its float is not).
    const float d = static_cast<float>(v.as_double());
    if (!(open_low ? d > lo : d >= lo) || !(d <= hi)) {
      char range[64];
      std::snprintf(range, sizeof range, "%c%g, %g]", open_low ? '(' : '[', lo, hi);
      return fail(400, quoted(top_name_) + " = " + describe(v) + " is outside " + range, top_name_);
    }
    *out = d;
    return true;
  }

  // ---- unsupported parameters ----

  bool unsupported_value(const Value& v) {
    if (v.kind == Value::kNull) return true;
    unsupported_ = unsupported_index_;
    const Neutral n = kUnsupported[unsupported_].neutral;
    if (v.container()) {  // judged at its end: only an empty one can be neutral
      skip(v);
      judge_skipped_ = true;
      return true;
    }
    bool neutral = false;
    switch (n) {
      case Neutral::kOne: neutral = v.number() && v.as_double() == 1.0; break;
      case Neutral::kNone: neutral = v.kind == Value::kString && *v.s == "none"; break;
      case Neutral::kEmptyString: neutral = v.kind == Value::kString && v.s->empty(); break;
      case Neutral::kEmpty: neutral = false; break;
    }
    const int index = unsupported_;
    unsupported_ = -1;
    return neutral ? true : refuse_unsupported(index, describe(v));
  }

  bool unsupported_end() {
    const int index = unsupported_;
    unsupported_ = -1;
    const Neutral n = kUnsupported[index].neutral;
    if (n == Neutral::kEmpty && skipped_children_ == 0) return true;
    return refuse_unsupported(index, "a non-empty value");
  }

  bool refuse_unsupported(int index, const std::string& got) {
    const UnsupportedParameter& p = kUnsupported[index].parameter;
    return fail(400, std::string("Unsupported parameter: '") + p.name + "' is not supported by ember serve (got " + got +
                         "; only " + p.neutral + " or null is accepted)",
                p.name, "unsupported_parameter");
  }

  // ---- response_format ----

  bool response_format_shape(const std::string& got) {
    return fail(400,
                "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": "
                "\"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}, got " + got,
                "response_format");
  }

  bool response_format_field(const Value& v) {
    const int key = keys_[depth_ - 1];
    if (key == 1) {  // type
      static const char* const kTypes[] = {"text", "json_object", "json_schema"};
      format_type_ = 0;
      for (int i = 0; i < 3 && v.kind == Value::kString; ++i) {
        if (*v.s == kTypes[i]) format_type_ = i + 1;
      }
      if (format_type_ == 0) {
        return fail(400, "'response_format.type' = " + describe(v) +
                             " is not one of \"text\", \"json_object\", \"json_schema\"",
                    "response_format", "invalid_value");
      }
      return true;
    }
    if (key != 2) return skip(v);  // json_schema
    if (v.kind == Value::kNull) return true;
    if (v.kind != Value::kObject) {
      return fail(400, "'response_format.json_schema' must be an object {\"name\": ..., \"schema\": {...}, \"strict\": "
                       "true|false}, got " + describe(v),
                  "response_format");
    }
    json_schema_seen_ = true;
    schema_seen_ = false;
    out_->json_schema.clear();
    push(Frame::kJsonSchema);
    return true;
  }

  bool json_schema_field(const Value& v) {
    const int key = keys_[depth_ - 1];
    if (key == 0) return skip(v);
    if (v.kind == Value::kNull) return true;  // absent
    auto want = [&](bool ok, const char* field, const char* what) {
      if (ok) return true;
      return fail(400, std::string("'response_format.json_schema.") + field + "' must be " + what + ", got " +
                           describe(v),
                  "response_format");
    };
    switch (key) {
      case 1: return want(v.kind == Value::kString, "name", "a string");
      case 3: return want(v.kind == Value::kBool, "strict", "true or false");
      case 4: return want(v.kind == Value::kString, "description", "a string");
      default:  // schema
        if (!want(v.kind == Value::kObject || v.kind == Value::kBool, "schema", "a JSON Schema: an object or a boolean")) {
          return false;
        }
        schema_seen_ = true;
        out_->json_schema.clear();
        if (v.kind == Value::kBool) return schema_append(v.b ? "true" : "false");
        schema_comma_ = false;
        schema_depth_ = 1;
        return schema_append("{");
    }
  }

  bool response_format_end() {
    using Format = CompletionRequest::Format;
    if (format_type_ == 0) {
      return fail(400, "'response_format.type' is required: \"text\", \"json_object\" or \"json_schema\"",
                  "response_format");
    }
    if (format_type_ == 3 && !json_schema_seen_) {
      return fail(400, "'response_format.json_schema' is required with \"type\": \"json_schema\"", "response_format");
    }
    // json_schema without a schema: any JSON object, as json_object.
    out_->format = format_type_ == 1                  ? Format::kText
                   : format_type_ == 3 && schema_seen_ ? Format::kJsonSchema
                                                       : Format::kJsonObject;
    if (out_->format != Format::kJsonSchema) out_->json_schema.clear();
    return true;
  }

  // The schema's events, written out as compact JSON text. Its nesting was
  // bounded by check_json (max_depth); the text is bounded by
  // max_schema_bytes and charged to the keep budget as the string's
  // capacity grows.
  bool schema_append(std::string_view text) {
    std::string& out = out_->json_schema;
    if (out.size() + text.size() > limits_.max_schema_bytes) {
      return fail(400, "'response_format.json_schema.schema' takes more than " +
                           std::to_string(limits_.max_schema_bytes >> 10) + " KiB as compact JSON",
                  "response_format", "schema_too_large");
    }
    const size_t capacity = out.capacity();
    out.append(text);
    return out.capacity() == capacity || charge(out.capacity() - capacity);
  }

  bool schema_value(const Value& v) {
    if (schema_comma_ && !schema_append(",")) return false;
    schema_comma_ = true;
    char buf[32];
    switch (v.kind) {
      case Value::kNull: return schema_append("null");
      case Value::kBool: return schema_append(v.b ? "true" : "false");
      case Value::kInt: std::snprintf(buf, sizeof buf, "%" PRId64, v.i); return schema_append(buf);
      case Value::kUint: std::snprintf(buf, sizeof buf, "%" PRIu64, v.u); return schema_append(buf);
      case Value::kFloat: return schema_append(*v.raw);  // as written (the lexer checked it)
      case Value::kString: return schema_append(json_string(*v.s));
      case Value::kArray:
      case Value::kObject:
        ++schema_depth_;
        schema_comma_ = false;
        return schema_append(v.kind == Value::kArray ? "[" : "{");
    }
    return true;
  }

  bool schema_key(const std::string& k) {
    if (schema_comma_ && !schema_append(",")) return false;
    schema_comma_ = false;
    return schema_append(json_string(k)) && schema_append(":");
  }

  bool schema_end(char close) {
    --schema_depth_;
    schema_comma_ = true;
    return schema_append(std::string_view(&close, 1));
  }

  // A string as a JSON literal (the lexer has checked its UTF-8).
  static std::string json_string(const std::string& s) {
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  }

  // ---- tools, tool_choice, a message's tool_calls ----
  // Captured as compact JSON text while they are read (charged to the
  // budget, at most kMaxCapturedBytes), then read from that text as a
  // document when they end: small, bounded, and read in one place.

  bool start_capture(Capture what, const Value& v) {
    capture_ = what;
    capture_depth_ = 0;
    captured_.clear();
    after_key_ = false;
    return capture_value(v);
  }

  bool captured(size_t before) {
    if (captured_.size() > kMaxCapturedBytes) {
      return fail(400, capture_name() + " is over " + std::to_string(kMaxCapturedBytes >> 10) + " KiB as compact JSON",
                  capture_param());
    }
    return charge(captured_.size() - before);
  }

  bool capture_value(const Value& v) {
    const size_t before = captured_.size();
    if (capture_depth_ > 0 && !after_key_) {
      if (!capture_open_[capture_depth_ - 1].first) captured_ += ',';
      capture_open_[capture_depth_ - 1].first = false;
    }
    after_key_ = false;
    switch (v.kind) {
      case Value::kNull: captured_ += "null"; break;
      case Value::kBool: captured_ += v.b ? "true" : "false"; break;
      case Value::kInt:
      case Value::kUint:
      case Value::kFloat: captured_ += describe(v); break;
      case Value::kString: captured_ += json(*v.s).dump(-1, ' ', false, json::error_handler_t::replace); break;
      case Value::kArray:
      case Value::kObject:
        captured_ += v.kind == Value::kArray ? '[' : '{';
        capture_open_.push_back({v.kind == Value::kObject, true});
        ++capture_depth_;
        break;
    }
    return captured(before);
  }

  bool capture_key(const std::string& k) {
    const size_t before = captured_.size();
    if (!capture_open_[capture_depth_ - 1].first) captured_ += ',';
    capture_open_[capture_depth_ - 1].first = false;
    captured_ += json(k).dump(-1, ' ', false, json::error_handler_t::replace);
    captured_ += ':';
    after_key_ = true;
    return captured(before);
  }

  bool capture_end() {
    captured_ += capture_open_.back().object ? '}' : ']';
    capture_open_.pop_back();
    if (--capture_depth_ > 0) return captured(captured_.size() - 1);
    const Capture what = capture_;
    capture_ = Capture::kNone;
    // Ordered: a schema's properties keep their order (the grammar follows it).
    const ojson doc = ojson::parse(captured_, nullptr, false);
    std::string().swap(captured_);
    if (doc.is_discarded()) return fail(400, capture_name() + " is not valid JSON", capture_param());  // cannot happen
    switch (what) {
      case Capture::kTools: return read_tools(doc);
      case Capture::kToolChoice: return read_tool_choice(doc);
      case Capture::kToolCalls: return read_tool_calls(doc);
      case Capture::kNone: break;
    }
    return true;
  }

  std::string capture_name() const {
    return capture_ == Capture::kToolCalls ? where_message() + ".tool_calls'" : quoted(top_name_);
  }
  std::string capture_param() const { return capture_ == Capture::kToolCalls ? "messages" : top_name_; }

  // A function name as OpenAI allows it: 1..64 of [A-Za-z0-9_-].
  static bool function_name_ok(const std::string& n) {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      if (!ok) return false;
    }
    return true;
  }

  // The string member `key` of object `o` into *out: absent or null leaves
  // it; another type is a 400 naming where.
  bool string_member(const ojson& o, const char* key, const std::string& where, const char* param, std::string* out) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return true;
    if (!it->is_string()) return fail(400, where + "." + key + "' must be a string", param);
    *out = it->get_ref<const std::string&>();
    return charge(out->size());
  }

  bool read_tools(const ojson& doc) {
    const char* p = "tools";
    if (doc.size() > kMaxTools) {
      return fail(400, "'tools' has " + std::to_string(doc.size()) + " entries: at most " + std::to_string(kMaxTools), p);
    }
    out_->tools.clear();
    for (size_t i = 0; i < doc.size(); ++i) {
      const ojson& t = doc[i];
      const std::string where = "'tools[" + std::to_string(i) + "]";
      if (!t.is_object()) return fail(400, where + "' must be {\"type\": \"function\", \"function\": {...}}", p);
      const auto type = t.find("type");
      if (type == t.end() || !type->is_string() || type->get_ref<const std::string&>() != "function") {
        return fail(400, where + ".type' must be \"function\" (the only tool type ember serves)", p);
      }
      const auto f = t.find("function");
      if (f == t.end() || !f->is_object()) {
        return fail(400, where + ".function' must be an object {name, description, parameters}", p);
      }
      if (!charge(sizeof(ToolFunction))) return false;
      ToolFunction tf;
      const auto name = f->find("name");
      if (name == f->end() || !name->is_string() || !function_name_ok(name->get_ref<const std::string&>())) {
        return fail(400, where + ".function.name' must be 1 to 64 letters, digits, '_' or '-'", p);
      }
      tf.name = name->get_ref<const std::string&>();
      for (const ToolFunction& other : out_->tools) {
        if (other.name == tf.name) return fail(400, where + ".function.name' = \"" + tf.name + "\" is given twice", p);
      }
      if (!string_member(*f, "description", where + ".function", p, &tf.description)) return false;
      const auto params = f->find("parameters");
      if (params != f->end() && !params->is_null()) {
        if (!params->is_object()) return fail(400, where + ".function.parameters' must be a JSON Schema object", p);
        tf.parameters = params->dump();
        if (tf.parameters.size() > kMaxParametersBytes) {
          return fail(400, where + ".function.parameters' is over " + std::to_string(kMaxParametersBytes >> 10) +
                               " KiB as compact JSON", p);
        }
        if (!charge(tf.parameters.size())) return false;
      }
      out_->tools.push_back(std::move(tf));
    }
    return true;
  }

  bool tool_choice_string(const Value& v) {
    if (v.kind == Value::kString) {
      const std::string& c = *v.s;
      const bool known = c == "none" || c == "auto" || c == "required";
      if (known) {
        out_->tool_choice = c == "none" ? ToolChoice::kNone : c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
        return true;
      }
    }
    return fail(400, "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                     "\"function\": {\"name\": ...}}, got " + describe(v),
                "tool_choice");
  }

  bool read_tool_choice(const ojson& doc) {
    const auto type = doc.find("type");
    const auto f = doc.find("function");
    if (type == doc.end() || !type->is_string() || type->get_ref<const std::string&>() != "function" ||
        f == doc.end() || !f->is_object()) {
      return fail(400, "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                  "tool_choice");
    }
    const auto name = f->find("name");
    if (name == f->end() || !name->is_string()) {
      return fail(400, "'tool_choice.function.name' must be a string", "tool_choice");
    }
    out_->tool_choice = ToolChoice::kNamed;
    out_->tool_choice_name = name->get_ref<const std::string&>();
    return charge(out_->tool_choice_name.size());
  }

  bool read_tool_calls(const ojson& doc) {
    ChatMessage& m = out_->messages.back();
    const std::string base = where_message() + ".tool_calls";
    if (doc.size() > kMaxToolCalls) {
      return fail(400, base + "' has more than " + std::to_string(kMaxToolCalls) + " calls", "messages");
    }
    if (!charge(doc.size() * sizeof(ToolCall))) return false;
    m.tool_calls.clear();
    for (size_t i = 0; i < doc.size(); ++i) {
      const ojson& c = doc[i];
      const std::string where = base + "[" + std::to_string(i) + "]";
      if (!c.is_object()) return fail(400, where + "' must be {id, type: \"function\", function: {name, arguments}}", "messages");
      const auto type = c.find("type");
      if (type != c.end() && !type->is_null() &&
          !(type->is_string() && type->get_ref<const std::string&>() == "function")) {
        return fail(400, where + ".type' must be \"function\"", "messages");
      }
      const auto f = c.find("function");
      if (f == c.end() || !f->is_object()) return fail(400, where + ".function' must be {name, arguments}", "messages");
      ToolCall call;
      if (!string_member(c, "id", where, "messages", &call.id)) return false;
      const auto name = f->find("name");
      if (name == f->end() || !name->is_string()) return fail(400, where + ".function.name' must be a string", "messages");
      call.name = name->get_ref<const std::string&>();
      const auto args = f->find("arguments");
      if (args != f->end() && args->is_object()) {
        call.arguments = args->dump();  // some clients send the object itself
      } else if (!string_member(*f, "arguments", where + ".function", "messages", &call.arguments)) {
        return false;
      }
      if (!charge(call.name.size() + call.arguments.size())) return false;
      m.tool_calls.push_back(std::move(call));
    }
    return true;
  }

  // At the root's end: tool_choice's default and agreement with tools; the
  // completions API takes neither.
  bool tools_end() {
    CompletionRequest& r = *out_;
    if (!chat_) {
      if (!r.tools.empty()) {
        return fail(400, "Unsupported parameter: 'tools' is only for /v1/chat/completions", "tools",
                    "unsupported_parameter");
      }
      if (tool_choice_seen_ && r.tool_choice != ToolChoice::kNone) {
        return fail(400, "Unsupported parameter: 'tool_choice' is only for /v1/chat/completions", "tool_choice",
                    "unsupported_parameter");
      }
      r.tool_choice = ToolChoice::kNone;
      return true;
    }
    if (!tool_choice_seen_) r.tool_choice = r.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
    if ((r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed) && r.tools.empty()) {
      return fail(400, "'tool_choice' asks for a call but 'tools' is empty", "tool_choice");
    }
    if (r.tool_choice == ToolChoice::kNamed) {
      for (const ToolFunction& t : r.tools) {
        if (t.name == r.tool_choice_name) return true;
      }
      return fail(400, "'tool_choice.function.name' = " + preview_string(r.tool_choice_name) +
                           " is not one of the functions in 'tools'",
                  "tool_choice");
    }
    return true;
  }

  // ---- messages ----

  std::string where_message() const { return "'messages[" + std::to_string(messages_ - 1) + "]"; }
  std::string where_part() const {
    return where_message() + ".content[" + std::to_string(parts_ - 1) + "]'";
  }

  bool message(const Value& v) {
    if (v.kind != Value::kObject) {
      return fail(400, "'messages[" + std::to_string(messages_) + "]' must be an object with a string 'role', got " +
                           describe(v),
                  "messages");
    }
    if (out_->messages.size() >= limits_.max_messages) {
      return fail(400, "'messages' holds more than " + std::to_string(limits_.max_messages) +
                           " messages: more than the context of a slot holds",
                  "messages");
    }
    if (!charge(2 * sizeof(ChatMessage))) return false;  // the vector's spare capacity too
    out_->messages.emplace_back();
    ++messages_;
    has_role_ = false;
    push(Frame::kMessage);
    return true;
  }

  bool message_field(const Value& v) {
    ChatMessage& m = out_->messages.back();
    const int key = keys_[depth_ - 1];
    if (key == 1) {  // role
      if (v.kind != Value::kString) {
        return fail(400, where_message() + ".role' must be a string, got " + describe(v), "messages");
      }
      const std::string& r = *v.s;
      if (r != "system" && r != "user" && r != "assistant" && r != "developer" && r != "tool") {
        return fail(400, where_message() + ".role' = " + describe(v) +
                             " is not one of system, developer, user, assistant, tool",
                    "messages");
      }
      m.role = r;  // short: no allocation (a role is at most 9 bytes)
      has_role_ = true;
      return true;
    }
    if (key == 3) {  // tool_calls
      if (v.kind == Value::kNull) return true;
      if (v.kind != Value::kArray) {
        return fail(400, where_message() + ".tool_calls' must be an array of calls, got " + describe(v), "messages");
      }
      return start_capture(Capture::kToolCalls, v);
    }
    if (key == 4) {  // tool_call_id
      if (v.kind == Value::kNull) return true;
      if (v.kind != Value::kString) {
        return fail(400, where_message() + ".tool_call_id' must be a string, got " + describe(v), "messages");
      }
      return keep_string(&m.tool_call_id, v.s);
    }
    if (key != 2) return skip(v);  // name, ...: not read
    m.content.clear();
    if (v.kind == Value::kNull) return true;
    if (v.kind == Value::kString) return keep_string(&m.content, v.s);
    if (v.kind != Value::kArray) {
      return fail(400, where_message() + ".content' must be a string or an array of text parts, got " + describe(v),
                  "messages");
    }
    parts_ = 0;
    push(Frame::kContent);
    return true;
  }

  bool part(const Value& v) {
    ++parts_;
    if (v.kind != Value::kObject) {
      return fail(400, where_part() + " must be {\"type\":\"text\",\"text\":...} (only text is supported), got " +
                           describe(v),
                  "messages");
    }
    part_type_ = 0;
    part_text_ = false;
    push(Frame::kPart);
    return true;
  }

  bool part_field(const Value& v) {
    const int key = keys_[depth_ - 1];
    if (key == 1) {  // type
      if (v.kind != Value::kString || *v.s != "text") {
        return fail(400, where_part() + ".type = " + describe(v) + ": only text parts are supported", "messages");
      }
      part_type_ = 1;
      return true;
    }
    if (key != 2) return skip(v);
    if (v.kind != Value::kString) {
      return fail(400, where_part() + ".text must be a string, got " + describe(v), "messages");
    }
    part_text_ = true;
    out_->messages.back().content.append(*v.s);
    return charge(v.s->size());
  }

  // ---- prompt, stop, stream_options ----

  bool prompt_shape(const std::string& got) {
    return fail(400,
                "'prompt' must be a string, an array of one string, or an array of token ids (one prompt per "
                "request), got " + got,
                "prompt");
  }

  bool prompt_element(const Value& v) {
    const size_t i = prompt_elements_++;
    if (v.kind == Value::kString) {
      if (i > 0) return prompt_shape("an array of more than one string or of strings and numbers");
      return keep_string(&out_->prompt, v.s);
    }
    if (v.number() && (i == 0 || out_->prompt_is_tokens)) {
      if (v.kind == Value::kFloat || (v.kind == Value::kInt && (v.i < 0 || v.i > INT32_MAX)) ||
          (v.kind == Value::kUint && v.u > static_cast<uint64_t>(INT32_MAX))) {
        return fail(400, "'prompt[" + std::to_string(i) + "]' must be a token id (a non-negative integer), got " +
                             describe(v),
                    "prompt");
      }
      if (out_->prompt_tokens.size() >= limits_.max_prompt_tokens) {
        return fail(400, "'prompt' has more than " + std::to_string(limits_.max_prompt_tokens) +
                             " token ids: more than the context of a slot holds",
                    "prompt", "context_length_exceeded");
      }
      if (!charge(2 * sizeof(int32_t))) return false;
      out_->prompt_is_tokens = true;
      out_->prompt_tokens.push_back(static_cast<int32_t>(v.kind == Value::kInt ? v.i : static_cast<int64_t>(v.u)));
      return true;
    }
    if (i == 0 && !v.number()) return prompt_shape("an array starting with " + describe(v));
    if (v.number()) return prompt_shape("an array of strings and numbers");
    return fail(400, "'prompt[" + std::to_string(i) + "]' must be a token id (a non-negative integer), got " + describe(v),
                "prompt");
  }

  bool stop_shape(const std::string& got) {
    return fail(400, "'stop' must be a string or an array of at most " + std::to_string(kMaxStop) + " strings, got " + got,
                "stop");
  }

  bool stop_fits(const std::string& s, const std::string& where) {
    if (s.size() <= EMBER_MAX_STOP_STRING_BYTES) return true;
    return fail(400, where + " is " + std::to_string(s.size()) + " bytes long: at most " +
                         std::to_string(EMBER_MAX_STOP_STRING_BYTES),
                "stop");
  }

  bool stop_element(const Value& v) {
    const size_t i = out_->stop.size();
    if (i == kMaxStop) return stop_shape("more");
    const std::string where = "'stop[" + std::to_string(i) + "]'";
    if (v.kind != Value::kString || v.s->empty()) {
      return fail(400, where + " must be a non-empty string, got " + describe(v), "stop");
    }
    if (!stop_fits(*v.s, where)) return false;
    out_->stop.emplace_back();
    return charge(sizeof(std::string)) && keep_string(&out_->stop.back(), v.s);
  }

  // One "token id": bias member; the id was read from its name (key()).
  bool logit_bias_entry(const Value& v) {
    if (bias_token_ < 0) {
      return fail(400, "'logit_bias' keys must be token ids (decimal integers), got " + bias_key_, "logit_bias");
    }
    const std::string where = "'logit_bias[\"" + std::to_string(bias_token_) + "\"]'";
    if (!v.number()) return fail(400, where + " must be a number, got " + describe(v), "logit_bias");
    const double d = v.as_double();
    if (!(d >= -100.0 && d <= 100.0)) {
      return fail(400, where + " = " + describe(v) + " is outside [-100, 100]", "logit_bias");
    }
    if (out_->logit_bias.size() >= kMaxLogitBias) {
      return fail(400, "'logit_bias' has more than " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
    }
    for (const ember_logit_bias& b : out_->logit_bias) {
      if (b.token == bias_token_) return fail(400, where + " is given twice", "logit_bias");
    }
    if (!charge(2 * sizeof(ember_logit_bias))) return false;
    out_->logit_bias.push_back({bias_token_, static_cast<float>(d)});
    return true;
  }

  bool stream_options_shape(const std::string& got) {
    return fail(400, "'stream_options' must be {\"include_usage\": true|false}, got " + got, "stream_options");
  }

  bool stream_option(const Value& v) {
    if (keys_[depth_ - 1] != 1) return skip(v);
    if (v.kind == Value::kNull) return true;
    if (v.kind != Value::kBool) return stream_options_shape("include_usage " + describe(v));
    out_->include_usage = v.b;
    return true;
  }

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

  bool messages_seen_ = false, prompt_seen_ = false;
  size_t messages_ = 0, parts_ = 0, prompt_elements_ = 0;
  bool has_role_ = false, part_text_ = false;
  int part_type_ = 0;
  int32_t max_tokens_ = -1, max_completion_tokens_ = -1;
  int32_t logprobs_count_ = 0;   // logprobs given as a count (the completions API)
  int32_t top_logprobs_ = -1;    // -1: not given
  int32_t bias_token_ = -1;      // logit_bias: the current member's token id, -1 when its name is not one
  std::string bias_key_;         // that name, cut, for the message

 public:
  // The current logit_bias member's name as a token id (key()).
  void set_bias_key(const std::string& k) {
    bias_token_ = -1;
    bias_key_ = preview_string(k, 24);
    if (k.empty() || k.size() > 10) return;
    int64_t id = 0;
    for (char c : k) {
      if (c < '0' || c > '9') return;
      id = id * 10 + (c - '0');
    }
    if (id <= INT32_MAX) bias_token_ = static_cast<int32_t>(id);
  }
};

bool Reader::key(string_t& k) {
  if (schema_depth_ > 0) return schema_key(k);
  if (capture_ != Capture::kNone) return capture_key(k);
  if (skip_ > 0) return true;
  const size_t level = depth_ - 1;
  switch (frames_[level]) {
    case Frame::kRoot:
      field_ = Field::kOther;
      top_name_ = "";
      unsupported_index_ = -1;
      for (const auto& f : kFields) {
        if (k == f.name) {
          field_ = f.field;
          top_name_ = f.name;
        }
      }
      for (size_t i = 0; i < kUnsupportedCount; ++i) {
        if (k == kUnsupported[i].parameter.name) {
          field_ = Field::kUnsupported;
          top_name_ = kUnsupported[i].parameter.name;
          unsupported_index_ = static_cast<int>(i);
        }
      }
      return true;
    case Frame::kMessage:
      keys_[level] = k == "role" ? 1 : k == "content" ? 2 : k == "tool_calls" ? 3 : k == "tool_call_id" ? 4 : 0;
      return true;
    case Frame::kPart: keys_[level] = k == "type" ? 1 : k == "text" ? 2 : 0; return true;
    case Frame::kStreamOptions: keys_[level] = k == "include_usage" ? 1 : 0; return true;
    case Frame::kResponseFormat: keys_[level] = k == "type" ? 1 : k == "json_schema" ? 2 : 0; return true;
    case Frame::kJsonSchema:
      keys_[level] = k == "name" ? 1 : k == "schema" ? 2 : k == "strict" ? 3 : k == "description" ? 4 : 0;
      return true;
    case Frame::kLogitBias: set_bias_key(k); return true;
    default: return true;
  }
}

}  // namespace

const UnsupportedParameter* unsupported_parameters() {
  static const auto table = [] {
    std::array<UnsupportedParameter, kUnsupportedCount + 1> t{};
    for (size_t i = 0; i < kUnsupportedCount; ++i) t[i] = kUnsupported[i].parameter;
    t[kUnsupportedCount] = {nullptr, nullptr};
    return t;
  }();
  return table.data();
}

std::string preview_string(std::string_view s, size_t max_bytes) {
  std::string cut(s.substr(0, max_bytes));
  std::string q = json(cut).dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max_bytes) q.insert(q.size() - 1, "...");
  return q;
}

bool read_completion_request(std::string_view body, bool chat, const ReadLimits& limits, CompletionRequest* out,
                             RequestError* error) {
  *out = CompletionRequest();
  out->chat = chat;
  *error = RequestError();
  JsonLimits jl;
  jl.max_depth = limits.max_depth;
  const JsonCheck check = check_json(body, jl);
  if (!check.ok) {
    error->message = "the request body is not valid JSON: " + check.what + " (at byte " + std::to_string(check.offset) + ")";
    return false;
  }
  Reader reader(chat, limits, body.size(), out, error);
  const bool ok = json::sax_parse(body.begin(), body.end(), &reader, json::input_format_t::json, true, false);
  if (!ok || reader.failed()) {
    if (!reader.failed()) error->message = "the request body is not valid JSON";
    *out = CompletionRequest();
    out->chat = chat;
    return false;
  }
  return true;
}

bool parse_completion_request(std::string_view body, bool chat, CompletionRequest* out, std::string* error) {
  RequestError e;
  if (read_completion_request(body, chat, ReadLimits(), out, &e)) return true;
  *error = e.message;
  return false;
}

}  // namespace ember::serve

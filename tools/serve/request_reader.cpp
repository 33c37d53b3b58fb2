// Reading a request body (request_reader.h): the SAX reader's events and
// dispatch, the root object and its core and sampling fields (model, limits,
// sampling, prompt, stop, logit_bias, stream_options), the unsupported
// parameters, and the entry points. The reader is request_reader_sax.h; its
// messages, tools and response_format are read in the files named there.
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
#include "tools/serve/request_reader_sax.h"

namespace ember::serve {
namespace sax {
namespace {

// The unsupported parameters (see request_reader.h): what counts as asking
// for nothing.
enum class Neutral {
  kOne,          // the number 1 (n, best_of)
  kEmpty,        // [] or {}
  kNone,         // the string "none"
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
    {{"suffix", "\"\""}, Neutral::kEmptyString},
};
constexpr size_t kUnsupportedCount = sizeof kUnsupported / sizeof kUnsupported[0];

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
    {"functions", Field::kFunctions},
    {"function_call", Field::kFunctionCall},
};

// The most logit_bias entries a request may give (OpenAI's own limit is 300).
constexpr size_t kMaxLogitBias = 1024;

// The runtime's limits on stop strings (ember.h): the server checks them
// here so that what it accepts the scheduler runs.
constexpr size_t kMaxStop = 16;
static_assert(kMaxStop <= EMBER_MAX_STOP_STRINGS, "the server's stop strings must fit the runtime's");

}  // namespace

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

RequestReader::RequestReader(bool chat, const ReadLimits& limits, size_t body_size, CompletionRequest* out,
                             RequestError* error)
    : chat_(chat), limits_(limits), out_(out), error_(error) {
  budget_ = limits.kept_slack;
  if (body_size > (SIZE_MAX - budget_) / (limits.kept_per_body_byte ? limits.kept_per_body_byte : 1)) {
    budget_ = SIZE_MAX;
  } else {
    budget_ += body_size * limits.kept_per_body_byte;
  }
}

bool RequestReader::boolean(bool b) {
  Value v;
  v.kind = Value::kBool;
  v.b = b;
  return value(v);
}

bool RequestReader::number_integer(number_integer_t i) {
  Value v;
  v.kind = Value::kInt;
  v.i = i;
  return value(v);
}

bool RequestReader::number_unsigned(number_unsigned_t u) {
  Value v;
  v.kind = Value::kUint;
  v.u = u;
  return value(v);
}

bool RequestReader::number_float(number_float_t d, const string_t& raw) {
  if (!std::isfinite(d)) return fail(400, "a number in the request is outside the range of a double", top_name());
  Value v;
  v.kind = Value::kFloat;
  v.d = d;
  v.raw = &raw;
  return value(v);
}

bool RequestReader::string(string_t& s) {
  Value v;
  v.kind = Value::kString;
  v.s = &s;
  return value(v);
}

bool RequestReader::start_object(std::size_t) {
  Value v;
  v.kind = Value::kObject;
  return value(v);
}

bool RequestReader::start_array(std::size_t) {
  Value v;
  v.kind = Value::kArray;
  return value(v);
}

bool RequestReader::parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) {
  return fail(400, "the request body is not valid JSON (at byte " + std::to_string(position) + ")");
}

bool RequestReader::fail(int status, std::string message, std::string param, std::string code) {
  if (!failed_) {
    failed_ = true;
    error_->status = status;
    error_->message = std::move(message);
    error_->param = std::move(param);
    error_->code = std::move(code);
  }
  return false;
}

bool RequestReader::charge(size_t bytes) {
  kept_ += bytes;
  if (kept_ <= budget_) return true;
  return fail(400,
              quoted(top_name_) + ": the request holds more than its size allows: what is kept of it takes over " +
                  std::to_string(limits_.kept_per_body_byte) + " bytes per byte of body + " +
                  std::to_string(limits_.kept_slack >> 10) + " KiB (too many small elements)",
              top_name_);
}

bool RequestReader::keep_string(std::string* to, std::string* from) {
  *to = std::move(*from);
  return charge(to->size());
}

void RequestReader::push(Frame f) {
  frames_[depth_] = f;
  keys_[depth_] = 0;
  ++depth_;
}

// Every value event (a scalar, or the start of an array or object).
bool RequestReader::value(const Value& v) {
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
bool RequestReader::skip(const Value& v) {
  if (v.container()) {
    skip_ = 1;
    skipped_children_ = 0;
  }
  return true;
}

// The end of an object ('}') or an array (']').
bool RequestReader::end(char close) {
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

bool RequestReader::top_value(const Value& v) {
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
    case Field::kToolChoice:
    case Field::kParallelToolCalls:
    case Field::kFunctions:
    case Field::kFunctionCall: return tool_field(v);
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

bool RequestReader::root_end() {
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

bool RequestReader::type_error(const char* want, const Value& v) {
  return fail(400, quoted(top_name_) + " must be " + want + ", got " + describe(v), top_name_);
}

bool RequestReader::integer(const Value& v, int64_t lo, int64_t hi, int64_t* out) {
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
bool RequestReader::real(const Value& v, double lo, double hi, bool open_low, float* out) {
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

bool RequestReader::unsupported_value(const Value& v) {
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

bool RequestReader::unsupported_end() {
  const int index = unsupported_;
  unsupported_ = -1;
  const Neutral n = kUnsupported[index].neutral;
  if (n == Neutral::kEmpty && skipped_children_ == 0) return true;
  return refuse_unsupported(index, "a non-empty value");
}

bool RequestReader::refuse_unsupported(int index, const std::string& got) {
  const UnsupportedParameter& p = kUnsupported[index].parameter;
  return fail(400, std::string("Unsupported parameter: '") + p.name + "' is not supported by ember serve (got " + got +
                       "; only " + p.neutral + " or null is accepted)",
              p.name, "unsupported_parameter");
}

bool RequestReader::prompt_shape(const std::string& got) {
  return fail(400,
              "'prompt' must be a string, an array of one string, or an array of token ids (one prompt per "
              "request), got " + got,
              "prompt");
}

bool RequestReader::prompt_element(const Value& v) {
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

bool RequestReader::stop_shape(const std::string& got) {
  return fail(400, "'stop' must be a string or an array of at most " + std::to_string(kMaxStop) + " strings, got " + got,
              "stop");
}

bool RequestReader::stop_fits(const std::string& s, const std::string& where) {
  if (s.size() <= EMBER_MAX_STOP_STRING_BYTES) return true;
  return fail(400, where + " is " + std::to_string(s.size()) + " bytes long: at most " +
                       std::to_string(EMBER_MAX_STOP_STRING_BYTES),
              "stop");
}

bool RequestReader::stop_element(const Value& v) {
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
bool RequestReader::logit_bias_entry(const Value& v) {
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

bool RequestReader::stream_options_shape(const std::string& got) {
  return fail(400, "'stream_options' must be {\"include_usage\": true|false}, got " + got, "stream_options");
}

bool RequestReader::stream_option(const Value& v) {
  if (keys_[depth_ - 1] != 1) return skip(v);
  if (v.kind == Value::kNull) return true;
  if (v.kind != Value::kBool) return stream_options_shape("include_usage " + describe(v));
  out_->include_usage = v.b;
  return true;
}

// The current logit_bias member's name as a token id (key()).
void RequestReader::set_bias_key(const std::string& k) {
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

bool RequestReader::key(string_t& k) {
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

}  // namespace sax

using sax::json;
using sax::kUnsupported;
using sax::kUnsupportedCount;

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
  sax::RequestReader reader(chat, limits, body.size(), out, error);
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


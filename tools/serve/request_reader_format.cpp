// The request reader (request_reader_sax.h): response_format, its
// json_schema, and the schema copied out as compact JSON text.
#include "tools/serve/request_reader_sax.h"

#include <cinttypes>
#include <cstdio>

namespace ember::serve::sax {
namespace {

// A string as a JSON literal (the lexer has checked its UTF-8).
std::string json_string(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

bool RequestReader::response_format_shape(const std::string& got) {
  return fail(400,
              "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": "
              "\"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}, got " + got,
              "response_format");
}

bool RequestReader::response_format_field(const Value& v) {
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

bool RequestReader::json_schema_field(const Value& v) {
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

bool RequestReader::response_format_end() {
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
bool RequestReader::schema_append(std::string_view text) {
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

bool RequestReader::schema_value(const Value& v) {
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

bool RequestReader::schema_key(const std::string& k) {
  if (schema_comma_ && !schema_append(",")) return false;
  schema_comma_ = false;
  return schema_append(json_string(k)) && schema_append(":");
}

bool RequestReader::schema_end(char close) {
  --schema_depth_;
  schema_comma_ = true;
  return schema_append(std::string_view(&close, 1));
}

}  // namespace ember::serve::sax

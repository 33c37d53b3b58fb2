// The request reader (request_reader_sax.h): a chat request's messages and
// their content parts (text only), each checked and charged to the budget.
#include "tools/serve/request_reader_sax.h"

namespace ember::serve::sax {

std::string RequestReader::where_part() const {
  return where_message() + ".content[" + std::to_string(parts_ - 1) + "]'";
}

bool RequestReader::message(const Value& v) {
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

bool RequestReader::message_field(const Value& v) {
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

bool RequestReader::part(const Value& v) {
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

bool RequestReader::part_field(const Value& v) {
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

}  // namespace ember::serve::sax

// Gemma 4's call arguments: "{key:value,...}" as its template writes them
// (format_argument: keys bare, strings between <|"|> marks, true/false,
// numbers, [lists], {nested}), read into JSON, and the grammar of such an
// object for a function's parameters schema.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ember::serve {

// Reads Gemma's arguments object as the text comes, writing its JSON.
// Lenient where the model may stray: keys between <|"|> marks or JSON
// quotes, JSON strings, null / None / none, and a bare word that is no
// number or literal taken as a string. Nesting at most kMaxDepth.
class GemmaArgsReader {
 public:
  static constexpr size_t kMaxDepth = 64;
  // More text (the first byte must be the object's '{'); returns the JSON
  // text it decides (pieces that add up to the object's JSON). Text after
  // the object's end is not read (used() says where it ended).
  std::string add(std::string_view text);
  bool done() const { return done_; }
  bool failed() const { return failed_; }
  // Bytes of all the text added that the object took (when done()).
  size_t used() const { return used_; }

 private:
  enum class Mode { kStart, kValue, kValueOrClose, kKeyOrClose, kKey, kString, kJsonString, kAfter };
  // Reads buf from *i; false when it needs more text to decide.
  bool step(std::string_view buf, size_t* i, std::string* out);
  bool value(std::string_view buf, size_t* i, std::string* out);
  bool key(std::string_view buf, size_t* i, std::string* out);
  bool string_body(std::string_view buf, size_t* i, std::string* out);
  bool after(std::string_view buf, size_t* i, std::string* out);
  void close(char c, std::string* out);
  void fail() { failed_ = true; }

  Mode mode_ = Mode::kStart;
  std::vector<char> open_;  // '{' or '[' per level
  std::string pending_;     // text not decided yet
  size_t fed_ = 0;          // bytes added before pending_ began
  bool escaped_ = false;    // kJsonString: after a backslash
  bool done_ = false, failed_ = false;
  size_t used_ = 0;
};

// The whole object at the start of `text` as compact JSON text; false when
// it is not one (or cut). *used: its bytes in `text`.
bool gemma_args_to_json(std::string_view text, std::string* json, size_t* used);

// The GBNF rules of a Gemma arguments object for `schema` (JSON Schema
// text; "" for any object), the root rule named `root_name`, other rules
// prefixed with it. A subset, as Gemma's template renders arguments: keys
// in its order (sorted, case-folded, as dictsort), required ones present;
// string, integer, number, boolean, null, enum and const values; arrays by
// their items; nested objects the same way; anything else any Gemma value.
// Numbers' bounds, string lengths and patterns are not enforced. The rules
// it refers to named "gemma-*" are in kGemmaValueRules.
bool gemma_arguments_gbnf(const std::string& schema, const std::string& root_name, std::string* out,
                          std::string* error);
extern const char kGemmaValueRules[];

}  // namespace ember::serve

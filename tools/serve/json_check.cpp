#include "tools/serve/json_check.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ember::serve {
namespace {

// The scan keeps each open container's kind in a fixed array: nothing is
// allocated, whatever the input.
constexpr size_t kDepthCap = 256;
constexpr size_t kNumberCap = 256;

class Scanner {
 public:
  Scanner(std::string_view text, const JsonLimits& limits)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), limits_(limits) {
    if (limits_.max_depth > kDepthCap) limits_.max_depth = kDepthCap;
    if (limits_.max_number_chars > kNumberCap) limits_.max_number_chars = kNumberCap;
  }

  JsonCheck run() {
    // A UTF-8 byte order mark is skipped, as nlohmann's lexer does.
    if (end_ - p_ >= 3 && static_cast<unsigned char>(p_[0]) == 0xEF && static_cast<unsigned char>(p_[1]) == 0xBB &&
        static_cast<unsigned char>(p_[2]) == 0xBF) {
      p_ += 3;
    }
    size_t depth = 0;
    char open[kDepthCap];
    bool need_value = true;
    while (true) {
      if (need_value) {
        skip_space();
        if (p_ == end_) return fail("the text ends where a value should be");
        const char c = *p_;
        if (c == '{' || c == '[') {
          if (depth == limits_.max_depth) {
            return fail("arrays and objects are nested deeper than " + std::to_string(limits_.max_depth) + " levels");
          }
          open[depth++] = c;
          ++p_;
          skip_space();
          if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
            ++p_;
            --depth;
            need_value = false;
            continue;
          }
          if (c == '{' && !key()) return result_;
          continue;  // the first element
        }
        if (!scalar()) return result_;
        need_value = false;
        continue;
      }
      skip_space();
      if (depth == 0) {
        if (p_ != end_) return fail("more text after the JSON value");
        return result_;
      }
      if (p_ == end_) return fail("the text ends inside an array or object");
      const char close = open[depth - 1] == '{' ? '}' : ']';
      if (*p_ == close) {
        ++p_;
        --depth;
        continue;
      }
      if (*p_ != ',') {
        return fail(open[depth - 1] == '{' ? "expected ',' or '}' after an object member"
                                           : "expected ',' or ']' after an array element");
      }
      ++p_;
      if (open[depth - 1] == '{') {
        skip_space();
        if (!key()) return result_;
      }
      need_value = true;
    }
  }

 private:
  bool fail_bool(std::string what) {
    fail(std::move(what));
    return false;
  }
  const JsonCheck& fail(std::string what) {
    if (result_.ok) {
      result_.ok = false;
      result_.offset = static_cast<size_t>(p_ - begin_);
      result_.what = std::move(what);
    }
    return result_;
  }

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  // An object member's name and its ':'.
  bool key() {
    if (p_ == end_ || *p_ != '"') return fail_bool("expected a member name (a string) in an object");
    if (!string()) return false;
    skip_space();
    if (p_ == end_ || *p_ != ':') return fail_bool("expected ':' after a member name");
    ++p_;
    return true;
  }

  bool scalar() {
    switch (*p_) {
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: break;
    }
    if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) return number();
    return fail_bool("expected a value (an object, array, string, number, true, false or null)");
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return fail_bool("expected a value (an object, array, string, number, true, false or null)");
    }
    p_ += word.size();
    return true;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  bool number() {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_ || !digit(*p_)) return fail_bool("a number needs a digit after '-'");
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    bool fraction_or_exponent = false;
    if (p_ < end_ && *p_ == '.') {
      fraction_or_exponent = true;
      ++p_;
      if (p_ == end_ || !digit(*p_)) return fail_bool("a number needs a digit after '.'");
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      fraction_or_exponent = true;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return fail_bool("a number needs a digit in its exponent");
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    const size_t len = static_cast<size_t>(p_ - start);
    if (len > limits_.max_number_chars) {
      p_ = start;
      return fail_bool("a number longer than " + std::to_string(limits_.max_number_chars) + " characters");
    }
    // A fraction or exponent makes it a double, which must be finite (as
    // nlohmann checks; integers of at most max_number_chars digits always
    // fit one). strtod in the C locale, as nlohmann's lexer reads it.
    if (fraction_or_exponent) {
      char text[kNumberCap + 1];
      std::memcpy(text, start, len);
      text[len] = '\0';
      if (!std::isfinite(std::strtod(text, nullptr))) {
        p_ = start;
        return fail_bool("a number outside the range of a double");
      }
    }
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u"; -1 when they are not.
  int32_t code_unit() {
    if (end_ - p_ < 4) return -1;
    int32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    p_ += 4;
    return v;
  }

  // A string at '"': escapes as JSON has them, bytes as UTF-8 (RFC 3629's
  // table: no overlong forms, no surrogates, nothing above U+10FFFF).
  bool string() {
    ++p_;
    while (true) {
      if (p_ == end_) return fail_bool("the text ends inside a string");
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return fail_bool("a control character (below U+0020) inside a string must be escaped");
      if (c == '\\') {
        ++p_;
        if (p_ == end_) return fail_bool("the text ends inside a string");
        const char e = *p_++;
        if (e == 'u') {
          const int32_t u = code_unit();
          if (u < 0) return fail_bool("\\u must be followed by four hex digits");
          if (u >= 0xDC00 && u <= 0xDFFF) return fail_bool("a \\u low surrogate without a high one before it");
          if (u >= 0xD800 && u <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
              return fail_bool("a \\u high surrogate must be followed by a \\u low surrogate");
            }
            p_ += 2;
            const int32_t low = code_unit();
            if (low < 0xDC00 || low > 0xDFFF) return fail_bool("a \\u high surrogate must be followed by a \\u low surrogate");
          }
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
          --p_;
          return fail_bool("an unknown escape in a string");
        }
        continue;
      }
      if (c < 0x80) {
        ++p_;
        continue;
      }
      if (!utf8_char()) return false;
    }
  }

  bool utf8_char() {
    const unsigned char c = static_cast<unsigned char>(*p_);
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return fail_bool("a string holds a byte that is not UTF-8");
    }
    if (static_cast<size_t>(end_ - p_) < n) return fail_bool("a string holds a byte that is not UTF-8");
    for (size_t i = 1; i < n; ++i) {
      const unsigned char b = static_cast<unsigned char>(p_[i]);
      if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
        return fail_bool("a string holds a byte that is not UTF-8");
      }
    }
    p_ += n;
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  JsonLimits limits_;
  JsonCheck result_;
};

}  // namespace

JsonCheck check_json(std::string_view text, const JsonLimits& limits) { return Scanner(text, limits).run(); }

}  // namespace ember::serve

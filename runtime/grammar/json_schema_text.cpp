#include "grammar/json_schema_text.h"

#include <string>
#include <vector>

namespace ember::schema_text {

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

const char* at(const std::string& ptr) { return ptr.empty() ? "/" : ptr.c_str(); }

// A GBNF string literal of UTF-8 text.
std::string literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The compact JSON text of a value, as a GBNF literal.
std::string json_literal(const json& v) {
  return literal(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string repeat_suffix(uint64_t lo, uint64_t hi) {
  if (lo == 0 && hi == rx::kUnbounded) return "*";
  if (lo == 1 && hi == rx::kUnbounded) return "+";
  if (lo == 0 && hi == 1) return "?";
  if (hi == rx::kUnbounded) return "{" + std::to_string(lo) + ",}";
  if (lo == hi) return "{" + std::to_string(lo) + "}";
  return "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

// A sequence of up to 16 decimal digits between two numbers of the same
// length (as text), without leading-zero concerns: x and y have the same
// number of digits.
void digits_between(const std::string& x, const std::string& y, std::vector<std::string>* alts, const std::string& prefix) {
  const size_t n = x.size();
  auto digit_set = [](char a, char b) {
    return a == b ? "\"" + std::string(1, a) + "\"" : "[" + std::string(1, a) + "-" + std::string(1, b) + "]";
  };
  auto any_digits = [](size_t count) { return count == 0 ? std::string() : count == 1 ? " [0-9]" : " [0-9]{" + std::to_string(count) + "}"; };
  if (n == 1) {
    alts->push_back(prefix + digit_set(x[0], y[0]));
    return;
  }
  if (x[0] == y[0]) {
    digits_between(x.substr(1), y.substr(1), alts, prefix + "\"" + std::string(1, x[0]) + "\" ");
    return;
  }
  const std::string xr = x.substr(1), yr = y.substr(1);
  const bool x_low = xr.find_first_not_of('0') == std::string::npos;
  const bool y_high = yr.find_first_not_of('9') == std::string::npos;
  if (!x_low) digits_between(xr, std::string(n - 1, '9'), alts, prefix + "\"" + std::string(1, x[0]) + "\" ");
  const char lo = x_low ? x[0] : static_cast<char>(x[0] + 1);
  const char hi = y_high ? y[0] : static_cast<char>(y[0] - 1);
  if (lo <= hi) alts->push_back(prefix + digit_set(lo, hi) + any_digits(n - 1));
  if (!y_high) digits_between(std::string(n - 1, '0'), yr, alts, prefix + "\"" + std::string(1, y[0]) + "\" ");
}

int64_t pow10(size_t e) {
  int64_t v = 1;
  while (e-- > 0) v *= 10;
  return v;
}

// The decimal forms (no leading zeros, no sign) of the integers a..b,
// 0 <= a <= b <= kCap, as GBNF alternatives.
void uint_range(int64_t a, int64_t b, std::vector<std::string>* alts) {
  const size_t la = std::to_string(a).size(), lb = std::to_string(b).size();
  size_t full_from = 0, full_to = 0;  // a run of whole lengths: [1-9] [0-9]{from-1,to-1}
  auto flush = [&] {
    if (full_from == 0) return;
    alts->push_back("[1-9]" + (full_to == 1 ? std::string() : " [0-9]" + repeat_suffix(full_from - 1, full_to - 1)));
    full_from = 0;
  };
  for (size_t len = la; len <= lb; ++len) {
    const int64_t first = len == 1 ? 0 : pow10(len - 1), last = pow10(len) - 1;
    const int64_t lo = std::max(a, first), hi = std::min(b, last);
    if (len > 1 && lo == first && hi == last) {
      if (full_from == 0) full_from = len;
      full_to = len;
      continue;
    }
    flush();
    digits_between(std::to_string(lo), std::to_string(hi), alts, "");
  }
  flush();
}

std::string join_alts(const std::vector<std::string>& alts) {
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}



// The magnitudes m with lo </<= m </<= hi (hi absent: up to kCap digits),
// as integer part and optional fraction.
void magnitudes(const Bound& lo, const Bound& hi, const std::string& sign, std::vector<std::string>* alts) {
  const int64_t L = lo.value;
  if (hi.present && (hi.value < L || (hi.value == L && (lo.exclusive || hi.exclusive)))) return;
  const int64_t a = lo.exclusive ? L + 1 : L;
  const int64_t b = hi.present ? hi.value - 1 : kCap;
  if (a <= b) {
    std::vector<std::string> ints;
    uint_range(a, b, &ints);
    alts->push_back(sign + "( " + join_alts(ints) + " ) ( \".\" [0-9]{1,16} )?");
  }
  if (lo.exclusive) alts->push_back(sign + "\"" + std::to_string(L) + ".\" \"0\"{0,15} [1-9] [0-9]{0,15}");
  if (hi.present && !hi.exclusive) alts->push_back(sign + "\"" + std::to_string(hi.value) + "\" ( \".\" \"0\"{1,16} )?");
}

}  // namespace ember::schema_text

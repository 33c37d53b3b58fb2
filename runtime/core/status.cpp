#include "core/status.h"

#include <cstdio>

namespace ember {

Status Status::error(ember_status code, const char* fmt, ...) {
  Status s;
  s.code_ = code;
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  s.message_ = buf;
  return s;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  Status s = *this;
  s.message_ = context + ": " + message_;
  return s;
}

}  // namespace ember

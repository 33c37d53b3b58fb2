// Internal error regime: one Status enum (mirrors ember_status in ember.h),
// Result<T> for values, EMBER_TRY to pass failures up. No exceptions anywhere
// in the runtime; a failure carries a message naming the field and the value.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <string>
#include <utility>

#include "ember.h"

namespace ember {

// A status plus its message. The message is kept here (not only in the
// thread-local last error) so that failures can travel up through several
// layers before the C API records them.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  // printf-style message; the message should name the field and the value.
  static Status error(ember_status code, const char* fmt, ...)
      __attribute__((format(printf, 2, 3)));

  bool is_ok() const { return code_ == EMBER_OK; }
  explicit operator bool() const { return is_ok(); }
  ember_status code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context ("loading tensor 'x': ...").
  Status with_context(const std::string& context) const;

 private:
  ember_status code_ = EMBER_OK;
  std::string message_;
};

// A value or a failure. T must be movable.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool is_ok() const { return status_.is_ok(); }
  const Status& status() const { return status_; }
  T& value() & { return value_; }
  T&& value() && { return std::move(value_); }
  const T& value() const& { return value_; }
  T* operator->() { return &value_; }
  T& operator*() { return value_; }

 private:
  Status status_;
  T value_{};
};

}  // namespace ember

#define EMBER_CONCAT_INNER(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is not OK.
#define EMBER_TRY(expr)                                  \
  do {                                                   \
    ::ember::Status ember_try_status_ = (expr);          \
    if (!ember_try_status_.is_ok()) return ember_try_status_; \
  } while (0)

// Declares `lhs` from a Result<T> expression or returns its failure.
#define EMBER_ASSIGN_OR_RETURN(lhs, expr) \
  EMBER_ASSIGN_OR_RETURN_IMPL(EMBER_CONCAT(ember_result_, __LINE__), lhs, expr)
#define EMBER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

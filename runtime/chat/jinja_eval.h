// Renders a parsed chat template (jinja_ast.h) against a context of
// variables. Filters, tests and methods live in jinja_builtins.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "chat/jinja_ast.h"

namespace ember::chat {

struct RenderEnv {
  Limits limits;
  // Seconds since the Unix epoch for strftime_now (rendered in UTC);
  // -1: the current time. Tests fix it.
  int64_t now_unix = -1;
};

// Renders `prog` with the variables in `context` (a Dict value) into *out.
// Errors: EMBER_ERR_INVALID_ARGUMENT (the template's raise_exception, a
// type error, an undefined value used as a mapping), EMBER_ERR_UNSUPPORTED
// (a filter, test, method or function outside the subset, named),
// EMBER_ERR_NO_MEMORY (a bound of env.limits). Messages carry line:column.
Status render_program(const Program& prog, const Value& context, const RenderEnv& env, std::string* out);

}  // namespace ember::chat

// Shared by the C API's implementation files.
#pragma once

#include "core/status.h"
#include "ember.h"

namespace ember {

// Records status's message as this thread's last error; returns its code.
ember_status set_last_error(const Status& status);
void clear_last_error();
const char* g_last_error_ptr();

}  // namespace ember

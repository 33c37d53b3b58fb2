// The parts of the C API that need no model: status names, the thread-local
// last error, the version, a SHA-256.
#include <cstring>
#include <string>

#include "api/c_api_internal.h"
#include "security/sha256.h"

// The header's version macros and the build's project(VERSION) must agree.
static_assert(EMBER_VERSION_MAJOR == EMBER_PROJECT_VERSION_MAJOR && EMBER_VERSION_MINOR == EMBER_PROJECT_VERSION_MINOR &&
                  EMBER_VERSION_PATCH == EMBER_PROJECT_VERSION_PATCH,
              "ember.h's EMBER_VERSION_* differ from project(ember VERSION ...) in CMakeLists.txt");

namespace ember {

namespace {
thread_local std::string g_last_error;
}

ember_status set_last_error(const Status& status) {
  g_last_error = status.is_ok() ? std::string() : status.message();
  return status.code();
}

void clear_last_error() { g_last_error.clear(); }

const char* g_last_error_ptr() { return g_last_error.c_str(); }

}  // namespace ember

extern "C" {

const char* ember_status_string(ember_status status) {
  // A C caller may pass any int; read it as one (a C++ load of an enum
  // value outside its range is undefined: clang's -fsanitize=enum says so).
  static_assert(sizeof(ember_status) == sizeof(int), "ember_status is an int");
  int code;
  std::memcpy(&code, &status, sizeof code);
  switch (code) {
    case EMBER_OK: return "EMBER_OK";
    case EMBER_ERR_INVALID_ARGUMENT: return "EMBER_ERR_INVALID_ARGUMENT";
    case EMBER_ERR_TOKEN_OUT_OF_RANGE: return "EMBER_ERR_TOKEN_OUT_OF_RANGE";
    case EMBER_ERR_UNSUPPORTED: return "EMBER_ERR_UNSUPPORTED";
    case EMBER_ERR_BUFFER_TOO_SMALL: return "EMBER_ERR_BUFFER_TOO_SMALL";
    case EMBER_ERR_TOO_COMPLEX: return "EMBER_ERR_TOO_COMPLEX";
    case EMBER_ERR_NO_MEMORY: return "EMBER_ERR_NO_MEMORY";
    case EMBER_ERR_CONTEXT_FULL: return "EMBER_ERR_CONTEXT_FULL";
    case EMBER_ERR_IO: return "EMBER_ERR_IO";
    case EMBER_ERR_FORMAT: return "EMBER_ERR_FORMAT";
    case EMBER_ERR_VERSION: return "EMBER_ERR_VERSION";
    case EMBER_ERR_TRUNCATED: return "EMBER_ERR_TRUNCATED";
    case EMBER_ERR_BAD_TENSOR: return "EMBER_ERR_BAD_TENSOR";
    case EMBER_ERR_BAD_HPARAMS: return "EMBER_ERR_BAD_HPARAMS";
    case EMBER_ERR_BAD_TOKENIZER: return "EMBER_ERR_BAD_TOKENIZER";
    case EMBER_ERR_MISSING_TENSOR: return "EMBER_ERR_MISSING_TENSOR";
    case EMBER_ERR_STATE_MISMATCH: return "EMBER_ERR_STATE_MISMATCH";
    case EMBER_ERR_BACKEND: return "EMBER_ERR_BACKEND";
    case EMBER_ERR_INTERNAL: return "EMBER_ERR_INTERNAL";
    case EMBER_ERR_INTEGRITY: return "EMBER_ERR_INTEGRITY";
    case EMBER_ERR_SIGNATURE: return "EMBER_ERR_SIGNATURE";
  }
  return "EMBER_ERR_UNKNOWN";
}

const char* ember_last_error(void) { return ember::g_last_error_ptr(); }

const char* ember_version(void) { return EMBER_VERSION_STRING; }

ember_status ember_sha256_hex(const void* data, size_t size, char out_hex[65]) {
  if (!out_hex || (!data && size > 0)) {
    return ember::set_last_error(
        ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "ember_sha256_hex: out_hex is NULL, or data is NULL with size %zu",
                             size));
  }
  const ember::Sha256Digest d = ember::sha256(data ? data : "", size);
  const std::string hex = ember::to_hex(d.data(), d.size());
  std::memcpy(out_hex, hex.c_str(), hex.size() + 1);
  ember::clear_last_error();
  return EMBER_OK;
}

}  // extern "C"

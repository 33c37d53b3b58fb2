// Files as the commands read and hash them: a whole file into memory, and
// the SHA-256 of bytes or of a file (mbedTLS, the library's own crypto, used
// directly: the C API has no hashing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ember.h"

namespace ember::cli {

// The file's bytes into *out. Errors: EMBER_ERR_IO ("cannot open 'P': why",
// "cannot read 'P'") with the message in *error.
ember_status read_file(const std::string& path, std::string* out, std::string* error);

// SHA-256, fed piece by piece.
class Sha256Hash {
 public:
  Sha256Hash();
  ~Sha256Hash();
  Sha256Hash(const Sha256Hash&) = delete;
  Sha256Hash& operator=(const Sha256Hash&) = delete;
  void update(const void* data, size_t size);
  // The digest as 64 lowercase hex digits; the hash is spent afterwards.
  std::string hex();

 private:
  alignas(8) unsigned char ctx_[128];  // mbedtls_sha256_context, opaque here
};

// SHA-256 of `size` bytes, as hex.
std::string sha256_hex(const void* data, size_t size);

}  // namespace ember::cli

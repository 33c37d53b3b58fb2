// SHA-256 (mbedTLS) for the data-segment digest and provenance hashes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ember {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(const void* data, size_t size);

// Incremental hashing, for data that arrives in pieces (the writer hashes
// tensors one by one).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  Sha256Digest finish();

 private:
  alignas(8) unsigned char ctx_[128];  // mbedtls_sha256_context, kept opaque here
};
std::string to_hex(const uint8_t* bytes, size_t n);

}  // namespace ember

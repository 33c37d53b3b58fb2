#include "security/sha256.h"

#include <mbedtls/sha256.h>

namespace ember {

Sha256Digest sha256(const void* data, size_t size) {
  Sha256Digest out{};
  mbedtls_sha256_context ctx;
  mbedtls_sha256_init(&ctx);
  mbedtls_sha256_starts_ret(&ctx, /*is224=*/0);
  // Feed in 64 MiB pieces: the API takes size_t, but bounded pieces keep the
  // mapped file's page faults incremental.
  const uint8_t* p = static_cast<const uint8_t*>(data);
  constexpr size_t kPiece = size_t(64) << 20;
  while (size > 0) {
    const size_t n = size < kPiece ? size : kPiece;
    mbedtls_sha256_update_ret(&ctx, p, n);
    p += n;
    size -= n;
  }
  mbedtls_sha256_finish_ret(&ctx, out.data());
  mbedtls_sha256_free(&ctx);
  return out;
}

static_assert(sizeof(mbedtls_sha256_context) <= 128, "Sha256::ctx_ too small");

Sha256::Sha256() {
  auto* ctx = reinterpret_cast<mbedtls_sha256_context*>(ctx_);
  mbedtls_sha256_init(ctx);
  mbedtls_sha256_starts_ret(ctx, 0);
}

Sha256::~Sha256() { mbedtls_sha256_free(reinterpret_cast<mbedtls_sha256_context*>(ctx_)); }

void Sha256::update(const void* data, size_t size) {
  mbedtls_sha256_update_ret(reinterpret_cast<mbedtls_sha256_context*>(ctx_),
                            static_cast<const uint8_t*>(data), size);
}

Sha256Digest Sha256::finish() {
  Sha256Digest out{};
  mbedtls_sha256_finish_ret(reinterpret_cast<mbedtls_sha256_context*>(ctx_), out.data());
  return out;
}

std::string to_hex(const uint8_t* bytes, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kHex[bytes[i] >> 4];
    s[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return s;
}

}  // namespace ember

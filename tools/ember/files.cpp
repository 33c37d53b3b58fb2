#include "tools/ember/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <mbedtls/sha256.h>

namespace ember::cli {

ember_status read_file(const std::string& path, std::string* out, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return EMBER_ERR_IO;
  }
  out->clear();
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) {
    *error = "cannot read '" + path + "'";
    return EMBER_ERR_IO;
  }
  return EMBER_OK;
}

static_assert(sizeof(mbedtls_sha256_context) <= 128, "Sha256Hash::ctx_ is too small");

Sha256Hash::Sha256Hash() {
  auto* ctx = reinterpret_cast<mbedtls_sha256_context*>(ctx_);
  mbedtls_sha256_init(ctx);
  mbedtls_sha256_starts_ret(ctx, /*is224=*/0);
}

Sha256Hash::~Sha256Hash() { mbedtls_sha256_free(reinterpret_cast<mbedtls_sha256_context*>(ctx_)); }

void Sha256Hash::update(const void* data, size_t size) {
  mbedtls_sha256_update_ret(reinterpret_cast<mbedtls_sha256_context*>(ctx_), static_cast<const uint8_t*>(data),
                            size);
}

std::string Sha256Hash::hex() {
  unsigned char digest[32];
  mbedtls_sha256_finish_ret(reinterpret_cast<mbedtls_sha256_context*>(ctx_), digest);
  static const char kDigits[] = "0123456789abcdef";
  std::string out(64, '0');
  for (int i = 0; i < 32; ++i) {
    out[2 * i] = kDigits[digest[i] >> 4];
    out[2 * i + 1] = kDigits[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t size) {
  Sha256Hash h;
  h.update(data, size);
  return h.hex();
}

}  // namespace ember::cli

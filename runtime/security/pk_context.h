// The mbedTLS key handling that verification (security/signature.cpp) and
// signing (tools/convert/signing.cpp, not part of libember.a) share: a key
// context holder, PEM parsing restricted to P-256, the key id. Internal to
// ember's build; hosts use ember.h.
#pragma once

#include <mbedtls/pk.h>

#include <string>
#include <string_view>

#include "core/status.h"
#include "security/sha256.h"

namespace ember::pk {

// RAII holders: mbedTLS contexts need init/free pairs on every path.
struct Pk {
  mbedtls_pk_context ctx;
  Pk() { mbedtls_pk_init(&ctx); }
  ~Pk() { mbedtls_pk_free(&ctx); }
};

// mbedTLS's text for an error code.
std::string mbed_error(int code);
// Parses a PEM public key ("PUBLIC KEY") or an unencrypted private key into
// `pk`; EMBER_ERR_INVALID_ARGUMENT for anything that is not a P-256 key.
Status parse_public(std::string_view pem, Pk* pk);
Status parse_private(std::string_view pem, Pk* pk);
// SHA-256 of the key's DER SubjectPublicKeyInfo.
Result<Sha256Digest> key_id(Pk& pk);

}  // namespace ember::pk

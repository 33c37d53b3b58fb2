// Signing, conversion-side (libember.a only verifies: security/signature.h):
// P-256 key generation, ECDSA signatures over SHA-256, and the .ember
// signature trailer `ember sign` appends (format/model_file.h describes it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "security/sha256.h"

namespace ember {

struct KeyPairPem {
  std::string private_pem;  // keep secret
  std::string public_pem;
};

// A fresh P-256 key pair. Entropy: mbedtls_entropy (getrandom / /dev/urandom)
// seeding a CTR-DRBG. Errors: EMBER_ERR_INTERNAL when the RNG or mbedTLS fails.
Result<KeyPairPem> generate_key_pair();

// Signs a SHA-256 hash with a private key (PEM). Returns the DER signature
// (at most kMaxSignatureBytes). Errors: EMBER_ERR_INVALID_ARGUMENT for a bad
// or non-P-256 key, EMBER_ERR_INTERNAL when mbedTLS fails.
Result<std::vector<uint8_t>> sign_hash(std::string_view private_pem, const Sha256Digest& hash);

// The trailer that signs the first `signed_size` bytes of `data` (the file
// without any old trailer) with `private_key_pem`.
Result<std::vector<uint8_t>> make_signature_trailer(const uint8_t* data, uint64_t signed_size,
                                                    std::string_view private_key_pem);

}  // namespace ember

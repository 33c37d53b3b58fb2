// ECDSA P-256 signatures over SHA-256 (mbedTLS), for signed model files:
// key ids and verification (the loader checks signatures). Key generation and
// signing are conversion-side: tools/convert/signing.h.
// Keys travel as PEM text: private keys as SEC1 "EC PRIVATE KEY", public keys
// as "PUBLIC KEY" (SubjectPublicKeyInfo); only the P-256 curve is accepted.
// Every function converts mbedTLS codes into a Status at the call site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "security/sha256.h"

namespace ember {

// A DER ECDSA P-256 signature is at most 72 bytes (two 33-byte INTEGERs).
constexpr size_t kMaxSignatureBytes = 72;

// The key id: SHA-256 of the public key's DER SubjectPublicKeyInfo. Stored in
// a signature trailer so that "signed by another key" can be told apart from
// "the bytes changed". `pem` may be a public or a private key.
// Errors: EMBER_ERR_INVALID_ARGUMENT for text that is not a P-256 key.
Result<Sha256Digest> key_id_from_pem(std::string_view pem);

// Checks a DER signature of `hash` with a public key (PEM).
// Errors: EMBER_ERR_INVALID_ARGUMENT for a bad key, EMBER_ERR_SIGNATURE when
// the signature does not verify (or is not well-formed DER).
Status verify_hash_signature(std::string_view public_pem, const Sha256Digest& hash, const uint8_t* signature,
                             size_t signature_size);

}  // namespace ember

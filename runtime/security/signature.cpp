#include "security/signature.h"

#include <mbedtls/ecp.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>

#include <cstring>

#include "security/pk_context.h"

namespace ember {
namespace pk {

std::string mbed_error(int code) {
  char buf[128];
  mbedtls_strerror(code, buf, sizeof buf);
  return buf;
}

namespace {

// mbedTLS wants PEM text NUL-terminated, with the NUL counted in the length.
std::string with_nul(std::string_view pem) {
  std::string s(pem);
  s.push_back('\0');
  return s;
}

Status require_p256(const Pk& pk, const char* what) {
  if (mbedtls_pk_get_type(&pk.ctx) != MBEDTLS_PK_ECKEY) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the %s is a %s key; ember signs with ECDSA P-256", what,
                         mbedtls_pk_get_name(&pk.ctx));
  }
  if (mbedtls_pk_ec(pk.ctx)->grp.id != MBEDTLS_ECP_DP_SECP256R1) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the %s is an EC key on another curve; ember needs P-256", what);
  }
  return Status::ok();
}

}  // namespace

Status parse_public(std::string_view pem, Pk* pk) {
  if (pem.empty()) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the public key is empty");
  const std::string s = with_nul(pem);
  const int rc = mbedtls_pk_parse_public_key(&pk->ctx, reinterpret_cast<const unsigned char*>(s.data()), s.size());
  if (rc != 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "cannot parse the public key (PEM \"PUBLIC KEY\"): %s",
                         mbed_error(rc).c_str());
  }
  return require_p256(*pk, "public key");
}

Status parse_private(std::string_view pem, Pk* pk) {
  if (pem.empty()) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the private key is empty");
  const std::string s = with_nul(pem);
  const int rc = mbedtls_pk_parse_key(&pk->ctx, reinterpret_cast<const unsigned char*>(s.data()), s.size(), nullptr, 0);
  if (rc != 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "cannot parse the private key (PEM, unencrypted): %s",
                         mbed_error(rc).c_str());
  }
  return require_p256(*pk, "private key");
}

Result<Sha256Digest> key_id(Pk& pk) {
  unsigned char der[256];
  // mbedtls_pk_write_pubkey_der writes at the end of the buffer.
  const int n = mbedtls_pk_write_pubkey_der(&pk.ctx, der, sizeof der);
  if (n <= 0) return Status::error(EMBER_ERR_INTERNAL, "cannot encode the public key: %s", mbed_error(n).c_str());
  return sha256(der + sizeof der - n, static_cast<size_t>(n));
}

}  // namespace pk

using namespace pk;

Result<Sha256Digest> key_id_from_pem(std::string_view pem) {
  Pk pk;
  if (!parse_public(pem, &pk).is_ok()) {
    Pk priv;
    Status s = parse_private(pem, &priv);
    if (!s.is_ok()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "not a P-256 public or private key in PEM: %s",
                           s.message().c_str());
    }
    return key_id(priv);
  }
  return key_id(pk);
}

Status verify_hash_signature(std::string_view public_pem, const Sha256Digest& hash, const uint8_t* signature,
                             size_t signature_size) {
  Pk pk;
  EMBER_TRY(parse_public(public_pem, &pk));
  const int rc = mbedtls_pk_verify(&pk.ctx, MBEDTLS_MD_SHA256, hash.data(), hash.size(), signature, signature_size);
  if (rc != 0) return Status::error(EMBER_ERR_SIGNATURE, "ECDSA P-256 verification failed (%s)", mbed_error(rc).c_str());
  return Status::ok();
}

}  // namespace ember

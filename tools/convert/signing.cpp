#include "tools/convert/signing.h"

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>

#include <cstring>

#include "format/model_file.h"
#include "security/pk_context.h"
#include "security/signature.h"

namespace ember {
namespace {

using pk::mbed_error;
using pk::Pk;

struct Rng {
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  Rng() {
    mbedtls_entropy_init(&entropy);
    mbedtls_ctr_drbg_init(&drbg);
  }
  ~Rng() {
    mbedtls_ctr_drbg_free(&drbg);
    mbedtls_entropy_free(&entropy);
  }
  Status seed() {
    static const char kPersonal[] = "ember-keygen";
    const int rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
                                         reinterpret_cast<const unsigned char*>(kPersonal), sizeof kPersonal - 1);
    if (rc != 0) return Status::error(EMBER_ERR_INTERNAL, "cannot seed the random generator: %s", mbed_error(rc).c_str());
    return Status::ok();
  }
};

}  // namespace

Result<KeyPairPem> generate_key_pair() {
  Rng rng;
  EMBER_TRY(rng.seed());
  Pk pk;
  int rc = mbedtls_pk_setup(&pk.ctx, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
  if (rc == 0) rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk.ctx), mbedtls_ctr_drbg_random, &rng.drbg);
  if (rc != 0) return Status::error(EMBER_ERR_INTERNAL, "cannot generate a P-256 key: %s", mbed_error(rc).c_str());
  KeyPairPem out;
  unsigned char buf[1024];
  rc = mbedtls_pk_write_key_pem(&pk.ctx, buf, sizeof buf);
  if (rc != 0) return Status::error(EMBER_ERR_INTERNAL, "cannot encode the private key: %s", mbed_error(rc).c_str());
  out.private_pem.assign(reinterpret_cast<const char*>(buf));
  rc = mbedtls_pk_write_pubkey_pem(&pk.ctx, buf, sizeof buf);
  if (rc != 0) return Status::error(EMBER_ERR_INTERNAL, "cannot encode the public key: %s", mbed_error(rc).c_str());
  out.public_pem.assign(reinterpret_cast<const char*>(buf));
  std::memset(buf, 0, sizeof buf);
  return out;
}

Result<std::vector<uint8_t>> sign_hash(std::string_view private_pem, const Sha256Digest& hash) {
  Pk pk;
  EMBER_TRY(pk::parse_private(private_pem, &pk));
  Rng rng;  // deterministic ECDSA (RFC 6979) in this mbedTLS build; the RNG blinds the computation
  EMBER_TRY(rng.seed());
  unsigned char sig[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
  size_t len = 0;
  const int rc = mbedtls_pk_sign(&pk.ctx, MBEDTLS_MD_SHA256, hash.data(), hash.size(), sig, &len,
                                 mbedtls_ctr_drbg_random, &rng.drbg);
  if (rc != 0) return Status::error(EMBER_ERR_INTERNAL, "ECDSA signing failed: %s", mbed_error(rc).c_str());
  if (len == 0 || len > kMaxSignatureBytes) {
    return Status::error(EMBER_ERR_INTERNAL, "ECDSA signature of %zu bytes (expected 8..72)", len);
  }
  return std::vector<uint8_t>(sig, sig + len);
}

Result<std::vector<uint8_t>> make_signature_trailer(const uint8_t* data, uint64_t signed_size,
                                                    std::string_view private_key_pem) {
  EMBER_ASSIGN_OR_RETURN(const Sha256Digest id, key_id_from_pem(private_key_pem));
  const Sha256Digest h = sha256(data, signed_size);
  EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> der, sign_hash(private_key_pem, h));
  return encode_signature_trailer(der, id);
}

}  // namespace ember

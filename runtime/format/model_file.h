// A verified, memory-mapped .ember file. Nothing in it is used before every
// check in verify_model() has passed: framing, the FlatBuffers verifier with
// explicit limits, then the semantic rules (ARCHITECTURE.md principle 2), then the
// integrity policy (none, the data segment's SHA-256, or an ECDSA P-256
// signature in the trailer).
//
// The signature trailer. An .ember file may end with exactly one trailer of
// kTrailerSize (256) bytes after the data segment; nothing else may follow
// the data segment. Little-endian, offsets within the trailer:
//
//     0   8  magic "EMBRSIG1"
//     8   4  u32 version (1)
//    12   4  u32 algorithm (1 = ECDSA P-256 over SHA-256)
//    16   4  u32 signature length in bytes (1..72)
//    20  72  the DER signature, zero-padded to 72 bytes
//    92  32  key id: SHA-256 of the signer's public key (DER SubjectPublicKeyInfo)
//   124 116  zeros
//   240   8  u64 trailer size (256)
//   248   8  magic "EMBRSIG1"
//
// The signature is over SHA-256 of every byte before the trailer (metadata,
// padding and data segment), so a changed byte anywhere fails it. The
// metadata's data_size says where the data segment ends, so the loader knows
// where a trailer must start; the size and magic at the end let other tools
// find it from the end. Re-signing replaces the trailer. The key id is not
// trusted: it only lets a refusal say "signed by another key" instead of
// "the file changed".
//
// The mapped file after verification. The mapping is read-only and private,
// but pages not yet read still come from the file: a file changed in place
// after verification would be read as changed, and a file truncated while
// mapped raises SIGBUS on access past the new end. What ember does:
//   - open() stats the path before mapping and again after every check;
//     a file replaced, resized or written to meanwhile is refused
//     (EMBER_ERR_INTEGRITY) rather than used unverified;
//   - the mapping is registered with a SIGBUS guard
//     (platforms/linux/mapping_guard.h): an access past a truncated end
//     reads zeros instead of killing the process, and the mapping is marked;
//   - check_intact() reports a marked mapping (EMBER_ERR_IO) or a file that
//     is the same inode but now has another size or modification time
//     (EMBER_ERR_INTEGRITY). A file replaced by rename (what `ember sign`
//     and `ember convert` do) is fine: the mapping keeps the old inode.
// What is not prevented: results computed from a page that changed or was
// zeroed before check_intact() is called are wrong; callers that keep a
// model open while others may write its file should call check_intact()
// after each step (Model::check_intact(); the C API's session calls check
// the whole identity at session creation and the fault mark after every
// step, so a truncation seen during a step fails that step with
// EMBER_ERR_IO).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/hparams.h"
#include "core/layout.h"
#include "core/status.h"
#include "platforms/linux/mapped_file.h"
#include "platforms/linux/mapping_guard.h"
#include "security/sha256.h"
#include "tokenizer/vocab.h"

namespace ember {

// Versions this build reads. 2: Q5_K and Q6_K rows16 tiles in the order the
// kernels read them (core/layout.h); version 1 stored them in another order,
// so a version-1 file with such a tensor is refused (EMBER_ERR_VERSION). 3:
// F32, F16 and BF16 matrices may be rows16 (a build reading only 1-2 would
// take them for row-major). Writers write the lowest version that describes
// the file (schema_version_for).
constexpr uint32_t kSchemaVersionMin = 1;
constexpr uint32_t kSchemaVersion = 3;
// The lowest schema version that holds a tensor of type t stored as l.
inline uint32_t schema_version_for(DType t, Layout l) {
  if (l != Layout::Rows16) return 1u;
  if (t == DType::F32 || t == DType::F16 || t == DType::BF16) return 3u;
  return t == DType::Q5_K || t == DType::Q6_K ? 2u : 1u;
}
constexpr uint64_t kDataAlignment = 4096;  // the data segment starts on a page
constexpr uint64_t kTensorAlignment = 64;  // every tensor inside it
constexpr int kMaxDims = 4;

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  Layout layout = Layout::RowMajor;
  int n_dims = 0;
  int64_t shape[kMaxDims] = {0, 0, 0, 0};  // outermost first: [rows, cols]
  uint64_t offset = 0;                      // within the data segment
  uint64_t size = 0;                        // bytes
  const uint8_t* data = nullptr;            // into the mapping

  int64_t rows() const { return n_dims >= 2 ? shape[0] : 1; }
  int64_t cols() const { return n_dims >= 2 ? shape[1] : shape[0]; }
  uint64_t elements() const;
};

struct Provenance {
  std::string source_file;
  std::vector<uint8_t> source_sha256;
  std::string converter;
  std::string quantization;
};

// What a parsed file holds.
struct ModelContents {
  HParams hparams;
  Vocab vocab;
  std::vector<TensorView> tensors;
  Provenance provenance;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  std::vector<uint8_t> data_sha256;
  uint32_t schema_version = kSchemaVersion;  // as the file records it
  // The signature trailer, when the file has one (see the top of this file).
  bool has_signature = false;
  uint64_t signed_size = 0;          // bytes the signature covers: data_offset + data_size
  std::vector<uint8_t> signature;    // DER
  Sha256Digest signature_key_id{};   // as recorded; not trusted
};

constexpr uint64_t kTrailerSize = 256;
constexpr uint32_t kTrailerVersion = 1;
constexpr uint32_t kTrailerAlgorithmEcdsaP256Sha256 = 1;
inline constexpr char kTrailerMagic[8] = {'E', 'M', 'B', 'R', 'S', 'I', 'G', '1'};

// The 256 trailer bytes for a DER signature and the signer's key id.
std::vector<uint8_t> encode_signature_trailer(const std::vector<uint8_t>& der, const Sha256Digest& key_id);

// Checks the data segment's SHA-256 against the metadata (EMBER_ERR_INTEGRITY).
Status check_data_digest(const uint8_t* data, const ModelContents& c);
// Checks the trailer's signature with `public_key_pem` (EMBER_ERR_SIGNATURE:
// no trailer, another key, or bytes that are not the signed ones;
// EMBER_ERR_INVALID_ARGUMENT: a key that is not P-256 PEM).
Status check_signature(const uint8_t* data, const ModelContents& c, std::string_view public_key_pem);
// Parses and verifies `size` bytes of an .ember file. The views in `out`
// point into `data`, which must outlive them. Never reads outside
// [data, data+size).
Status verify_model(const uint8_t* data, size_t size, ModelContents* out);

class ModelFile {
 public:
  struct Options {
    bool verify_digest = false;  // hash the data segment against the metadata
    // Require a signature trailer made by this key (PEM text) over every
    // byte before it. Empty: a trailer, if any, is checked for form only.
    bool verify_signature = false;
    std::string public_key_pem;
    // Register the mapping with the process-wide SIGBUS guard
    // (mapping_guard.h). Off: a truncation under the mapping raises SIGBUS.
    bool guard_mapping = true;
  };
  // Errors: the verifier's, EMBER_ERR_INTEGRITY / EMBER_ERR_SIGNATURE from
  // the policy, EMBER_ERR_INTEGRITY when the file changed while being checked.
  static Result<std::unique_ptr<ModelFile>> open(const std::string& path, const Options& options);
  ~ModelFile();

  // EMBER_ERR_IO once an access past a truncated end was absorbed;
  // EMBER_ERR_INTEGRITY when the file (same inode) changed size or mtime
  // since open. Cheap (one stat); see the top of this file.
  Status check_intact() const;
  // Only the SIGBUS mark (no system call): cheap enough for every step.
  bool faulted() const;

  const HParams& hparams() const { return contents_.hparams; }
  const Vocab& vocab() const { return contents_.vocab; }
  const std::vector<TensorView>& tensors() const { return contents_.tensors; }
  const Provenance& provenance() const { return contents_.provenance; }
  const ModelContents& contents() const { return contents_; }
  const TensorView* find(std::string_view name) const;
  const MappedFile& mapping() const { return file_; }

 private:
  MappedFile file_;
  ModelContents contents_;
  FileIdentity identity_;  // the file as verified
  int guard_slot_ = -1;    // SIGBUS guard registration (mapping_guard.h)
};

}  // namespace ember

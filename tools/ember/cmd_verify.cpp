// `ember verify M.ember [--pubkey P.pem]`: every load check, the data
// segment's digest and, with --pubkey, the signature; prints OK and what was
// checked, or the refusing status and why (exit 1).
#include <chrono>
#include <cstdio>
#include <string>

#include "model/model.h"
#include "security/signature.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double mb_per_s(uint64_t bytes, double ms) { return ms > 0 ? bytes / 1e6 / (ms / 1e3) : 0.0; }

}  // namespace

int cmd_verify(int argc, char** argv) {
  Args args(argc, argv, {"--pubkey"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember verify MODEL.ember [--pubkey P.pem]\n"
              "  runs every check ember_model_open runs, the data segment's SHA-256 and, with --pubkey,\n"
              "  the ECDSA P-256 signature in the trailer (ember sign). Prints OK and what was checked,\n"
              "  or the status that refuses the file (exit 1).");
    return 0;
  }
  args.check_known({"--pubkey"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember verify --help)");
  if (args.positionals().size() != 1) return report(EMBER_ERR_INVALID_ARGUMENT, "expected one MODEL.ember");
  const std::string path = args.positionals()[0];
  std::string pem;
  if (args.has("--pubkey")) {
    auto key = read_file(args.get("--pubkey"));
    if (!key.is_ok()) return report(key.status().code(), key.status().message());
    pem = std::move(key).value();
    auto id = key_id_from_pem(pem);
    if (!id.is_ok()) return report(id.status().code(), "--pubkey " + args.get("--pubkey") + ": " + id.status().message());
  }

  auto t0 = std::chrono::steady_clock::now();
  auto model = Model::open(path, Model::Options());
  if (!model.is_ok()) return report(model.status().code(), model.status().message());
  const double structure_ms = ms_since(t0);
  const ModelFile& file = model.value()->file();
  const ModelContents& c = file.contents();
  const uint8_t* data = file.mapping().data();

  double signature_ms = 0;
  if (!pem.empty()) {
    t0 = std::chrono::steady_clock::now();
    const Status s = check_signature(data, c, pem);
    signature_ms = ms_since(t0);
    if (!s.is_ok()) return report(s.code(), "'" + path + "': " + s.message());
  }
  t0 = std::chrono::steady_clock::now();
  Status s = check_data_digest(data, c);
  const double digest_ms = ms_since(t0);
  if (!s.is_ok()) return report(s.code(), "'" + path + "': " + s.message());
  s = file.check_intact();
  if (!s.is_ok()) return report(s.code(), s.message());

  std::printf("OK %s (%zu bytes)\n", path.c_str(), file.mapping().size());
  std::printf("  structure  size and framing, FlatBuffers verifier, hparams, tokenizer, tensor table, llama tensors"
              " (%.1f ms)\n", structure_ms);
  std::printf("  digest     data segment SHA-256 matches the metadata: %llu bytes in %.1f ms (%.0f MB/s)\n",
              static_cast<unsigned long long>(c.data_size), digest_ms, mb_per_s(c.data_size, digest_ms));
  if (!pem.empty()) {
    std::printf("  signature  ECDSA P-256 by key id %s over the first %llu bytes: %.1f ms (%.0f MB/s)\n",
                to_hex(c.signature_key_id.data(), 32).c_str(), static_cast<unsigned long long>(c.signed_size),
                signature_ms, mb_per_s(c.signed_size, signature_ms));
  } else if (c.has_signature) {
    std::printf("  signature  present (key id %s), not checked: pass --pubkey P.pem\n",
                to_hex(c.signature_key_id.data(), 32).c_str());
  } else {
    std::printf("  signature  none (the file is unsigned)\n");
  }
  return 0;
}

}  // namespace ember::cli

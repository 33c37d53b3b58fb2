// `ember verify M.ember [--pubkey P.pem]`: every load check, the data
// segment's digest and, with --pubkey, the signature; prints OK and what was
// checked, or the refusing status and why (exit 1). A client of ember.h:
// ember_model_open, then ember_model_check_signature and
// ember_model_check_digest, each timed.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"

namespace ember::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double mb_per_s(uint64_t bytes, double ms) { return ms > 0 ? bytes / 1e6 / (ms / 1e3) : 0.0; }

struct VerifyRequest {
  std::string path;
  std::string pem;  // the public key's text; "" without --pubkey
};

struct VerifyOutcome {
  ember_model_file_info file;
  double structure_ms = 0, digest_ms = 0, signature_ms = 0;
};

int parse_verify(int argc, char** argv, VerifyRequest* r) {
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
  r->path = args.positionals()[0];
  if (args.has("--pubkey")) {
    std::string error;
    ember_status st = read_file(args.get("--pubkey"), &r->pem, &error);
    if (st != EMBER_OK) return report(st, error);
    char id[65];
    if ((st = ember_key_id(r->pem.data(), r->pem.size(), id)) != EMBER_OK) {
      return report(st, "--pubkey " + args.get("--pubkey") + ": " + ember_last_error());
    }
  }
  return kRun;
}

// Structure (open), signature, digest, in that order; a failed check names
// the file.
ember_status run_verify(const VerifyRequest& r, VerifyOutcome* o, std::string* error) {
  auto t0 = std::chrono::steady_clock::now();
  ember_model* model = nullptr;
  ember_status st = ember_model_open(r.path.c_str(), nullptr, &model);
  if (st != EMBER_OK) {
    *error = ember_last_error();
    return st;
  }
  o->structure_ms = ms_since(t0);
  std::memset(&o->file, 0, sizeof o->file);
  o->file.struct_size = sizeof o->file;
  st = ember_model_get_file_info(model, &o->file);
  if (st == EMBER_OK && !r.pem.empty()) {
    t0 = std::chrono::steady_clock::now();
    st = ember_model_check_signature(model, r.pem.data(), r.pem.size());
    o->signature_ms = ms_since(t0);
  }
  if (st == EMBER_OK) {
    t0 = std::chrono::steady_clock::now();
    st = ember_model_check_digest(model);
    o->digest_ms = ms_since(t0);
  }
  if (st != EMBER_OK) *error = "'" + r.path + "': " + ember_last_error();
  ember_model_free(model);
  return st;
}

int report_verify(const VerifyRequest& r, const VerifyOutcome& o) {
  const ember_model_file_info& f = o.file;
  std::printf("OK %s (%llu bytes)\n", r.path.c_str(), static_cast<unsigned long long>(f.file_bytes));
  std::printf("  structure  size and framing, FlatBuffers verifier, hparams, tokenizer, tensor table, llama tensors"
              " (%.1f ms)\n", o.structure_ms);
  std::printf("  digest     data segment SHA-256 matches the metadata: %llu bytes in %.1f ms (%.0f MB/s)\n",
              static_cast<unsigned long long>(f.data_bytes), o.digest_ms, mb_per_s(f.data_bytes, o.digest_ms));
  if (!r.pem.empty()) {
    std::printf("  signature  ECDSA P-256 by key id %s over the first %llu bytes: %.1f ms (%.0f MB/s)\n",
                f.signature_key_id, static_cast<unsigned long long>(f.signed_bytes), o.signature_ms,
                mb_per_s(f.signed_bytes, o.signature_ms));
  } else if (f.has_signature) {
    std::printf("  signature  present (key id %s), not checked: pass --pubkey P.pem\n", f.signature_key_id);
  } else {
    std::printf("  signature  none (the file is unsigned)\n");
  }
  return 0;
}

}  // namespace

int cmd_verify(int argc, char** argv) {
  VerifyRequest r;
  if (const int code = parse_verify(argc, argv, &r); code != kRun) return code;
  VerifyOutcome o;
  std::string error;
  const ember_status st = run_verify(r, &o, &error);
  return st == EMBER_OK ? report_verify(r, o) : report(st, error);
}

}  // namespace ember::cli

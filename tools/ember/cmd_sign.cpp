// Signing model files (conversion-side: libember.a only verifies, and
// `ember verify` checks through ember.h), each command as parse / run / report:
//   `ember keygen --private K.pem --public P.pem`: a fresh ECDSA P-256 key pair.
//     The private key file is created with mode 0600 and never overwritten.
//   `ember sign M.ember --key K.pem`: appends (or replaces) the signature
//     trailer (format: runtime/format/model_file.h). The file must load as is
//     (structure, semantics, data digest): ember never signs a file it would
//     refuse. Written in place atomically: a temporary file beside it,
//     fsync'ed, renamed over the original (a process that has the old file
//     mapped keeps reading the old inode).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/convert/tool_api.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"

namespace ember::cli {
namespace {

// ---- ember keygen -------------------------------------------------------------------

struct KeygenRequest {
  std::string private_path, public_path;
};

int parse_keygen(int argc, char** argv, KeygenRequest* r) {
  Args args(argc, argv, {"--private", "--public"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember keygen --private K.pem --public P.pem\n"
              "  writes a new ECDSA P-256 key pair: K.pem (mode 0600, keep it secret) signs models\n"
              "  (ember sign), P.pem verifies them (ember verify, ember run --require-signature).\n"
              "  Existing files are never overwritten.");
    return 0;
  }
  args.check_known({"--private", "--public"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember keygen --help)");
  if (!args.has("--private") || !args.has("--public")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--private K.pem and --public P.pem are required");
  }
  r->private_path = args.get("--private");
  r->public_path = args.get("--public");
  return kRun;
}

// Creates `path` (refusing to replace an existing file) with `mode`.
ember_status write_new_file(const std::string& path, const std::string& text, mode_t mode, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = "cannot create '" + path + "': " + std::strerror(errno) +
             (errno == EEXIST ? " (keygen never overwrites a key file)" : "");
    return EMBER_ERR_IO;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      *error = "cannot write '" + path + "': " + std::strerror(errno);
      ::close(fd);
      return EMBER_ERR_IO;
    }
    done += static_cast<size_t>(n);
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    *error = "cannot sync '" + path + "'";
    return EMBER_ERR_IO;
  }
  return EMBER_OK;
}

// The key pair, its id, then both files (the private one removed again when
// the public one cannot be written).
ember_status run_keygen(const KeygenRequest& r, std::string* key_id, std::string* error) {
  std::string private_pem, public_pem;
  ember_status st = tools::generate_key_pair(&private_pem, &public_pem, error);
  if (st != EMBER_OK) return st;
  char id[65];
  if ((st = ember_key_id(public_pem.data(), public_pem.size(), id)) != EMBER_OK) {
    *error = ember_last_error();
    return st;
  }
  *key_id = id;
  st = write_new_file(r.private_path, private_pem, 0600, error);
  if (st == EMBER_OK) {
    st = write_new_file(r.public_path, public_pem, 0644, error);
    if (st != EMBER_OK) std::remove(r.private_path.c_str());
  }
  return st;
}

int report_keygen(const KeygenRequest& r, const std::string& key_id) {
  std::printf("wrote %s (private, 0600) and %s (public)\nkey id %s\n", r.private_path.c_str(),
              r.public_path.c_str(), key_id.c_str());
  return 0;
}

// ---- ember sign ---------------------------------------------------------------------

struct SignRequest {
  std::string path;
  std::string key_pem;  // the private key's text
};

int parse_sign(int argc, char** argv, SignRequest* r) {
  Args args(argc, argv, {"--key"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember sign MODEL.ember --key K.pem\n"
              "  signs the model in place with an ECDSA P-256 private key (ember keygen): a 256-byte\n"
              "  trailer after the data segment holds the signature over SHA-256 of every byte before\n"
              "  it. Re-signing replaces the trailer. The model must pass every load check first.");
    return 0;
  }
  args.check_known({"--key"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember sign --help)");
  if (args.positionals().size() != 1) return report(EMBER_ERR_INVALID_ARGUMENT, "expected one MODEL.ember");
  if (!args.has("--key")) return report(EMBER_ERR_INVALID_ARGUMENT, "--key K.pem (a private key) is required");
  r->path = args.positionals()[0];
  std::string error;
  if (const ember_status st = read_file(args.get("--key"), &r->key_pem, &error); st != EMBER_OK) {
    return report(st, error);
  }
  return kRun;
}

int report_sign(const SignRequest& r, const tools::SignResult& result, double ms) {
  char id[65];
  const bool have_id = ember_key_id(r.key_pem.data(), r.key_pem.size(), id) == EMBER_OK;
  std::printf("signed %s: ECDSA P-256 over SHA-256 of %llu bytes, key id %s, %s; %.0f ms\n", r.path.c_str(),
              static_cast<unsigned long long>(result.signed_bytes), have_id ? id : "?",
              result.replaced ? "replaced the previous signature" : "trailer appended", ms);
  return 0;
}

}  // namespace

int cmd_keygen(int argc, char** argv) {
  KeygenRequest r;
  if (const int code = parse_keygen(argc, argv, &r); code != kRun) return code;
  std::string key_id, error;
  const ember_status st = run_keygen(r, &key_id, &error);
  return st == EMBER_OK ? report_keygen(r, key_id) : report(st, error);
}

int cmd_sign(int argc, char** argv) {
  SignRequest r;
  if (const int code = parse_sign(argc, argv, &r); code != kRun) return code;
  const auto t0 = std::chrono::steady_clock::now();
  tools::SignResult result;
  std::string error;
  const ember_status st = tools::sign_model_file(r.path, r.key_pem, &result, &error);
  if (st != EMBER_OK) return report(st, error);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return report_sign(r, result, ms);
}

}  // namespace ember::cli

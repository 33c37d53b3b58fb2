// `ember sign M.ember --key K.pem`: appends (or replaces) the signature
// trailer (format: runtime/format/model_file.h). The file must load as is
// (structure, semantics, data digest): ember never signs a file it would
// refuse. Written in place atomically: a temporary file beside it, fsync'ed,
// renamed over the original (a process that has the old file mapped keeps
// reading the old inode).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "model/model.h"
#include "security/signature.h"
#include "tools/convert/signing.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

Status write_all(int fd, const uint8_t* p, uint64_t n, const std::string& path) {
  while (n > 0) {
    const size_t chunk = n < (uint64_t(1) << 26) ? static_cast<size_t>(n) : size_t(1) << 26;
    const ssize_t w = ::write(fd, p, chunk);
    if (w <= 0) return Status::error(EMBER_ERR_IO, "cannot write '%s': %s", path.c_str(), std::strerror(errno));
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return Status::ok();
}

// `head` then `tail` into `path`, through a temporary file renamed into place,
// keeping the original's permission bits.
Status replace_file(const std::string& path, const uint8_t* head, uint64_t head_size, const std::vector<uint8_t>& tail) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::error(EMBER_ERR_IO, "cannot stat '%s': %s", path.c_str(), std::strerror(errno));
  }
  const std::string tmp = path + ".sign-tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
  if (fd < 0) return Status::error(EMBER_ERR_IO, "cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  Status s = write_all(fd, head, head_size, tmp);
  if (s.is_ok()) s = write_all(fd, tail.data(), tail.size(), tmp);
  if (s.is_ok() && ::fsync(fd) != 0) s = Status::error(EMBER_ERR_IO, "cannot sync '%s'", tmp.c_str());
  ::close(fd);
  if (s.is_ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::error(EMBER_ERR_IO, "cannot rename '%s' over '%s': %s", tmp.c_str(), path.c_str(), std::strerror(errno));
  }
  if (!s.is_ok()) std::remove(tmp.c_str());
  return s;
}

}  // namespace

int cmd_sign(int argc, char** argv) {
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
  const std::string path = args.positionals()[0];
  auto key = read_file(args.get("--key"));
  if (!key.is_ok()) return report(key.status().code(), key.status().message());

  const auto t0 = std::chrono::steady_clock::now();
  Model::Options mo;
  mo.verify_digest = true;
  auto model = Model::open(path, mo);
  if (!model.is_ok()) {
    return report(model.status().code(), "refusing to sign: " + model.status().message());
  }
  const ModelFile& file = model.value()->file();
  const ModelContents& c = file.contents();
  auto trailer = make_signature_trailer(file.mapping().data(), c.signed_size, key.value());
  if (!trailer.is_ok()) return report(trailer.status().code(), trailer.status().message());
  Status s = replace_file(path, file.mapping().data(), c.signed_size, trailer.value());
  if (!s.is_ok()) return report(s.code(), s.message());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto id = key_id_from_pem(key.value());
  std::printf("signed %s: ECDSA P-256 over SHA-256 of %llu bytes, key id %s, %s; %.0f ms\n", path.c_str(),
              static_cast<unsigned long long>(c.signed_size), id.is_ok() ? to_hex(id->data(), 32).c_str() : "?",
              c.has_signature ? "replaced the previous signature" : "trailer appended", ms);
  return 0;
}

}  // namespace ember::cli

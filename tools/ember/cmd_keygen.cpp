// `ember keygen --private K.pem --public P.pem`: a fresh ECDSA P-256 key pair
// for `ember sign` / `ember verify`. The private key file is created with
// mode 0600 and never overwritten.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "security/signature.h"
#include "tools/convert/signing.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

// Creates `path` (refusing to replace an existing file) with `mode`.
Status write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    return Status::error(EMBER_ERR_IO, "cannot create '%s': %s%s", path.c_str(), std::strerror(errno),
                         errno == EEXIST ? " (keygen never overwrites a key file)" : "");
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ::close(fd);
      return Status::error(EMBER_ERR_IO, "cannot write '%s': %s", path.c_str(), std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Status::error(EMBER_ERR_IO, "cannot sync '%s'", path.c_str());
  return Status::ok();
}

}  // namespace

int cmd_keygen(int argc, char** argv) {
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
  auto keys = generate_key_pair();
  if (!keys.is_ok()) return report(keys.status().code(), keys.status().message());
  auto id = key_id_from_pem(keys->public_pem);
  if (!id.is_ok()) return report(id.status().code(), id.status().message());
  Status s = write_new_file(args.get("--private"), keys->private_pem, 0600);
  if (s.is_ok()) {
    s = write_new_file(args.get("--public"), keys->public_pem, 0644);
    if (!s.is_ok()) std::remove(args.get("--private").c_str());
  }
  if (!s.is_ok()) return report(s.code(), s.message());
  std::printf("wrote %s (private, 0600) and %s (public)\nkey id %s\n", args.get("--private").c_str(),
              args.get("--public").c_str(), to_hex(id->data(), 32).c_str());
  return 0;
}

}  // namespace ember::cli

#include "tools/ember/model_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <filesystem>

#include "format/model_file.h"
#include "security/sha256.h"
#include "tools/convert/importers.h"
#include "tools/ember/args.h"

namespace ember::cli {
namespace {

// The subfolder of remembered digests (digest_memo_path).
constexpr const char* kDigestFolder = "digests";

// Below this size a file is hashed or written without a progress line.
constexpr uint64_t kProgressMinBytes = 64ull << 20;

// A progress line on stderr, rewritten in place ("\r"), for work on files
// big enough for a person to wait on.
class Progress {
 public:
  Progress(std::string label, uint64_t total) : label_(std::move(label)), total_(total) {}
  void update(uint64_t done) {
    if (total_ < kProgressMinBytes) return;
    const int pct = static_cast<int>(done * 100 / total_);
    if (pct == last_pct_) return;
    last_pct_ = pct;
    std::fprintf(stderr, "\r%s: %3d%% (%.0f of %.0f MB)", label_.c_str(), pct, done / 1e6, total_ / 1e6);
    std::fflush(stderr);
  }
  ~Progress() {
    if (last_pct_ >= 0) std::fputc('\n', stderr);
  }

 private:
  std::string label_;
  uint64_t total_;
  int last_pct_ = -1;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The cache key's second half: a newer ember (or schema) never trusts an
// older ember's conversion, so a converter fix reaches every cached model.
// kConversionRevision counts converter changes within one version and schema
// (2: pre-tokenizer names, model families, Q5_0 rows16; 3: Q4_K rows16;
// 4: Q6_K rows16; 5: Q5_K/Q6_K row-major again; 6: IQ4_XS rows16;
// 7: Q5_K/Q6_K rows16 in schema 2's order; 8: Q3_K rows16; 9: Q2_K rows16).
constexpr int kConversionRevision = 9;
std::string cache_tag() {
  return std::string("v") + ember_version() + "-s" + std::to_string(kSchemaVersion) + "-c" +
         std::to_string(kConversionRevision);
}

bool is_hex_digest(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Detects GGUF by the magic, whatever the name.
bool starts_with_gguf_magic(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[4] = {};
  const bool gguf = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  std::fclose(f);
  return gguf;
}

Result<std::string> hash_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error(EMBER_ERR_IO, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  const uint64_t total = fstat(fileno(f), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  Progress progress("hashing " + path, total);
  Sha256 sha;
  std::vector<unsigned char> buf(4 << 20);
  uint64_t done = 0;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    sha.update(buf.data(), n);
    done += n;
    progress.update(done);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::error(EMBER_ERR_IO, "cannot read '%s'", path.c_str());
  const Sha256Digest d = sha.finish();
  return to_hex(d.data(), d.size());
}

// The digest of a file is remembered under a key made of its identity and
// change times (device, inode, size, mtime and ctime in nanoseconds), so a
// multi-GB GGUF file is read once, not at every run. Any write, rename onto
// it or copy changes the key (ctime cannot be set back by a user), and
// then the file is hashed again.
std::string digest_memo_path(const std::string& dir, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  char key[256];
  std::snprintf(key, sizeof key, "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld", static_cast<unsigned long long>(st.st_dev),
                static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  const Sha256Digest k = sha256(key, std::strlen(key));
  return dir + "/" + kDigestFolder + "/" + to_hex(k.data(), k.size());
}

std::string read_memo(const std::string& memo) {
  FILE* f = memo.empty() ? nullptr : std::fopen(memo.c_str(), "rb");
  if (!f) return "";
  char buf[65] = {};
  const size_t n = std::fread(buf, 1, 64, f);
  std::fclose(f);
  const std::string digest(buf, n);
  return is_hex_digest(digest) ? digest : "";
}

void write_memo(const std::string& memo, const std::string& digest) {
  if (memo.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(memo.substr(0, memo.find_last_of('/')), ec);
  const std::string tmp = memo + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  const bool ok = std::fwrite(digest.data(), 1, digest.size(), f) == digest.size();
  if (std::fclose(f) == 0 && ok) std::rename(tmp.c_str(), memo.c_str());
  ::unlink(tmp.c_str());  // only still there when something failed
}

// Writes `bytes` as `dest` so that `dest` is either absent or complete: a
// temporary file in the same folder, fsync, rename, fsync of the folder.
Status write_atomically(const std::string& dest, const std::vector<uint8_t>& bytes) {
  std::string tmp = dest + ".tmp-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return Status::error(EMBER_ERR_IO, "cannot create a file beside '%s': %s", dest.c_str(), std::strerror(errno));
  Progress progress("writing " + dest, bytes.size());
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, std::min<size_t>(bytes.size() - done, 16 << 20));
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += static_cast<size_t>(w);
    progress.update(done);
  }
  int err = ok ? 0 : errno;
  if (ok && fsync(fd) != 0) {
    ok = false;
    err = errno;
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(tmp.c_str(), dest.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::error(EMBER_ERR_IO, "cannot write '%s' (%zu bytes): %s", dest.c_str(), bytes.size(),
                         std::strerror(err));
  }
  // The rename itself is durable only once the folder is.
  const std::string dir = dest.substr(0, dest.find_last_of('/') + 1);
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

// Converts `gguf` with `ember convert`'s defaults (the source's types, the
// rows16 layout) into `dest`.
Status convert_into_cache(const std::string& gguf, const std::string& dest) {
  std::fprintf(stderr, "converting %s into the cache (once) ...\n", gguf.c_str());
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ImportedModel> imported, import_gguf(gguf));
  imported->spec.quant_layout = Layout::Rows16;
  EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serialize_model(imported->spec));
  EMBER_TRY(write_atomically(dest, bytes));
  std::fprintf(stderr,
               "converted %s -> %s (once; clear with `ember cache clear`, list with `ember cache list`)\n",
               gguf.c_str(), dest.c_str());
  return Status::ok();
}

// Entries of the same GGUF file made by another ember: never used again.
void remove_other_versions(const std::string& dir, const std::string& digest, const std::string& keep) {
  auto entries = list_cache(dir);
  if (!entries.is_ok()) return;
  for (const CacheEntry& e : entries.value()) {
    const std::string name = e.path.substr(e.path.find_last_of('/') + 1);
    if (!e.temporary && e.path != keep && name.rfind(digest + ".", 0) == 0) ::unlink(e.path.c_str());
  }
}

// Statuses that say the file's bytes are wrong (not the caller's options,
// not a missing file): a cached entry failing so is converted again.
bool is_bad_file(ember_status st) {
  switch (st) {
    case EMBER_ERR_FORMAT:
    case EMBER_ERR_VERSION:
    case EMBER_ERR_TRUNCATED:
    case EMBER_ERR_BAD_TENSOR:
    case EMBER_ERR_BAD_HPARAMS:
    case EMBER_ERR_BAD_TOKENIZER:
    case EMBER_ERR_MISSING_TENSOR:
    case EMBER_ERR_INTEGRITY:
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<std::string> model_cache_dir() {
  if (std::string d = env("EMBER_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/ember/models";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/ember/models";
  return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                       "no cache folder for converted models: set EMBER_CACHE_DIR (or XDG_CACHE_HOME or HOME)");
}

Result<std::vector<CacheEntry>> list_cache(const std::string& dir) {
  std::vector<CacheEntry> out;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return out;
    return Status::error(EMBER_ERR_IO, "cannot read the cache folder '%s': %s", dir.c_str(), std::strerror(errno));
  }
  std::string current_suffix = ".";  // appended, not "." + ...: GCC 12 warns falsely (-Wrestrict) on that
  current_suffix += cache_tag();
  current_suffix += ".ember";
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    // Only names ember writes: the folder may be shared with other files.
    if (name.size() < 66 || !is_hex_digest(name.substr(0, 64)) || name[64] != '.') continue;
    CacheEntry entry;
    entry.path = dir + "/" + name;
    const size_t tmp_at = name.find(".ember.tmp-");
    const bool finished = name.size() > 6 && name.compare(name.size() - 6, 6, ".ember") == 0;
    if (tmp_at == std::string::npos && !finished) continue;
    entry.temporary = tmp_at != std::string::npos;
    entry.current = !entry.temporary && name.size() == 64 + current_suffix.size() &&
                    name.compare(64, std::string::npos, current_suffix) == 0;
    struct stat st {};
    if (::stat(entry.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entry.bytes = static_cast<uint64_t>(st.st_size);
    if (!entry.temporary) {
      auto file = ModelFile::open(entry.path, ModelFile::Options{});
      if (file.is_ok()) entry.source_file = file.value()->provenance().source_file;
    }
    out.push_back(std::move(entry));
  }
  closedir(d);
  // Remembered digests: cleared with the rest, counted as temporary.
  const std::string memo_dir = dir + "/" + kDigestFolder;
  if (DIR* m = opendir(memo_dir.c_str())) {
    while (const dirent* e = readdir(m)) {
      const std::string name = e->d_name;
      if (name.size() < 64 || !is_hex_digest(name.substr(0, 64))) continue;
      CacheEntry entry;
      entry.path = memo_dir + "/" + name;
      entry.memo = true;
      struct stat st {};
      if (::stat(entry.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      entry.bytes = static_cast<uint64_t>(st.st_size);
      out.push_back(std::move(entry));
    }
    closedir(m);
  }
  std::sort(out.begin(), out.end(), [](const CacheEntry& a, const CacheEntry& b) { return a.path < b.path; });
  return out;
}

int open_model_for_cli(const std::string& path, const ember_model_options* options, ember_model** out_model,
                       std::string* opened_path) {
  *out_model = nullptr;
  if (opened_path) *opened_path = path;
  if (!starts_with_gguf_magic(path)) {
    const ember_status st = ember_model_open(path.c_str(), options, out_model);
    return st == EMBER_OK ? 0 : report_last(st);
  }
  auto dir = model_cache_dir();
  if (!dir.is_ok()) return report(dir.status().code(), dir.status().message());
  std::error_code ec;
  std::filesystem::create_directories(dir.value(), ec);
  if (ec) return report(EMBER_ERR_IO, "cannot create the cache folder '" + dir.value() + "': " + ec.message());
  const std::string memo = digest_memo_path(dir.value(), path);
  Result<std::string> digest = read_memo(memo);
  if (digest->empty()) {
    digest = hash_file(path);
    if (!digest.is_ok()) return report(digest.status().code(), digest.status().message());
    write_memo(memo, digest.value());
  }
  const std::string entry = dir.value() + "/" + digest.value() + "." + cache_tag() + ".ember";
  if (opened_path) *opened_path = entry;

  struct stat st {};
  bool converted = false;
  if (::stat(entry.c_str(), &st) == 0) {
    std::fprintf(stderr, "using the cache for %s: %s (clear with `ember cache clear`)\n", path.c_str(), entry.c_str());
  } else {
    const Status s = convert_into_cache(path, entry);
    if (!s.is_ok()) return report(s.code(), s.message());
    remove_other_versions(dir.value(), digest.value(), entry);
    converted = true;
  }
  ember_status open_st = ember_model_open(entry.c_str(), options, out_model);
  if (open_st != EMBER_OK && !converted && is_bad_file(open_st)) {
    // A cache entry the loader refuses (a disk error, a truncated copy, an
    // edit): never trusted, replaced once.
    std::fprintf(stderr, "the cached %s fails its checks (%s: %s): converting again\n", entry.c_str(),
                 ember_status_string(open_st), ember_last_error());
    ::unlink(entry.c_str());
    const Status s = convert_into_cache(path, entry);
    if (!s.is_ok()) return report(s.code(), s.message());
    open_st = ember_model_open(entry.c_str(), options, out_model);
    converted = true;
  }
  if (open_st != EMBER_OK && converted && is_bad_file(open_st)) {
    // Not a model ember runs (a vocabulary-only GGUF, say): keep no entry
    // that every later run would find broken.
    const std::string why = ember_last_error();
    ::unlink(entry.c_str());
    return report(open_st, path + ": converted, but the result cannot run: " + why);
  }
  return open_st == EMBER_OK ? 0 : report_last(open_st);
}

}  // namespace ember::cli

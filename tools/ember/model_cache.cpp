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

#include "tools/ember/args.h"
#include "tools/ember/convert_steps.h"
#include "tools/ember/files.h"

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
  return std::string("v") + ember_version() + "-s" + std::to_string(conversion_schema_version()) + "-c" +
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

ember_status hash_file(const std::string& path, std::string* digest, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return EMBER_ERR_IO;
  }
  struct stat st {};
  const uint64_t total = fstat(fileno(f), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  Progress progress("hashing " + path, total);
  Sha256Hash sha;
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
  if (failed) {
    *error = "cannot read '" + path + "'";
    return EMBER_ERR_IO;
  }
  *digest = sha.hex();
  return EMBER_OK;
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
  return dir + "/" + kDigestFolder + "/" + sha256_hex(key, std::strlen(key));
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
ember_status write_atomically(const std::string& dest, const std::vector<uint8_t>& bytes, std::string* error) {
  std::string tmp = dest + ".tmp-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) {
    *error = "cannot create a file beside '" + dest + "': " + std::strerror(errno);
    return EMBER_ERR_IO;
  }
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
    *error = "cannot write '" + dest + "' (" + std::to_string(bytes.size()) + " bytes): " + std::strerror(err);
    return EMBER_ERR_IO;
  }
  // The rename itself is durable only once the folder is.
  const std::string dir = dest.substr(0, dest.find_last_of('/') + 1);
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd);
    ::close(dfd);
  }
  return EMBER_OK;
}

// Converts `gguf` with `ember convert`'s defaults (the source's types, the
// rows16 layout) into `dest`.
ember_status convert_into_cache(const std::string& gguf, const std::string& dest, std::string* error) {
  std::fprintf(stderr, "converting %s into the cache (once) ...\n", gguf.c_str());
  std::vector<uint8_t> bytes;
  ember_status st = convert_gguf_to_bytes(gguf, &bytes, error);
  if (st == EMBER_OK) st = write_atomically(dest, bytes, error);
  if (st != EMBER_OK) return st;
  std::fprintf(stderr,
               "converted %s -> %s (once; clear with `ember cache clear`, list with `ember cache list`)\n",
               gguf.c_str(), dest.c_str());
  return EMBER_OK;
}

// Entries of the same GGUF file made by another ember: never used again.
void remove_other_versions(const std::string& dir, const std::string& digest, const std::string& keep) {
  std::vector<CacheEntry> entries;
  std::string error;
  if (list_cache(dir, /*with_sources=*/false, &entries, &error) != EMBER_OK) return;
  for (const CacheEntry& e : entries) {
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

// The GGUF file a cached model was converted from (its provenance); "" when
// the model does not open.
std::string source_of(const std::string& path) {
  ember_model_options o;
  ember_model_options_default(&o);
  o.guard_mapping = 0;
  ember_model* model = nullptr;
  if (ember_model_open(path.c_str(), &o, &model) != EMBER_OK) return "";
  ember_model_file_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  const std::string source = ember_model_get_file_info(model, &info) == EMBER_OK ? info.source_file : "";
  ember_model_free(model);
  return source;
}

}  // namespace

ember_status model_cache_dir(std::string* dir, std::string* error) {
  if (std::string d = env("EMBER_CACHE_DIR"); !d.empty()) {
    *dir = d;
  } else if (std::string x = env("XDG_CACHE_HOME"); !x.empty()) {
    *dir = x + "/ember/models";
  } else if (std::string h = env("HOME"); !h.empty()) {
    *dir = h + "/.cache/ember/models";
  } else {
    *error = "no cache folder for converted models: set EMBER_CACHE_DIR (or XDG_CACHE_HOME or HOME)";
    return EMBER_ERR_INVALID_ARGUMENT;
  }
  return EMBER_OK;
}

ember_status list_cache(const std::string& dir, bool with_sources, std::vector<CacheEntry>* entries,
                        std::string* error) {
  std::vector<CacheEntry>& out = *entries;
  out.clear();
  DIR* d = opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return EMBER_OK;
    *error = "cannot read the cache folder '" + dir + "': " + std::strerror(errno);
    return EMBER_ERR_IO;
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
    if (!entry.temporary && with_sources) entry.source_file = source_of(entry.path);
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
  return EMBER_OK;
}

int open_model_for_cli(const std::string& path, const ember_model_options* options, ember_model** out_model,
                       std::string* opened_path) {
  *out_model = nullptr;
  if (opened_path) *opened_path = path;
  if (!starts_with_gguf_magic(path)) {
    const ember_status st = ember_model_open(path.c_str(), options, out_model);
    return st == EMBER_OK ? 0 : report_last(st);
  }
  std::string dir, error;
  ember_status st = model_cache_dir(&dir, &error);
  if (st != EMBER_OK) return report(st, error);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return report(EMBER_ERR_IO, "cannot create the cache folder '" + dir + "': " + ec.message());
  const std::string memo = digest_memo_path(dir, path);
  std::string digest = read_memo(memo);
  if (digest.empty()) {
    if ((st = hash_file(path, &digest, &error)) != EMBER_OK) return report(st, error);
    write_memo(memo, digest);
  }
  const std::string entry = dir + "/" + digest + "." + cache_tag() + ".ember";
  if (opened_path) *opened_path = entry;

  struct stat entry_stat {};
  bool converted = false;
  if (::stat(entry.c_str(), &entry_stat) == 0) {
    std::fprintf(stderr, "using the cache for %s: %s (clear with `ember cache clear`)\n", path.c_str(), entry.c_str());
  } else {
    if ((st = convert_into_cache(path, entry, &error)) != EMBER_OK) return report(st, error);
    remove_other_versions(dir, digest, entry);
    converted = true;
  }
  ember_status open_st = ember_model_open(entry.c_str(), options, out_model);
  if (open_st != EMBER_OK && !converted && is_bad_file(open_st)) {
    // A cache entry the loader refuses (a disk error, a truncated copy, an
    // edit): never trusted, replaced once.
    std::fprintf(stderr, "the cached %s fails its checks (%s: %s): converting again\n", entry.c_str(),
                 ember_status_string(open_st), ember_last_error());
    ::unlink(entry.c_str());
    if ((st = convert_into_cache(path, entry, &error)) != EMBER_OK) return report(st, error);
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

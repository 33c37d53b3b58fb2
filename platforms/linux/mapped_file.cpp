#include "platforms/linux/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ember {
namespace {

// The weights are mapped at a 2 MiB boundary and with MADV_HUGEPAGE, so a
// kernel whose page cache holds the file in 2 MiB folios (a cold read
// through this mapping filled them so on ext4, Linux 6.18) maps them with
// 2 MiB pages: decode streams every weight once per token, and
// on the session-21 host the 0.5b Q4_K_M mixture decoded 1.3x faster from
// 2 MiB mappings than from 4 KiB ones of the same cached file
// (docs/decisions.md "Model files are mapped at a 2 MiB boundary"). Pages
// cached earlier in small folios stay small.
constexpr size_t kHugePage = size_t{2} << 20;

// The file mapped read-only at a 2 MiB-aligned address (a reserved span,
// the file mapped over its aligned part, the slack given back), or
// MAP_FAILED for the caller's plain mmap.
void* map_huge_aligned(int fd, size_t size) {
  if (size < kHugePage) return MAP_FAILED;
  const size_t span_bytes = size + kHugePage;
  void* span = mmap(nullptr, span_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (span == MAP_FAILED) return MAP_FAILED;
  const uintptr_t s = reinterpret_cast<uintptr_t>(span);
  const uintptr_t at = (s + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  void* p = mmap(reinterpret_cast<void*>(at), size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    munmap(span, span_bytes);
    return MAP_FAILED;
  }
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t end = at + ((size + page - 1) & ~(page - 1));  // the file mapping's whole pages
  if (at > s) munmap(span, at - s);
  if (s + span_bytes > end) munmap(reinterpret_cast<void*>(end), s + span_bytes - end);
  return p;
}

}  // namespace

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) munmap(data_, size_);
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::error(EMBER_ERR_IO, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::error(EMBER_ERR_IO, "cannot stat '%s': %s", path.c_str(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(EMBER_ERR_IO, "'%s' is not a regular file", path.c_str());
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ == 0) {
    ::close(fd);
    return f;  // an empty file maps to nothing; the verifier reports it
  }
  void* p = map_huge_aligned(fd, f.size_);
  if (p == MAP_FAILED) p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  // Best effort: a kernel without transparent huge pages (or with them off)
  // refuses, and the mapping keeps small pages.
  if (p != MAP_FAILED) madvise(p, f.size_, MADV_HUGEPAGE);
  if (p == MAP_FAILED) {
    return Status::error(EMBER_ERR_IO, "cannot map '%s' (%zu bytes): %s", path.c_str(), f.size_,
                         std::strerror(err));
  }
  f.data_ = static_cast<uint8_t*>(p);
  return f;
}

void MappedFile::advise_willneed() const {
  if (data_) madvise(data_, size_, MADV_WILLNEED);
}

Result<std::string> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    return Status::error(EMBER_ERR_IO, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  }
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return Status::error(EMBER_ERR_IO, "cannot read '%s'", path.c_str());
  return out;
}

Status write_file_atomic(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    return Status::error(EMBER_ERR_IO, "cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  }
  const size_t written = size ? std::fwrite(data, 1, size, f) : 0;
  const bool ok = written == size && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(EMBER_ERR_IO, "cannot write '%s' (%zu bytes): %s", path.c_str(), size,
                         std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace ember

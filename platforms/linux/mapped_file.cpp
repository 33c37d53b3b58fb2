#include "platforms/linux/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ember {

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
  void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
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

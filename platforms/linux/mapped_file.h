// Read-only file mapping: the one place the runtime touches mmap. The core
// sees only this small interface (ARCHITECTURE.md "Conventions": no OS headers in the core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ember {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  // Maps `path` read-only and private (MAP_PRIVATE): later writes to the
  // file by others may still show through for pages not yet read, so the
  // loader verifies structure once and keeps the size it verified.
  static Result<MappedFile> open(const std::string& path);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Advises the kernel the whole file will be read soon (best effort).
  void advise_willneed() const;

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Reads a whole small file into memory (tokenizer files, keys).
Result<std::string> read_file(const std::string& path);

// Writes `size` bytes to `path` through a temporary file renamed into place,
// so a failed write never leaves a half-written model behind.
Status write_file_atomic(const std::string& path, const void* data, size_t size);

}  // namespace ember

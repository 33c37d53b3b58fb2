// MappedFile (platforms/linux): a file of 2 MiB or more is mapped at a 2 MiB
// boundary (so a kernel holding it in 2 MiB folios can map them whole), the
// bytes read back are the file's, and nothing around the mapping is left
// reserved; smaller and empty files map as before.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "platforms/linux/mapped_file.h"

namespace {

std::string write_temp(const std::vector<uint8_t>& bytes, const char* name) {
  const std::string path = std::string("/tmp/ember_test_mapped_") + name + "_" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
  return path;
}

// Whether any page of [p, p + bytes) is mapped (mincore fails with ENOMEM
// on an unmapped range).
bool any_mapped(uintptr_t p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  unsigned char v = 0;
  for (uintptr_t a = p; a < p + bytes; a += page) {
    if (mincore(reinterpret_cast<void*>(a), page, &v) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("mapped file: files of 2 MiB or more map at a 2 MiB boundary, read back exactly, and leave no reservation") {
  const size_t huge = size_t{2} << 20;
  for (size_t size : {huge, huge + 4096 + 7, 3 * huge + 1}) {
    CAPTURE(size);
    std::vector<uint8_t> bytes(size);
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + i / 4096);
    const std::string path = write_temp(bytes, "big");
    {
      auto f = ember::MappedFile::open(path);
      REQUIRE(f.is_ok());
      const ember::MappedFile& m = f.value();
      REQUIRE(m.size() == size);
      const uintptr_t at = reinterpret_cast<uintptr_t>(m.data());
      CHECK(at % huge == 0);
      CHECK(std::equal(bytes.begin(), bytes.end(), m.data()));
      // The span reserved to find the boundary is given back: its slack
      // after the file's last page (at least a page) is unmapped.
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      const uintptr_t end = at + (size + page - 1) / page * page;
      CHECK_FALSE(any_mapped(end, page));
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("mapped file: small and empty files map as before") {
  std::vector<uint8_t> small(5000);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<uint8_t>(i);
  const std::string path = write_temp(small, "small");
  {
    auto f = ember::MappedFile::open(path);
    REQUIRE(f.is_ok());
    CHECK(f.value().size() == small.size());
    CHECK(std::equal(small.begin(), small.end(), f.value().data()));
  }
  std::remove(path.c_str());
  const std::string empty = write_temp({}, "empty");
  {
    auto f = ember::MappedFile::open(empty);
    REQUIRE(f.is_ok());
    CHECK(f.value().size() == 0);
  }
  std::remove(empty.c_str());
}

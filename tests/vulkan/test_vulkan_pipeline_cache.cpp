// The pipeline cache on disk (backends/vulkan/pipeline_cache.h): written
// after the first prepare, loaded by the next backend, and every damaged or
// foreign file ignored with a reason, never handed to the driver, never a
// crash; the next save replaces it.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "vulkan/vulkan_fixture.h"

#if EMBER_VULKAN

namespace {

using namespace ember;
using ember::test::Builder;
using ember::test::Runner;

std::unique_ptr<VulkanBackend> open_with_cache(const std::string& dir) {
  if (!ember::test::open_vulkan()) return nullptr;  // skips without a device; sets VK_ICD_FILENAMES
  VulkanOptions vo;
  vo.allow_cpu = true;
  vo.pipeline_cache_dir = dir;
  auto r = VulkanBackend::create(vo);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return std::move(r).value();
}

// Prepares a small graph on `vk` and runs a step; returns the logits.
std::vector<float> run_small(std::unique_ptr<VulkanBackend> vk) {
  ember::test::g_seed = 5;
  Builder b(64, 4, 2, 40, 16, 4);
  const int32_t x = b.embed();
  const int32_t y = b.act(64, 4);
  b.op(OpKind::MatMul, y, x, -1, -1, b.weight(DType::Q8_0, 64, 64));
  b.tail(y);
  Runner r;
  Status st = r.init(b.g, std::move(vk));
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  std::vector<float> logits;
  REQUIRE(r.step({1, 2, 3}, 0, &logits).is_ok());
  return logits;
}

std::string cache_file(const std::string& dir) {
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".bin") {
      CHECK(found.empty());
      found = e.path().string();
    }
  }
  return found;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  const std::string s = ember::test::read_text_file(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  if (!b.empty()) REQUIRE(std::fwrite(b.data(), 1, b.size(), f) == b.size());
  std::fclose(f);
}

// The file format's checksum (FNV-1a 64 of the data after the 40-byte header).
void reseal(std::vector<uint8_t>* f) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 40; i < f->size(); ++i) h = (h ^ (*f)[i]) * 0x100000001b3ull;
  std::memcpy(f->data() + 32, &h, 8);
}

}  // namespace

TEST_SUITE("vulkan") {

TEST_CASE("vulkan: the pipeline cache is saved, loaded, and a bad file is ignored") {
  const std::string dir = ember::test::temp_dir("vulkan-plc") + "/cache";
  std::filesystem::remove_all(dir);
  auto first = open_with_cache(dir);
  if (!first) return;
  CHECK(first->describe().find("pipeline cache new)") != std::string::npos);
  const std::vector<float> want = run_small(std::move(first));
  const std::string path = cache_file(dir);
  REQUIRE(!path.empty());
  const std::vector<uint8_t> good = read_bytes(path);
  REQUIRE(good.size() >= 72);  // our 40-byte header and Vulkan's 32
  CHECK(std::memcmp(good.data(), "EMBRPLC1", 8) == 0);

  auto second = open_with_cache(dir);
  CHECK(second->describe().find("pipeline cache loaded") != std::string::npos);
  CHECK(run_small(std::move(second)) == want);

  struct Bad {
    const char* what;
    std::vector<uint8_t> bytes;
    const char* why;
  };
  std::vector<Bad> bad;
  bad.push_back({"empty", {}, "truncated"});
  bad.push_back({"cut short", std::vector<uint8_t>(good.begin(), good.begin() + 50), "truncated"});
  {
    std::vector<uint8_t> f = good;
    f[0] = 'X';
    bad.push_back({"magic", f, "not an ember pipeline cache"});
  }
  {
    std::vector<uint8_t> f = good;
    f[8] = 2;
    bad.push_back({"format", f, "unknown format"});
  }
  {
    std::vector<uint8_t> f = good;
    f[16] ^= 1;
    bad.push_back({"key", f, "made for another device"});
  }
  {
    std::vector<uint8_t> f = good;
    const uint64_t huge = ~0ull;
    std::memcpy(f.data() + 24, &huge, 8);
    bad.push_back({"data size", f, "wrong data size"});
  }
  {
    std::vector<uint8_t> f = good;
    f.push_back(0);
    bad.push_back({"trailing byte", f, "wrong data size"});
  }
  {
    std::vector<uint8_t> f = good;
    f.back() ^= 0x40;
    bad.push_back({"flipped data", f, "bad checksum"});
  }
  // Resealed with a valid checksum: the Vulkan header itself is checked.
  const size_t vk = 40;
  for (const auto& [field, value] : std::vector<std::pair<size_t, uint32_t>>{
           {0, 0xffffffffu}, {0, 8}, {4, 2}, {8, 0x1234}, {12, 0x5678}, {16, 0xdeadbeef}}) {
    std::vector<uint8_t> f = good;
    std::memcpy(f.data() + vk + field, &value, 4);
    reseal(&f);
    bad.push_back({"vulkan header", f, "its Vulkan header does not match this device"});
  }
  {
    std::vector<uint8_t> f(65u << 20, 0);
    std::memcpy(f.data(), good.data(), 40);
    bad.push_back({"65 MiB", f, "larger than 64 MiB"});
  }
  for (const Bad& b : bad) {
    CAPTURE(b.what);
    write_bytes(path, b.bytes);
    auto vk = open_with_cache(dir);
    const std::string d = vk->describe();
    CAPTURE(d);
    CHECK(d.find(std::string("pipeline cache ignored (") + b.why) != std::string::npos);
    CHECK(run_small(std::move(vk)) == want);
    // The next save replaced it with a good file.
    auto again = open_with_cache(dir);
    CHECK(again->describe().find("pipeline cache loaded") != std::string::npos);
  }
}

TEST_CASE("vulkan: the pipeline cache can be turned off, and an unwritable directory is no error") {
  const std::string dir = ember::test::temp_dir("vulkan-plc-off") + "/cache";
  std::filesystem::remove_all(dir);
  const char* old = std::getenv("EMBER_VULKAN_PIPELINE_CACHE");
  const std::string saved = old ? old : "";
  setenv("EMBER_VULKAN_PIPELINE_CACHE", "0", 1);
  auto vk = open_with_cache(dir);
  if (old) {
    setenv("EMBER_VULKAN_PIPELINE_CACHE", saved.c_str(), 1);
  } else {
    unsetenv("EMBER_VULKAN_PIPELINE_CACHE");
  }
  if (!vk) return;
  CHECK(vk->describe().find("pipeline cache off (EMBER_VULKAN_PIPELINE_CACHE=0)") != std::string::npos);
  const std::vector<float> want = run_small(std::move(vk));
  CHECK(!std::filesystem::exists(dir));

  // A regular file where the directory should be: the save fails quietly.
  const std::string blocker = ember::test::temp_dir("vulkan-plc-off") + "/not-a-dir";
  write_bytes(blocker, {1, 2, 3});
  auto blocked = open_with_cache(blocker);
  VulkanBackend* bp = blocked.get();
  Builder b(64, 4, 2, 40, 16, 4);
  b.tail(b.embed());
  Runner r;
  REQUIRE(r.init(b.g, std::move(blocked)).is_ok());
  CHECK(bp->describe().find("not saved") != std::string::npos);
}

}  // TEST_SUITE

#endif

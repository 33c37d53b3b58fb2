#include "backends/vulkan/pipeline_cache.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "backends/vulkan/shader_blobs.h"

namespace ember::vk {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'R', 'P', 'L', 'C', '1'};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeaderBytes = 40;
constexpr size_t kMaxFileBytes = 64ull << 20;
constexpr size_t kVkHeaderBytes = 32;  // VkPipelineCacheHeaderVersionOne

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string cache_dir(const PipelineCacheOptions& o) {
  if (!o.dir.empty()) return o.dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/ember";  // the XDG spec: relative paths are invalid
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/ember";
  return "";
}

// The whole file when it exists and is at most kMaxFileBytes; `why` otherwise.
bool read_file(const std::string& path, std::vector<uint8_t>* out, std::string* why) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *why = "";  // no file yet
    return false;
  }
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (out->size() + n > kMaxFileBytes) {
      std::fclose(f);
      *why = "larger than 64 MiB";
      return false;
    }
    out->insert(out->end(), buf, buf + n);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) *why = "unreadable";
  return !failed;
}

}  // namespace

uint64_t pipeline_cache_key(const DeviceCaps& caps) {
  uint64_t h = fnv1a(caps.pipeline_cache_uuid, VK_UUID_SIZE);
  h = fnv1a(&caps.vendor_id, 4, h);
  h = fnv1a(&caps.device_id, 4, h);
  h = fnv1a(&caps.driver_version, 4, h);
  for (size_t i = 0; i < kShaderBlobCount; ++i) {
    h = fnv1a(kShaderBlobs[i].name, std::strlen(kShaderBlobs[i].name) + 1, h);
    h = fnv1a(kShaderBlobs[i].code, kShaderBlobs[i].size, h);
  }
  return h;
}

const uint8_t* check_pipeline_cache_file(const uint8_t* bytes, size_t size, uint64_t key, const DeviceCaps& caps,
                                         size_t* data_size, std::string* why) {
  if (size < kHeaderBytes + kVkHeaderBytes) {
    *why = "truncated";
    return nullptr;
  }
  if (size > kMaxFileBytes) {
    *why = "larger than 64 MiB";
    return nullptr;
  }
  if (std::memcmp(bytes, kMagic, 8) != 0) {
    *why = "not an ember pipeline cache";
    return nullptr;
  }
  if (get_u32(bytes + 8) != kFormat || get_u32(bytes + 12) != kHeaderBytes) {
    *why = "unknown format";
    return nullptr;
  }
  if (get_u64(bytes + 16) != key) {
    *why = "made for another device, driver or shader set";
    return nullptr;
  }
  const uint64_t n = get_u64(bytes + 24);
  if (n != size - kHeaderBytes) {
    *why = "wrong data size";
    return nullptr;
  }
  const uint8_t* data = bytes + kHeaderBytes;
  if (fnv1a(data, n) != get_u64(bytes + 32)) {
    *why = "bad checksum";
    return nullptr;
  }
  // VkPipelineCacheHeaderVersionOne: headerSize, headerVersion, vendorID,
  // deviceID, pipelineCacheUUID.
  const uint32_t vk_header = get_u32(data);
  if (vk_header < kVkHeaderBytes || vk_header > n || get_u32(data + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
      get_u32(data + 8) != caps.vendor_id || get_u32(data + 12) != caps.device_id ||
      std::memcmp(data + 16, caps.pipeline_cache_uuid, VK_UUID_SIZE) != 0) {
    *why = "its Vulkan header does not match this device";
    return nullptr;
  }
  *data_size = n;
  return data;
}

PipelineCache::~PipelineCache() {
  if (cache_) dev_.api().vkDestroyPipelineCache(dev_.device(), cache_, nullptr);
}

Status PipelineCache::init() {
  const VkApi& a = dev_.api();
  VkPipelineCacheCreateInfo pc{};
  pc.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  const char* env = std::getenv("EMBER_VULKAN_PIPELINE_CACHE");
  const std::string dir = cache_dir(options_);
  if (!options_.enabled || (env && std::strcmp(env, "0") == 0) || dir.empty()) {
    state_ = !options_.enabled ? "off (asked for)"
             : dir.empty()     ? "off (no cache directory: set XDG_CACHE_HOME or HOME)"
                               : "off (EMBER_VULKAN_PIPELINE_CACHE=0)";
    EMBER_VK_TRY(a.vkCreatePipelineCache(dev_.device(), &pc, nullptr, &cache_), "vkCreatePipelineCache");
    return Status::ok();
  }
  key_ = pipeline_cache_key(dev_.caps());
  char name[64];
  std::snprintf(name, sizeof name, "/vulkan-pipelines-%016llx.bin", static_cast<unsigned long long>(key_));
  path_ = dir + name;

  std::vector<uint8_t> file;
  std::string why;
  const uint8_t* data = nullptr;
  size_t data_size = 0;
  if (read_file(path_, &file, &why)) {
    data = check_pipeline_cache_file(file.data(), file.size(), key_, dev_.caps(), &data_size, &why);
  }
  if (data) {
    pc.initialDataSize = data_size;
    pc.pInitialData = data;
    if (a.vkCreatePipelineCache(dev_.device(), &pc, nullptr, &cache_) == VK_SUCCESS) {
      loaded_hash_ = fnv1a(data, data_size);
      loaded_size_ = data_size;
      state_ = "loaded " + std::to_string((data_size + 1023) / 1024) + " KiB";
      return Status::ok();
    }
    why = "the driver refused it";
    pc.initialDataSize = 0;
    pc.pInitialData = nullptr;
  }
  state_ = why.empty() ? "new" : "ignored (" + why + ")";
  EMBER_VK_TRY(a.vkCreatePipelineCache(dev_.device(), &pc, nullptr, &cache_), "vkCreatePipelineCache");
  return Status::ok();
}

void PipelineCache::save() {
  if (path_.empty() || !cache_) return;
  const VkApi& a = dev_.api();
  size_t n = 0;
  if (a.vkGetPipelineCacheData(dev_.device(), cache_, &n, nullptr) != VK_SUCCESS || n == 0 ||
      n > kMaxFileBytes - kHeaderBytes) {
    return;
  }
  std::vector<uint8_t> out(kHeaderBytes + n);
  VkResult r = a.vkGetPipelineCacheData(dev_.device(), cache_, &n, out.data() + kHeaderBytes);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) return;
  out.resize(kHeaderBytes + n);
  const uint64_t hash = fnv1a(out.data() + kHeaderBytes, n);
  if (hash == loaded_hash_ && n == loaded_size_) return;  // nothing new
  const uint32_t format = kFormat, header = kHeaderBytes;
  const uint64_t size = n;
  std::memcpy(out.data(), kMagic, 8);
  std::memcpy(out.data() + 8, &format, 4);
  std::memcpy(out.data() + 12, &header, 4);
  std::memcpy(out.data() + 16, &key_, 8);
  std::memcpy(out.data() + 24, &size, 8);
  std::memcpy(out.data() + 32, &hash, 8);

  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  // A name of our own: concurrent savers never write the same temporary file.
  char suffix[40];
  const uint64_t salt = key_ ^ reinterpret_cast<uintptr_t>(this) ^
                        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::snprintf(suffix, sizeof suffix, ".tmp-%016llx", static_cast<unsigned long long>(fnv1a(&salt, 8)));
  const std::string tmp = path_ + suffix;
  FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f && std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (f) ok = std::fclose(f) == 0 && ok;
  if (ok) ok = std::rename(tmp.c_str(), path_.c_str()) == 0;
  if (!ok) std::remove(tmp.c_str());
  state_ += ok ? "; saved" : "; not saved (cannot write " + path_ + ")";
  if (ok) {
    loaded_hash_ = hash;
    loaded_size_ = n;
  }
}

}  // namespace ember::vk

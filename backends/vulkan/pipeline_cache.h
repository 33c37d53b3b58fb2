// The pipeline cache kept on disk between runs, so that a later session on
// the same device and driver skips the driver's shader compilation.
//
// File: DIR/vulkan-pipelines-KEY.bin. DIR is VulkanOptions::pipeline_cache_dir
// (from ember_session_options.vulkan_pipeline_cache_dir through
// BackendOptions; "" there turns the cache off), else $XDG_CACHE_HOME/ember,
// else $HOME/.cache/ember. KEY is 16 hex digits
// of a hash of the device's pipelineCacheUUID, vendor and device IDs, driver
// version and every embedded SPIR-V module: a new driver or new shaders get a
// new file. EMBER_VULKAN_PIPELINE_CACHE=0 in the environment keeps the cache
// in memory only.
//
// The file is untrusted input (another user may own the directory, a crash
// may have cut it short):
//   header (40 bytes): magic "EMBRPLC1", u32 format 1, u32 header bytes 40,
//                      u64 KEY, u64 data bytes, u64 FNV-1a hash of the data
//   data:              what vkGetPipelineCacheData returned
// It is given to the driver only when it is at most 64 MiB, every header
// field matches (the data bytes being exactly the rest of the file), the hash
// matches, and the data starts with a VkPipelineCacheHeaderVersionOne of
// version ONE, a header size between 32 and the data's size, and this
// device's vendor ID, device ID and pipelineCacheUUID. Anything else is
// ignored (state() says why) and replaced at the next save. Saving writes a
// temporary file and renames it over the old one; a failed save is not an
// error (the cache only saves time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/vulkan/device.h"

namespace ember::vk {

struct PipelineCacheOptions {
  bool enabled = true;  // false, or EMBER_VULKAN_PIPELINE_CACHE=0: memory only
  std::string dir;      // empty: the default directory
};

class PipelineCache {
 public:
  PipelineCache(Device& dev, const PipelineCacheOptions& options) : dev_(dev), options_(options) {}
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // Creates the VkPipelineCache, from the file when it is valid.
  Status init();
  VkPipelineCache handle() const { return cache_; }
  // Writes the cache to the file when its contents changed since loading.
  void save();
  // "off (...)", "new", "loaded N KiB", "ignored (why)", then "; saved" or
  // "; not saved (why)" after a save.
  const std::string& state() const { return state_; }
  // The file, or "" when the cache is off.
  const std::string& path() const { return path_; }

 private:
  Device& dev_;
  PipelineCacheOptions options_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::string path_;
  std::string state_;
  uint64_t key_ = 0;
  uint64_t loaded_hash_ = 0;  // of the data given to the driver (0: none)
  size_t loaded_size_ = 0;
};

// The key a cache file must carry for this device and these shaders.
uint64_t pipeline_cache_key(const DeviceCaps& caps);

// Checks a cache file's bytes: returns the Vulkan data inside and its size,
// or null with the reason in `why`. Exposed for tests.
const uint8_t* check_pipeline_cache_file(const uint8_t* bytes, size_t size, uint64_t key, const DeviceCaps& caps,
                                         size_t* data_size, std::string* why);

}  // namespace ember::vk

// Device memory: buffers, the device layout of weights, and uploads through a
// host-visible staging buffer. Weights are uploaded once at prepare; the KV
// cache and activations live only on the device.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/device.h"

namespace ember::vk {

// One VkBuffer with its own allocation (a model has a few hundred at most,
// far below maxMemoryAllocationCount). `mapped` is set for host buffers.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t size = 0;
  void* mapped = nullptr;
};

// Device-local when `host_visible` is false (falling back to any memory type
// the buffer accepts), host-visible and coherent otherwise.
// EMBER_ERR_NO_MEMORY names the bytes when the device is out of memory.
Result<Buffer> create_buffer(const Device& dev, uint64_t size, bool host_visible, const char* what);
void destroy_buffer(const Device& dev, Buffer* b);

// How a weight is laid out on the device. Float types are stored as in the
// file (rounded up to whole 32-bit words). Q8_0 and Q4_0 are repacked into
// 32-bit words so that shaders need no 8/16-bit storage: first every
// block's quants (Q8_0: 8 words, Q4_0: 4 words, same byte order as GGUF),
// then every block's scale as an f32 word at scale_word_offset.
struct WeightLayout {
  uint64_t bytes = 0;
  uint32_t scale_word_offset = 0;
};
Result<WeightLayout> weight_layout(const WeightRef& w);

// Copies host bytes into device buffers through one staging buffer, a chunk
// per submit. Lifetime: create at prepare, destroyed when uploads are done.
class Uploader {
 public:
  explicit Uploader(Device& dev) : dev_(dev) {}
  ~Uploader();
  // Uploads weight `w` into `dst` in its device layout.
  Status upload_weight(const WeightRef& w, const Buffer& dst);
  // Uploads `bytes` bytes from `src` to `dst` at `offset`.
  Status upload(const void* src, uint64_t bytes, const Buffer& dst, uint64_t offset);

 private:
  Status ensure_staging();
  Status copy_chunk(const Buffer& dst, uint64_t offset, uint64_t bytes);

  Device& dev_;
  Buffer staging_;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
};

}  // namespace ember::vk

// Device memory: buffers, the device layout of weights, and uploads through a
// host-visible staging buffer. Weights are uploaded once at prepare; the KV
// cache and activations live only on the device.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
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
// then every block's scale as an f32 word at scale_word_offset. The other
// block types (Q4_1, Q5_0, Q5_1, Q2_K .. Q6_K, IQ4_NL, IQ4_XS; row-major
// only) are GGUF's blocks as in the file, byte for byte, rounded up to a
// whole word: the shaders read them by byte offset (shaders/weights.glsl).
struct WeightLayout {
  uint64_t bytes = 0;
  uint32_t scale_word_offset = 0;
};
Result<WeightLayout> weight_layout(const WeightRef& w);

// Words of one KV cache row of kv_dim elements on the device (shaders/kv.glsl):
// f32 kv_dim; f16 kv_dim / 2; q8_0 kv_dim / 4 quant words, then the blocks'
// f16 scales two per word. EMBER_ERR_UNSUPPORTED for an odd kv_dim, or for
// q8_0 one that is not whole 32-element blocks.
Result<uint32_t> kv_row_words(KvType t, uint32_t kv_dim);
// The shaders' code for a KV type: 0 f32, 1 f16, 2 q8_0.
uint32_t kv_type_code(KvType t);
// One device KV row (kv_row_words words) in the CPU's row format
// (core/kv_type.h: kv_row_bytes bytes), for tests and debugging.
void kv_row_to_host(KvType t, const uint32_t* words, uint32_t kv_dim, uint8_t* out);
// The inverse: one row in the CPU's format as kv_row_words device words (the
// padding of a last half-filled scale word zeroed). Saved sessions.
void kv_row_from_host(KvType t, const uint8_t* row, uint32_t kv_dim, uint32_t* words);

// Copies host bytes into device buffers through one staging buffer. Copies
// are batched: each upload fills the staging buffer further and records its
// copy; one submit carries every copy staged so far, when the buffer is full
// or at flush(). A model's weights take (total bytes / 8 MiB) + 1 submits,
// not one or two per weight. Lifetime: create at prepare; flush() before the
// destination buffers are used; the destructor drops what was not flushed.
class Uploader {
 public:
  explicit Uploader(Device& dev) : dev_(dev) {}
  ~Uploader();
  // Stages weight `w` for `dst` in its device layout.
  Status upload_weight(const WeightRef& w, const Buffer& dst);
  // Stages `bytes` bytes from `src` for `dst` at `offset`.
  Status upload(const void* src, uint64_t bytes, const Buffer& dst, uint64_t offset);
  // Submits the staged copies and waits for them.
  Status flush();
  // Submits so far (for tests).
  uint32_t submits() const { return submits_; }

 private:
  struct Copy {
    VkBuffer dst;
    VkBufferCopy region;
  };
  // Room in the staging buffer for up to `max_bytes` bytes of dst at
  // `offset`, a whole number of `unit`-byte pieces and at least one (the
  // buffer is flushed first when it has less); the copy is recorded. *got
  // is the room given.
  Result<uint8_t*> stage(const Buffer& dst, uint64_t offset, uint64_t max_bytes, uint64_t unit, uint64_t* got);

  Device& dev_;
  Buffer staging_;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  std::vector<Copy> pending_;
  uint64_t used_ = 0;  // staging bytes holding pending copies
  uint32_t submits_ = 0;
};

}  // namespace ember::vk

#include "backends/vulkan/memory.h"

#include <algorithm>
#include <cstring>

namespace ember::vk {
namespace {

constexpr uint64_t kStagingBytes = 8ull << 20;  // a multiple of every block size used below

int find_memory_type(const VkPhysicalDeviceMemoryProperties& mp, uint32_t type_bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

Result<Buffer> create_buffer(const Device& dev, uint64_t size, bool host_visible, const char* what) {
  const VkApi& a = dev.api();
  Buffer b;
  b.size = std::max<uint64_t>(4, (size + 3) / 4 * 4);
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = b.size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = a.vkCreateBuffer(dev.device(), &bci, nullptr, &b.buffer);
  if (r != VK_SUCCESS) return vk_status(r, what);
  VkMemoryRequirements req;
  a.vkGetBufferMemoryRequirements(dev.device(), b.buffer, &req);
  const VkMemoryPropertyFlags want = host_visible
                                         ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                         : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  int type = find_memory_type(dev.memory_properties(), req.memoryTypeBits, want);
  if (type < 0 && !host_visible) type = find_memory_type(dev.memory_properties(), req.memoryTypeBits, 0);
  if (type < 0) {
    destroy_buffer(dev, &b);
    return Status::error(EMBER_ERR_BACKEND, "vulkan: no memory type for %s", what);
  }
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  r = a.vkAllocateMemory(dev.device(), &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    destroy_buffer(dev, &b);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
      return Status::error(EMBER_ERR_NO_MEMORY, "vulkan: out of device memory allocating %llu bytes for %s (%s)",
                           static_cast<unsigned long long>(req.size), what, vk_result_name(r));
    }
    return vk_status(r, what);
  }
  r = a.vkBindBufferMemory(dev.device(), b.buffer, b.memory, 0);
  if (r == VK_SUCCESS && host_visible) r = a.vkMapMemory(dev.device(), b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  if (r != VK_SUCCESS) {
    destroy_buffer(dev, &b);
    return vk_status(r, what);
  }
  return b;
}

void destroy_buffer(const Device& dev, Buffer* b) {
  const VkApi& a = dev.api();
  if (b->mapped) a.vkUnmapMemory(dev.device(), b->memory);
  if (b->buffer) a.vkDestroyBuffer(dev.device(), b->buffer, nullptr);
  if (b->memory) a.vkFreeMemory(dev.device(), b->memory, nullptr);
  *b = Buffer();
}

Result<WeightLayout> weight_layout(const WeightRef& w) {
  WeightLayout l;
  const uint64_t elements = static_cast<uint64_t>(w.rows ? w.rows : 1) * static_cast<uint64_t>(w.cols);
  switch (w.dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      l.bytes = (w.size + 3) / 4 * 4;
      return l;
    case DType::Q8_0:
    case DType::Q4_0: {
      if (w.cols % kQuantBlock) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "vulkan: weight '%s' has %lld columns, not whole %s blocks", w.name,
                             static_cast<long long>(w.cols), dtype_name(w.dtype));
      }
      const uint64_t blocks = elements / kQuantBlock;
      const uint64_t qwords = w.dtype == DType::Q8_0 ? 8 : 4;
      if (blocks * qwords > UINT32_MAX - blocks) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: weight '%s' is too large for 32-bit indexing", w.name);
      }
      l.scale_word_offset = static_cast<uint32_t>(blocks * qwords);
      l.bytes = (blocks * qwords + blocks) * 4;
      return l;
    }
  }
  return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: weight '%s' has dtype %s", w.name, dtype_name(w.dtype));
}

Uploader::~Uploader() {
  if (cb_) dev_.api().vkFreeCommandBuffers(dev_.device(), dev_.command_pool(), 1, &cb_);
  destroy_buffer(dev_, &staging_);
}

Status Uploader::ensure_staging() {
  if (staging_.buffer) return Status::ok();
  EMBER_ASSIGN_OR_RETURN(staging_, create_buffer(dev_, kStagingBytes, true, "the staging buffer"));
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = dev_.command_pool();
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  EMBER_VK_TRY(dev_.api().vkAllocateCommandBuffers(dev_.device(), &cai, &cb_), "vkAllocateCommandBuffers");
  return Status::ok();
}

Status Uploader::copy_chunk(const Buffer& dst, uint64_t offset, uint64_t bytes) {
  const VkApi& a = dev_.api();
  EMBER_VK_TRY(a.vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_TRY(a.vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
  VkBufferCopy region{0, offset, (bytes + 3) / 4 * 4};
  a.vkCmdCopyBuffer(cb_, staging_.buffer, dst.buffer, 1, &region);
  EMBER_VK_TRY(a.vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
  return dev_.submit_and_wait(cb_);
}

Status Uploader::upload(const void* src, uint64_t bytes, const Buffer& dst, uint64_t offset) {
  EMBER_TRY(ensure_staging());
  const uint8_t* s = static_cast<const uint8_t*>(src);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(kStagingBytes, bytes - done);
    std::memcpy(staging_.mapped, s + done, n);
    if (n % 4) std::memset(static_cast<uint8_t*>(staging_.mapped) + n, 0, 4 - n % 4);
    EMBER_TRY(copy_chunk(dst, offset + done, n));
    done += n;
  }
  return Status::ok();
}

Status Uploader::upload_weight(const WeightRef& w, const Buffer& dst) {
  if (w.dtype != DType::Q8_0 && w.dtype != DType::Q4_0) return upload(w.data, w.size, dst, 0);
  EMBER_TRY(ensure_staging());
  EMBER_ASSIGN_OR_RETURN(WeightLayout layout, weight_layout(w));
  const bool q8 = w.dtype == DType::Q8_0;
  const uint64_t qbytes = q8 ? 32 : 16;                        // quant bytes per block on the device
  const uint64_t src_block = q8 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
  const uint64_t blocks = layout.scale_word_offset / (qbytes / 4);
  const int64_t row_blocks = w.cols / kQuantBlock;
  // Quants, then scales (f16 widened to f32: exact).
  const uint64_t per_chunk_q = kStagingBytes / qbytes;
  for (uint64_t b0 = 0; b0 < blocks; b0 += per_chunk_q) {
    const uint64_t nb = std::min(per_chunk_q, blocks - b0);
    uint8_t* out = static_cast<uint8_t*>(staging_.mapped);
    uint8_t block[sizeof(BlockQ8_0)];
    for (uint64_t b = 0; b < nb; ++b) {
      // The quants follow the 2-byte scale in both block types; a Rows16
      // weight is read back in row order (format/layout.h).
      if (w.layout == Layout::RowMajor) {
        std::memcpy(out + b * qbytes, w.data + (b0 + b) * src_block + 2, qbytes);
      } else {
        layout_block(w.layout, w.dtype, w.data, w.cols, (b0 + b) / row_blocks, (b0 + b) % row_blocks, block);
        std::memcpy(out + b * qbytes, block + 2, qbytes);
      }
    }
    EMBER_TRY(copy_chunk(dst, b0 * qbytes, nb * qbytes));
  }
  const uint64_t per_chunk_s = kStagingBytes / 4;
  for (uint64_t b0 = 0; b0 < blocks; b0 += per_chunk_s) {
    const uint64_t nb = std::min(per_chunk_s, blocks - b0);
    float* out = static_cast<float*>(staging_.mapped);
    uint8_t block[sizeof(BlockQ8_0)];
    for (uint64_t b = 0; b < nb; ++b) {
      uint16_t h;
      if (w.layout == Layout::RowMajor) {
        std::memcpy(&h, w.data + (b0 + b) * src_block, 2);
      } else {
        layout_block(w.layout, w.dtype, w.data, w.cols, (b0 + b) / row_blocks, (b0 + b) % row_blocks, block);
        std::memcpy(&h, block, 2);
      }
      out[b] = f16_to_f32(h);
    }
    EMBER_TRY(copy_chunk(dst, (static_cast<uint64_t>(layout.scale_word_offset) + b0) * 4, nb * 4));
  }
  return Status::ok();
}

}  // namespace ember::vk

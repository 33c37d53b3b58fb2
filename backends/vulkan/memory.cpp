#include "backends/vulkan/memory.h"

#include <algorithm>
#include <cstring>

namespace ember::vk {
namespace {

constexpr uint64_t kStagingBytes = 8ull << 20;  // a multiple of every unit staged below (4, 16, 32 bytes)

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
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS: {
      // GGUF's blocks as stored; the shaders address them by byte.
      uint64_t bytes = 0;
      if (w.cols <= 0 || w.cols % dtype_block_elements(w.dtype) || !dtype_bytes(w.dtype, elements, &bytes) ||
          bytes != w.size) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "vulkan: weight '%s' (%s, %lld columns, %llu bytes) is not whole %d-element blocks",
                             w.name, dtype_name(w.dtype), static_cast<long long>(w.cols),
                             static_cast<unsigned long long>(w.size), dtype_block_elements(w.dtype));
      }
      // A repacked layout (Q5_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS rows16) is gathered back into row order at
      // upload (upload_weight): the device holds GGUF's row-major blocks.
      if (w.layout != Layout::RowMajor && !layout_fits(w.layout, w.dtype, w.rows, w.cols)) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "vulkan: weight '%s' (%s) has layout %s; the Vulkan backend reads %s row-major only",
                             w.name, dtype_name(w.dtype), layout_name(w.layout), dtype_name(w.dtype));
      }
      if (bytes > UINT32_MAX - 3) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "vulkan: weight '%s' (%llu bytes) is too large for 32-bit byte addressing", w.name,
                             static_cast<unsigned long long>(bytes));
      }
      l.bytes = (bytes + 3) / 4 * 4;
      return l;
    }
  }
  return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: weight '%s' has type %s, which the Vulkan backend does not run",
                       w.name, dtype_name(w.dtype));
}

Result<uint32_t> kv_row_words(KvType t, uint32_t kv_dim) {
  if (kv_dim == 0 || kv_dim % 2 || (t == KvType::Q8_0 && kv_dim % kQuantBlock)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: a %s kv cache needs kv_dim (%u) to be a multiple of %d",
                         kv_type_name(t), kv_dim, t == KvType::Q8_0 ? kQuantBlock : 2);
  }
  switch (t) {
    case KvType::F32: return kv_dim;
    case KvType::F16: return kv_dim / 2;
    case KvType::Q8_0: return kv_dim / 4 + (kv_dim / kQuantBlock + 1) / 2;
  }
  return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: kv type %u is unknown", static_cast<unsigned>(t));
}

uint32_t kv_type_code(KvType t) {
  switch (t) {
    case KvType::F32: return 0;
    case KvType::F16: return 1;
    case KvType::Q8_0: return 2;
  }
  return 0;
}

void kv_row_to_host(KvType t, const uint32_t* words, uint32_t kv_dim, uint8_t* out) {
  if (t != KvType::Q8_0) {
    // Little-endian words hold f32 elements, or f16 pairs low half first:
    // the CPU's bytes already.
    std::memcpy(out, words, t == KvType::F32 ? 4ull * kv_dim : 2ull * kv_dim);
    return;
  }
  const uint8_t* quants = reinterpret_cast<const uint8_t*>(words);
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(words + kv_dim / 4);
  BlockQ8_0* blocks = reinterpret_cast<BlockQ8_0*>(out);
  for (uint32_t b = 0; b < kv_dim / kQuantBlock; ++b) {
    blocks[b].scale = scales[b];
    std::memcpy(blocks[b].q, quants + b * kQuantBlock, kQuantBlock);
  }
}

void kv_row_from_host(KvType t, const uint8_t* row, uint32_t kv_dim, uint32_t* words) {
  if (t != KvType::Q8_0) {
    std::memcpy(words, row, t == KvType::F32 ? 4ull * kv_dim : 2ull * kv_dim);
    return;
  }
  const uint32_t blocks = kv_dim / kQuantBlock;
  uint8_t* quants = reinterpret_cast<uint8_t*>(words);
  uint16_t* scales = reinterpret_cast<uint16_t*>(words + kv_dim / 4);
  if (blocks % 2) scales[blocks] = 0;
  const BlockQ8_0* in = reinterpret_cast<const BlockQ8_0*>(row);
  for (uint32_t b = 0; b < blocks; ++b) {
    scales[b] = in[b].scale;
    std::memcpy(quants + b * kQuantBlock, in[b].q, kQuantBlock);
  }
}

Uploader::~Uploader() {
  if (cb_) dev_.api().vkFreeCommandBuffers(dev_.device(), dev_.command_pool(), 1, &cb_);
  destroy_buffer(dev_, &staging_);
}

Result<uint8_t*> Uploader::stage(const Buffer& dst, uint64_t offset, uint64_t max_bytes, uint64_t unit,
                                 uint64_t* got) {
  if (!staging_.buffer) {
    EMBER_ASSIGN_OR_RETURN(staging_, create_buffer(dev_, kStagingBytes, true, "the staging buffer"));
    VkCommandBufferAllocateInfo cai{};
    cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cai.commandPool = dev_.command_pool();
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    EMBER_VK_TRY(dev_.api().vkAllocateCommandBuffers(dev_.device(), &cai, &cb_), "vkAllocateCommandBuffers");
  }
  if (kStagingBytes - used_ < unit) EMBER_TRY(flush());
  const uint64_t room = (kStagingBytes - used_) / unit * unit;
  *got = std::min(room, max_bytes);
  uint8_t* p = static_cast<uint8_t*>(staging_.mapped) + used_;
  // Whole words on both sides: buffers are sized in words (create_buffer)
  // and the tail of a partial word is zeroed.
  const uint64_t copy = (*got + 3) / 4 * 4;
  if (copy != *got) std::memset(p + *got, 0, copy - *got);
  pending_.push_back({dst.buffer, VkBufferCopy{used_, offset, copy}});
  used_ += (copy + 15) / 16 * 16;  // 16-byte aligned staging offsets (kStagingBytes is a multiple)
  return p;
}

Status Uploader::flush() {
  if (pending_.empty()) return Status::ok();
  const VkApi& a = dev_.api();
  EMBER_VK_TRY(a.vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_TRY(a.vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
  // Consecutive copies to one buffer go as one command.
  for (size_t i = 0; i < pending_.size();) {
    size_t j = i + 1;
    while (j < pending_.size() && pending_[j].dst == pending_[i].dst) ++j;
    std::vector<VkBufferCopy> regions;
    regions.reserve(j - i);
    for (size_t k = i; k < j; ++k) regions.push_back(pending_[k].region);
    a.vkCmdCopyBuffer(cb_, staging_.buffer, pending_[i].dst, static_cast<uint32_t>(regions.size()), regions.data());
    i = j;
  }
  // The copies are visible to every later compute and transfer access.
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  a.vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr,
                         0, nullptr);
  EMBER_VK_TRY(a.vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
  pending_.clear();
  used_ = 0;
  ++submits_;
  return dev_.submit_and_wait(cb_);
}

Status Uploader::upload(const void* src, uint64_t bytes, const Buffer& dst, uint64_t offset) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  for (uint64_t done = 0; done < bytes;) {
    uint64_t n = 0;
    EMBER_ASSIGN_OR_RETURN(uint8_t* p, stage(dst, offset + done, bytes - done, 4, &n));
    std::memcpy(p, s + done, n);
    done += n;
  }
  return Status::ok();
}

Status Uploader::upload_weight(const WeightRef& w, const Buffer& dst) {
  // Float types and the raw block types: the bytes as they are.
  if (w.dtype != DType::Q8_0 && w.dtype != DType::Q4_0) {
    if (w.layout == Layout::RowMajor) return upload(w.data, w.size, dst, 0);
    // Other types in Rows16 (Q5_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) go up in row order, row by row
    // (core/layout.h), as the shaders read them.
    uint64_t row_bytes = 0;
    if (!dtype_bytes(w.dtype, static_cast<uint64_t>(w.cols), &row_bytes) || row_bytes * static_cast<uint64_t>(w.rows) != w.size) {
      return Status::error(EMBER_ERR_INTERNAL, "vulkan: weight '%s' (%s, %s) size %llu is not its rows'", w.name,
                           dtype_name(w.dtype), layout_name(w.layout), static_cast<unsigned long long>(w.size));
    }
    std::vector<uint8_t> row(row_bytes);
    for (int64_t r = 0; r < w.rows; ++r) {
      const uint8_t* src = layout_row(w.layout, w.dtype, w.data, w.cols, r, row.data());
      EMBER_TRY(upload(src, row_bytes, dst, static_cast<uint64_t>(r) * row_bytes));
    }
    return Status::ok();
  }
  EMBER_ASSIGN_OR_RETURN(WeightLayout layout, weight_layout(w));
  const bool q8 = w.dtype == DType::Q8_0;
  const uint64_t qbytes = q8 ? 32 : 16;                        // quant bytes per block on the device
  const uint64_t src_block = q8 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
  const uint64_t blocks = layout.scale_word_offset / (qbytes / 4);
  const int64_t row_blocks = w.cols / kQuantBlock;
  uint8_t block[sizeof(BlockQ8_0)];
  // Quants, then scales (f16 widened to f32: exact). The quants follow the
  // 2-byte scale in both block types; a Rows16 weight is read back in row
  // order (core/layout.h).
  for (uint64_t b0 = 0; b0 < blocks;) {
    uint64_t got = 0;
    EMBER_ASSIGN_OR_RETURN(uint8_t* out, stage(dst, b0 * qbytes, (blocks - b0) * qbytes, qbytes, &got));
    const uint64_t nb = got / qbytes;
    for (uint64_t b = 0; b < nb; ++b) {
      if (w.layout == Layout::RowMajor) {
        std::memcpy(out + b * qbytes, w.data + (b0 + b) * src_block + 2, qbytes);
      } else {
        layout_block(w.layout, w.dtype, w.data, w.cols, (b0 + b) / row_blocks, (b0 + b) % row_blocks, block);
        std::memcpy(out + b * qbytes, block + 2, qbytes);
      }
    }
    b0 += nb;
  }
  for (uint64_t b0 = 0; b0 < blocks;) {
    uint64_t got = 0;
    EMBER_ASSIGN_OR_RETURN(uint8_t* bytes,
                           stage(dst, (static_cast<uint64_t>(layout.scale_word_offset) + b0) * 4, (blocks - b0) * 4, 4,
                                 &got));
    const uint64_t nb = got / 4;
    for (uint64_t b = 0; b < nb; ++b) {
      uint16_t h;
      if (w.layout == Layout::RowMajor) {
        std::memcpy(&h, w.data + (b0 + b) * src_block, 2);
      } else {
        layout_block(w.layout, w.dtype, w.data, w.cols, (b0 + b) / row_blocks, (b0 + b) % row_blocks, block);
        std::memcpy(&h, block, 2);
      }
      const float f = f16_to_f32(h);
      std::memcpy(bytes + b * 4, &f, 4);
    }
    b0 += nb;
  }
  return Status::ok();
}

}  // namespace ember::vk

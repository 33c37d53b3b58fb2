// Compute pipelines: one descriptor-set layout (eight storage buffers, see
// shaders/common.glsl), one pipeline layout (64 bytes of push constants),
// a pipeline cache, and a pipeline per embedded SPIR-V module, built on
// first use at prepare (never during a step).
#pragma once

#include <string>
#include <vector>

#include "backends/vulkan/device.h"
#include "format/dtype.h"

namespace ember::vk {

constexpr uint32_t kBindings = 8;
constexpr uint32_t kPushWords = 16;

class Pipelines {
 public:
  explicit Pipelines(Device& dev) : dev_(dev) {}
  ~Pipelines();
  Status init();
  // The pipeline for shader `name` ("rmsnorm", "matmul_q4_0", ...).
  Result<VkPipeline> get(const std::string& name);
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }

 private:
  Device& dev_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::vector<std::pair<std::string, VkPipeline>> pipelines_;
};

// "f32", "f16", "bf16", "q8_0", "q4_0": the suffix of the weight-reading
// shaders for a dtype.
const char* shader_suffix(DType t);

}  // namespace ember::vk

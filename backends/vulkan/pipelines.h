// Compute pipelines: one descriptor-set layout (eight storage buffers, see
// shaders/common.glsl), one pipeline layout (64 bytes of push constants),
// a pipeline cache (kept on disk: pipeline_cache.h), and a pipeline per
// embedded SPIR-V module, built on first use at prepare (never during a step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/vulkan/device.h"
#include "backends/vulkan/pipeline_cache.h"
#include "core/dtype.h"

namespace ember::vk {

constexpr uint32_t kBindings = 8;
constexpr uint32_t kPushWords = 16;

// How matmul and rmsnorm sum across a workgroup, chosen once per device from
// the capability probe. Each shader is built both ways (NAME__shared and
// NAME__subgroup in the embedded SPIR-V).
enum class Reduce : uint8_t {
  Shared,    // a shared-memory tree with a barrier per level: Vulkan 1.0, any device
  Subgroup,  // subgroupAdd, then one shared-memory pass over the subgroups'
             // sums: needs DeviceCaps::subgroup_arithmetic
};

struct ShaderChoice {
  Reduce reduce = Reduce::Shared;
  std::string why;  // for describe(): "subgroupAdd", "portable: no subgroup arithmetic", ...
};

// Subgroup where the device has it, unless `force_portable` or the
// environment variable EMBER_VULKAN_PORTABLE=1 asks for the portable shaders.
ShaderChoice choose_shaders(const DeviceCaps& caps, bool force_portable);

class Pipelines {
 public:
  Pipelines(Device& dev, const ShaderChoice& choice, const PipelineCacheOptions& cache)
      : dev_(dev), choice_(choice), cache_(dev, cache) {}
  ~Pipelines();
  Status init();
  // The pipeline for shader `name` ("rope", "matmul_q4_0__shared", ...).
  Result<VkPipeline> get(const std::string& name);
  // The chosen variant of a reducing shader: `base` + "__shared" or "__subgroup".
  Result<VkPipeline> get_reducing(const std::string& base);
  const ShaderChoice& choice() const { return choice_; }
  // Saves the pipeline cache when pipelines were built since it was loaded.
  void save_cache() { cache_.save(); }
  const PipelineCache& cache() const { return cache_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }

 private:
  Device& dev_;
  ShaderChoice choice_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  PipelineCache cache_;
  std::vector<std::pair<std::string, VkPipeline>> pipelines_;
};

// "f32", "f16", ..., "q4_k", "iq4_xs" (dtype_name): the suffix of the
// weight-reading shaders for a dtype; every DType has its embed_ and matmul_
// shaders (one source each, built per type: shaders/weights.glsl).
const char* shader_suffix(DType t);

}  // namespace ember::vk

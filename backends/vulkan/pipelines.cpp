#include "backends/vulkan/pipelines.h"

#include <cstdlib>
#include <cstring>

#include "backends/vulkan/shader_blobs.h"

namespace ember::vk {

const char* shader_suffix(DType t) { return dtype_name(t); }

ShaderChoice choose_shaders(const DeviceCaps& caps, bool force_portable) {
  ShaderChoice c;
  const char* env = std::getenv("EMBER_VULKAN_PORTABLE");
  if (env && std::strcmp(env, "1") == 0) {
    c.why = "portable (EMBER_VULKAN_PORTABLE=1)";
  } else if (force_portable) {
    c.why = "portable (asked for)";
  } else if (!caps.subgroup_arithmetic) {
    c.why = "portable (no subgroup arithmetic in compute)";
  } else {
    c.reduce = Reduce::Subgroup;
    c.why = "subgroupAdd";
  }
  return c;
}

Result<VkPipeline> Pipelines::get_reducing(const std::string& base) {
  return get(base + (choice_.reduce == Reduce::Subgroup ? "__subgroup" : "__shared"));
}

Pipelines::~Pipelines() {
  const VkApi& a = dev_.api();
  for (auto& p : pipelines_) a.vkDestroyPipeline(dev_.device(), p.second, nullptr);
  if (layout_) a.vkDestroyPipelineLayout(dev_.device(), layout_, nullptr);
  if (set_layout_) a.vkDestroyDescriptorSetLayout(dev_.device(), set_layout_, nullptr);
}

Status Pipelines::init() {
  const VkApi& a = dev_.api();
  VkDescriptorSetLayoutBinding bindings[kBindings];
  for (uint32_t i = 0; i < kBindings; ++i) {
    bindings[i] = {};
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{};
  dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dl.bindingCount = kBindings;
  dl.pBindings = bindings;
  EMBER_VK_TRY(a.vkCreateDescriptorSetLayout(dev_.device(), &dl, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushWords * 4};
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout_;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  EMBER_VK_TRY(a.vkCreatePipelineLayout(dev_.device(), &pl, nullptr, &layout_), "vkCreatePipelineLayout");
  return cache_.init();
}

Result<VkPipeline> Pipelines::get(const std::string& name) {
  for (auto& p : pipelines_) {
    if (p.first == name) return p.second;
  }
  const ShaderBlob* blob = find_shader(name.c_str());
  if (!blob) return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: no shader named '%s' is built in", name.c_str());
  const VkApi& a = dev_.api();
  VkShaderModuleCreateInfo smi{};
  smi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  smi.codeSize = blob->size;
  smi.pCode = reinterpret_cast<const uint32_t*>(blob->code);
  VkShaderModule module = VK_NULL_HANDLE;
  EMBER_VK_TRY(a.vkCreateShaderModule(dev_.device(), &smi, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkResult r = a.vkCreateComputePipelines(dev_.device(), cache_.handle(), 1, &ci, nullptr, &pipeline);
  a.vkDestroyShaderModule(dev_.device(), module, nullptr);
  if (r != VK_SUCCESS) return vk_status(r, ("vkCreateComputePipelines(" + name + ")").c_str());
  pipelines_.emplace_back(name, pipeline);
  return pipeline;
}

}  // namespace ember::vk

// libvulkan.so.1 loaded at run time (dlopen), so that libember runs on hosts
// without Vulkan: the only link-time dependency is libdl. Every Vulkan entry
// point the backend calls is a member of VkApi, filled from
// vkGetInstanceProcAddr once an instance exists.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan_core.h>

#include "core/status.h"

namespace ember::vk {

// X-macro lists: global (no instance), then instance and device functions.
#define EMBER_VK_GLOBAL_FUNCS(X) \
  X(vkCreateInstance)            \
  X(vkEnumerateInstanceVersion)

#define EMBER_VK_INSTANCE_FUNCS(X)            \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures)              \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkDestroyDevice)                          \
  X(vkGetDeviceQueue)                         \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreatePipelineCache)                    \
  X(vkDestroyPipelineCache)                   \
  X(vkGetPipelineCacheData)                   \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkAllocateDescriptorSets)                 \
  X(vkUpdateDescriptorSets)                   \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkFreeCommandBuffers)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkResetCommandBuffer)                     \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdPushConstants)                       \
  X(vkCmdDispatch)                            \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdCopyBuffer)                          \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkResetFences)                            \
  X(vkWaitForFences)                          \
  X(vkQueueSubmit)                            \
  X(vkDeviceWaitIdle)

struct VkApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define EMBER_VK_MEMBER(name) PFN_##name name = nullptr;
  EMBER_VK_GLOBAL_FUNCS(EMBER_VK_MEMBER)
  EMBER_VK_INSTANCE_FUNCS(EMBER_VK_MEMBER)
#undef EMBER_VK_MEMBER
};

// The process-wide loader: dlopens libvulkan.so.1 on first use and resolves
// the global functions. EMBER_ERR_UNSUPPORTED when no Vulkan loader exists.
// The returned table is a copy the caller completes with load_instance().
Result<VkApi> load_vulkan();

// Resolves the instance and device functions for `instance`.
// EMBER_ERR_UNSUPPORTED names the first function the driver lacks (the
// optional *2 queries may stay null on a Vulkan 1.0 instance).
Status load_instance(VkApi* api, VkInstance instance);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" ...
const char* vk_result_name(VkResult r);

// VkResult to Status at the call site: out-of-memory results become
// EMBER_ERR_NO_MEMORY, everything else (device lost, ...) EMBER_ERR_BACKEND.
Status vk_status(VkResult r, const char* what);

}  // namespace ember::vk

// Evaluates a Vulkan call and returns its failure as a Status.
#define EMBER_VK_TRY(call, what)                                 \
  do {                                                           \
    VkResult ember_vk_r_ = (call);                               \
    if (ember_vk_r_ != VK_SUCCESS) return ::ember::vk::vk_status(ember_vk_r_, what); \
  } while (0)

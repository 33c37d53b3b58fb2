#include "backends/vulkan/loader.h"

#include <dlfcn.h>

namespace ember::vk {

Result<VkApi> load_vulkan() {
  // Loaded once per process and never closed: drivers keep threads and
  // atexit handlers that must not outlive their code.
  static void* handle = [] {
    void* h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    return h;
  }();
  if (!handle) return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: libvulkan.so.1 is not installed (%s)", dlerror());
  VkApi api;
  api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
  if (!api.vkGetInstanceProcAddr) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: libvulkan.so.1 has no vkGetInstanceProcAddr");
  }
#define EMBER_VK_LOAD(name) \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  EMBER_VK_GLOBAL_FUNCS(EMBER_VK_LOAD)
#undef EMBER_VK_LOAD
  if (!api.vkCreateInstance) return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: loader lacks vkCreateInstance");
  return api;
}

Status load_instance(VkApi* api, VkInstance instance) {
#define EMBER_VK_LOAD(name) \
  api->name = reinterpret_cast<PFN_##name>(api->vkGetInstanceProcAddr(instance, #name));
  EMBER_VK_INSTANCE_FUNCS(EMBER_VK_LOAD)
#undef EMBER_VK_LOAD
#define EMBER_VK_CHECK(name)                                                                  \
  if (!api->name && std::string(#name) != "vkGetPhysicalDeviceProperties2" &&                 \
      std::string(#name) != "vkGetPhysicalDeviceFeatures2") {                                 \
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: the driver does not provide %s", #name); \
  }
  EMBER_VK_INSTANCE_FUNCS(EMBER_VK_CHECK)
#undef EMBER_VK_CHECK
  return Status::ok();
}

const char* vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
  }
}

Status vk_status(VkResult r, const char* what) {
  const ember_status code = (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ||
                             r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL)
                                ? EMBER_ERR_NO_MEMORY
                                : EMBER_ERR_BACKEND;
  return Status::error(code, "vulkan: %s failed: %s (%d)", what, vk_result_name(r), static_cast<int>(r));
}

}  // namespace ember::vk

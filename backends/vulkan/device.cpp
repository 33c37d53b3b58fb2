#include "backends/vulkan/device.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ember::vk {
namespace {

// The backend's hard requirements (see pipelines.h: 8 storage buffers per
// set, 64 bytes of push constants; attention keeps 2 x 256 floats shared).
constexpr uint32_t kNeedStorageBuffers = 8;
constexpr uint32_t kNeedPushConstants = 64;
constexpr uint32_t kNeedSharedBytes = 8 * 1024;

std::atomic<uint64_t> g_logical_devices{0};

DeviceCaps probe(const VkApi& api, VkPhysicalDevice pd) {
  DeviceCaps caps;
  VkPhysicalDeviceProperties props;
  api.vkGetPhysicalDeviceProperties(pd, &props);
  caps.name = props.deviceName;
  caps.type = props.deviceType;
  caps.api_version = props.apiVersion;
  caps.max_shared_bytes = props.limits.maxComputeSharedMemorySize;
  caps.max_storage_range = props.limits.maxStorageBufferRange;
  caps.max_storage_buffers = props.limits.maxPerStageDescriptorStorageBuffers;
  caps.max_push_constants = props.limits.maxPushConstantsSize;
  caps.max_group_count_x = props.limits.maxComputeWorkGroupCount[0];
  caps.vendor_id = props.vendorID;
  caps.device_id = props.deviceID;
  caps.driver_version = props.driverVersion;
  std::memcpy(caps.pipeline_cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);

  if (props.apiVersion >= VK_API_VERSION_1_1 && api.vkGetPhysicalDeviceProperties2 &&
      api.vkGetPhysicalDeviceFeatures2) {
    VkPhysicalDeviceSubgroupProperties sub{};
    sub.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &sub;
    api.vkGetPhysicalDeviceProperties2(pd, &p2);
    caps.subgroup_size = sub.subgroupSize;
    caps.subgroup_arithmetic = (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                               (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);

    VkPhysicalDeviceFeatures2 f2{};
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    VkPhysicalDevice16BitStorageFeatures s16{};
    s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    f2.pNext = &s16;
    VkPhysicalDeviceVulkan12Features v12{};
    v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceVulkan13Features v13{};
    v13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
    if (props.apiVersion >= VK_API_VERSION_1_2) {
      s16.pNext = &v12;
      if (props.apiVersion >= VK_API_VERSION_1_3) v12.pNext = &v13;
    }
    api.vkGetPhysicalDeviceFeatures2(pd, &f2);
    caps.fp16_storage = s16.storageBuffer16BitAccess;
    caps.fp16_arithmetic = v12.shaderFloat16;
    caps.int8_storage = v12.storageBuffer8BitAccess;
    caps.int8_arithmetic = v12.shaderInt8;
    caps.int_dot = v13.shaderIntegerDotProduct;
  }

  VkPhysicalDeviceMemoryProperties mem;
  api.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
      if (mem.memoryHeaps[i].size > caps.device_local_bytes) caps.device_local_bytes = mem.memoryHeaps[i].size;
    }
  }
  return caps;
}

// Empty when the device has what the backend needs, else what it lacks.
std::string missing_capability(const DeviceCaps& c) {
  char buf[160];
  if (c.max_storage_buffers < kNeedStorageBuffers) {
    std::snprintf(buf, sizeof buf, "%u storage buffers per stage (needs %u)", c.max_storage_buffers,
                  kNeedStorageBuffers);
    return buf;
  }
  if (c.max_push_constants < kNeedPushConstants) {
    std::snprintf(buf, sizeof buf, "%u bytes of push constants (needs %u)", c.max_push_constants, kNeedPushConstants);
    return buf;
  }
  if (c.max_shared_bytes < kNeedSharedBytes) {
    std::snprintf(buf, sizeof buf, "%u bytes of shared memory (needs %u)", c.max_shared_bytes, kNeedSharedBytes);
    return buf;
  }
  return "";
}

// Empty when the backend can use `pd` (a CPU device included), else why not;
// *family receives its compute queue family.
std::string unusable_reason(const VkApi& a, VkPhysicalDevice pd, const DeviceCaps& caps, uint32_t* family) {
  const std::string missing = missing_capability(caps);
  if (!missing.empty()) return "has only " + missing;
  uint32_t families = 0;
  a.vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, nullptr);
  std::vector<VkQueueFamilyProperties> qf(families);
  a.vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, qf.data());
  for (uint32_t i = 0; i < families; ++i) {
    if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      *family = i;
      return "";
    }
  }
  return "no compute queue";
}

// An instance for `api` (Vulkan 1.3, 1.1 or 1.0: the newest the loader has)
// with its instance functions loaded; *version receives the version asked.
Status create_instance(VkApi* api, VkInstance* instance, uint32_t* version) {
  uint32_t instance_version = VK_API_VERSION_1_0;
  if (api->vkEnumerateInstanceVersion) api->vkEnumerateInstanceVersion(&instance_version);
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "ember";
  app.pEngineName = "ember";
  app.apiVersion = instance_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3
                   : instance_version >= VK_API_VERSION_1_1 ? VK_API_VERSION_1_1
                                                             : VK_API_VERSION_1_0;
  *version = app.apiVersion;
  VkInstanceCreateInfo ici{};
  ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ici.pApplicationInfo = &app;
  VkResult r = api->vkCreateInstance(&ici, nullptr, instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: no compatible driver is installed");
  }
  EMBER_VK_TRY(r, "vkCreateInstance");
  return load_instance(api, *instance);
}

Result<std::vector<VkPhysicalDevice>> physical_devices(const VkApi& a, VkInstance instance) {
  uint32_t count = 0;
  EMBER_VK_TRY(a.vkEnumeratePhysicalDevices(instance, &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  if (count) {
    VkResult r = a.vkEnumeratePhysicalDevices(instance, &count, devices.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_status(r, "vkEnumeratePhysicalDevices");
    devices.resize(count);
  }
  return devices;
}

DeviceProbe run_probe() {
  DeviceProbe p;
  Result<VkApi> api = load_vulkan();
  if (!api.is_ok()) {
    p.status = api.status();
    return p;
  }
  VkApi a = api.value();
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t version = 0;
  p.status = create_instance(&a, &instance, &version);
  if (p.status.is_ok()) {
    Result<std::vector<VkPhysicalDevice>> devices = physical_devices(a, instance);
    if (!devices.is_ok()) p.status = devices.status();
    for (VkPhysicalDevice pd : devices.is_ok() ? devices.value() : std::vector<VkPhysicalDevice>()) {
      ProbedDevice d;
      d.caps = probe(a, pd);
      if (version < VK_API_VERSION_1_1) d.caps.subgroup_arithmetic = false;
      uint32_t family = 0;
      d.unusable = unusable_reason(a, pd, d.caps, &family);
      p.devices.push_back(std::move(d));
    }
  }
  if (instance && a.vkDestroyInstance) a.vkDestroyInstance(instance, nullptr);
  return p;
}

}  // namespace

int device_type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
  }
}

bool env_allows_cpu() {
  const char* v = std::getenv("EMBER_VULKAN_ALLOW_CPU");
  return v && std::strcmp(v, "1") == 0;
}

const DeviceProbe& probe_devices() {
  static const DeviceProbe probe = run_probe();  // a magic static: once, thread-safe
  return probe;
}

uint64_t logical_devices_created() { return g_logical_devices.load(); }

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

Result<std::unique_ptr<Device>> Device::create(const DeviceOptions& options) {
  EMBER_ASSIGN_OR_RETURN(VkApi api, load_vulkan());
  auto dev = std::unique_ptr<Device>(new Device());
  dev->api_ = api;
  uint32_t version = 0;
  EMBER_TRY(create_instance(&dev->api_, &dev->instance_, &version));
  const VkApi& a = dev->api_;
  EMBER_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> devices, physical_devices(a, dev->instance_));
  const bool allow_cpu = options.allow_cpu || env_allows_cpu();
  int best_rank = 0;
  std::string refused;
  for (VkPhysicalDevice pd : devices) {
    DeviceCaps caps = probe(a, pd);
    int rank = device_type_rank(caps.type);
    if (caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && !allow_cpu) {
      refused += " " + caps.name + " (a CPU device; set EMBER_VULKAN_ALLOW_CPU=1 to use it)";
      continue;
    }
    uint32_t family = 0;
    const std::string why = unusable_reason(a, pd, caps, &family);
    if (!why.empty()) {
      refused += " " + caps.name + " (" + why + ")";
      continue;
    }
    if (rank > best_rank) {
      best_rank = rank;
      dev->physical_ = pd;
      dev->caps_ = caps;
      dev->queue_family_ = family;
    }
  }
  // SPIR-V 1.3 (the subgroup shaders) needs Vulkan 1.1 of the instance too.
  if (version < VK_API_VERSION_1_1) dev->caps_.subgroup_arithmetic = false;
  if (!dev->physical_) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: no usable device among %zu:%s", devices.size(),
                         refused.empty() ? " none found" : refused.c_str());
  }
  a.vkGetPhysicalDeviceMemoryProperties(dev->physical_, &dev->mem_props_);
  VkPhysicalDeviceProperties props;
  a.vkGetPhysicalDeviceProperties(dev->physical_, &props);
  dev->min_storage_align_ = static_cast<uint32_t>(props.limits.minStorageBufferOffsetAlignment);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = dev->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  EMBER_VK_TRY(a.vkCreateDevice(dev->physical_, &dci, nullptr, &dev->device_), "vkCreateDevice");
  g_logical_devices.fetch_add(1);
  a.vkGetDeviceQueue(dev->device_, dev->queue_family_, 0, &dev->queue_);

  VkCommandPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = dev->queue_family_;
  EMBER_VK_TRY(a.vkCreateCommandPool(dev->device_, &pci, nullptr, &dev->pool_), "vkCreateCommandPool");
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  EMBER_VK_TRY(a.vkCreateFence(dev->device_, &fci, nullptr, &dev->fence_), "vkCreateFence");
  return dev;
}

Device::~Device() {
  if (device_) {
    api_.vkDeviceWaitIdle(device_);
    if (fence_) api_.vkDestroyFence(device_, fence_, nullptr);
    if (pool_) api_.vkDestroyCommandPool(device_, pool_, nullptr);
    api_.vkDestroyDevice(device_, nullptr);
  }
  if (instance_) api_.vkDestroyInstance(instance_, nullptr);
}

Status Device::submit_and_wait(VkCommandBuffer cb) {
  if (lost_) return Status::error(EMBER_ERR_BACKEND, "vulkan: the device was lost earlier; close the session");
  EMBER_VK_TRY(api_.vkResetFences(device_, 1, &fence_), "vkResetFences");
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  VkResult r = api_.vkQueueSubmit(queue_, 1, &si, fence_);
  if (r == VK_SUCCESS) {
    // Ten minutes: a step that takes longer is treated as a hung device.
    r = api_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, 600ull * 1000 * 1000 * 1000);
  }
  if (r == VK_ERROR_DEVICE_LOST || r == VK_TIMEOUT) lost_ = true;
  if (r == VK_TIMEOUT) return Status::error(EMBER_ERR_BACKEND, "vulkan: a step did not finish in 600 s");
  if (r != VK_SUCCESS) return vk_status(r, "vkQueueSubmit");
  return Status::ok();
}

}  // namespace ember::vk

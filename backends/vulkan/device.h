// The Vulkan device: instance, the chosen physical device, its capabilities,
// one compute queue, a command pool and a fence. One Device per backend
// (per session); everything else in backends/vulkan/ borrows it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/loader.h"

namespace ember::vk {

// What the capability probe found. The backend needs only Vulkan 1.0 compute
// (weights are repacked into 32-bit words and f16 is packed with
// packHalf2x16, so no 8/16-bit storage feature is required); the optional
// features are reported by describe(); subgroup arithmetic selects the
// "subgroup" reduction shaders (pipelines.h), the others are recorded for
// future variants (integer dot product for Q8_0, fp16 arithmetic).
struct DeviceCaps {
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
  bool fp16_storage = false;     // storageBuffer16BitAccess
  bool fp16_arithmetic = false;  // shaderFloat16
  bool int8_storage = false;     // storageBuffer8BitAccess
  bool int8_arithmetic = false;  // shaderInt8
  bool int_dot = false;          // shaderIntegerDotProduct (1.3)
  uint32_t subgroup_size = 0;    // 0 when the device predates Vulkan 1.1
  // subgroupAdd & co. usable in compute shaders: the device supports the
  // arithmetic subgroup operations in the compute stage and both it and the
  // instance are Vulkan 1.1 or later (pipelines.h: the "subgroup" shaders).
  bool subgroup_arithmetic = false;
  uint32_t max_shared_bytes = 0;
  uint64_t max_storage_range = 0;     // largest storage buffer binding
  uint32_t max_storage_buffers = 0;   // per shader stage
  uint32_t max_push_constants = 0;
  uint32_t max_group_count_x = 0;
  uint64_t device_local_bytes = 0;    // the largest device-local heap
  // What a pipeline cache is valid for (pipeline_cache.h).
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};
};

const char* device_type_name(VkPhysicalDeviceType type);

struct DeviceOptions {
  // Accept a CPU implementation (Mesa lavapipe). Also enabled by the
  // environment variable EMBER_VULKAN_ALLOW_CPU=1.
  bool allow_cpu = false;
};

// One physical device as the probe saw it: its capabilities and, when the
// backend cannot use it, why (empty when usable; a CPU device is usable
// here, whether it is allowed is the caller's decision).
struct ProbedDevice {
  DeviceCaps caps;
  std::string unusable;
};

struct DeviceProbe {
  Status status;  // EMBER_ERR_UNSUPPORTED: no loader or no driver
  std::vector<ProbedDevice> devices;
};

// Every physical device, found once per process (thread-safe) with a
// temporary instance: loads Vulkan, enumerates and probes the devices, then
// destroys the instance. Creates no logical device and allocates no memory.
const DeviceProbe& probe_devices();

// Rank of a device type for choosing: discrete > integrated > virtual > cpu.
int device_type_rank(VkPhysicalDeviceType type);

// Whether EMBER_VULKAN_ALLOW_CPU=1 is set.
bool env_allows_cpu();

// Logical devices Device::create has made in this process (a test hook:
// planning must make none).
uint64_t logical_devices_created();

class Device {
 public:
  // Loads Vulkan, picks discrete > integrated > virtual > CPU (CPU only when
  // allowed), probes it and checks what the backend needs.
  // EMBER_ERR_UNSUPPORTED: no loader, no device, or a device lacking a
  // required capability (the message names it); EMBER_ERR_BACKEND or
  // EMBER_ERR_NO_MEMORY when creating the device fails.
  static Result<std::unique_ptr<Device>> create(const DeviceOptions& options);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const VkApi& api() const { return api_; }
  VkDevice device() const { return device_; }
  const DeviceCaps& caps() const { return caps_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return mem_props_; }
  uint32_t min_storage_offset_alignment() const { return min_storage_align_; }
  VkCommandPool command_pool() const { return pool_; }

  // Submits one command buffer and waits for it. A lost device makes every
  // later call fail with EMBER_ERR_BACKEND (the session must be closed or
  // moved to the CPU).
  Status submit_and_wait(VkCommandBuffer cb);
  bool lost() const { return lost_; }

 private:
  Device() = default;
  VkApi api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties mem_props_{};
  uint32_t min_storage_align_ = 256;
  DeviceCaps caps_;
  bool lost_ = false;
};

}  // namespace ember::vk

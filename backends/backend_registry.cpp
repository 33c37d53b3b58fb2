// The explicit registry (STYLE.md: one table guarded by build options, no
// self-registration): the backends built into this library, each with its
// capabilities, planning queries and factory. What the runtime does with
// the table (lookups, the capability check, `auto`) is runtime/backend/.
#include "backend/backend.h"
#include "backends/cpu/cpu_backend.h"
#if EMBER_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ember {
namespace {

uint64_t none(const Graph&, const BackendOptions&) { return 0; }

// Every DType (core/dtype.h): both backends read them all.
constexpr uint32_t every_dtype() { return (1u << kDTypeCount) - 1; }
constexpr uint32_t every_kv_type() {
  return kv_type_bit(KvType::F32) | kv_type_bit(KvType::F16) | kv_type_bit(KvType::Q8_0);
}

Result<std::unique_ptr<Backend>> create_cpu(const BackendOptions& options) {
  return std::unique_ptr<Backend>(new CpuBackend(options.cpu));
}

#if EMBER_VULKAN
Result<std::unique_ptr<Backend>> create_vulkan(const BackendOptions& options) {
  // Fails with EMBER_ERR_UNSUPPORTED when no usable device exists.
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<VulkanBackend> vk, VulkanBackend::create(options.vulkan));
  return std::unique_ptr<Backend>(std::move(vk));
}
#endif

std::vector<BackendEntry> make_entries() {
  std::vector<BackendEntry> e;
  // The cpu keeps KV cache and activations in the host arena and reads the
  // weights in place; its resident copies are XNNPACK's packed weights, where
  // that provider runs (backends/cpu/kernel_providers.h). No device memory.
  BackendCaps cpu;
  cpu.sliding_window_rings = true;
  cpu.batched_sequences = true;
  cpu.kv_types = every_kv_type();
  cpu.weight_types = every_dtype();
  e.push_back({"cpu", BackendKind::Cpu, cpu, cpu_probe, cpu_supports, cpu_scratch_bytes, cpu_resident_weight_bytes,
               none, create_cpu});
#if EMBER_VULKAN
  // Everything lives in device memory; the host arena holds nothing of it.
  // Every layer keeps the whole context (no rings); each sequence its own.
  BackendCaps vulkan;
  vulkan.batched_sequences = true;
  vulkan.kv_types = every_kv_type();
  vulkan.weight_types = every_dtype();
  e.push_back({"vulkan", BackendKind::Vulkan, vulkan, vulkan_probe, vulkan_supports, none, none, vulkan_device_bytes,
               create_vulkan});
#endif
  return e;
}

}  // namespace

const std::vector<BackendEntry>& backend_entries() {
  static const std::vector<BackendEntry> entries = make_entries();
  return entries;
}

}  // namespace ember

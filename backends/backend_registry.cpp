#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#if EMBER_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ember {

Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options) {
  switch (kind) {
    case BackendKind::Cpu:
      return std::unique_ptr<Backend>(new CpuBackend(options));
    case BackendKind::Vulkan: {
#if EMBER_VULKAN
      // Fails with EMBER_ERR_UNSUPPORTED when no usable device exists; the
      // caller falls back to the CPU.
      VulkanOptions vo;
      vo.pipeline_cache = options.vulkan_pipeline_cache;
      vo.pipeline_cache_dir = options.vulkan_pipeline_cache_dir;
      EMBER_ASSIGN_OR_RETURN(std::unique_ptr<VulkanBackend> vk, VulkanBackend::create(options, vo));
      return std::unique_ptr<Backend>(std::move(vk));
#else
      break;
#endif
    }
  }
  return Status::error(EMBER_ERR_UNSUPPORTED, "the %s backend is not built into this library",
                       kind == BackendKind::Vulkan ? "vulkan" : "requested");
}

}  // namespace ember

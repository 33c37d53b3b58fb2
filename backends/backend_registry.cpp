// The explicit registry (STYLE.md: one table guarded by build options, no
// self-registration) and the `auto` chooser.
#include <cstdio>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#if EMBER_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ember {
namespace {

uint64_t none(const Graph&, const BackendOptions&) { return 0; }

Result<std::unique_ptr<Backend>> create_cpu(const BackendOptions& options) {
  return std::unique_ptr<Backend>(new CpuBackend(options));
}

#if EMBER_VULKAN
Result<std::unique_ptr<Backend>> create_vulkan(const BackendOptions& options) {
  // Fails with EMBER_ERR_UNSUPPORTED when no usable device exists.
  VulkanOptions vo;
  vo.pipeline_cache = options.vulkan_pipeline_cache;
  vo.pipeline_cache_dir = options.vulkan_pipeline_cache_dir;
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<VulkanBackend> vk, VulkanBackend::create(options, vo));
  return std::unique_ptr<Backend>(std::move(vk));
}
#endif

std::vector<BackendEntry> make_entries() {
  std::vector<BackendEntry> e;
  // The cpu keeps KV cache and activations in the host arena and reads the
  // weights in place; its resident copies are XNNPACK's packed weights, where
  // that provider runs (backends/cpu/kernel_providers.h). No device memory.
  e.push_back({"cpu", BackendKind::Cpu, cpu_probe, cpu_supports, cpu_scratch_bytes, cpu_resident_weight_bytes, none,
               create_cpu});
#if EMBER_VULKAN
  // Everything lives in device memory; the host arena holds nothing of it.
  e.push_back({"vulkan", BackendKind::Vulkan, vulkan_probe, vulkan_supports, none, none, vulkan_device_bytes,
               create_vulkan});
#endif
  return e;
}

}  // namespace

const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::Cpu: return "cpu";
    case DeviceType::IntegratedGpu: return "integrated gpu";
    case DeviceType::DiscreteGpu: return "discrete gpu";
    case DeviceType::Virtual: return "virtual";
    case DeviceType::Other: break;
  }
  return "other";
}

const std::vector<BackendEntry>& backend_entries() {
  static const std::vector<BackendEntry> entries = make_entries();
  return entries;
}

const BackendEntry* find_backend(BackendKind kind) {
  for (const BackendEntry& e : backend_entries()) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options) {
  const BackendEntry* e = find_backend(kind);
  if (!e) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "the %s backend is not built into this library",
                         kind == BackendKind::Vulkan ? "vulkan" : "requested");
  }
  return e->create(options);
}

uint64_t auto_memory_margin(uint64_t device_bytes) {
  constexpr uint64_t kMinMargin = 256ull << 20;
  const uint64_t eighth = device_bytes / 8;
  return eighth > kMinMargin ? eighth : kMinMargin;
}

AutoChoice choose_auto(const std::vector<AutoCandidate>& candidates) {
  AutoChoice choice;
  std::string why;
  auto passed_over = [&why](const AutoCandidate& c, const std::string& reason) {
    why += (why.empty() ? "" : "; ") + std::string(c.name) + ": " + reason;
  };
  bool any_gpu_backend = false;
  for (const AutoCandidate& c : candidates) {
    if (c.kind == BackendKind::Cpu) continue;
    any_gpu_backend = true;
    const DeviceInfo& d = c.device;
    const bool is_gpu = d.type == DeviceType::DiscreteGpu || d.type == DeviceType::IntegratedGpu;
    if (!d.available && (is_gpu || d.name.empty())) {
      passed_over(c, "no usable device (" + d.reason + ")");
    } else if (!is_gpu) {
      // Named first: a cpu device is passed over whether or not it is allowed.
      passed_over(c, "the device " + d.name + " is a " + device_type_name(d.type) + " device, not a GPU");
    } else if (!c.supported.is_ok()) {
      passed_over(c, "does not run this model (" + c.supported.message() + ")");
    } else if (d.memory_bytes < c.device_bytes || d.memory_bytes - c.device_bytes < auto_memory_margin(c.device_bytes)) {
      char buf[192];
      std::snprintf(buf, sizeof buf, "%s has %.2f GiB; the session needs %.2f GiB + %.2f GiB margin", d.name.c_str(),
                    static_cast<double>(d.memory_bytes) / (1ull << 30),
                    static_cast<double>(c.device_bytes) / (1ull << 30),
                    static_cast<double>(auto_memory_margin(c.device_bytes)) / (1ull << 30));
      passed_over(c, buf);
    } else {
      choice.kind = c.kind;
      return choice;
    }
  }
  if (!any_gpu_backend) why = "no GPU backend is built into this library";
  choice.note = "auto: " + why + "; using the cpu backend";
  return choice;
}

Status Backend::remove_seq_positions(int32_t seq, int32_t start, int32_t end, int32_t n_pos) {
  if (seq == 0) return remove_positions(start, end, n_pos);
  return Status::error(EMBER_ERR_UNSUPPORTED, "%s: the backend holds one sequence (asked for sequence %d)", name(),
                       seq);
}

Status Backend::copy_seq(int32_t src, int32_t dst, int32_t, int32_t) {
  return Status::error(EMBER_ERR_UNSUPPORTED, "%s: the backend cannot copy sequence %d to %d", name(), src, dst);
}

Status Backend::read_kv(int32_t, bool, int32_t, uint8_t*) {
  return Status::error(EMBER_ERR_UNSUPPORTED, "the %s backend cannot read its KV cache out (saved sessions)", name());
}

Status Backend::write_kv(int32_t, bool, int32_t, const uint8_t*) {
  return Status::error(EMBER_ERR_UNSUPPORTED, "the %s backend cannot write its KV cache (saved sessions)", name());
}

}  // namespace ember

// `ember backends`: every backend built into this binary, from the registry
// (backends/backend.h), with what its probe found: the device type, name and
// memory, or why it is unavailable. Probing opens no device.
#include <cstdio>
#include <string>

#include "backends/backend.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {

int cmd_backends(int argc, char** argv) {
  Args args(argc, argv, {});
  args.check_known({});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  std::printf("%-8s %-11s %-14s %10s  %s\n", "backend", "state", "device type", "memory", "device / why not");
  for (const BackendEntry& e : backend_entries()) {
    const DeviceInfo d = e.probe();
    char memory[32] = "-";
    if (d.memory_bytes) std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(d.memory_bytes) / (1ull << 30));
    std::string device = d.name.empty() ? "-" : d.name;
    if (!d.available) device = d.name.empty() ? d.reason : d.name + " (" + d.reason + ")";
    std::printf("%-8s %-11s %-14s %10s  %s\n", e.name, d.available ? "available" : "unavailable",
                d.name.empty() && !d.available ? "-" : device_type_name(d.type), memory, device.c_str());
  }
  if (!find_backend(BackendKind::Vulkan)) std::printf("%-8s %-11s (not built into this binary)\n", "vulkan", "absent");
  // Every backend runs every family's ops and every weight type today (the
  // tests hold both to the same logits); a backend that cannot run a model
  // says why in supports(), and auto then takes the cpu.
  std::printf("\nmodel families (GGUF general.architecture): llama (incl. Llama 3.x rope_freqs), qwen2, qwen3, phi3 "
      "(not LongRoPE), gemma2, gemma3 (text) - cpu and vulkan\n");
  std::printf("weight types: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs - cpu and vulkan\n");
  std::printf(
      "\n--backend auto picks a discrete or integrated GPU that runs the model and whose memory holds the\n"
      "session's device bytes plus a margin (an eighth, at least 256 MiB), else the cpu.\n");
  return 0;
}

}  // namespace ember::cli

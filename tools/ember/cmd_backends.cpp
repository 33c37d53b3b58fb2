// `ember backends`: the support matrix — which backend runs here, on which
// device, with which weight and KV types and features. The table a team
// reads to decide where a model can run.
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
  struct Row {
    const char* backend;
    BackendKind kind;
    const char* weights;
    const char* kv;
    const char* features;
  };
  const Row rows[] = {
      {"cpu", BackendKind::Cpu, "f32 f16 bf16 q8_0 q4_0", "f32 f16 q8_0",
       "threads, context shift, zero-copy mapped weights"},
      {"vulkan", BackendKind::Vulkan, "f32 f16 bf16 q8_0 q4_0", "f32 f16 q8_0",
       "one submit per step, weights uploaded once, context shift on the device"},
  };
  std::printf("%-8s %-10s %-24s %-14s %s\n", "backend", "state", "weights", "kv cache", "device / features");
  for (const Row& r : rows) {
    BackendOptions bo;
    auto b = create_backend(r.kind, bo);
    std::string state = b.is_ok() ? "available" : "absent";
    std::string device = b.is_ok() ? b.value()->describe() : b.status().message();
    std::printf("%-8s %-10s %-24s %-14s %s\n", r.backend, state.c_str(), r.weights, r.kv, device.c_str());
    std::printf("%-8s %-10s %-24s %-14s %s\n", "", "", "", "", r.features);
  }
  std::printf("\n--backend auto picks a GPU (never a CPU Vulkan device) when the model fits its memory, else the cpu.\n");
  return 0;
}

}  // namespace ember::cli

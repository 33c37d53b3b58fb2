// The Vulkan compute backend (DESIGN.md principle 4, issue 6): the whole
// forward step runs on one Vulkan device, recorded into one command buffer
// and submitted once; only the logits come back to the host.
//
// Memory: weights are uploaded once at prepare (through a staging buffer;
// Q8_0/Q4_0 repacked into 32-bit words, memory.h); the KV cache, the
// activations and a RoPE table live in device memory (device_bytes). The
// session's host arena is not used by this backend (scratch_bytes is 0).
//
// Recording: descriptor sets and pipelines are made at prepare. A step's
// position and token ids are written to a host-visible step buffer the
// shaders read, so the decode command buffer (one token) is recorded once
// and resubmitted for every position; a batch of n > 1 tokens re-records a
// second command buffer only when n changes.
//
// This header carries no Vulkan types, so tests and the registry include it
// without the Vulkan headers.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace ember {

struct VulkanOptions {
  // Accept a CPU Vulkan device (Mesa lavapipe): for tests and CI. Also
  // enabled by EMBER_VULKAN_ALLOW_CPU=1 in the environment.
  bool allow_cpu = false;
};

class VulkanBackend final : public Backend {
 public:
  // Loads Vulkan and opens the best device. EMBER_ERR_UNSUPPORTED when no
  // loader, no device or no capable device exists (the message says why);
  // the caller then uses the CPU backend.
  static Result<std::unique_ptr<VulkanBackend>> create(const BackendOptions& options, const VulkanOptions& vk);
  ~VulkanBackend() override;

  const char* name() const override { return "vulkan"; }
  uint64_t scratch_bytes(const Graph& graph) const override { return 0; }
  // Uploads the weights and allocates the device KV cache and activations.
  // EMBER_ERR_UNSUPPORTED: a KV type other than f32/f16, head_dim above 256,
  // or a tensor larger than the device can bind; EMBER_ERR_NO_MEMORY: the
  // device memory is too small (the message names the bytes).
  Status prepare(const Graph& graph, const MemoryPlan& plan, uint8_t* arena) override;
  // One submit per step. EMBER_ERR_BACKEND when the device is lost; the
  // backend then refuses further steps (close the session or use the CPU).
  Status execute(const StepArgs& step) override;
  // Not implemented on the device yet: EMBER_ERR_UNSUPPORTED.
  Status remove_positions(int32_t start, int32_t end, int32_t n_pos) override;
  uint64_t device_bytes(const Graph& graph) const override;
  // "vulkan (NAME, discrete, subgroup 32, fp16, int8, dot; 8.0 GiB)".
  std::string describe() const override;

  // Test hook: copies the first `rows` rows of activation `id` to `out`.
  Status read_activation(int32_t id, int32_t rows, float* out);

 private:
  struct State;
  VulkanBackend() = default;
  std::unique_ptr<State> s_;
};

}  // namespace ember

// The Vulkan compute backend (ARCHITECTURE.md principle 4, issue 6): the whole
// forward step runs on one Vulkan device, recorded into one command buffer
// and submitted once; only the logits come back to the host.
//
// Memory: weights are uploaded once at prepare (through a staging buffer,
// several per submit; Q8_0/Q4_0 repacked into 32-bit words, the other GGUF
// block types as stored, memory.h); the KV cache (f32, f16 or q8_0, rounded
// as the CPU rounds: shaders/kv.glsl; n_seqs x context rows per layer, each
// sequence its own), the activations, a RoPE table and the context shift's
// scratch (kv_shift.h) live in device memory (vulkan_device_bytes, exactly
// what prepare allocates). The session's host arena is not used by this
// backend (its entry's scratch_bytes is 0).
//
// Batched decoding (Graph::n_seqs > 1): a step's rows may belong to several
// sequences at their own positions; each row's keys and values go to its
// sequence's rows and its attention reads only those; the logits head
// computes the step's output rows (StepArgs::out_rows), all in the step's
// one command buffer.
//
// Recording: descriptor sets and pipelines are made at prepare. A step's
// token ids, positions, sequences and output rows are written to a
// host-visible step buffer the shaders read, so the decode command buffer
// (one row, one output) is recorded once and resubmitted for every
// position; any other step re-records a second command buffer only when
// its shape (rows, output rows) changes. Shader variants are chosen
// once per device from the capability probe (pipelines.h), and compiled
// pipelines are kept on disk between runs (pipeline_cache.h).
//
// This header carries no Vulkan types, so tests and the registry include it
// without the Vulkan headers.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ember {

// The backend's options (VulkanOptions: the pipeline cache, a CPU device
// allowed, the portable shaders) are its own struct in
// backend/backend_options.h, BackendOptions::vulkan.

// The vulkan registry entry's queries (backend/backend.h BackendEntry), none of
// which opens a device: the device create() would open (from the process's
// cached enumeration, vk::probe_devices; a CPU device such as lavapipe is
// reported with type cpu, available only with EMBER_VULKAN_ALLOW_CPU=1);
// what the shaders run (weight dtypes, KV types, head_dim even and <= 256,
// max_batch <= 65535); the device bytes prepare allocates.
DeviceInfo vulkan_probe();
Status vulkan_supports(const Graph& graph);
uint64_t vulkan_device_bytes(const Graph& graph, const BackendOptions& options);
// Test hook: logical Vulkan devices opened so far in this process.
uint64_t vulkan_devices_opened();

class VulkanBackend final : public Backend {
 public:
  // Loads Vulkan and opens the best device. EMBER_ERR_UNSUPPORTED when no
  // loader, no device or no capable device exists (the message says why);
  // the caller then uses the CPU backend.
  static Result<std::unique_ptr<VulkanBackend>> create(const VulkanOptions& options);
  ~VulkanBackend() override;

  const char* name() const override { return "vulkan"; }
  // Uploads the weights and allocates the device KV cache and activations.
  // EMBER_ERR_UNSUPPORTED: a q8_0 KV cache whose kv_dim is not whole blocks,
  // head_dim above 256, or a tensor larger than the device can bind; EMBER_ERR_NO_MEMORY: the
  // device memory is too small (the message names the bytes).
  Status prepare(const Graph& graph, const ArenaLayout& plan, uint8_t* arena) override;
  // One submit per step. EMBER_ERR_BACKEND when the device is lost; the
  // backend then refuses further steps (close the session or use the CPU).
  Status execute(const StepArgs& step) override;
  // Context shifting on the device (kv_shift.h), for every KV type; the same
  // cache as the CPU's within rounding. EMBER_ERR_INVALID_ARGUMENT outside
  // 0 <= start <= end <= n_pos <= context or 0 <= seq < n_seqs;
  // EMBER_ERR_BACKEND on a lost device. Sequence 0 for remove_positions.
  Status remove_positions(int32_t start, int32_t end, int32_t n_pos) override;
  Status remove_seq_positions(int32_t seq, int32_t start, int32_t end, int32_t n_pos) override;
  // Sequence dst's first n_pos cache rows of every layer become src's (a
  // copy on the device, one submit). EMBER_ERR_INVALID_ARGUMENT for a
  // sequence outside 0..n_seqs - 1 or n_pos outside 0..src_positions.
  Status copy_seq(int32_t src, int32_t dst, int32_t n_pos, int32_t src_positions) override;
  // "vulkan (NAME, discrete, Vulkan 1.3, subgroup 32, fp16 yes, int8 yes,
  // int-dot yes, 8.0 GiB, reduce subgroupAdd, pipeline cache loaded 96 KiB)":
  // the device, what the probe found, which shader variant runs
  // (pipelines.h ShaderChoice) and what became of the pipeline cache.
  std::string describe() const override;

  // Test hook: copies the first `rows` rows of activation `id` to `out`.
  Status read_activation(int32_t id, int32_t rows, float* out);
  // Copies the first `rows` rows of layer `layer`'s key (or value) cache to
  // `out`, or from `in`, in the CPU's row format (kv_row_bytes per row):
  // saved sessions and tests. Each waits for the device.
  Status read_kv(int32_t layer, bool values, int32_t rows, uint8_t* out) override;
  Status write_kv(int32_t layer, bool values, int32_t rows, const uint8_t* in) override;
  // Test hook: the submits prepare used to upload weights and tables.
  uint32_t upload_submits() const;
  // Test hook: device bytes of every buffer prepare made (the plan's
  // vulkan_device_bytes must equal it).
  uint64_t device_bytes_allocated() const;
  // Test hook: times a step of a new shape (rows, output rows) other than
  // one-row decode was recorded.
  uint32_t batch_recordings() const;

 private:
  struct State;
  VulkanBackend() = default;
  std::unique_ptr<State> s_;
};

}  // namespace ember

// Context shifting on the device (Backend::remove_seq_positions): the cache
// rows of one sequence's positions [end, n_pos) move down to `start` and
// their keys are rotated by -(end - start) positions, as the CPU backend
// does (cpu_kv_shift.cpp). The other sequences' rows are not touched.
//
// Rows move a chunk at a time through scratch buffers, so no dispatch reads a
// row that another writes: values by buffer copies (bytes unchanged, like the
// CPU's memcpy), keys copied out, then rotated and stored back in the cache's
// type by shaders/kv_shift.comp. One command buffer and one submit per call.
#pragma once

#include <vector>

#include "backends/vulkan/ops.h"

namespace ember::vk {

class KvShift {
 public:
  // Rows a chunk holds for `graph`.
  static int32_t chunk_rows(const Graph& graph);
  // Device bytes of the scratch buffers and the angle table.
  static uint64_t device_bytes(const Graph& graph, uint32_t k_row_words, uint32_t v_row_words);
  // Descriptor sets prepare() allocates (one per layer).
  static uint32_t descriptor_sets(const Graph& graph) { return graph.hparams.n_layers; }

  KvShift() = default;
  ~KvShift();
  KvShift(const KvShift&) = delete;
  KvShift& operator=(const KvShift&) = delete;

  // Creates the scratch buffers, the pipeline and the layers' descriptor
  // sets. Lifetime: `dev`, `graph` and `bufs` outlive this object.
  Status prepare(Device& dev, Pipelines& pipes, VkDescriptorPool pool, const Graph& graph, const GraphBuffers& bufs);
  // Removes positions [start, end) of sequence `seq`'s first n_pos (the
  // caller checked 0 <= seq < n_seqs, 0 <= start < end < n_pos <= context).
  // Waits for the device.
  Status run(int32_t seq, int32_t start, int32_t end, int32_t n_pos);
  // Device bytes of its buffers (device_bytes, as allocated).
  uint64_t bytes() const { return k_chunk_.size + v_chunk_.size + table_.size; }

 private:
  void record(VkCommandBuffer cb, int32_t seq, int32_t start, int32_t end, int32_t n_pos) const;

  Device* dev_ = nullptr;
  const Graph* graph_ = nullptr;
  const GraphBuffers* bufs_ = nullptr;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets_;  // per layer
  Buffer k_chunk_, v_chunk_;           // chunk_rows() rows in the cache types
  Buffer table_;                       // host-visible: cos[head_dim / 2], then sin
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  int32_t rows_ = 0;
};

}  // namespace ember::vk

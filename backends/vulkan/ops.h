// The ops of a Graph on the device: descriptor sets written once at prepare,
// dispatches recorded into the step's command buffer. Every dispatch is
// followed by a compute-to-compute memory barrier (ops run in graph order).
#pragma once

#include <vector>

#include "backend/backend.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/pipelines.h"

namespace ember::vk {

// The device side of one session. Lifetime: the backend.
struct GraphBuffers {
  std::vector<Buffer> weights;        // per Graph::weights entry, device layout
  std::vector<WeightLayout> layouts;
  std::vector<Buffer> acts;           // per activation: rows x cols f32
  // Per layer: n_seqs x context rows (memory.h kv_row_words), sequence s's
  // position t at row s * context + t.
  std::vector<Buffer> k, v;
  uint32_t k_row_words = 0, v_row_words = 0;
  Buffer step;     // host-visible: step_words(graph) ints (shaders/common.glsl StepBuf)
  Buffer rope;     // cos [context][head_dim/2], then sin
  Buffer logits;   // host-visible: n_seqs x vocab_size floats read back after a step
  Buffer dummy;    // bound to the bindings an op does not use
};

// An op ready to record: attention is two dispatches (store keys and values,
// then attend), the others one.
struct PreparedOp {
  const Op* op = nullptr;
  VkPipeline pipeline[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  VkDescriptorSet set[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  int count = 0;
};

// A shader's push constants (meanings per shader: shaders/*.comp).
struct Push {
  uint32_t p[kPushWords] = {};
};

// Allocates a descriptor set from `pool` binding by_binding[i] to binding i
// (null: the dummy buffer).
Status write_set(Device& dev, VkDescriptorPool pool, VkDescriptorSetLayout set_layout, const Buffer* const* by_binding,
                 const Buffer& dummy, VkDescriptorSet* out);

// Records a 1-D dispatch of `count` invocations (64 per workgroup, split over
// x and y), then a barrier.
void dispatch_1d(const Device& dev, VkPipelineLayout layout, VkCommandBuffer cb, VkPipeline pipeline,
                 VkDescriptorSet set, const Push& push, uint64_t count);

// Descriptor sets the graph needs (for sizing the pool).
uint32_t descriptor_sets_needed(const Graph& graph);

// Picks the op's pipelines and writes its descriptor sets.
Status prepare_op(Device& dev, Pipelines& pipes, VkDescriptorPool pool, const Graph& graph,
                  const GraphBuffers& bufs, const Op& op, PreparedOp* out);

// The step buffer's words (shaders/common.glsl StepBuf): 4 header words, then
// token, position and sequence per row (max_batch each), then n_seqs output rows.
uint64_t step_words(const Graph& graph);

// Records the op for a step of n rows with n_out output rows (positions,
// sequences, tokens and which rows are output are read on the device from
// the step buffer, so a recording serves every step of that shape).
void record_op(const Device& dev, VkPipelineLayout layout, const Graph& graph, const GraphBuffers& bufs,
               const PreparedOp& p, int32_t n, int32_t n_out, VkCommandBuffer cb);

// Compute-to-compute (and to transfer) memory barrier.
void record_barrier(const Device& dev, VkCommandBuffer cb);

}  // namespace ember::vk

#include "backends/vulkan/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ember::vk {
namespace {

constexpr uint32_t kGroup = 64;        // shaders/common.glsl local_size_x
constexpr uint32_t kMaxGroupsX = 65535;  // the minimum maxComputeWorkGroupCount every device has

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void dispatch(const Device& dev, VkPipelineLayout layout, VkCommandBuffer cb, VkPipeline pipeline,
              VkDescriptorSet set, const Push& push, uint32_t gx, uint32_t gy, uint32_t gz) {
  const VkApi& a = dev.api();
  a.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  a.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  a.vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push.p), push.p);
  a.vkCmdDispatch(cb, gx, gy, gz);
  record_barrier(dev, cb);
}

// Rows an op reads of activation `id` this step: the output rows for the
// logits head's activations (per_output, or one row), else every row (as the
// cpu backend's one_row).
uint32_t rows_of(const Graph& graph, int32_t id, uint32_t n, uint32_t n_out) {
  const ActivationDesc& a = graph.activations[id];
  return a.per_output || a.rows == 1 ? n_out : n;
}

}  // namespace

uint64_t step_words(const Graph& graph) {
  return 4 + 3 * static_cast<uint64_t>(graph.max_batch) + static_cast<uint64_t>(graph_max_outputs(graph));
}

void dispatch_1d(const Device& dev, VkPipelineLayout layout, VkCommandBuffer cb, VkPipeline pipeline,
                 VkDescriptorSet set, const Push& push, uint64_t count) {
  const uint64_t groups = std::max<uint64_t>(1, (count + kGroup - 1) / kGroup);
  const uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(groups, kMaxGroupsX));
  const uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / gx);
  dispatch(dev, layout, cb, pipeline, set, push, gx, gy, 1);
}

Status write_set(Device& dev, VkDescriptorPool pool, VkDescriptorSetLayout set_layout, const Buffer* const* by_binding,
                 const Buffer& dummy, VkDescriptorSet* out) {
  const VkApi& a = dev.api();
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &set_layout;
  EMBER_VK_TRY(a.vkAllocateDescriptorSets(dev.device(), &ai, out), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo infos[kBindings];
  VkWriteDescriptorSet writes[kBindings];
  for (uint32_t i = 0; i < kBindings; ++i) {
    const Buffer& b = by_binding[i] ? *by_binding[i] : dummy;
    infos[i] = {b.buffer, 0, VK_WHOLE_SIZE};
    writes[i] = {};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = *out;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  a.vkUpdateDescriptorSets(dev.device(), kBindings, writes, 0, nullptr);
  return Status::ok();
}

void record_barrier(const Device& dev, VkCommandBuffer cb) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  dev.api().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                                 nullptr, 0, nullptr);
}

uint32_t descriptor_sets_needed(const Graph& graph) {
  uint32_t n = 0;
  for (const Op& op : graph.ops) n += op.kind == OpKind::Attention ? 2 : 1;
  return n;
}

Status prepare_op(Device& dev, Pipelines& pipes, VkDescriptorPool pool, const Graph& graph,
                  const GraphBuffers& bufs, const Op& op, PreparedOp* out) {
  out->op = &op;
  const Buffer* b[kBindings] = {};
  b[0] = &bufs.step;
  auto act = [&](int32_t id) { return &bufs.acts[id]; };
  std::string shader;
  switch (op.kind) {
    case OpKind::Embed:
      shader = std::string("embed_") + shader_suffix(graph.weights[op.weight].dtype);
      b[3] = &bufs.weights[op.weight];
      b[5] = act(op.out);
      break;
    case OpKind::RmsNorm:
      shader = "rmsnorm";
      b[1] = act(op.a);
      b[3] = &bufs.weights[op.weight];
      b[5] = act(op.out);
      break;
    case OpKind::MatMul:
      shader = std::string("matmul_") + shader_suffix(graph.weights[op.weight].dtype);
      b[1] = act(op.a);
      b[3] = &bufs.weights[op.weight];
      b[5] = act(op.out);
      break;
    case OpKind::Rope:
      shader = "rope";
      b[1] = act(op.a);
      b[4] = &bufs.rope;
      break;
    case OpKind::Attention: {
      const Buffer* store[kBindings] = {};
      store[0] = &bufs.step;
      store[1] = act(op.b);
      store[2] = act(op.c);
      store[6] = &bufs.k[op.layer];
      store[7] = &bufs.v[op.layer];
      EMBER_ASSIGN_OR_RETURN(out->pipeline[0], pipes.get("kv_store"));
      EMBER_TRY(write_set(dev, pool, pipes.set_layout(), store, bufs.dummy, &out->set[0]));
      EMBER_ASSIGN_OR_RETURN(out->pipeline[1], pipes.get("attention"));
      b[1] = act(op.a);
      b[5] = act(op.out);
      b[6] = &bufs.k[op.layer];
      b[7] = &bufs.v[op.layer];
      EMBER_TRY(write_set(dev, pool, pipes.set_layout(), b, bufs.dummy, &out->set[1]));
      out->count = 2;
      return Status::ok();
    }
    case OpKind::BiasAdd:
      shader = "bias_add";
      b[1] = act(op.a);
      b[3] = &bufs.weights[op.weight];
      b[5] = act(op.out);
      break;
    case OpKind::Softcap:
      shader = "softcap";
      b[1] = act(op.a);
      b[5] = act(op.out);
      break;
    case OpKind::Add:
    case OpKind::GeGLU:
    case OpKind::SwiGLU:
      shader = op.kind == OpKind::Add ? "add" : op.kind == OpKind::GeGLU ? "geglu" : "swiglu";
      b[1] = act(op.a);
      b[2] = act(op.b);
      b[5] = act(op.out);
      break;
    case OpKind::LayerNorm:
      shader = "layernorm";
      b[1] = act(op.a);
      b[3] = &bufs.weights[op.weight];
      b[4] = &bufs.weights[op.bias];
      b[5] = act(op.out);
      break;
    case OpKind::Gelu:
      shader = "gelu";
      b[1] = act(op.a);
      b[5] = act(op.out);
      break;
    case OpKind::AddRows:
      shader = std::string("add_rows_") + shader_suffix(graph.weights[op.weight].dtype);
      b[1] = act(op.a);
      b[3] = &bufs.weights[op.weight];
      b[5] = act(op.out);
      break;
  }
  const bool reducing = op.kind == OpKind::RmsNorm || op.kind == OpKind::MatMul;
  EMBER_ASSIGN_OR_RETURN(out->pipeline[0], reducing ? pipes.get_reducing(shader) : pipes.get(shader));
  EMBER_TRY(write_set(dev, pool, pipes.set_layout(), b, bufs.dummy, &out->set[0]));
  out->count = 1;
  return Status::ok();
}

void record_op(const Device& dev, VkPipelineLayout layout, const Graph& graph, const GraphBuffers& bufs,
               const PreparedOp& p, int32_t n, int32_t n_out, VkCommandBuffer cb) {
  const Op& op = *p.op;
  const uint32_t nu = static_cast<uint32_t>(n), outs = static_cast<uint32_t>(n_out);
  Push push;
  switch (op.kind) {
    case OpKind::Embed: {
      const WeightRef& w = graph.weights[op.weight];
      const uint64_t count = static_cast<uint64_t>(w.cols) * nu;
      push.p[0] = static_cast<uint32_t>(w.cols);
      push.p[1] = static_cast<uint32_t>(count);
      push.p[2] = bufs.layouts[op.weight].scale_word_offset;
      push.p[3] = static_cast<uint32_t>(w.rows);
      push.p[4] = op.params.embed.scale != 0.0f ? f32_bits(op.params.embed.scale) : 0u;
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
    case OpKind::RmsNorm: {
      // Groups (check_op_params: the group divides the row) are rows of
      // their own to the shader: x walks a row's groups, y the rows.
      const uint32_t cols = static_cast<uint32_t>(graph.activations[op.a].cols);
      const uint32_t group = op.params.rmsnorm.group ? op.params.rmsnorm.group : cols;
      const uint32_t groups = cols / group;
      // The logits head's norm gathers the step's output rows.
      push.p[0] = group;
      push.p[1] = op.last_row ? 1u : 0u;
      push.p[2] = f32_bits(op.params.rmsnorm.eps);
      dispatch(dev, layout, cb, p.pipeline[0], p.set[0], push, groups, op.last_row ? outs : nu, 1);
      break;
    }
    case OpKind::MatMul: {
      const WeightRef& w = graph.weights[op.weight];
      const uint32_t n_in = rows_of(graph, op.a, nu, outs);
      const uint32_t rows = static_cast<uint32_t>(w.rows);
      const uint32_t gx = std::min(rows, kMaxGroupsX);
      push.p[0] = rows;
      push.p[1] = static_cast<uint32_t>(w.cols);
      push.p[2] = n_in;
      push.p[3] = bufs.layouts[op.weight].scale_word_offset;
      push.p[4] = gx;
      dispatch(dev, layout, cb, p.pipeline[0], p.set[0], push, gx, (n_in + 7) / 8, (rows + gx - 1) / gx);
      break;
    }
    case OpKind::Rope: {
      const uint32_t cols = static_cast<uint32_t>(graph.activations[op.a].cols);
      const RopeParams& rp = op.params.rope;
      // Only the rotated pairs (partial rotary: the rest of each head stays).
      const uint32_t head_dim = rp.head_dim, half = rope_rotated_dims(rp) / 2;
      const uint64_t count = static_cast<uint64_t>(nu) * rp.n_heads * half;
      push.p[0] = cols;
      push.p[1] = head_dim;
      push.p[2] = rp.style == RopeStyle::Adjacent ? 1 : 0;
      push.p[3] = static_cast<uint32_t>(count);
      push.p[4] = half;
      push.p[5] = static_cast<uint32_t>(graph.context) * half;
      push.p[6] = static_cast<uint32_t>(rope_table_index(graph, op)) * 2 * static_cast<uint32_t>(graph.context) * half;
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
    case OpKind::Attention: {
      // One invocation per (row, unit): an element pair, or a pair of q8_0
      // blocks (shaders/kv.glsl); kv_dim / 2 covers both types' units.
      const AttentionParams& ap = op.params.attention;
      const uint32_t kv_dim = ap.n_kv_heads * ap.head_dim;
      const uint64_t count = static_cast<uint64_t>(nu) * (kv_dim / 2);
      push.p[0] = kv_dim;
      push.p[1] = kv_type_code(graph.kv_type_k);
      push.p[2] = kv_type_code(graph.kv_type_v);
      push.p[3] = static_cast<uint32_t>(count);
      push.p[4] = bufs.k_row_words;
      push.p[5] = bufs.v_row_words;
      push.p[6] = kv_dim / 2;
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      Push att;
      att.p[0] = ap.head_dim;
      att.p[1] = ap.n_heads;
      att.p[2] = ap.n_heads / ap.n_kv_heads;
      att.p[3] = kv_dim;
      att.p[4] = kv_type_code(graph.kv_type_k);
      att.p[5] = kv_type_code(graph.kv_type_v);
      att.p[6] = f32_bits(ap.scale);
      att.p[7] = bufs.k_row_words;
      att.p[8] = bufs.v_row_words;
      att.p[9] = ap.window;
      att.p[10] = ap.softcap != 0.0f ? f32_bits(ap.softcap) : 0u;
      att.p[11] = ap.causal ? 0u : 1u;
      dispatch(dev, layout, cb, p.pipeline[1], p.set[1], att, ap.n_heads, nu, 1);
      break;
    }
    case OpKind::Softcap: {
      const uint64_t count = static_cast<uint64_t>(graph.activations[op.a].cols) * rows_of(graph, op.a, nu, outs);
      push.p[0] = static_cast<uint32_t>(count);
      push.p[1] = f32_bits(op.params.softcap.cap);
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
    case OpKind::Add:
    case OpKind::GeGLU:
    case OpKind::SwiGLU: {
      const uint64_t count = static_cast<uint64_t>(graph.activations[op.a].cols) * rows_of(graph, op.a, nu, outs);
      push.p[0] = static_cast<uint32_t>(count);
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
    case OpKind::BiasAdd: {
      const uint64_t count = static_cast<uint64_t>(graph.activations[op.a].cols) * rows_of(graph, op.a, nu, outs);
      push.p[0] = static_cast<uint32_t>(graph.activations[op.a].cols);
      push.p[1] = static_cast<uint32_t>(count);
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
    case OpKind::LayerNorm:
      // One workgroup per row: the step's rows, or its output rows gathered.
      push.p[0] = static_cast<uint32_t>(graph.activations[op.a].cols);
      push.p[1] = op.last_row ? 1u : 0u;
      push.p[2] = f32_bits(op.params.layernorm.eps);
      dispatch(dev, layout, cb, p.pipeline[0], p.set[0], push, 1, op.last_row ? outs : nu, 1);
      break;
    case OpKind::Gelu: {
      const uint64_t count = static_cast<uint64_t>(graph.activations[op.a].cols) * rows_of(graph, op.a, nu, outs);
      push.p[0] = static_cast<uint32_t>(count);
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
    case OpKind::AddRows: {
      const WeightRef& w = graph.weights[op.weight];
      const uint64_t count = static_cast<uint64_t>(w.cols) * nu;
      push.p[0] = static_cast<uint32_t>(w.cols);
      push.p[1] = static_cast<uint32_t>(count);
      push.p[2] = bufs.layouts[op.weight].scale_word_offset;
      push.p[3] = static_cast<uint32_t>(w.rows);
      push.p[4] = op.params.add_rows.by_position ? 1u : 0u;
      dispatch_1d(dev, layout, cb, p.pipeline[0], p.set[0], push, count);
      break;
    }
  }
}

}  // namespace ember::vk

#include "backends/vulkan/kv_shift.h"

#include <algorithm>
#include <cmath>

namespace ember::vk {
namespace {

// 256 rows: a few dispatches per layer for a typical shift, a few MiB of
// scratch for the widest caches.
constexpr int32_t kChunkRows = 256;

// Orders every earlier copy and dispatch before every later one.
void full_barrier(const VkApi& a, VkCommandBuffer cb) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  a.vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

}  // namespace

int32_t KvShift::chunk_rows(const Graph& graph) { return std::max(1, std::min(graph.context, kChunkRows)); }

uint64_t KvShift::device_bytes(const Graph& graph, uint32_t k_row_words, uint32_t v_row_words) {
  return static_cast<uint64_t>(chunk_rows(graph)) * (k_row_words + v_row_words) * 4 +
         static_cast<uint64_t>(graph.hparams.head_dim()) * 4 * std::max<size_t>(1, rope_tables(graph).size());
}

KvShift::~KvShift() {
  if (!dev_) return;
  if (cb_) dev_->api().vkFreeCommandBuffers(dev_->device(), dev_->command_pool(), 1, &cb_);
  for (Buffer* b : {&k_chunk_, &v_chunk_, &table_}) destroy_buffer(*dev_, b);
}

Status KvShift::prepare(Device& dev, Pipelines& pipes, VkDescriptorPool pool, const Graph& graph,
                        const GraphBuffers& bufs) {
  dev_ = &dev;
  graph_ = &graph;
  bufs_ = &bufs;
  layout_ = pipes.layout();
  rows_ = chunk_rows(graph);
  EMBER_ASSIGN_OR_RETURN(k_chunk_, create_buffer(dev, 4ull * rows_ * bufs.k_row_words, false, "the kv shift scratch"));
  EMBER_ASSIGN_OR_RETURN(v_chunk_, create_buffer(dev, 4ull * rows_ * bufs.v_row_words, false, "the kv shift scratch"));
  EMBER_ASSIGN_OR_RETURN(table_, create_buffer(dev, 4ull * graph.hparams.head_dim() *
                                                        std::max<size_t>(1, rope_tables(graph).size()),
                                               true, "the kv shift angles"));
  EMBER_ASSIGN_OR_RETURN(pipeline_, pipes.get("kv_shift"));
  sets_.resize(graph.hparams.n_layers);
  for (uint32_t l = 0; l < graph.hparams.n_layers; ++l) {
    // Binding 7 (the value cache's slot) carries the keys' scratch: the
    // shader reads the moving keys from there (shaders/kv_shift.comp).
    const Buffer* b[kBindings] = {};
    b[4] = &table_;
    b[6] = &bufs.k[l];
    b[7] = &k_chunk_;
    EMBER_TRY(write_set(dev, pool, pipes.set_layout(), b, bufs.dummy, &sets_[l]));
  }
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = dev.command_pool();
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  EMBER_VK_TRY(dev.api().vkAllocateCommandBuffers(dev.device(), &cai, &cb_), "vkAllocateCommandBuffers");
  return Status::ok();
}

void KvShift::record(VkCommandBuffer cb, int32_t seq, int32_t start, int32_t end, int32_t n_pos) const {
  const VkApi& a = dev_->api();
  const HParams& hp = graph_->hparams;
  const uint32_t kv_dim = hp.kv_dim();
  const uint32_t ktype = kv_type_code(graph_->kv_type_k);
  const uint32_t units = graph_->kv_type_k == KvType::Q8_0 ? (kv_dim / kQuantBlock + 1) / 2 : kv_dim / 2;
  const uint64_t krow = 4ull * bufs_->k_row_words, vrow = 4ull * bufs_->v_row_words;
  const int32_t moved = n_pos - end;
  // The sequence's rows: its position t is cache row row0 + t.
  const uint64_t row0 = static_cast<uint64_t>(seq) * static_cast<uint64_t>(graph_->context);
  // The last step's cache writes come before this submit's reads.
  full_barrier(a, cb);
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    // The keys' RoPE (graph.h key_rope) and its angle table (one per
    // distinct RoPE, head_dim floats each).
    // vulkan_supports holds every Rope op to one head_dim and theta).
    const RopeParams rope = key_rope(*graph_, static_cast<int32_t>(l));
    for (int32_t c0 = 0; c0 < moved; c0 += rows_) {
      const int32_t r = std::min(rows_, moved - c0);
      const VkBufferCopy kout{(row0 + end + c0) * krow, 0, r * krow};
      const VkBufferCopy vout{(row0 + end + c0) * vrow, 0, r * vrow};
      a.vkCmdCopyBuffer(cb, bufs_->k[l].buffer, k_chunk_.buffer, 1, &kout);
      a.vkCmdCopyBuffer(cb, bufs_->v[l].buffer, v_chunk_.buffer, 1, &vout);
      full_barrier(a, cb);
      const VkBufferCopy vin{0, (row0 + start + c0) * vrow, r * vrow};
      a.vkCmdCopyBuffer(cb, v_chunk_.buffer, bufs_->v[l].buffer, 1, &vin);
      Push push;
      push.p[0] = kv_dim;
      push.p[1] = ktype;
      push.p[2] = bufs_->k_row_words;
      push.p[3] = static_cast<uint32_t>(r) * units;
      push.p[4] = units;
      push.p[5] = static_cast<uint32_t>(row0 + start + c0);
      push.p[6] = rope.head_dim;
      push.p[7] = rope.style == RopeStyle::Adjacent ? 1 : 0;
      push.p[8] = static_cast<uint32_t>(std::max(0, rope_table_of(*graph_, rope))) * rope.head_dim;
      push.p[9] = rope_rotated_dims(rope);
      dispatch_1d(*dev_, layout_, cb, pipeline_, sets_[l], push, static_cast<uint64_t>(r) * units);
      // The next chunk overwrites the scratch and reads rows this one wrote.
      full_barrier(a, cb);
    }
  }
}

Status KvShift::run(int32_t seq, int32_t start, int32_t end, int32_t n_pos) {
  // The angles of a -d rotation, computed as the CPU's rotate_row does (the
  // rotated pairs only, no mscale: a pure rotation).
  const int32_t delta = -(end - start);
  const std::vector<const Op*> tables = rope_tables(*graph_);
  for (size_t t = 0; t < tables.size(); ++t) {
    const RopeParams& rope = tables[t]->params.rope;
    const int64_t head_dim = rope.head_dim, half = rope_rotated_dims(rope) / 2;
    float* table = static_cast<float*>(table_.mapped) + t * head_dim;
    for (int64_t j = 0; j < half; ++j) {
      const float freq = rope_inv_freq(rope, j);
      const float angle = static_cast<float>(delta) * freq;
      table[j] = std::cos(angle);
      table[half + j] = std::sin(angle);
    }
  }
  const VkApi& a = dev_->api();
  EMBER_VK_TRY(a.vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_TRY(a.vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
  record(cb_, seq, start, end, n_pos);
  EMBER_VK_TRY(a.vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
  return dev_->submit_and_wait(cb_);
}

}  // namespace ember::vk

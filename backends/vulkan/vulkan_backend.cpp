#include "backends/vulkan/vulkan_backend.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "backends/vulkan/device.h"
#include "backends/vulkan/kv_shift.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/ops.h"
#include "backends/vulkan/pipelines.h"

namespace ember {

using vk::Buffer;

struct VulkanBackend::State {
  std::unique_ptr<vk::Device> dev;
  std::unique_ptr<vk::Pipelines> pipes;
  vk::GraphBuffers bufs;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  std::vector<vk::PreparedOp> ops;
  std::unique_ptr<vk::KvShift> shift;  // remove_seq_positions
  VkCommandBuffer cb_decode = VK_NULL_HANDLE;  // one row, one output: recorded once
  VkCommandBuffer cb_batch = VK_NULL_HANDLE;   // other shapes: re-recorded when (n, n_out) changes
  VkCommandBuffer cb_copy = VK_NULL_HANDLE;    // copy_seq
  bool decode_recorded = false;
  uint32_t upload_submits = 0;  // prepare's staging submits (a test hook reads it)
  int32_t batch_n = 0, batch_out = 0;  // the shape cb_batch holds (0: none)
  uint32_t batch_records = 0;          // times cb_batch was recorded (a test hook)
  const Graph* graph = nullptr;

  ~State() {
    if (!dev) return;
    const vk::VkApi& a = dev->api();
    a.vkDeviceWaitIdle(dev->device());
    shift.reset();
    VkCommandBuffer cbs[3] = {cb_decode, cb_batch, cb_copy};
    for (VkCommandBuffer cb : cbs) {
      if (cb) a.vkFreeCommandBuffers(dev->device(), dev->command_pool(), 1, &cb);
    }
    if (pool) a.vkDestroyDescriptorPool(dev->device(), pool, nullptr);
    for (auto* list : {&bufs.weights, &bufs.acts, &bufs.k, &bufs.v}) {
      for (Buffer& b : *list) vk::destroy_buffer(*dev, &b);
    }
    for (Buffer* b : {&bufs.step, &bufs.rope, &bufs.logits, &bufs.dummy}) vk::destroy_buffer(*dev, b);
    pipes.reset();
    dev.reset();
  }

  Status record(VkCommandBuffer cb, int32_t n, int32_t n_out);
  // Device bytes of every buffer prepare made.
  uint64_t allocated_bytes() const {
    uint64_t total = 0;
    for (const auto* list : {&bufs.weights, &bufs.acts, &bufs.k, &bufs.v}) {
      for (const Buffer& b : *list) total += b.size;
    }
    for (const Buffer* b : {&bufs.step, &bufs.rope, &bufs.logits, &bufs.dummy}) total += b->size;
    return total + (shift ? shift->bytes() : 0);
  }
};

namespace {

// The placeholder bound to the bindings an op does not use.
constexpr uint64_t kDummyBytes = 16;

struct Sizes {
  uint64_t weights = 0, kv = 0, acts = 0, other = 0;
  uint32_t k_row_words = 0, v_row_words = 0;  // one cache row (memory.h kv_row_words)
};

// Device bytes by purpose; the layout prepare allocates.
Result<Sizes> device_sizes(const Graph& g) {
  Sizes s;
  const HParams& hp = g.hparams;
  for (const WeightRef& w : g.weights) {
    EMBER_ASSIGN_OR_RETURN(vk::WeightLayout l, vk::weight_layout(w));
    s.weights += l.bytes;
  }
  EMBER_ASSIGN_OR_RETURN(s.k_row_words, vk::kv_row_words(g.kv_type_k, hp.kv_dim()));
  EMBER_ASSIGN_OR_RETURN(s.v_row_words, vk::kv_row_words(g.kv_type_v, hp.kv_dim()));
  // Every sequence's rows (n_seqs x context per layer).
  s.kv = static_cast<uint64_t>(hp.n_layers) * g.n_seqs * g.context * 4 * (s.k_row_words + s.v_row_words);
  for (const ActivationDesc& a : g.activations) s.acts += static_cast<uint64_t>(a.cols) * a.rows * 4;
  const Op* rope = rope_table_op(g);
  const uint64_t rotated = rope ? rope_rotated_dims(rope->params.rope) : hp.head_dim();
  s.other = static_cast<uint64_t>(g.context) * rotated * 4 *  // rope cos + sin (rotated pairs), per table
                std::max<uint64_t>(1, rope_tables(g).size())
            + vk::step_words(g) * 4                                // step
            + static_cast<uint64_t>(graph_output_cols(g)) * graph_max_outputs(g) * 4  // logits (n_out rows at most)
            + kDummyBytes
            + vk::KvShift::device_bytes(g, s.k_row_words, s.v_row_words);
  return s;
}

}  // namespace

Result<std::unique_ptr<VulkanBackend>> VulkanBackend::create(const VulkanOptions& vo) {
  vk::DeviceOptions dopt;
  dopt.allow_cpu = vo.allow_cpu;
  auto backend = std::unique_ptr<VulkanBackend>(new VulkanBackend());
  backend->s_ = std::make_unique<State>();
  EMBER_ASSIGN_OR_RETURN(backend->s_->dev, vk::Device::create(dopt));
  vk::PipelineCacheOptions cache;
  cache.enabled = vo.pipeline_cache;
  cache.dir = vo.pipeline_cache_dir;
  backend->s_->pipes = std::make_unique<vk::Pipelines>(
      *backend->s_->dev, vk::choose_shaders(backend->s_->dev->caps(), vo.portable_shaders), cache);
  EMBER_TRY(backend->s_->pipes->init());
  return backend;
}

VulkanBackend::~VulkanBackend() = default;

uint64_t vulkan_device_bytes(const Graph& graph, const BackendOptions&) {
  Result<Sizes> s = device_sizes(graph);
  if (!s.is_ok()) return 0;
  return s->weights + s->kv + s->acts + s->other;
}

uint64_t vulkan_devices_opened() { return vk::logical_devices_created(); }

DeviceInfo vulkan_probe() {
  const vk::DeviceProbe& p = vk::probe_devices();
  DeviceInfo d;
  if (!p.status.is_ok()) {
    d.reason = p.status.message();
    return d;
  }
  // As Device::create chooses: the best-ranked usable device.
  const vk::ProbedDevice* best = nullptr;
  std::string refused;
  for (const vk::ProbedDevice& pd : p.devices) {
    if (!pd.unusable.empty()) {
      refused += " " + pd.caps.name + " (" + pd.unusable + ")";
    } else if (!best || vk::device_type_rank(pd.caps.type) > vk::device_type_rank(best->caps.type)) {
      best = &pd;
    }
  }
  if (!best) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "vulkan: no usable device among %zu:", p.devices.size());
    d.reason = buf + (refused.empty() ? std::string(" none found") : refused);
    return d;
  }
  const vk::DeviceCaps& c = best->caps;
  switch (c.type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: d.type = DeviceType::DiscreteGpu; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: d.type = DeviceType::IntegratedGpu; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: d.type = DeviceType::Virtual; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: d.type = DeviceType::Cpu; break;
    default: d.type = DeviceType::Other; break;
  }
  d.name = c.name;
  d.memory_bytes = c.device_local_bytes;
  d.available = true;
  if (c.type == VK_PHYSICAL_DEVICE_TYPE_CPU && !vk::env_allows_cpu()) {
    d.available = false;
    d.reason = "a CPU device; set EMBER_VULKAN_ALLOW_CPU=1 to use it";
  }
  return d;
}

Status vulkan_supports(const Graph& graph) {
  const HParams& hp = graph.hparams;
  for (const WeightRef& w : graph.weights) EMBER_TRY(vk::weight_layout(w).status());
  for (KvType t : {graph.kv_type_k, graph.kv_type_v}) EMBER_TRY(vk::kv_row_words(t, hp.kv_dim()).status());
  EMBER_TRY(check_op_params(graph));
  for (int32_t l = 0; l < static_cast<int32_t>(hp.n_layers); ++l) {
    if (kv_layer_ring(graph, l)) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: layer %d's sliding-window cache is a ring of %d rows; the "
                           "vulkan backend keeps every position", l, kv_layer_rows(graph, l));
    }
  }
  // Each sequence its own cache rows; the logits head's norm dispatches a
  // workgroup row per output row (at most 65535).
  if (graph.n_seqs < 1 || graph.n_seqs > 65535) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: %d sequences in one session (1..65535)", graph.n_seqs);
  }
  if (rope_tables(graph).size() > static_cast<size_t>(kMaxRopeTables)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: rope ops with %zu different theta/scaling (at most %d)",
                         rope_tables(graph).size(), kMaxRopeTables);
  }
  // The shaders keep a head in shared memory (attention.comp: 2 x 256
  // floats); the rope table and the kv shift's angles are sized from the
  // model's head_dim (device_sizes).
  for (const Op& op : graph.ops) {
    // Context shifting re-rotates the keys with the shared angle table.
    // (An encoder's keys are not rotated and never shifted: it runs whole inputs.)
    if (op.kind == OpKind::Attention && op.params.attention.causal && key_rope(graph, op.layer).head_dim == 0) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: attention of layer %d reads keys no rope op rotated",
                           op.layer);
    }
    // One rotated width for every rope: the tables share a layout.
    if (op.kind == OpKind::Rope &&
        rope_rotated_dims(op.params.rope) != rope_rotated_dims(rope_table_op(graph)->params.rope)) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: rope ops rotating %u and %u dims in one graph",
                           rope_rotated_dims(op.params.rope), rope_rotated_dims(rope_table_op(graph)->params.rope));
    }
    const uint32_t head_dim = op.kind == OpKind::Rope        ? op.params.rope.head_dim
                              : op.kind == OpKind::Attention ? op.params.attention.head_dim
                                                             : 0;
    if ((op.kind == OpKind::Rope || op.kind == OpKind::Attention) &&
        (head_dim > 256 || head_dim != hp.head_dim())) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "vulkan: %s with head_dim %u is not supported (even, <= 256, the model's %u)",
                           op_name(op.kind), head_dim, hp.head_dim());
    }
  }
  if (graph.max_batch <= 0 || graph.max_batch > 65535 || graph.context <= 0) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: max_batch %d is outside 1..65535", graph.max_batch);
  }
  return Status::ok();
}

std::string VulkanBackend::describe() const {
  const vk::DeviceCaps& c = s_->dev->caps();
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "vulkan (%s, %s, Vulkan %u.%u, subgroup %u, fp16 %s, int8 %s, int-dot %s, %.1f GiB, reduce %s, "
                "pipeline cache %s)",
                c.name.c_str(), vk::device_type_name(c.type), VK_API_VERSION_MAJOR(c.api_version),
                VK_API_VERSION_MINOR(c.api_version), c.subgroup_size, c.fp16_arithmetic ? "yes" : "no",
                c.int8_arithmetic ? "yes" : "no", c.int_dot ? "yes" : "no",
                static_cast<double>(c.device_local_bytes) / (1ull << 30), s_->pipes->choice().why.c_str(),
                s_->pipes->cache().state().c_str());
  return buf;
}

Status VulkanBackend::prepare(const Graph& graph, const ArenaLayout& plan, uint8_t* arena) {
  State& s = *s_;
  vk::Device& dev = *s.dev;
  const vk::DeviceCaps& caps = dev.caps();
  const HParams& hp = graph.hparams;
  s.graph = &graph;
  EMBER_ASSIGN_OR_RETURN(Sizes sizes, device_sizes(graph));
  const uint64_t total = sizes.weights + sizes.kv + sizes.acts + sizes.other;
  if (caps.device_local_bytes && total > caps.device_local_bytes) {
    return Status::error(EMBER_ERR_NO_MEMORY,
                         "vulkan: the session needs %llu bytes of device memory (weights %llu, kv %llu, "
                         "activations %llu); %s has %llu",
                         static_cast<unsigned long long>(total), static_cast<unsigned long long>(sizes.weights),
                         static_cast<unsigned long long>(sizes.kv), static_cast<unsigned long long>(sizes.acts),
                         caps.name.c_str(), static_cast<unsigned long long>(caps.device_local_bytes));
  }
  EMBER_TRY(vulkan_supports(graph));
  auto check_range = [&](uint64_t bytes, const char* what) {
    if (bytes > caps.max_storage_range || bytes / 4 > UINT32_MAX) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: %s needs a %llu-byte buffer; the device binds at most %llu",
                           what, static_cast<unsigned long long>(bytes),
                           static_cast<unsigned long long>(caps.max_storage_range));
    }
    return Status::ok();
  };

  // Weights, once, through the staging buffer: batched, (bytes / 8 MiB) + 1 submits.
  {
    vk::Uploader up(dev);
    for (const WeightRef& w : graph.weights) {
      EMBER_ASSIGN_OR_RETURN(vk::WeightLayout l, vk::weight_layout(w));
      EMBER_TRY(check_range(l.bytes, w.name));
      if (static_cast<uint64_t>(w.rows ? w.rows : 1) * w.cols > UINT32_MAX) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "vulkan: weight '%s' has more than 2^32 elements", w.name);
      }
      s.bufs.layouts.push_back(l);
      EMBER_ASSIGN_OR_RETURN(Buffer b, vk::create_buffer(dev, l.bytes, false, w.name));
      s.bufs.weights.push_back(b);
      EMBER_TRY(up.upload_weight(w, b));
    }
    // RoPE angles computed exactly as the CPU backend computes them, one
    // table per distinct RoPE (vulkan_supports: all of the model's head_dim,
    // one rotated width): cos [context][half] then sin, 2 x context x half
    // floats each, half = the rotated pairs; times the rope's mscale as the
    // CPU's cpu_rope scales them.
    const std::vector<const Op*> ropes = rope_tables(graph);
    const int64_t half = ropes.empty() ? 0 : rope_rotated_dims(ropes[0]->params.rope) / 2;
    const int64_t per_table = 2 * half * graph.context;
    std::vector<float> table(static_cast<size_t>(std::max<int64_t>(per_table * static_cast<int64_t>(ropes.size()), 1)));
    for (size_t t = 0; t < ropes.size(); ++t) {
      const RopeParams& rp = ropes[t]->params.rope;
      float* tb = table.data() + t * per_table;
      for (int32_t p = 0; p < graph.context; ++p) {
        for (int64_t j = 0; j < half; ++j) {
          const float freq = rope_inv_freq(rp, j);
          const float angle = static_cast<float>(p) * freq;
          tb[p * half + j] = std::cos(angle) * rp.mscale;
          tb[(graph.context + p) * half + j] = std::sin(angle) * rp.mscale;
        }
      }
    }
    EMBER_TRY(check_range(table.size() * 4, "the rope table"));
    EMBER_ASSIGN_OR_RETURN(s.bufs.rope, vk::create_buffer(dev, table.size() * 4, false, "the rope table"));
    EMBER_TRY(up.upload(table.data(), table.size() * 4, s.bufs.rope, 0));
    EMBER_TRY(up.flush());
    s.upload_submits = up.submits();
  }
  for (const ActivationDesc& a : graph.activations) {
    const uint64_t bytes = static_cast<uint64_t>(a.cols) * a.rows * 4;
    EMBER_TRY(check_range(bytes, a.name));
    EMBER_ASSIGN_OR_RETURN(Buffer b, vk::create_buffer(dev, bytes, false, a.name));
    s.bufs.acts.push_back(b);
  }
  s.bufs.k_row_words = sizes.k_row_words;
  s.bufs.v_row_words = sizes.v_row_words;
  const uint64_t kv_rows = static_cast<uint64_t>(graph.n_seqs) * static_cast<uint64_t>(graph.context);
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const uint64_t kb = 4ull * sizes.k_row_words * kv_rows, vb = 4ull * sizes.v_row_words * kv_rows;
    EMBER_TRY(check_range(std::max(kb, vb), "the kv cache of one layer"));
    EMBER_ASSIGN_OR_RETURN(Buffer k, vk::create_buffer(dev, kb, false, "the key cache"));
    s.bufs.k.push_back(k);
    EMBER_ASSIGN_OR_RETURN(Buffer v, vk::create_buffer(dev, vb, false, "the value cache"));
    s.bufs.v.push_back(v);
  }
  EMBER_ASSIGN_OR_RETURN(s.bufs.step, vk::create_buffer(dev, 4 * vk::step_words(graph), true, "the step buffer"));
  EMBER_ASSIGN_OR_RETURN(s.bufs.logits, vk::create_buffer(dev, 4ull * graph_output_cols(graph) * graph_max_outputs(graph),
                                                          true, "the logits buffer"));
  EMBER_ASSIGN_OR_RETURN(s.bufs.dummy, vk::create_buffer(dev, kDummyBytes, false, "a placeholder buffer"));

  const vk::VkApi& a = dev.api();
  const uint32_t sets = vk::descriptor_sets_needed(graph) + vk::KvShift::descriptor_sets(graph);
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * vk::kBindings};
  VkDescriptorPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pci.maxSets = sets;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &ps;
  EMBER_VK_TRY(a.vkCreateDescriptorPool(dev.device(), &pci, nullptr, &s.pool), "vkCreateDescriptorPool");
  s.ops.resize(graph.ops.size());
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    EMBER_TRY(vk::prepare_op(dev, *s.pipes, s.pool, graph, s.bufs, graph.ops[i], &s.ops[i]));
  }
  s.shift = std::make_unique<vk::KvShift>();
  EMBER_TRY(s.shift->prepare(dev, *s.pipes, s.pool, graph, s.bufs));
  s.pipes->save_cache();  // every pipeline this graph needs now exists
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = dev.command_pool();
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  EMBER_VK_TRY(a.vkAllocateCommandBuffers(dev.device(), &cai, &s.cb_decode), "vkAllocateCommandBuffers");
  EMBER_VK_TRY(a.vkAllocateCommandBuffers(dev.device(), &cai, &s.cb_batch), "vkAllocateCommandBuffers");
  EMBER_VK_TRY(a.vkAllocateCommandBuffers(dev.device(), &cai, &s.cb_copy), "vkAllocateCommandBuffers");
  return Status::ok();
}

Status VulkanBackend::State::record(VkCommandBuffer cb, int32_t n, int32_t n_out) {
  const vk::VkApi& a = dev->api();
  EMBER_VK_TRY(a.vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  EMBER_VK_TRY(a.vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  for (const vk::PreparedOp& p : ops) vk::record_op(*dev, pipes->layout(), *graph, bufs, p, n, n_out, cb);
  // The output rows' logits come back; nothing else leaves the device.
  VkBufferCopy region{0, 0, 4ull * static_cast<uint64_t>(graph_output_cols(*graph)) * static_cast<uint64_t>(n_out)};
  a.vkCmdCopyBuffer(cb, bufs.acts[graph->logits].buffer, bufs.logits.buffer, 1, &region);
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  a.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                         nullptr);
  EMBER_VK_TRY(a.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return Status::ok();
}

Status VulkanBackend::execute(const StepArgs& step) {
  State& s = *s_;
  if (!s.graph) return Status::error(EMBER_ERR_INTERNAL, "vulkan: execute before prepare");
  const Graph& g = *s.graph;
  {
    const Status st = check_step(g, step);
    if (!st.is_ok()) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: %s", st.message().c_str());
  }
  const int32_t n = step.n_tokens;
  if (!step.tokens) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: step of %d tokens without tokens", n);
  for (int32_t i = 0; i < n; ++i) {
    if (step.tokens[i] < 0 || static_cast<uint32_t>(step.tokens[i]) >= g.hparams.vocab_size) {
      return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE, "vulkan: tokens[%d] = %d is outside the vocabulary", i,
                           step.tokens[i]);
    }
  }
  // The step buffer (shaders/common.glsl StepBuf): header, then per row its
  // token, position and sequence, then the output rows.
  const int32_t n_out = step.out_rows ? step.n_out : 1;
  const int32_t stride = g.max_batch;
  int32_t* w = static_cast<int32_t*>(s.bufs.step.mapped);
  w[0] = n;
  w[1] = n_out;
  w[2] = stride;
  w[3] = g.context;
  int32_t* v = w + 4;
  for (int32_t i = 0; i < n; ++i) {
    v[i] = step.tokens[i];
    v[stride + i] = step.positions ? step.positions[i] : step.pos + i;
    v[2 * stride + i] = step.seqs ? step.seqs[i] : 0;
  }
  for (int32_t j = 0; j < n_out; ++j) v[3 * stride + j] = step.out_rows ? step.out_rows[j] : n - 1;
  // A recording serves every step of its shape (rows, output rows): decode
  // of one sequence is recorded once; other shapes when they change.
  VkCommandBuffer cb;
  if (n == 1 && n_out == 1) {
    if (!s.decode_recorded) {
      EMBER_TRY(s.record(s.cb_decode, 1, 1));
      s.decode_recorded = true;
    }
    cb = s.cb_decode;
  } else {
    if (s.batch_n != n || s.batch_out != n_out) {
      s.batch_n = s.batch_out = 0;
      EMBER_TRY(s.record(s.cb_batch, n, n_out));
      s.batch_n = n;
      s.batch_out = n_out;
      ++s.batch_records;
    }
    cb = s.cb_batch;
  }
  EMBER_TRY(s.dev->submit_and_wait(cb));
  if (step.logits) std::memcpy(step.logits, s.bufs.logits.mapped, 4ull * graph_output_cols(g) * n_out);
  return Status::ok();
}

Status VulkanBackend::remove_positions(int32_t start, int32_t end, int32_t n_pos) {
  return remove_seq_positions(0, start, end, n_pos);
}

Status VulkanBackend::remove_seq_positions(int32_t seq, int32_t start, int32_t end, int32_t n_pos) {
  State& s = *s_;
  if (!s.graph || !s.shift) return Status::error(EMBER_ERR_INTERNAL, "vulkan: remove_positions before prepare");
  if (start < 0 || end < start || end > n_pos || n_pos > s.graph->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: remove [%d, %d) of %d positions", start, end, n_pos);
  }
  if (seq < 0 || seq >= s.graph->n_seqs) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: remove: sequence %d outside 0..%d", seq,
                         s.graph->n_seqs - 1);
  }
  if (start == end || end == n_pos) return Status::ok();  // nothing moves
  return s.shift->run(seq, start, end, n_pos);
}

Status VulkanBackend::copy_seq(int32_t src, int32_t dst, int32_t n_pos, int32_t src_positions) {
  State& s = *s_;
  if (!s.graph) return Status::error(EMBER_ERR_INTERNAL, "vulkan: copy_seq before prepare");
  const Graph& g = *s.graph;
  if (src < 0 || src >= g.n_seqs || dst < 0 || dst >= g.n_seqs || n_pos < 0 || n_pos > g.context ||
      n_pos > src_positions) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "vulkan: copy of %d positions from sequence %d (holding %d) to %d (sequences 0..%d)", n_pos,
                         src, src_positions, dst, g.n_seqs - 1);
  }
  if (src == dst || n_pos == 0) return Status::ok();
  // Every layer's keys and values, rows copied as stored (no re-rotation:
  // the positions stay), in one submit.
  const vk::VkApi& a = s.dev->api();
  EMBER_VK_TRY(a.vkResetCommandBuffer(s.cb_copy, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_TRY(a.vkBeginCommandBuffer(s.cb_copy, &bi), "vkBeginCommandBuffer");
  // The last step's cache writes before the copies; the copies before the
  // next step's reads.
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  a.vkCmdPipelineBarrier(s.cb_copy, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  const uint64_t ctx = static_cast<uint64_t>(g.context), rows = static_cast<uint64_t>(n_pos);
  for (uint32_t l = 0; l < g.hparams.n_layers; ++l) {
    for (bool values : {false, true}) {
      const uint64_t row_bytes = 4ull * (values ? s.bufs.v_row_words : s.bufs.k_row_words);
      const VkBufferCopy region{src * ctx * row_bytes, dst * ctx * row_bytes, rows * row_bytes};
      const VkBuffer buf = values ? s.bufs.v[l].buffer : s.bufs.k[l].buffer;
      a.vkCmdCopyBuffer(s.cb_copy, buf, buf, 1, &region);
    }
  }
  a.vkCmdPipelineBarrier(s.cb_copy, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
  EMBER_VK_TRY(a.vkEndCommandBuffer(s.cb_copy), "vkEndCommandBuffer");
  return s.dev->submit_and_wait(s.cb_copy);
}

uint64_t VulkanBackend::device_bytes_allocated() const { return s_->allocated_bytes(); }

uint32_t VulkanBackend::batch_recordings() const { return s_->batch_records; }

namespace {

// Copies `bytes` bytes of `src` from `offset` to host memory `out` (test hooks).
Status read_buffer(vk::Device& dev, const Buffer& src, uint64_t offset, uint64_t bytes, void* out) {
  const vk::VkApi& a = dev.api();
  EMBER_ASSIGN_OR_RETURN(Buffer host, vk::create_buffer(dev, bytes, true, "a readback buffer"));
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = dev.command_pool();
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  VkResult r = a.vkAllocateCommandBuffers(dev.device(), &cai, &cb);
  Status st = r == VK_SUCCESS ? Status::ok() : vk::vk_status(r, "vkAllocateCommandBuffers");
  if (st.is_ok()) {
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    a.vkBeginCommandBuffer(cb, &bi);
    VkBufferCopy region{offset, 0, bytes};
    a.vkCmdCopyBuffer(cb, src.buffer, host.buffer, 1, &region);
    a.vkEndCommandBuffer(cb);
    st = dev.submit_and_wait(cb);
    if (st.is_ok()) std::memcpy(out, host.mapped, bytes);
    a.vkFreeCommandBuffers(dev.device(), dev.command_pool(), 1, &cb);
  }
  vk::destroy_buffer(dev, &host);
  return st;
}

}  // namespace

Status VulkanBackend::read_activation(int32_t id, int32_t rows, float* out) {
  State& s = *s_;
  if (!s.graph || id < 0 || id >= static_cast<int32_t>(s.bufs.acts.size()) || rows <= 0 ||
      rows > s.graph->activations[id].rows) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: read_activation(%d, %d) outside the graph", id, rows);
  }
  const uint64_t bytes = static_cast<uint64_t>(s.graph->activations[id].cols) * rows * 4;
  return read_buffer(*s.dev, s.bufs.acts[id], 0, bytes, out);
}

uint32_t VulkanBackend::upload_submits() const { return s_->upload_submits; }

Status VulkanBackend::read_kv(int32_t layer, bool values, int32_t rows, uint8_t* out) {
  State& s = *s_;
  if (!s.graph || layer < 0 || layer >= static_cast<int32_t>(s.bufs.k.size()) || rows <= 0 ||
      rows > s.graph->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: read_kv(%d, %d) outside the graph", layer, rows);
  }
  const KvType t = values ? s.graph->kv_type_v : s.graph->kv_type_k;
  const uint32_t words = values ? s.bufs.v_row_words : s.bufs.k_row_words;
  const uint32_t kv_dim = s.graph->hparams.kv_dim();
  EMBER_ASSIGN_OR_RETURN(uint64_t row_bytes, kv_row_bytes(t, kv_dim));
  std::vector<uint32_t> dev_rows(static_cast<size_t>(words) * rows);
  EMBER_TRY(read_buffer(*s.dev, values ? s.bufs.v[layer] : s.bufs.k[layer], 0, dev_rows.size() * 4, dev_rows.data()));
  for (int32_t r = 0; r < rows; ++r) vk::kv_row_to_host(t, dev_rows.data() + r * words, kv_dim, out + r * row_bytes);
  return Status::ok();
}

Status VulkanBackend::write_kv(int32_t layer, bool values, int32_t rows, const uint8_t* in) {
  State& s = *s_;
  if (!s.graph || layer < 0 || layer >= static_cast<int32_t>(s.bufs.k.size()) || rows <= 0 ||
      rows > s.graph->context) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "vulkan: write_kv(%d, %d) outside the graph", layer, rows);
  }
  const KvType t = values ? s.graph->kv_type_v : s.graph->kv_type_k;
  const uint32_t words = values ? s.bufs.v_row_words : s.bufs.k_row_words;
  const uint32_t kv_dim = s.graph->hparams.kv_dim();
  EMBER_ASSIGN_OR_RETURN(uint64_t row_bytes, kv_row_bytes(t, kv_dim));
  std::vector<uint32_t> dev_rows(static_cast<size_t>(words) * rows);
  for (int32_t r = 0; r < rows; ++r) vk::kv_row_from_host(t, in + r * row_bytes, kv_dim, dev_rows.data() + r * words);
  vk::Uploader up(*s.dev);
  EMBER_TRY(up.upload(dev_rows.data(), dev_rows.size() * 4, values ? s.bufs.v[layer] : s.bufs.k[layer], 0));
  return up.flush();
}

}  // namespace ember

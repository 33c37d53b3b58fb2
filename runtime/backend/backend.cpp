// What the runtime does with the backend entries, whichever are built: look
// one up, make its executor, check a graph against its capabilities, choose
// for `auto`; and the executor's optional methods' defaults. The table
// itself is backends/backend_registry.cpp.
#include "backend/backend.h"

#include <cstdio>

namespace ember {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::Cpu: return "cpu";
    case BackendKind::Vulkan: return "vulkan";
  }
  return "unknown";
}

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
                         backend_kind_name(kind));
  }
  return e->create(options);
}

Status check_capabilities(const BackendEntry& entry, const Graph& graph) {
  const BackendCaps& c = entry.caps;
  if (graph.n_seqs > 1 && !c.batched_sequences) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "%s: batched decoding (%d sequences in one session) is not supported by this backend",
                         entry.name, graph.n_seqs);
  }
  for (KvType t : {graph.kv_type_k, graph.kv_type_v}) {
    if (static_cast<unsigned>(t) >= 32 || !(c.kv_types & kv_type_bit(t))) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "%s: kv type %s is not supported by this backend", entry.name,
                           kv_type_name(t));
    }
  }
  for (const WeightRef& w : graph.weights) {
    if (static_cast<unsigned>(w.dtype) >= 32 || !(c.weight_types & dtype_bit(w.dtype))) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "%s: weight '%s' has type %s, which this backend does not read",
                           entry.name, w.name, dtype_name(w.dtype));
    }
  }
  if (!c.sliding_window_rings) {
    for (int32_t l = 0; l < static_cast<int32_t>(graph.hparams.n_layers); ++l) {
      if (kv_layer_ring(graph, l)) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "%s: layer %d's sliding-window cache is a ring of %d rows; this backend keeps every "
                             "position",
                             entry.name, l, kv_layer_rows(graph, l));
      }
    }
  }
  return Status::ok();
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

Status Backend::set_activation_stats(ActivationStats*) {
  return Status::error(EMBER_ERR_UNSUPPORTED,
                       "the %s backend does not collect activation statistics (imatrix): use the cpu backend", name());
}

}  // namespace ember

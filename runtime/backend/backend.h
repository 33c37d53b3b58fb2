// The interface every backend implements (ARCHITECTURE.md principle 4): the model
// describes its forward pass once as a Graph (core/graph.h), a list of ops
// over weights and activations, and a backend prepares it once per session,
// then executes it each step with only the positions and token ids changing.
//
// It lives with the runtime that defines it (runtime/backend/, the layer
// `backend`): memory, model and api include it from below, and the
// backends in backends/ implement it. The one table that names the built
// backends (backend_entries) is defined there, in backends/backend_registry.cpp,
// under the build options; nothing here depends on which are built. Backends
// include only runtime/core, this folder, platforms/ and ember.h (the build
// enforces it: docs/decisions.md "Layers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_options.h"
#include "core/activation_stats.h"
#include "core/arena_layout.h"
#include "core/dtype.h"
#include "core/graph.h"
#include "core/kv_type.h"
#include "core/status.h"

namespace ember {

// The executor: one per session, made by an entry's create(). Planning
// never needs one (see BackendEntry).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Binds the graph to the session's arena laid out by `layout` (the memory
  // plan's offsets). Called once; the backend keeps pointers into the arena
  // (lifetime: the session).
  virtual Status prepare(const Graph& graph, const ArenaLayout& layout, uint8_t* arena) = 0;
  // Runs one step. Allocates nothing.
  virtual Status execute(const StepArgs& step) = 0;
  // Removes cache positions [start, end) of the first n_pos: later rows move
  // down by end - start and their keys are re-rotated for their new
  // positions (context shifting).
  virtual Status remove_positions(int32_t start, int32_t end, int32_t n_pos) = 0;
  // Batched graphs (Graph::n_seqs > 1): the same for sequence `seq`
  // (default: sequence 0 only, through remove_positions).
  virtual Status remove_seq_positions(int32_t seq, int32_t start, int32_t end, int32_t n_pos);
  // Copies positions 0 .. n_pos - 1 of sequence `src`'s cache (which holds
  // src_positions) to sequence `dst` (a shared prompt prefix reused).
  // Default: EMBER_ERR_UNSUPPORTED.
  virtual Status copy_seq(int32_t src, int32_t dst, int32_t n_pos, int32_t src_positions);
  // Copies the first `rows` rows of layer `layer`'s key (values: value) cache
  // out to `out`, or in from `in`, in the CPU's row format (kv_row_bytes of
  // the cache's type per row), for saved sessions. 0 < rows <= context.
  // Default: EMBER_ERR_UNSUPPORTED.
  virtual Status read_kv(int32_t layer, bool values, int32_t rows, uint8_t* out);
  virtual Status write_kv(int32_t layer, bool values, int32_t rows, const uint8_t* in);
  // Activation statistics (core/activation_stats.h): while `stats` is set,
  // each step adds every matmul's input rows to it; null stops. The stats
  // outlive the steps that fill them (the session owns them). Default:
  // EMBER_ERR_UNSUPPORTED, naming the backend.
  virtual Status set_activation_stats(ActivationStats* stats);
  // One line on what runs where: "cpu (avx512vnni, 2 threads)".
  virtual std::string describe() const { return name(); }
};

// What runs a session. The request "choose for me" is not a kind: it is
// SessionOptions::backend left empty (docs/decisions.md "Backends").
enum class BackendKind : uint8_t { Cpu = 0, Vulkan = 1 };

// "cpu", "vulkan" (whether or not it is built), "unknown".
const char* backend_kind_name(BackendKind kind);

enum class DeviceType : uint8_t { Cpu, IntegratedGpu, DiscreteGpu, Virtual, Other };

// "cpu", "integrated gpu", "discrete gpu", "virtual", "other".
const char* device_type_name(DeviceType type);

// What an entry's probe found, without opening a device.
struct DeviceInfo {
  bool available = false;
  DeviceType type = DeviceType::Other;
  std::string name;           // "AMD EPYC 9V84", "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
  uint64_t memory_bytes = 0;  // host RAM for the cpu; the largest device-local heap for a GPU
  std::string reason;         // why not, when !available
};

// What a backend runs, asked of its entry (never inferred from its kind):
// the session, `ember backends` and the tests read these. supports(graph)
// still has the last word on a graph (op parameters, sizes).
struct BackendCaps {
  // Sliding-window layers as rings of window + max_batch rows
  // (set_sliding_kv_rings); without it every layer keeps the whole context.
  bool sliding_window_rings = false;
  // Several sequences in one session (Graph::n_seqs > 1: StepArgs seqs,
  // positions and out_rows; remove_seq_positions; copy_seq).
  bool batched_sequences = false;
  // Bit (1 << KvType) for each KV cache type it stores.
  uint32_t kv_types = 0;
  // Bit (1 << DType) for each weight type it reads (in the layouts the
  // converter writes).
  uint32_t weight_types = 0;
};
constexpr uint32_t kv_type_bit(KvType t) { return 1u << static_cast<unsigned>(t); }
constexpr uint32_t dtype_bit(DType t) { return 1u << static_cast<unsigned>(t); }
static_assert(kDTypeCount <= 32, "BackendCaps::weight_types holds a bit per DType");

// One backend kind: what it is, what it runs and what it needs, each
// answered without opening a device, and how to make its executor. The
// entries live in one explicit table (backends/backend_registry.cpp;
// STYLE.md: no self-registration). The planning queries are pure functions
// of the graph and the options; they are what Session::plan / ember_plan
// report.
struct BackendEntry {
  const char* name;  // "cpu", "vulkan"
  BackendKind kind;
  BackendCaps caps;
  // The device this backend would run on. May load a driver and enumerate
  // devices (cached process-wide); never creates a logical device nor
  // allocates device memory.
  DeviceInfo (*probe)();
  // OK when the backend runs every op, weight dtype and KV type of `graph`;
  // else EMBER_ERR_UNSUPPORTED naming the first one it does not.
  Status (*supports)(const Graph& graph);
  // Working memory beyond KV cache and activations (per-thread rows,
  // tables): the plan's scratch_bytes.
  uint64_t (*scratch_bytes)(const Graph& graph, const BackendOptions& options);
  // Host copies of weights made at prepare (repacked or converted): the
  // plan's weights_resident_bytes.
  uint64_t (*resident_weight_bytes)(const Graph& graph, const BackendOptions& options);
  // Device memory prepare allocates (GPU backends; 0 on the CPU). A device
  // backend keeps KV cache and activations there, not in the host arena.
  uint64_t (*device_bytes)(const Graph& graph, const BackendOptions& options);
  // The executor. May open a device: EMBER_ERR_UNSUPPORTED when none is
  // usable (the message says why).
  Result<std::unique_ptr<Backend>> (*create)(const BackendOptions& options);
};

// Every backend built into this library, the cpu first. Lifetime: the
// process. Defined by the registry (backends/backend_registry.cpp), the one
// place that names the backends under their build options.
const std::vector<BackendEntry>& backend_entries();

// Whether `graph` asks for nothing outside the entry's capabilities: more
// than one sequence, its KV types, its weight types, sliding-window rings.
// EMBER_ERR_UNSUPPORTED names the first (the entry's name first).
Status check_capabilities(const BackendEntry& entry, const Graph& graph);

// The entry of `kind`, or null when it is not built into this library.
const BackendEntry* find_backend(BackendKind kind);

// The executor of `kind`: EMBER_ERR_UNSUPPORTED when not built or no device.
Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options);

// `auto`: what the chooser knows of one candidate (a pure function of these,
// so it is tested with made-up probes).
struct AutoCandidate {
  BackendKind kind = BackendKind::Cpu;
  const char* name = "";
  DeviceInfo device;
  Status supported;           // supports(graph)
  uint64_t device_bytes = 0;  // device_bytes(graph, options)
};

struct AutoChoice {
  BackendKind kind = BackendKind::Cpu;
  std::string note;  // why the cpu, when it is the cpu: "auto: ...; using the cpu backend"
};

// Device memory left free beyond device_bytes for the driver, pipelines and
// descriptor pools: an eighth of the need, at least 256 MiB.
uint64_t auto_memory_margin(uint64_t device_bytes);

// The first candidate on a discrete or integrated GPU (never a cpu or
// virtual device such as lavapipe) that is available, supports the graph
// and has device memory >= device_bytes + auto_memory_margin; else the cpu,
// with the reason for each GPU candidate passed over.
AutoChoice choose_auto(const std::vector<AutoCandidate>& candidates);

}  // namespace ember

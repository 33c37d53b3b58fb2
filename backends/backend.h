// The interface every backend implements (DESIGN.md principle 4): the model
// describes its forward pass once as a Graph — a list of ops over weights and
// activations — and a backend prepares it once per session, then executes it
// each step with only the positions and token ids changing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/status.h"
#include "format/dtype.h"
#include "format/layout.h"
#include "kv/kv_cache.h"
#include "model/hparams.h"

namespace ember {

struct MemoryPlan;

// A weight as stored in the mapped file: [rows, cols], rows contiguous.
struct WeightRef {
  const char* name = "";
  DType dtype = DType::F32;
  Layout layout = Layout::RowMajor;  // Rows16: see format/layout.h
  const uint8_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t size = 0;
};

enum class OpKind : uint8_t {
  Embed,      // out[i] = weight row tokens[i]
  RmsNorm,    // out[i] = a[i] / rms(a[i]) * weight
  MatMul,     // out[i] = weight · a[i]   (weight [rows, cols]: out has rows cols)
  Rope,       // a[i] rotated in place for position pos + i
  Attention,  // k = b, v = c stored at pos + i in the layer's cache, then
              // out[i] = causal grouped-query attention of query a[i]
  Add,        // out[i] = a[i] + b[i] (out may be a)
  SwiGLU,     // out[i] = silu(a[i]) * b[i] (out may be a)
};

const char* op_name(OpKind kind);

struct Op {
  OpKind kind = OpKind::Add;
  int32_t out = -1;      // activation ids
  int32_t a = -1;
  int32_t b = -1;
  int32_t c = -1;
  int32_t weight = -1;   // index into Graph::weights
  int32_t layer = -1;    // Attention: which KV cache
  bool last_row = false; // read only the step's last row of `a` (the logits head)
};

struct ActivationDesc {
  const char* name = "";
  int64_t cols = 0;      // f32 elements per row
  int32_t rows = 0;      // rows at most: the session's max batch, or 1
};

// One session's forward pass. Built by the model (model/llama_graph.cpp).
struct Graph {
  HParams hparams;
  int32_t max_batch = 0;   // most tokens one step processes
  int32_t context = 0;     // positions the KV cache holds
  KvType kv_type_k = KvType::F32;
  KvType kv_type_v = KvType::F32;
  std::vector<WeightRef> weights;
  std::vector<ActivationDesc> activations;
  std::vector<Op> ops;
  int32_t logits = -1;     // activation holding [1, vocab_size] after a step
};

// One step: n_tokens tokens at positions pos .. pos + n_tokens - 1.
struct StepArgs {
  const int32_t* tokens = nullptr;
  int32_t n_tokens = 0;
  int32_t pos = 0;
  float* logits = nullptr;  // vocab_size floats for the last token, or null
};

struct BackendOptions {
  int32_t n_threads = 1;
  // GPU backends' pipeline cache on disk (the Vulkan backend's
  // pipeline_cache.h): off when false; an empty folder means the default.
  bool vulkan_pipeline_cache = true;
  std::string vulkan_pipeline_cache_dir;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Working memory the backend needs beyond KV cache and activations
  // (per-thread rows, tables). Counted by the plan as scratch_bytes.
  virtual uint64_t scratch_bytes(const Graph& graph) const = 0;
  // Binds the graph to the session's arena laid out by `plan`. Called once;
  // the backend keeps pointers into the arena (lifetime: the session).
  virtual Status prepare(const Graph& graph, const MemoryPlan& plan, uint8_t* arena) = 0;
  // Runs one step. Allocates nothing.
  virtual Status execute(const StepArgs& step) = 0;
  // Removes cache positions [start, end) of the first n_pos: later rows move
  // down by end - start and their keys are re-rotated for their new
  // positions (context shifting).
  virtual Status remove_positions(int32_t start, int32_t end, int32_t n_pos) = 0;

  // Optional capabilities, with defaults.
  // Host bytes of weight copies the backend makes at prepare (repacked or
  // converted weights), counted by the plan as weights_resident_bytes.
  virtual uint64_t resident_weight_bytes(const Graph& graph) const { return 0; }
  // Device memory the backend allocates (GPU backends), reported by the plan.
  virtual uint64_t device_bytes(const Graph& graph) const { return 0; }
  // One line on what runs where: "cpu (avx512vnni, 2 threads)".
  virtual std::string describe() const { return name(); }
};

enum class BackendKind : uint8_t { Cpu = 0, Vulkan = 1 };

// The explicit registry (STYLE.md: no self-registration in a static library).
Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options);

}  // namespace ember

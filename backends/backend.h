// The interface every backend implements (DESIGN.md principle 4): the model
// describes its forward pass once as a Graph (core/graph.h), a list of ops
// over weights and activations, and a backend prepares it once per session,
// then executes it each step with only the positions and token ids changing.
// Backends include only runtime/core, platforms/ and ember.h (the build
// enforces it: docs/decisions.md "Layers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/arena_layout.h"
#include "core/graph.h"
#include "core/status.h"

namespace ember {

// The CPU backend's thread pool (backends/cpu/thread_pool.h), opaque here: a
// host creates one and may run several sessions on it (C: ember_threadpool).
class ThreadPool;
// n_threads in 1..1024. Errors: EMBER_ERR_INVALID_ARGUMENT (the count),
// EMBER_ERR_NO_MEMORY (the OS refused a thread).
Result<std::shared_ptr<ThreadPool>> create_thread_pool(int32_t n_threads);
int32_t thread_pool_threads(const ThreadPool& pool);

struct BackendOptions {
  int32_t n_threads = 1;
  // The CPU backend runs on this pool when set (n_threads is then the pool's
  // size), else on its own. Shared: every session on it holds a reference.
  std::shared_ptr<ThreadPool> thread_pool;
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

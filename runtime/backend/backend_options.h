// What a session hands its backend: each backend's options as that
// backend's own struct, so the interface carries no field of one backend
// (STYLE.md: no #if EMBER_VULKAN in core types; a backend that is not built
// simply never reads its struct). The runtime fills them from
// SessionOptions; the C API's ember_session_options maps onto them
// (runtime/api/c_api.cpp), its layout unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace ember {

// The CPU backend's thread pool (backends/cpu/thread_pool.h), opaque here: a
// host creates one and may run several sessions on it (C: ember_threadpool).
class ThreadPool;
// Defined by the cpu backend (backends/cpu/thread_pool.cpp).
// n_threads in 1..1024. Errors: EMBER_ERR_INVALID_ARGUMENT (the count),
// EMBER_ERR_NO_MEMORY (the OS refused a thread).
Result<std::shared_ptr<ThreadPool>> create_thread_pool(int32_t n_threads);
int32_t thread_pool_threads(const ThreadPool& pool);

// The cpu backend (backends/cpu/cpu_backend.h).
struct CpuOptions {
  // Threads; 0: one per physical core. Ignored when thread_pool is set.
  int32_t n_threads = 0;
  // Runs on this pool when set (its size is the thread count), else on a
  // pool of its own. Shared: every session on it holds a reference, and
  // sessions sharing it take turns, a step at a time.
  std::shared_ptr<ThreadPool> thread_pool;
};

// The vulkan backend (backends/vulkan/vulkan_backend.h).
struct VulkanOptions {
  // The pipeline cache on disk (backends/vulkan/pipeline_cache.h): off when
  // false or when EMBER_VULKAN_PIPELINE_CACHE=0; `pipeline_cache_dir` empty
  // means $XDG_CACHE_HOME/ember or ~/.cache/ember.
  bool pipeline_cache = true;
  std::string pipeline_cache_dir;
  // Accept a CPU Vulkan device (Mesa lavapipe): for tests and CI. Also
  // enabled by EMBER_VULKAN_ALLOW_CPU=1 in the environment.
  bool allow_cpu = false;
  // Use the portable shaders (shared-memory reductions, Vulkan 1.0) even
  // where the device has subgroup arithmetic. Also forced by
  // EMBER_VULKAN_PORTABLE=1 in the environment.
  bool portable_shaders = false;
};

// Every backend's options; each backend reads its own member.
struct BackendOptions {
  CpuOptions cpu;
  VulkanOptions vulkan;
};

}  // namespace ember

// Helpers for the Vulkan suite: open the backend on lavapipe (or the device
// VK_ICD_FILENAMES names), run one Graph on a backend with its own arena,
// and build tiny graphs by hand.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "memory/plan.h"
#include "test_data.h"

#if EMBER_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ember::test {

#if EMBER_VULKAN
// The Vulkan backend on a CPU device if need be, or null when none exists:
// then the test is skipped with a message, or fails under
// EMBER_REQUIRE_TEST_DATA=1 (CI must not skip silently).
inline std::unique_ptr<VulkanBackend> open_vulkan() {
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES") && std::filesystem::exists(lvp)) setenv("VK_ICD_FILENAMES", lvp, 1);
  VulkanOptions vo;
  vo.allow_cpu = true;
  auto r = VulkanBackend::create(BackendOptions(), vo);
  if (!r.is_ok()) {
    if (test_data_required()) {
      FAIL("no Vulkan device (EMBER_REQUIRE_TEST_DATA=1): " << r.status().message());
    } else {
      MESSAGE("skipped: no Vulkan device: " << r.status().message());
    }
    return nullptr;
  }
  static bool said = false;
  if (!said) {
    MESSAGE("Vulkan device: " << r.value()->describe());
    said = true;
  }
  return std::move(r).value();
}
#endif

// One backend running one graph in its own arena.
struct Runner {
  Graph graph;
  MemoryPlan plan;
  std::unique_ptr<Backend> backend;
  uint8_t* arena = nullptr;

  ~Runner() {
    backend.reset();
    if (arena) ::operator delete(arena, std::align_val_t(kArenaAlignment));
  }
  Status init(const Graph& g, std::unique_ptr<Backend> b) {
    graph = g;
    backend = std::move(b);
    EMBER_ASSIGN_OR_RETURN(plan, plan_memory(graph, *backend));
    arena = static_cast<uint8_t*>(::operator new(plan.arena_bytes + 64, std::align_val_t(kArenaAlignment)));
    return backend->prepare(graph, plan, arena);
  }
  Status step(const std::vector<int32_t>& tokens, int32_t pos, std::vector<float>* logits) {
    StepArgs s;
    s.tokens = tokens.data();
    s.n_tokens = static_cast<int32_t>(tokens.size());
    s.pos = pos;
    if (logits) logits->assign(graph.hparams.vocab_size, 0.0f);
    s.logits = logits ? logits->data() : nullptr;
    return backend->execute(s);
  }
  // Rows of an activation (CPU: from the arena).
  std::vector<float> cpu_activation(int32_t id, int32_t rows) const {
    const float* p = reinterpret_cast<const float*>(arena + plan.activation_offsets[id]);
    return std::vector<float>(p, p + graph.activations[id].cols * rows);
  }
};

inline std::unique_ptr<Backend> cpu_backend() {
  auto r = create_backend(BackendKind::Cpu, BackendOptions());
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

inline int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

}  // namespace ember::test

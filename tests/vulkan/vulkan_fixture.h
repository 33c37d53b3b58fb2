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

#include "backend/backend.h"
#include "memory/plan.h"
#include "model/llama_graph.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"

#if EMBER_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ember::test {

#if EMBER_VULKAN
// The shader variant open_vulkan() asks for: false lets the capability probe
// choose (subgroup reductions on lavapipe), true forces the portable shaders.
inline bool g_portable_shaders = false;

// Sets g_portable_shaders for a scope: `for (bool p : {false, true}) {
// ShaderVariant v(p); ... }` runs a test on both variants.
struct ShaderVariant {
  explicit ShaderVariant(bool portable) { g_portable_shaders = portable; }
  ~ShaderVariant() { g_portable_shaders = false; }
};

// The Vulkan backend on a CPU device if need be, or null when none exists:
// then the test is skipped with a message, or fails under
// EMBER_REQUIRE_TEST_DATA=1 (CI must not skip silently).
inline std::unique_ptr<VulkanBackend> open_vulkan() {
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES") && std::filesystem::exists(lvp)) setenv("VK_ICD_FILENAMES", lvp, 1);
  VulkanOptions vo;
  vo.allow_cpu = true;
  vo.portable_shaders = g_portable_shaders;
  // The pipeline cache in a scratch directory, never the user's.
  vo.pipeline_cache_dir = temp_dir("vulkan-pipelines");
  auto r = VulkanBackend::create(vo);
  if (!r.is_ok()) {
    if (test_data_required()) {
      FAIL("no Vulkan device (EMBER_REQUIRE_TEST_DATA=1): " << r.status().message());
    } else {
      MESSAGE("skipped: no Vulkan device: " << r.status().message());
    }
    return nullptr;
  }
  static bool said[2] = {false, false};
  if (!said[g_portable_shaders]) {
    MESSAGE("Vulkan device: " << r.value()->describe());
    said[g_portable_shaders] = true;
  }
  return std::move(r).value();
}
#endif

// What the tests plan and make backends with: the cpu on one thread.
inline BackendOptions test_backend_options() {
  BackendOptions o;
  o.cpu.n_threads = 1;
  return o;
}

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
    const BackendEntry* entry = nullptr;
    for (const BackendEntry& e : backend_entries()) {
      if (std::string(e.name) == backend->name()) entry = &e;
    }
    if (!entry) return Status::error(EMBER_ERR_INTERNAL, "no registry entry named %s", backend->name());
    EMBER_ASSIGN_OR_RETURN(plan, plan_memory(graph, *entry, test_backend_options()));
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
  auto r = create_backend(BackendKind::Cpu, test_backend_options());
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

// The same weights widened to f32, written as a model file.
inline Status write_widened(const ModelSpec& spec, const std::string& path) {
  ModelSpec wide = spec;
  std::vector<std::vector<float>> owned;
  owned.reserve(wide.tensors.size());
  for (TensorSource& t : wide.tensors) {
    if (t.dtype == DType::F32) continue;
    const int64_t cols = t.shape.back();
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    uint64_t row_bytes = 0;
    REQUIRE(dtype_bytes(t.dtype, cols, &row_bytes));
    owned.emplace_back(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(t.dtype, static_cast<const uint8_t*>(t.data) + r * row_bytes, owned.back().data() + r * cols,
                     cols);
    }
    t.dtype = DType::F32;
    t.data = owned.back().data();
    t.size = owned.back().size() * sizeof(float);
  }
  return write_model(wide, path);
}

// Deterministic values in [-1, 1).
inline uint64_t g_seed = 1;
inline float rnd() {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<float>((g_seed >> 40) & 0xffffff) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
}

// A graph under construction; owns its weights' bytes.
struct Builder {
  Graph g;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> store;

  Builder(uint32_t dim, uint32_t heads, uint32_t kv_heads, uint32_t vocab, int32_t context, int32_t max_batch) {
    g.hparams.dim = dim;
    g.hparams.hidden_dim = dim;
    g.hparams.n_layers = 1;
    g.hparams.n_heads = heads;
    g.hparams.n_kv_heads = kv_heads;
    g.hparams.vocab_size = vocab;
    g.hparams.max_seq_len = context;
    g.context = context;
    g.max_batch = max_batch;
  }
  int32_t weight(DType t, int64_t rows, int64_t cols, float scale = 1.0f, float offset = 0.0f) {
    uint64_t row_bytes = 0;
    REQUIRE(dtype_bytes(t, cols, &row_bytes));
    auto bytes = std::make_unique<std::vector<uint8_t>>(row_bytes * rows);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (auto& x : row) x = offset + scale * rnd();
      quantize_row(t, row.data(), bytes->data() + r * row_bytes, cols);
    }
    WeightRef w;
    w.name = "w";
    w.dtype = t;
    w.data = bytes->data();
    w.rows = rows;
    w.cols = cols;
    w.size = bytes->size();
    store.push_back(std::move(bytes));
    g.weights.push_back(w);
    return static_cast<int32_t>(g.weights.size() - 1);
  }
  int32_t act(int64_t cols, int32_t rows) {
    g.activations.push_back({"act", cols, rows});
    return static_cast<int32_t>(g.activations.size() - 1);
  }
  void op(OpKind kind, int32_t out, int32_t a, int32_t b = -1, int32_t c = -1, int32_t w = -1, int32_t layer = -1,
          bool last_row = false) {
    Op o;
    o.kind = kind;
    o.out = out;
    o.a = a;
    o.b = b;
    o.c = c;
    o.weight = w;
    o.layer = layer;
    o.last_row = last_row;
    // Parameters from the hparams as they are now (set them before the ops).
    if (kind == OpKind::RmsNorm) o.params.rmsnorm = llama_rmsnorm_params(g.hparams);
    if (kind == OpKind::Rope) {
      const uint32_t hd = g.hparams.head_dim();
      o.params.rope = llama_rope_params(g.hparams, hd ? static_cast<uint32_t>(g.activations[a].cols / hd) : 0);
    }
    if (kind == OpKind::Attention) o.params.attention = llama_attention_params(g.hparams);
    g.ops.push_back(o);
  }
  // x = embedding of the tokens (f32 table of vocab x dim, or `table_type`).
  int32_t embed(DType table_type = DType::F32, int64_t cols = 0) {
    const int64_t c = cols ? cols : g.hparams.dim;
    const int32_t x = act(c, g.max_batch);
    op(OpKind::Embed, x, -1, -1, -1, weight(table_type, g.hparams.vocab_size, c));
    return x;
  }
  // The logits tail every graph needs: rmsnorm of the last row, then a matmul.
  void tail(int32_t x) {
    const int32_t last = act(g.activations[x].cols, 1);
    const int32_t logits = act(g.hparams.vocab_size, 1);
    op(OpKind::RmsNorm, last, x, -1, -1, weight(DType::F32, 1, g.activations[x].cols, 0.1f, 1.0f), -1, true);
    op(OpKind::MatMul, logits, last, -1, -1, weight(DType::F32, g.hparams.vocab_size, g.activations[x].cols));
    g.logits = logits;
  }
};

}  // namespace ember::test

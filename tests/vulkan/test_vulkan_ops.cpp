// Every Vulkan op against the CPU backend on tiny hand-built graphs, with
// per-dtype tolerances, on shapes that hit every remainder (token tiles of 8,
// odd columns, more positions than one attention chunk).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "vulkan/vulkan_fixture.h"

#if EMBER_VULKAN

namespace {

using namespace ember;
using ember::test::Runner;

uint64_t g_seed = 1;
float rnd() {
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

struct Step {
  int32_t n;
};

// Runs `steps` on both backends and compares `check` activations after each
// step (all rows of the step) and the logits.
void compare(const Graph& g, const std::vector<int32_t>& steps, const std::vector<int32_t>& check, double tol) {
  auto vk = ember::test::open_vulkan();
  if (!vk) return;
  VulkanBackend* vkb = vk.get();
  Runner cpu, gpu;
  REQUIRE(cpu.init(g, ember::test::cpu_backend()).is_ok());
  Status st = gpu.init(g, std::move(vk));
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  int32_t pos = 0;
  for (int32_t n : steps) {
    std::vector<int32_t> tokens(n);
    for (int32_t i = 0; i < n; ++i) tokens[i] = (pos * 7 + i * 13 + 3) % static_cast<int32_t>(g.hparams.vocab_size);
    std::vector<float> lc, lg;
    REQUIRE(cpu.step(tokens, pos, &lc).is_ok());
    st = gpu.step(tokens, pos, &lg);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    for (int32_t id : check) {
      const int32_t rows = g.activations[id].rows == 1 ? 1 : n;
      std::vector<float> got(g.activations[id].cols * rows);
      REQUIRE(vkb->read_activation(id, rows, got.data()).is_ok());
      const std::vector<float> want = cpu.cpu_activation(id, rows);
      CAPTURE(id);
      CAPTURE(pos);
      CAPTURE(n);
      CHECK(ember::test::max_abs_diff(got, want) < tol);
    }
    CHECK(ember::test::max_abs_diff(lg, lc) < tol * 10);
    pos += n;
  }
}

const DType kWeightTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0};

}  // namespace

TEST_SUITE("vulkan") {

TEST_CASE("vulkan: embedding lookup for every weight type") {
  for (DType t : kWeightTypes) {
    CAPTURE(std::string(dtype_name(t)));
    Builder b(64, 4, 2, 50, 32, 16);
    const int32_t x = b.embed(t);
    b.tail(x);
    compare(b.g, {1, 5, 11}, {x}, 1e-6);
  }
}

TEST_CASE("vulkan: matmul (mat-vec and mat-mat) for every weight type") {
  for (DType t : kWeightTypes) {
    CAPTURE(std::string(dtype_name(t)));
    // Float types: odd columns; quantized: whole blocks. 37 rows; 1, 5, 11
    // and 16 tokens cover the 8-token tiles and their remainders.
    const bool quant = t == DType::Q8_0 || t == DType::Q4_0;
    const int64_t cols = quant ? 96 : 70;
    Builder b(64, 4, 2, 40, 64, 16);
    const int32_t x = b.embed(DType::F32, cols);
    const int32_t y = b.act(37, 16);
    const int32_t wi = b.weight(t, 37, cols);
    b.op(OpKind::MatMul, y, x, -1, -1, wi);
    b.tail(y);
    // Against the CPU backend: its quantized kernels quantize the
    // activations to 8 bits (as llama.cpp does), the device keeps them f32,
    // so quantized weights get a looser bound there...
    compare(b.g, {1, 5, 11, 16}, {y}, quant ? 0.1 : 1e-4);

    // ...and a tight one against a plain double-precision reference.
    auto vk = ember::test::open_vulkan();
    if (!vk) return;
    VulkanBackend* vkb = vk.get();
    Runner gpu;
    REQUIRE(gpu.init(b.g, std::move(vk)).is_ok());
    const WeightRef& w = b.g.weights[wi];
    const WeightRef& table = b.g.weights[0];
    uint64_t row_bytes = 0;
    REQUIRE(dtype_bytes(w.dtype, cols, &row_bytes));
    std::vector<float> wrow(cols);
    int32_t pos = 0;
    for (int32_t n : {1, 5, 11, 16}) {
      std::vector<int32_t> tokens(n);
      for (int32_t i = 0; i < n; ++i) tokens[i] = (i * 17 + n) % 40;
      REQUIRE(gpu.step(tokens, pos, nullptr).is_ok());
      pos += n;
      std::vector<float> got(37 * n);
      REQUIRE(vkb->read_activation(y, n, got.data()).is_ok());
      double worst = 0;
      for (int32_t i = 0; i < n; ++i) {
        const float* xi = reinterpret_cast<const float*>(table.data) + tokens[i] * cols;
        for (int64_t r = 0; r < 37; ++r) {
          dequantize_row(w.dtype, w.data + r * row_bytes, wrow.data(), cols);
          double want = 0;
          for (int64_t c = 0; c < cols; ++c) want += static_cast<double>(wrow[c]) * xi[c];
          worst = std::max(worst, std::fabs(want - got[i * 37 + r]));
        }
      }
      CAPTURE(n);
      CHECK(worst < 1e-4);
    }
  }
}

TEST_CASE("vulkan: rmsnorm, add and swiglu") {
  Builder b(96, 4, 2, 40, 64, 12);
  const int32_t x = b.embed();
  const int32_t h = b.act(96, 12), y = b.act(96, 12);
  b.op(OpKind::RmsNorm, h, x, -1, -1, b.weight(DType::F32, 1, 96, 0.2f, 1.0f));
  b.op(OpKind::MatMul, y, h, -1, -1, b.weight(DType::F32, 96, 96));
  b.op(OpKind::Add, x, x, y);
  b.op(OpKind::SwiGLU, h, h, x);
  b.tail(h);
  compare(b.g, {1, 12, 3}, {x, y, h}, 1e-5);
}

TEST_CASE("vulkan: rope, adjacent and half styles") {
  for (RopeStyle style : {RopeStyle::Adjacent, RopeStyle::Half}) {
    Builder b(64, 4, 2, 40, 64, 8);
    b.g.hparams.rope_style = style;
    b.g.hparams.rope_theta = 500000.0f;
    const int32_t x = b.embed();
    b.op(OpKind::Rope, x, x);
    b.tail(x);
    compare(b.g, {3, 2, 1, 8, 1}, {x}, 1e-5);
  }
}

TEST_CASE("vulkan: attention over the device kv cache, f32 and f16, grouped heads") {
  struct Case {
    KvType k, v;
    int32_t context, max_batch;
    std::vector<int32_t> steps;
    double tol;
  };
  const Case cases[] = {
      {KvType::F32, KvType::F32, 64, 8, {7, 1, 1, 8, 1}, 1e-5},
      {KvType::F16, KvType::F16, 64, 8, {7, 1, 1, 8, 1}, 2e-3},
      {KvType::F32, KvType::F16, 64, 8, {5, 1}, 2e-3},
      // More positions than one 256-wide chunk of the shader's online softmax.
      {KvType::F32, KvType::F32, 320, 64, {64, 64, 64, 64, 17, 1, 1}, 5e-5},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(kv_type_name(c.k)));
    CAPTURE(std::string(kv_type_name(c.v)));
    CAPTURE(c.context);
    Builder b(64, 4, 2, 40, c.context, c.max_batch);
    b.g.kv_type_k = c.k;
    b.g.kv_type_v = c.v;
    const int32_t x = b.embed();
    const int32_t q = b.act(64, c.max_batch), k = b.act(32, c.max_batch), v = b.act(32, c.max_batch);
    const int32_t att = b.act(64, c.max_batch);
    b.op(OpKind::MatMul, q, x, -1, -1, b.weight(DType::F32, 64, 64));
    b.op(OpKind::MatMul, k, x, -1, -1, b.weight(DType::F32, 32, 64));
    b.op(OpKind::MatMul, v, x, -1, -1, b.weight(DType::F32, 32, 64));
    b.op(OpKind::Rope, q, q);
    b.op(OpKind::Rope, k, k);
    b.op(OpKind::Attention, att, q, k, v, -1, 0);
    b.tail(att);
    compare(b.g, c.steps, {att}, c.tol);
  }
}

TEST_CASE("vulkan: refusals are statuses, not crashes") {
  auto vk = ember::test::open_vulkan();
  if (!vk) return;
  VulkanBackend* vkb = vk.get();
  {
    // q8_0 keys are not supported on the device.
    Builder b(64, 4, 2, 40, 64, 8);
    b.g.kv_type_k = KvType::Q8_0;
    b.tail(b.embed());
    MemoryPlan plan;
    Status st = vkb->prepare(b.g, plan, nullptr);
    CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(st.message().find("q8_0") != std::string::npos);
  }
  {
    // A cache far larger than any device: a memory or size status.
    Builder b(4096, 32, 32, 40, 1 << 20, 1);
    b.g.hparams.n_layers = 64;
    b.tail(b.embed());
    MemoryPlan plan;
    auto vk2 = ember::test::open_vulkan();
    REQUIRE(vk2);
    Status st = vk2->prepare(b.g, plan, nullptr);
    CHECK(!st.is_ok());
    CHECK((st.code() == EMBER_ERR_NO_MEMORY || st.code() == EMBER_ERR_UNSUPPORTED));
    MESSAGE("oversized session: " << st.message());
  }
  {
    // Bad steps after a good prepare.
    Builder b(64, 4, 2, 40, 16, 4);
    b.tail(b.embed());
    Runner r;
    REQUIRE(r.init(b.g, std::move(vk)).is_ok());
    CHECK(r.step({1, 2, 3, 4, 5}, 0, nullptr).code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(r.step({1}, 16, nullptr).code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(r.step({40}, 0, nullptr).code() == EMBER_ERR_TOKEN_OUT_OF_RANGE);
    CHECK(r.backend->remove_positions(0, 1, 2).code() == EMBER_ERR_UNSUPPORTED);
    CHECK(r.step({39}, 0, nullptr).is_ok());
    CHECK(r.backend->device_bytes(r.graph) > 0);
  }
}

}  // TEST_SUITE

#else

TEST_CASE("vulkan: not built (EMBER_VULKAN=OFF)") { MESSAGE("the Vulkan backend is not built into this library"); }

#endif

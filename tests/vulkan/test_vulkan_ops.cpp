// Every Vulkan op against the CPU backend on tiny hand-built graphs, with
// per-dtype tolerances, on shapes that hit every remainder (token tiles of 8,
// odd columns, more positions than one attention chunk).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "vulkan/vulkan_fixture.h"

#if EMBER_VULKAN

namespace {

using namespace ember;
using ember::test::Builder;
using ember::test::Runner;

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

// Every DType: the float types, Q8_0/Q4_0 (repacked at upload) and GGUF's
// other block types (read as stored).
const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};
static_assert(sizeof(kWeightTypes) / sizeof(kWeightTypes[0]) == kDTypeCount);

// Columns for a weight of type t: odd for the float types, else a few whole
// blocks (three 32-blocks, or two 256-element super-blocks, so a row holds
// more than one block and blocks start at every byte alignment the odd block
// sizes give).
int64_t test_cols(DType t, int64_t float_cols) {
  if (!dtype_is_quantized(t)) return float_cols;
  return dtype_block_elements(t) == kQuantBlock ? 96 : 2 * kSuperBlock;
}

// One weight type through a matmul, against the CPU and a double-precision
// reference.
void matmul_case(DType t) {
  // 37 rows (odd: with the odd block sizes, rows start at every 2-byte
  // alignment); 1, 5, 11 and 16 tokens cover the 8-token tiles and their
  // remainders.
  const bool quant = dtype_is_quantized(t);
  const int64_t cols = test_cols(t, 70);
  Builder b(64, 4, 2, 40, 64, 16);
  const int32_t x = b.embed(DType::F32, cols);
  const int32_t y = b.act(37, 16);
  // 512-column rows get smaller weights, so |y| (and the CPU's 8-bit
  // activation error below) stays that of the 96-column ones.
  const int32_t wi = b.weight(t, 37, cols, cols > 96 ? 0.35f : 1.0f);
  b.op(OpKind::MatMul, y, x, -1, -1, wi);
  b.tail(y);
  // Against the CPU backend: its quantized kernels quantize the
  // activations to 8 bits (as llama.cpp does; |y| is a few units here, so
  // that costs up to ~0.03), the device keeps them f32, so quantized
  // weights get a looser bound there...
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
    // f32 sums of up to 512 products in another order: ~1e-6. A
    // wrong nibble, bit or scale moves some output by at least a quant step
    // times an input (~1e-2).
    CAPTURE(n);
    CHECK(worst < 1e-4);
  }
}

void rmsnorm_add_swiglu_case() {
  Builder b(96, 4, 2, 40, 64, 12);
  const int32_t x = b.embed();
  const int32_t h = b.act(96, 12), y = b.act(96, 12);
  b.op(OpKind::RmsNorm, h, x, -1, -1, b.weight(DType::F32, 1, 96, 0.2f, 1.0f));
  b.op(OpKind::MatMul, y, h, -1, -1, b.weight(DType::F32, 96, 96));
  b.op(OpKind::Add, x, x, y);
  b.op(OpKind::SwiGLU, h, h, x);
  b.tail(h);
  // The device sums y's 96 products in another order than the CPU (a tree,
  // or subgroups then their sums); at |y| of a few units f32 rounding leaves
  // them ~1e-5 apart.
  compare(b.g, {1, 12, 3}, {x, y, h}, 3e-5);
}

}  // namespace

TEST_SUITE("vulkan") {

TEST_CASE("vulkan: embedding lookup for every weight type") {
  for (DType t : kWeightTypes) {
    CAPTURE(std::string(dtype_name(t)));
    // Rows of 64, or of one super-block: both backends dequantize the
    // same bytes, f32 for f32.
    const int64_t cols = dtype_block_elements(t) == kSuperBlock ? kSuperBlock : 64;
    Builder b(64, 4, 2, 50, 32, 16);
    const int32_t x = b.embed(t, cols);
    b.tail(x);
    compare(b.g, {1, 5, 11}, {x}, 1e-6);
  }
}

TEST_CASE("vulkan: matmul (mat-vec and mat-mat) for every weight type, both reduction variants") {
  for (bool portable : {false, true}) {
    ember::test::ShaderVariant variant(portable);
    for (DType t : kWeightTypes) {
      CAPTURE(portable);
      CAPTURE(std::string(dtype_name(t)));
      matmul_case(t);
    }
  }
}

TEST_CASE("vulkan: rmsnorm, add and swiglu, both reduction variants") {
  for (bool portable : {false, true}) {
    CAPTURE(portable);
    ember::test::ShaderVariant variant(portable);
    rmsnorm_add_swiglu_case();
  }
}

TEST_CASE("vulkan: the reduction variant follows the probe, the option and EMBER_VULKAN_PORTABLE") {
  auto probed = ember::test::open_vulkan();
  if (!probed) return;
  const std::string d = probed->describe();
  const char* env = std::getenv("EMBER_VULKAN_PORTABLE");
  if (env && std::string(env) == "1") {  // the whole run forced portable
    CHECK(d.find("reduce portable (EMBER_VULKAN_PORTABLE=1)") != std::string::npos);
    return;
  }
  CHECK((d.find("reduce subgroupAdd,") != std::string::npos ||
         d.find("reduce portable (no subgroup arithmetic in compute)") != std::string::npos));
  // Mesa's lavapipe has subgroup arithmetic in compute shaders.
  if (d.find("llvmpipe") != std::string::npos) CHECK(d.find("reduce subgroupAdd,") != std::string::npos);
  {
    ember::test::ShaderVariant variant(true);
    auto vk = ember::test::open_vulkan();
    REQUIRE(vk);
    CHECK(vk->describe().find("reduce portable (asked for)") != std::string::npos);
  }
  const char* old = std::getenv("EMBER_VULKAN_PORTABLE");
  const std::string saved = old ? old : "";
  setenv("EMBER_VULKAN_PORTABLE", "1", 1);
  auto vk = ember::test::open_vulkan();
  if (old) {
    setenv("EMBER_VULKAN_PORTABLE", saved.c_str(), 1);
  } else {
    unsetenv("EMBER_VULKAN_PORTABLE");
  }
  REQUIRE(vk);
  CHECK(vk->describe().find("reduce portable (EMBER_VULKAN_PORTABLE=1)") != std::string::npos);
}

TEST_CASE("vulkan: weights are uploaded several per submit") {
  {
    // Ten weights of every type, some an odd number of bytes (35 x 35
    // f16/bf16), all in one submit.
    Builder b(64, 4, 2, 40, 64, 8);
    int32_t x = b.embed(DType::F32, 35);
    for (DType t : {DType::F16, DType::BF16}) {
      const int32_t y = b.act(35, 8);
      b.op(OpKind::MatMul, y, x, -1, -1, b.weight(t, 35, 35));
      x = y;
    }
    const int32_t q = b.act(64, 8), z = b.act(64, 8), w = b.act(64, 8);
    b.op(OpKind::MatMul, q, x, -1, -1, b.weight(DType::F32, 64, 35));
    b.op(OpKind::MatMul, z, q, -1, -1, b.weight(DType::Q8_0, 64, 64));
    b.op(OpKind::MatMul, w, z, -1, -1, b.weight(DType::Q4_0, 64, 64));
    b.op(OpKind::MatMul, q, w, -1, -1, b.weight(DType::F16, 64, 64));
    b.op(OpKind::RmsNorm, z, q, -1, -1, b.weight(DType::F32, 1, 64, 0.1f, 1.0f));
    b.tail(z);
    REQUIRE(b.g.weights.size() == 10);
    compare(b.g, {3, 1}, {z}, 0.1);  // quantized weights: the CPU's 8-bit activations
    auto vk = ember::test::open_vulkan();
    if (!vk) return;
    VulkanBackend* vkb = vk.get();
    Runner r;
    REQUIRE(r.init(b.g, std::move(vk)).is_ok());
    CHECK(vkb->upload_submits() == 1);
  }
  {
    // 12.5 MB of weights through the 8 MiB staging buffer: two submits, one
    // weight split across them, the result still the CPU's.
    Builder b(64, 4, 2, 40, 64, 2);
    const int32_t x = b.embed(DType::F32, 1024);
    const int32_t y = b.act(3008, 2), z = b.act(64, 2);
    b.op(OpKind::MatMul, y, x, -1, -1, b.weight(DType::F32, 3008, 1024, 0.05f));
    b.op(OpKind::MatMul, z, y, -1, -1, b.weight(DType::F16, 64, 3008, 0.05f));
    b.tail(z);
    compare(b.g, {2, 1}, {y}, 1e-4);
    auto vk = ember::test::open_vulkan();
    if (!vk) return;
    VulkanBackend* vkb = vk.get();
    Runner r;
    REQUIRE(r.init(b.g, std::move(vk)).is_ok());
    CHECK(vkb->upload_submits() == 2);
  }
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

TEST_CASE("vulkan: attention over the device kv cache, f32, f16 and q8_0, grouped heads") {
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
      // q8_0: one quant step is 1/127 of a block's largest magnitude; an
      // input on a rounding boundary (the backends' keys differ by ~1e-6)
      // may land one step apart.
      {KvType::Q8_0, KvType::Q8_0, 64, 8, {7, 1, 1, 8, 1}, 2e-2},
      {KvType::F16, KvType::Q8_0, 64, 8, {5, 1}, 2e-2},
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
    // q8_0 keys need whole 32-element blocks: kv_dim 16 has none.
    Builder b(32, 4, 2, 40, 64, 8);
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
    CHECK(r.backend->remove_positions(0, 3, 2).code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(r.step({39}, 0, nullptr).is_ok());
    CHECK(vulkan_device_bytes(r.graph, BackendOptions()) > 0);
  }
}

}  // TEST_SUITE

#else

TEST_CASE("vulkan: not built (EMBER_VULKAN=OFF)") { MESSAGE("the Vulkan backend is not built into this library"); }

#endif

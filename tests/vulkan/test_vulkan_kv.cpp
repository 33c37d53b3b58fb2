// The device KV cache against the CPU's, byte for byte: stores of every KV
// type (f32, f16, q8_0) and context shifting (remove_positions), on graphs
// whose keys and values come straight from embeddings, so both backends
// store the same inputs and any difference is the device's rounding.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vulkan/vulkan_fixture.h"

#if EMBER_VULKAN

namespace {

using namespace ember;
using ember::test::Builder;
using ember::test::Runner;

// One layer: q = x, k and v embeddings (kv_dim 32, head_dim 16, two query
// heads per kv head), q and k roped, then attention.
struct ExactGraph {
  Builder b;
  int32_t att = -1;
  ExactGraph(KvType k, KvType v, RopeStyle style, int32_t context, int32_t max_batch)
      : b(64, 4, 2, 40, context, max_batch) {
    b.g.kv_type_k = k;
    b.g.kv_type_v = v;
    b.g.hparams.rope_style = style;
    b.g.hparams.rope_theta = style == RopeStyle::Half ? 500000.0f : 10000.0f;
    const int32_t x = b.embed();
    const int32_t kk = b.embed(DType::F32, 32);
    const int32_t vv = b.embed(DType::F32, 32);
    b.op(OpKind::Rope, x, x);
    b.op(OpKind::Rope, kk, kk);
    att = b.act(64, max_batch);
    b.op(OpKind::Attention, att, x, kk, vv, -1, 0);
    b.tail(att);
  }
};

// Elements whose cache bytes differ between the backends (first `rows` rows of
// layer 0, keys or values), and the largest difference after dequantizing.
int differing(const Runner& cpu, VulkanBackend* vkb, bool values, int32_t rows, double* worst) {
  const Graph& g = cpu.graph;
  const KvType t = values ? g.kv_type_v : g.kv_type_k;
  const int64_t kv_dim = g.hparams.kv_dim();
  const uint64_t row_bytes = values ? cpu.plan.kv_v_row_bytes : cpu.plan.kv_k_row_bytes;
  const uint8_t* want = cpu.arena + cpu.plan.kv_offset + (values ? cpu.plan.kv_v_offset : 0);
  std::vector<uint8_t> got(row_bytes * rows);
  Status st = vkb->read_kv(0, values, rows, got.data());
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  std::vector<float> a(kv_dim), b(kv_dim);
  int diff = 0;
  *worst = 0;
  for (int32_t r = 0; r < rows; ++r) {
    kv_load_row(t, want + r * row_bytes, a.data(), kv_dim);
    kv_load_row(t, got.data() + r * row_bytes, b.data(), kv_dim);
    for (int64_t e = 0; e < kv_dim; ++e) {
      diff += std::memcmp(&a[e], &b[e], 4) != 0;
      *worst = std::max(*worst, static_cast<double>(std::fabs(a[e] - b[e])));
    }
  }
  return diff;
}

// The device rounds as the CPU does; on a CPU Vulkan device (lavapipe) its
// arithmetic is IEEE throughout, so the caches must match bit for bit. A GPU
// may divide to within 2.5 ulp (the Vulkan minimum): a q8_0 quant can then
// land one step away, bounded by the block's scale (at most 1/127 of its
// largest magnitude, here below 1.5 / 127).
void check_caches(const Runner& cpu, VulkanBackend* vkb, int32_t rows, bool exact) {
  for (bool values : {false, true}) {
    CAPTURE(values);
    CAPTURE(rows);
    double worst = 0;
    const int diff = differing(cpu, vkb, values, rows, &worst);
    if (exact) {
      CHECK(diff == 0);
    } else {
      CHECK(worst <= 1.5 / 127);
    }
  }
}

std::vector<int32_t> tokens_at(int32_t pos, int32_t n) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = ((pos + i) * 7 + 3) % 40;
  return t;
}

struct Pair {
  Runner cpu, gpu;
  VulkanBackend* vkb = nullptr;
  bool exact = false;
  int32_t pos = 0;

  bool init(const Graph& g) {
    auto vk = ember::test::open_vulkan();
    if (!vk) return false;
    vkb = vk.get();
    exact = vkb->describe().find(", cpu,") != std::string::npos;
    REQUIRE(cpu.init(g, ember::test::cpu_backend()).is_ok());
    Status st = gpu.init(g, std::move(vk));
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    return true;
  }
  // n tokens at the current position on both; logits compared.
  void step(int32_t n, double tol) {
    const std::vector<int32_t> t = tokens_at(pos, n);
    std::vector<float> lc, lg;
    REQUIRE(cpu.step(t, pos, &lc).is_ok());
    Status st = gpu.step(t, pos, &lg);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    pos += n;
    CAPTURE(pos);
    CHECK(ember::test::max_abs_diff(lc, lg) < tol);
  }
  void remove(int32_t start, int32_t end) {
    REQUIRE(cpu.backend->remove_positions(start, end, pos).is_ok());
    Status st = gpu.backend->remove_positions(start, end, pos);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    pos -= end - start;
  }
};

}  // namespace

TEST_SUITE("vulkan") {

TEST_CASE("vulkan: kv stores round like the CPU, f32, f16 and q8_0") {
  const KvType kinds[][2] = {{KvType::F32, KvType::F32},
                             {KvType::F16, KvType::F16},
                             {KvType::Q8_0, KvType::Q8_0},
                             {KvType::F32, KvType::Q8_0},
                             {KvType::Q8_0, KvType::F16}};
  for (const auto& kv : kinds) {
    CAPTURE(std::string(kv_type_name(kv[0])));
    CAPTURE(std::string(kv_type_name(kv[1])));
    ExactGraph eg(kv[0], kv[1], RopeStyle::Adjacent, 64, 8);
    Pair p;
    if (!p.init(eg.b.g)) return;
    for (int32_t n : {7, 1, 8, 3}) p.step(n, 1e-4);
    check_caches(p.cpu, p.vkb, p.pos, p.exact);
  }
}

TEST_CASE("vulkan: remove_positions moves and re-rotates the cache like the CPU") {
  const KvType kinds[][2] = {{KvType::F32, KvType::F32},
                             {KvType::F16, KvType::F16},
                             {KvType::Q8_0, KvType::Q8_0},
                             {KvType::F16, KvType::Q8_0}};
  for (RopeStyle style : {RopeStyle::Adjacent, RopeStyle::Half}) {
    for (const auto& kv : kinds) {
      CAPTURE(static_cast<int>(style));
      CAPTURE(std::string(kv_type_name(kv[0])));
      CAPTURE(std::string(kv_type_name(kv[1])));
      ExactGraph eg(kv[0], kv[1], style, 64, 8);
      Pair p;
      if (!p.init(eg.b.g)) return;
      for (int32_t n : {7, 1, 8, 4}) p.step(n, 1e-4);  // 20 positions
      p.remove(3, 9);   // the middle: 11 rows move down 6
      check_caches(p.cpu, p.vkb, p.pos, p.exact);
      p.step(1, 1e-4);
      p.step(3, 1e-4);
      p.remove(0, 1);   // moved rows overlap their old places
      check_caches(p.cpu, p.vkb, p.pos, p.exact);
      p.step(2, 1e-4);
      p.remove(12, p.pos - 1);  // all but the last row
      check_caches(p.cpu, p.vkb, p.pos, p.exact);
      p.step(5, 1e-4);
      // Nothing moves: an empty range and a tail.
      p.remove(4, 4);
      p.remove(10, p.pos);
      check_caches(p.cpu, p.vkb, p.pos, p.exact);
      p.step(1, 1e-4);
    }
  }
}

TEST_CASE("vulkan: remove_positions over more rows than one scratch chunk") {
  // 300 positions; removing [5, 7) moves 293 rows, more than the 256-row
  // chunk, each chunk's destination overlapping the previous chunk's rows.
  for (KvType kv : {KvType::F32, KvType::Q8_0}) {
    CAPTURE(std::string(kv_type_name(kv)));
    ExactGraph eg(kv, kv, RopeStyle::Half, 320, 64);
    Pair p;
    if (!p.init(eg.b.g)) return;
    for (int32_t n : {64, 64, 64, 64, 44}) p.step(n, 1e-4);
    p.remove(5, 7);
    check_caches(p.cpu, p.vkb, p.pos, p.exact);
    p.step(1, 1e-4);
    p.remove(100, 250);
    check_caches(p.cpu, p.vkb, p.pos, p.exact);
    p.step(1, 1e-4);
  }
}

TEST_CASE("vulkan: remove_positions refuses bad ranges with a status") {
  ExactGraph eg(KvType::F32, KvType::F32, RopeStyle::Adjacent, 16, 4);
  auto vk = ember::test::open_vulkan();
  if (!vk) return;
  Runner r;
  REQUIRE(r.init(eg.b.g, std::move(vk)).is_ok());
  REQUIRE(r.step({1, 2, 3, 4}, 0, nullptr).is_ok());
  CHECK(r.backend->remove_positions(-1, 2, 4).code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(r.backend->remove_positions(3, 2, 4).code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(r.backend->remove_positions(1, 5, 4).code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(r.backend->remove_positions(1, 2, 17).code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(r.backend->remove_positions(1, 2, 4).is_ok());
  CHECK(r.step({5}, 3, nullptr).is_ok());
}

}  // TEST_SUITE

#endif

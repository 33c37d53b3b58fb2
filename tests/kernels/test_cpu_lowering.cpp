// The CPU backend's lowering (the graph turned into a flat step list at
// prepare) and its kernel-family choice, as pure functions of their inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "core/dtype.h"
#include "memory/plan.h"
#include "platforms/linux/cpu_features.h"

namespace {

using namespace ember;

CpuFeatures x86(bool avx512, bool vnni) {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = true;
  f.avx512f = f.avx512bw = f.avx512vl = avx512;
  f.avx512vnni = vnni;
  return f;
}

// A weight of `rows` x `cols` random values stored as `t`.
struct Weight {
  std::vector<uint8_t> bytes;
  WeightRef ref;
};
Weight make_weight(const char* name, DType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  uint64_t row_bytes = 0;
  REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
  Weight w;
  w.bytes.resize(row_bytes * rows);
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = u(rng);
    quantize_row(t, row.data(), w.bytes.data() + r * row_bytes, cols);
  }
  w.ref.name = name;
  w.ref.dtype = t;
  w.ref.rows = rows;
  w.ref.cols = cols;
  w.ref.size = w.bytes.size();
  return w;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("kernel families are chosen independently from the CPU features") {
#if defined(__x86_64__)
  // AVX-512 F/BW/VL without VNNI: 512-bit float kernels, avx2 int8 kernels.
  auto no_vnni = cpu_choose_families(x86(true, false), nullptr);
  REQUIRE(no_vnni.is_ok());
  CHECK(no_vnni.value().int8 == CpuIsa::Avx2);
  CHECK(no_vnni.value().fp == CpuIsa::Avx512);
  CHECK(std::string(cpu_int8_family_name(no_vnni.value().int8)) == "avx2");
  CHECK(std::string(cpu_float_family_name(no_vnni.value().fp)) == "avx512");
  // With VNNI: avx512 in both.
  auto vnni = cpu_choose_families(x86(true, true), "");
  REQUIRE(vnni.is_ok());
  CHECK(vnni.value().int8 == CpuIsa::Avx512);
  CHECK(vnni.value().fp == CpuIsa::Avx512);
  CHECK(std::string(cpu_int8_family_name(vnni.value().int8)) == "avx512vnni");
  // AVX2 only, and nothing at all.
  auto avx2 = cpu_choose_families(x86(false, false), nullptr);
  REQUIRE(avx2.is_ok());
  CHECK(avx2.value().int8 == CpuIsa::Avx2);
  CHECK(avx2.value().fp == CpuIsa::Avx2);
  auto none = cpu_choose_families(CpuFeatures{}, nullptr);
  REQUIRE(none.is_ok());
  CHECK(none.value().int8 == CpuIsa::Generic);
  CHECK(none.value().fp == CpuIsa::Generic);
  // EMBER_ISA forces one path in every family, if the CPU runs all of it.
  auto forced = cpu_choose_families(x86(true, true), "avx2");
  REQUIRE(forced.is_ok());
  CHECK(forced.value().int8 == CpuIsa::Avx2);
  CHECK(forced.value().fp == CpuIsa::Avx2);
  auto generic = cpu_choose_families(x86(true, false), "generic");
  REQUIRE(generic.is_ok());
  CHECK(generic.value().int8 == CpuIsa::Generic);
  CHECK(generic.value().fp == CpuIsa::Generic);
  auto partial = cpu_choose_families(x86(true, false), "avx512");
  CHECK(partial.status().code() == EMBER_ERR_UNSUPPORTED);
  CHECK(partial.status().message().find("supported: generic, avx2") != std::string::npos);
  // Paths of another architecture are not in this binary.
  CpuFeatures arm;
  arm.asimd = arm.asimddp = true;
  CHECK(cpu_choose_families(arm, "neon").status().code() == EMBER_ERR_UNSUPPORTED);
#elif defined(__aarch64__)
  CpuFeatures f;
  f.asimd = true;
  auto neon = cpu_choose_families(f, nullptr);
  REQUIRE(neon.is_ok());
  CHECK(neon.value().int8 == CpuIsa::Neon);
  CHECK(neon.value().fp == CpuIsa::Neon);
  f.asimddp = true;
  auto dot = cpu_choose_families(f, nullptr);
  REQUIRE(dot.is_ok());
  CHECK(dot.value().int8 == CpuIsa::NeonDot);
  CHECK(dot.value().fp == CpuIsa::Neon);  // neondot has no float kernels of its own
  auto forced = cpu_choose_families(f, "neondot");
  REQUIRE(forced.is_ok());
  CHECK(forced.value().fp == CpuIsa::Neon);
#endif
  CHECK(cpu_choose_families(CpuFeatures{}, "sse9").status().message().find("sse9") != std::string::npos);
}

TEST_CASE("the decode prefetch distance follows the CPU, and EMBER_DECODE_PREFETCH is checked") {
  CpuFeatures zen4;
  zen4.amd = true;
  zen4.x86_family = 0x19;
  CpuFeatures zen5 = zen4;
  zen5.x86_family = 0x1a;
  CpuFeatures other;  // an Intel part, an ARM board: not AMD family 0x19
  other.x86_family = 6;
  CHECK(cpu_choose_decode_prefetch(zen4, nullptr).value() == 0);
  CHECK(cpu_choose_decode_prefetch(zen4, "").value() == 0);
  CHECK(cpu_choose_decode_prefetch(zen5, nullptr).value() == 8192);
  CHECK(cpu_choose_decode_prefetch(other, nullptr).value() == 8192);
  CHECK(cpu_choose_decode_prefetch(CpuFeatures{}, nullptr).value() == 8192);
  // A value overrides the CPU's default either way.
  CHECK(cpu_choose_decode_prefetch(zen4, "4096").value() == 4096);
  CHECK(cpu_choose_decode_prefetch(zen5, "0").value() == 0);
  CHECK(cpu_choose_decode_prefetch(zen5, "65536").value() == 65536);
  for (const char* bad : {"100", "-64", "65600", "8k", "x", "99999999999999999999999"}) {
    const Status st = cpu_choose_decode_prefetch(zen5, bad).status();
    CHECK(st.code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(st.message().find(std::string("EMBER_DECODE_PREFETCH='") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("BF16 dot products run by default where the CPU has AVX512-BF16 and the float family is avx512, EMBER_BF16_DOT=0 turns them off") {
  CpuFeatures zen4;
  zen4.avx512bf16 = true;
  const CpuFeatures plain;
#if defined(__x86_64__)
  CHECK(cpu_choose_bf16_dot(zen4, CpuIsa::Avx512, nullptr).value());
  CHECK(cpu_choose_bf16_dot(zen4, CpuIsa::Avx512, "").value());
  CHECK(cpu_choose_bf16_dot(zen4, CpuIsa::Avx512, "1").value());
#endif
  CHECK(!cpu_choose_bf16_dot(zen4, CpuIsa::Avx512, "0").value());
  CHECK(!cpu_choose_bf16_dot(zen4, CpuIsa::Avx2, nullptr).value());  // EMBER_ISA=avx2: the exact kernels
  CHECK(!cpu_choose_bf16_dot(zen4, CpuIsa::Avx2, "1").value());
  CHECK(!cpu_choose_bf16_dot(plain, CpuIsa::Avx512, nullptr).value());
  const Status st = cpu_choose_bf16_dot(plain, CpuIsa::Avx512, "1").status();
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(st.message().find("EMBER_BF16_DOT=1") != std::string::npos);
  for (const char* bad : {"yes", "2", " 0"}) {
    const Status b = cpu_choose_bf16_dot(zen4, CpuIsa::Avx512, bad).status();
    CHECK(b.code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(b.message().find(std::string("EMBER_BF16_DOT='") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("AMX runs when EMBER_AMX=1 asks and the CPU and int8 family allow it, other values are refused") {
  CpuFeatures spr;  // an AMX part with the tile state granted
  spr.amx_int8 = true;
  const CpuFeatures plain;
  // Asked for only: not the default (dispatch.h says why).
  CHECK(!cpu_choose_amx(spr, CpuIsa::Avx512, nullptr).value());
  CHECK(!cpu_choose_amx(spr, CpuIsa::Avx512, "").value());
#if defined(__x86_64__)
  CHECK(cpu_choose_amx(spr, CpuIsa::Avx512, "1").value());
#endif
  CHECK(!cpu_choose_amx(spr, CpuIsa::Avx512, "0").value());
  CHECK(!cpu_choose_amx(spr, CpuIsa::Avx2, nullptr).value());  // EMBER_ISA=avx2: no AMX kernels
  CHECK(!cpu_choose_amx(plain, CpuIsa::Avx512, nullptr).value());
  CHECK(!cpu_choose_amx(plain, CpuIsa::Avx512, "0").value());
  // Another family asked to (EMBER_ISA=avx2 EMBER_AMX=1) runs its own kernels.
  CHECK(!cpu_choose_amx(spr, CpuIsa::Avx2, "1").value());
  CHECK(!cpu_choose_amx(spr, CpuIsa::Generic, "1").value());
  for (CpuIsa isa : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Generic}) {
    const Status st = cpu_choose_amx(plain, isa, "1").status();
    CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(st.message().find("EMBER_AMX=1") != std::string::npos);
  }
  for (const char* bad : {"yes", "2", "on", " 1"}) {
    const Status st = cpu_choose_amx(spr, CpuIsa::Avx512, bad).status();
    CHECK(st.code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(st.message().find(std::string("EMBER_AMX='") + bad + "'") != std::string::npos);
  }
  // The table: only the AMX types' gemm change, decode never.
  CpuFamilies f;
  f.int8 = f.fp = CpuIsa::Avx512;
  const CpuKernels off = cpu_kernels_for(f);
  f.amx = true;
  const CpuKernels on = cpu_kernels_for(f);
  CHECK((on.q4_k_rows16_gemv == off.q4_k_rows16_gemv));
  CHECK((on.q6_k_rows16_gemv == off.q6_k_rows16_gemv));
  CHECK((on.q8_0_rows16_gemm == off.q8_0_rows16_gemm));
#if defined(__x86_64__)
  CHECK((on.q4_k_rows16_gemm != off.q4_k_rows16_gemm));
  CHECK((on.iq4_xs_rows16_gemm != off.iq4_xs_rows16_gemm));
#endif
}

TEST_CASE("a combined kernel table takes the int8 entries from one path and the float ones from another") {
  auto chosen = cpu_select_families();
  REQUIRE(chosen.is_ok());
  const CpuFamilies f = chosen.value();
  const CpuKernels k = cpu_kernels_for(f);
  const CpuKernels& i = cpu_kernels_for(f.int8);
  CHECK((k.q8_0_gemv == i.q8_0_gemv));
  CHECK((k.q4_0_rows16_gemm == i.q4_0_rows16_gemm));
  CHECK((k.quantize_q8 == i.quantize_q8));
  const CpuKernels generic_float = cpu_kernels_for(CpuFamilies{f.int8, CpuIsa::Generic});
  CHECK((generic_float.q8_0_gemm == i.q8_0_gemm));
  CHECK((generic_float.f32_gemv == cpu_kernels_for(CpuIsa::Generic).f32_gemv));
  CHECK((generic_float.softmax == cpu_kernels_for(CpuIsa::Generic).softmax));
}

TEST_CASE("matmul kernel families by dtype and layout, a layout the kernels do not read has none") {
  CHECK(cpu_matmul_family(DType::Q8_0, Layout::RowMajor) == CpuMatmulFamily::Int8);
  CHECK(cpu_matmul_family(DType::Q4_0, Layout::Rows16) == CpuMatmulFamily::Int8);
  CHECK(cpu_matmul_family(DType::F32, Layout::RowMajor) == CpuMatmulFamily::Float);
  CHECK(cpu_matmul_family(DType::F16, Layout::RowMajor) == CpuMatmulFamily::Float);
  CHECK(cpu_matmul_family(DType::BF16, Layout::RowMajor) == CpuMatmulFamily::Float);
  CHECK(cpu_matmul_family(DType::BF16, Layout::Rows16) == CpuMatmulFamily::Float);
  CHECK(cpu_matmul_family(DType::F32, Layout::Rows16) == CpuMatmulFamily::Float);
  CHECK(cpu_matmul_family(DType::Q4_1, Layout::Rows16) == CpuMatmulFamily::None);
  CHECK(cpu_matmul_family(DType::IQ4_NL, Layout::Rows16) == CpuMatmulFamily::None);
}

TEST_CASE("prepare lowers the graph once: fused matmuls, static reuse of quantized inputs, float kernels") {
  constexpr int64_t kDim = 64;
  Graph g;
  g.hparams.dim = kDim;
  g.hparams.hidden_dim = kDim;
  g.hparams.n_layers = 1;
  g.hparams.n_heads = 2;
  g.hparams.n_kv_heads = 2;
  g.hparams.vocab_size = kDim;
  g.hparams.max_seq_len = 8;
  g.max_batch = 4;
  g.context = 8;
  std::vector<Weight> w;
  w.push_back(make_weight("norm", DType::F32, 1, kDim, 1));
  w.push_back(make_weight("wq", DType::Q8_0, kDim, kDim, 2));
  w.push_back(make_weight("wk", DType::Q4_0, kDim, kDim, 3));
  w.push_back(make_weight("wv", DType::F16, kDim, kDim, 4));
  w.push_back(make_weight("wo", DType::Q8_0, kDim, kDim, 5));
  w.push_back(make_weight("wb", DType::BF16, kDim, kDim, 6));  // float family
  for (Weight& x : w) {
    x.ref.data = x.bytes.data();
    g.weights.push_back(x.ref);
  }
  enum { X, H, Q, K, V, O, Y };
  for (const char* name : {"x", "h", "q", "k", "v", "o", "y"}) g.activations.push_back({name, kDim, g.max_batch});
  auto op = [&](OpKind kind, int32_t out, int32_t a, int32_t b, int32_t weight) {
    Op o;
    o.kind = kind;
    o.out = out;
    o.a = a;
    o.b = b;
    o.weight = weight;
    o.params.rmsnorm.eps = 1e-5f;
    o.params.rope = RopeParams{static_cast<uint32_t>(kDim / 2), 2, 10000.0f, RopeStyle::Adjacent};
    g.ops.push_back(o);
  };
  op(OpKind::RmsNorm, H, X, -1, 0);
  op(OpKind::MatMul, Q, H, -1, 1);  // q, k, v of h: one step, h quantized once
  op(OpKind::MatMul, K, H, -1, 2);
  op(OpKind::MatMul, V, H, -1, 3);
  op(OpKind::Rope, Q, Q, -1, -1);
  op(OpKind::MatMul, O, H, -1, 4);  // h unchanged: its quantized copy is reused
  op(OpKind::Add, H, H, X, -1);     // h written: the copy is stale
  op(OpKind::MatMul, O, H, -1, 4);  // quantizes again; fused with the bf16 one
  op(OpKind::MatMul, Y, H, -1, 5);
  g.logits = Y;

  BackendOptions bo;
  bo.cpu.n_threads = 2;
  CpuBackend cpu(bo.cpu);
  auto plan = plan_memory(g, *find_backend(BackendKind::Cpu), bo);
  REQUIRE_MESSAGE(plan.is_ok(), plan.status().message());
  std::vector<uint8_t> storage(plan->arena_bytes + kArenaAlignment);
  uint8_t* arena = storage.data() + (kArenaAlignment - reinterpret_cast<uintptr_t>(storage.data()) % kArenaAlignment) %
                                        kArenaAlignment;
  REQUIRE(cpu.prepare(g, plan.value(), arena).is_ok());

  const std::vector<CpuStep>& s = cpu.steps();
  REQUIRE(s.size() == 6);
  CHECK(s[0].kind == CpuStepKind::RmsNorm);
  CHECK(s[1].kind == CpuStepKind::MatMuls);
  CHECK(s[1].count == 3);
  CHECK(s[1].uses_q8);
  CHECK(s[1].quantize);
  CHECK(s[2].kind == CpuStepKind::Rope);
  CHECK(s[3].kind == CpuStepKind::MatMuls);
  CHECK(s[3].count == 1);
  CHECK(s[3].uses_q8);
  CHECK_FALSE(s[3].quantize);
  CHECK(s[4].kind == CpuStepKind::Add);
  CHECK(s[5].kind == CpuStepKind::MatMuls);
  CHECK(s[5].count == 2);
  CHECK(s[5].quantize);

  // Run one step of 3 rows and check the bf16 matmul (y = wb h) against
  // a plain reference over the h the step left in the arena.
  const int32_t n = 3;
  float* x = reinterpret_cast<float*>(arena + plan->activation_offsets[X]);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < n * kDim; ++i) x[i] = u(rng);
  StepArgs step;
  step.n_tokens = n;
  step.pos = 0;
  std::vector<float> logits(kDim);
  step.logits = logits.data();
  REQUIRE(cpu.execute(step).is_ok());
  const float* h = reinterpret_cast<const float*>(arena + plan->activation_offsets[H]);
  const float* y = reinterpret_cast<const float*>(arena + plan->activation_offsets[Y]);
  std::vector<float> wrow(kDim);
  for (int32_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < kDim; ++r) {
      dequantize_row(DType::BF16, w[5].bytes.data() + r * kDim * 2, wrow.data(), kDim);
      double want = 0;
      for (int64_t c = 0; c < kDim; ++c) want += static_cast<double>(wrow[c]) * h[i * kDim + c];
      REQUIRE(std::fabs(y[i * kDim + r] - want) <= 1e-4 * (1 + std::fabs(want)));
    }
  }
  // A second identical step gives identical results (nothing is tracked
  // between steps).
  std::vector<float> first(y, y + n * kDim);
  for (int64_t i = 0; i < n * kDim; ++i) x[i] = u(rng);
  std::vector<float> x2(x, x + n * kDim);
  REQUIRE(cpu.execute(step).is_ok());
  std::vector<float> second(y, y + n * kDim);
  std::copy(x2.begin(), x2.end(), x);
  REQUIRE(cpu.execute(step).is_ok());
  CHECK(std::vector<float>(y, y + n * kDim) == second);
  CHECK(second != first);
}

TEST_CASE("a weight with no kernel family (a layout its kernels do not read) is an error at prepare") {
  Graph g;
  g.hparams.dim = 64;
  g.hparams.n_layers = 1;
  g.hparams.n_heads = 1;
  g.hparams.n_kv_heads = 1;
  g.hparams.vocab_size = 64;
  g.max_batch = 1;
  g.context = 4;
  Weight w = make_weight("odd", DType::Q4_1, 16, 64, 1);
  w.ref.data = w.bytes.data();
  w.ref.layout = Layout::Rows16;
  g.weights.push_back(w.ref);
  g.activations.push_back({"x", 64, 1});
  g.activations.push_back({"y", 16, 1});
  Op o;
  o.kind = OpKind::MatMul;
  o.out = 1;
  o.a = 0;
  o.weight = 0;
  g.ops.push_back(o);
  g.logits = 1;
  BackendOptions bo;
  bo.cpu.n_threads = 1;
  CpuBackend cpu(bo.cpu);
  auto plan = plan_memory(g, *find_backend(BackendKind::Cpu), bo);
  REQUIRE(plan.is_ok());
  std::vector<uint8_t> storage(plan->arena_bytes + kArenaAlignment);
  uint8_t* arena = storage.data() + (kArenaAlignment - reinterpret_cast<uintptr_t>(storage.data()) % kArenaAlignment) %
                                        kArenaAlignment;
  const Status st = cpu.prepare(g, plan.value(), arena);
  CHECK(st.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(st.message().find("odd") != std::string::npos);
}

}  // TEST_SUITE

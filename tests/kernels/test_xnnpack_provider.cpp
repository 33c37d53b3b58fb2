// The float-matmul providers (backends/cpu/kernel_providers.h) and XNNPACK's
// operators (xnnpack_provider.h): EMBER_KERNELS, the choice as a pure
// function, and XNNPACK's results against a scalar reference on shapes with
// every remainder, its bytes against the plan's formula, and no allocation
// when it runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_providers.h"
#include "backends/cpu/xnnpack_provider.h"
#include "core/dtype.h"
#include "memory/alloc_counter.h"

namespace {

using namespace ember;

struct FloatWeight {
  std::vector<uint8_t> bytes;
  std::vector<float> value;  // the weight as stored, widened exactly
  WeightRef ref;
};

FloatWeight make_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  uint64_t row_bytes = 0;
  REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
  FloatWeight w;
  w.bytes.resize(row_bytes * rows);
  w.value.resize(static_cast<size_t>(rows * cols));
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = u(rng);
    quantize_row(t, row.data(), w.bytes.data() + r * row_bytes, cols);
    dequantize_row(t, w.bytes.data() + r * row_bytes, w.value.data() + r * cols, cols);
  }
  w.ref.name = "w";
  w.ref.dtype = t;
  w.ref.rows = rows;
  w.ref.cols = cols;
  w.ref.data = w.bytes.data();
  w.ref.size = w.bytes.size();
  return w;
}

// out[i][r] = sum_c w[r][c] x[i][c], in double.
std::vector<double> reference(const FloatWeight& w, const std::vector<float>& x, int32_t n) {
  const int64_t rows = w.ref.rows, cols = w.ref.cols;
  std::vector<double> out(static_cast<size_t>(n * rows));
  for (int32_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(w.value[r * cols + c]) * x[i * cols + c];
      out[i * rows + r] = s;
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("EMBER_KERNELS: auto, ember or xnnpack, anything else refused by name") {
  CHECK(cpu_kernels_choice(nullptr).value() == CpuKernelsChoice::Auto);
  CHECK(cpu_kernels_choice("").value() == CpuKernelsChoice::Auto);
  CHECK(cpu_kernels_choice("auto").value() == CpuKernelsChoice::Auto);
  CHECK(cpu_kernels_choice("ember").value() == CpuKernelsChoice::Ember);
  CHECK(cpu_kernels_choice("xnnpack").value() == CpuKernelsChoice::Xnnpack);
  Result<CpuKernelsChoice> bad = cpu_kernels_choice("XNNPACK!");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(bad.status().message()).find("'XNNPACK!'") != std::string::npos);
}

TEST_CASE("providers are a pure function of the choice, the path and XNNPACK's availability") {
  for (CpuIsa isa : {CpuIsa::Generic, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Neon}) {
    // ember: no family through XNNPACK, available or not.
    Result<CpuProviders> e = cpu_choose_providers(CpuKernelsChoice::Ember, isa, true, "");
    REQUIRE(e.is_ok());
    CHECK_FALSE(e.value().any_xnnpack());
    CHECK(e.value().describe() == "ember");
    // xnnpack: every float family, and a refusal that says why when it cannot.
    Result<CpuProviders> x = cpu_choose_providers(CpuKernelsChoice::Xnnpack, isa, true, "");
    REQUIRE(x.is_ok());
    for (DType t : {DType::F32, DType::F16, DType::BF16}) CHECK(x.value().of(t) == MatmulProvider::Xnnpack);
    CHECK(x.value().of(DType::Q8_0) == MatmulProvider::Ember);  // never an integer type
    CHECK(x.value().describe() == "xnnpack");
    Result<CpuProviders> no = cpu_choose_providers(CpuKernelsChoice::Xnnpack, isa, false, "not built here");
    REQUIRE_FALSE(no.is_ok());
    CHECK(no.status().code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(no.status().message()).find("not built here") != std::string::npos);
    // auto: the shipped table when usable, ember everywhere when not.
    Result<CpuProviders> a = cpu_choose_providers(CpuKernelsChoice::Auto, isa, true, "");
    REQUIRE(a.is_ok());
    const CpuProviders table = cpu_auto_providers(isa);
    for (int f = 0; f < kFloatMatmulFamilies; ++f) CHECK(a.value().family[f] == table.family[f]);
    Result<CpuProviders> a_no = cpu_choose_providers(CpuKernelsChoice::Auto, isa, false, "no");
    REQUIRE(a_no.is_ok());
    CHECK_FALSE(a_no.value().any_xnnpack());
  }
}

TEST_CASE("xnnpack slices: at least a chunk each, whole 16-row groups, a run's packed rows within L2") {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t rows : {1, 16, 17, 128, 896, 4864, 32000}) {
      for (int64_t cols : {1, 64, 896, 4864, 100000}) {
        CAPTURE(threads);
        CAPTURE(rows);
        CAPTURE(cols);
        const int32_t s = cpu_xnnpack_slices(rows, cols, threads);
        const int64_t groups = (rows + 15) / 16;
        CHECK(s >= 1);
        CHECK(s <= groups);  // no empty operator
        CHECK(s >= std::min<int64_t>(groups, 4 * threads));
        // The longest run (split_range: equal runs of groups, the first ones
        // one longer) stays within the slice budget unless one group alone exceeds it.
        const int64_t longest = (groups + s - 1) / s;
        const int64_t group_bytes = 16 * (cols + 1) * 4;
        CHECK((longest * group_bytes <= kXnnpackSliceBytes || longest == 1 ||
               s == std::min<int64_t>(groups, 4 * threads)));
      }
    }
  }
  CHECK(cpu_xnnpack_slices(4864, 896, 2) == 76);  // 0.5b's ffn_gate: 4 groups (229 KiB) a run
}

TEST_CASE("xnnpack matmuls equal a scalar reference on every remainder, whatever the slicing") {
  if (!xnnpack_info().usable) {
#if EMBER_HAVE_XNNPACK
    FAIL("XNNPACK is built but not usable: " << xnnpack_info().reason);
#else
    Result<std::unique_ptr<XnnpackMatmuls>> none = XnnpackMatmuls::create();
    REQUIRE_FALSE(none.is_ok());
    CHECK(none.status().code() == EMBER_ERR_UNSUPPORTED);
    CHECK(std::string(none.status().message()).find("no XNNPACK") != std::string::npos);
    CHECK(xnnpack_weight_bytes(64, 64, 4) == 0);
#endif
    return;
  }
  const XnnpackInfo& info = xnnpack_info();
  CHECK(info.nr > 0);
  CHECK(info.descriptor > 0);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t rows : {1, 15, 17, 48, 100}) {
      for (int64_t cols : {1, 3, 64, 257}) {
        CAPTURE(dtype_name(t));
        CAPTURE(rows);
        CAPTURE(cols);
        const FloatWeight w = make_weight(t, rows, cols, static_cast<uint32_t>(rows * 1000 + cols));
        const int32_t max_n = 9;
        std::vector<float> x(static_cast<size_t>(max_n * cols));
        for (float& v : x) v = u(rng);
        std::vector<float> first;  // slicing 1's output, which every slicing must equal bit for bit
        for (int32_t slices : {1, 4, 8}) {
          Result<std::unique_ptr<XnnpackMatmuls>> made = XnnpackMatmuls::create();
          REQUIRE(made.is_ok());
          XnnpackMatmuls& xm = *made.value();
          Result<int32_t> op = xm.add(w.ref, slices);
          REQUIRE_MESSAGE(op.is_ok(), op.status().message());
          // The operators hold exactly what the plan counts.
          CHECK(xm.bytes() == xnnpack_weight_bytes(rows, cols, slices));
          for (int32_t n : {1, 2, max_n}) {
            std::vector<float> out(static_cast<size_t>(n * rows), NAN);
            for (int32_t s = 0; s < slices; ++s) xm.run(op.value() + s, x.data(), n, out.data());
            CHECK_FALSE(xm.failed());
            const std::vector<double> ref = reference(w, x, n);
            double worst = 0;
            for (size_t i = 0; i < out.size(); ++i) {
              // f32 sums of cols products: within a few ulps of the row's magnitude.
              double mag = 0;
              const int64_t r = static_cast<int64_t>(i) % rows, tok = static_cast<int64_t>(i) / rows;
              for (int64_t c = 0; c < cols; ++c) mag += std::fabs(w.value[r * cols + c] * x[tok * cols + c]);
              REQUIRE(std::isfinite(out[i]));
              worst = std::max(worst, std::fabs(out[i] - ref[i]) / (mag + 1e-30));
            }
            CHECK(worst < 1e-5);
            if (n == max_n) {
              if (slices == 1) first = out;
              else CHECK(out == first);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("xnnpack operators allocate nothing when they run, and free what they took") {
  if (!xnnpack_info().usable) return;  // the previous case says why
  const FloatWeight w = make_weight(DType::F32, 64, 96, 3);
  std::vector<float> x(16 * 96, 0.5f), out(16 * 64);
  const uint64_t live = xnnpack_live_bytes();
  Result<std::unique_ptr<XnnpackMatmuls>> made = XnnpackMatmuls::create();
  REQUIRE(made.is_ok());
  XnnpackMatmuls& xm = *made.value();
  REQUIRE(xm.add(w.ref, 4).is_ok());
  CHECK(xm.operators() == 4);
  CHECK(xm.bytes() > 64 * 96 * sizeof(float));
  CHECK(xnnpack_live_bytes() == live + xm.bytes());
  const uint64_t before = xnnpack_allocations();
  ember::test::start_counting_allocations();
  for (int32_t n : {1, 16, 3, 1}) {
    for (int32_t s = 0; s < 4; ++s) xm.run(s, x.data(), n, out.data());
  }
  CHECK(ember::test::stop_counting_allocations() == 0);
  CHECK(xnnpack_allocations() == before);
  CHECK_FALSE(xm.failed());
  made.value().reset();
  CHECK(xnnpack_live_bytes() == live);
}

}  // TEST_SUITE

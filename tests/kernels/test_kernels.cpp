// Every CPU kernel against a plain scalar reference, on random shapes that
// include every remainder (rows not a multiple of the tile, 1..N blocks,
// 1..17 tokens), for every kernel path this machine supports; and whole
// models giving bit-identical logits for any thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "platforms/linux/cpu_features.h"
#include "ember.h"
#include "core/dtype.h"
#include "core/layout.h"
#include "format/model_file.h"
#include "test_data.h"
#include "tools/convert/synthetic.h"

namespace {

using namespace ember;

std::vector<CpuIsa> supported_isas() {
  std::vector<CpuIsa> v;
  for (int i = 0; i < kCpuIsaCount; ++i) {
    if (cpu_isa_supported(static_cast<CpuIsa>(i))) v.push_back(static_cast<CpuIsa>(i));
  }
  return v;
}

std::vector<float> random_floats(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// The reference quantizer: max |x| / 127, nearest-even rounding.
void ref_quantize(const float* x, int64_t cols, std::vector<int8_t>* q, std::vector<float>* d,
                  std::vector<int32_t>* bias) {
  for (int64_t b = 0; b < cols / 32; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int32_t r = static_cast<int32_t>(std::nearbyint(x[b * 32 + j] * id));
      q->push_back(static_cast<int8_t>(r));
      sum += r;
    }
    d->push_back(amax / 127.0f);
    bias->push_back(-8 * sum);
  }
}

struct QuantBuffers {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> bias;
};

// Output (token i, row r) of the dequantized weights wv (rows x cols, row
// major) times the quantized activations, in double, and the sum of the
// products' magnitudes (*mag) for the tolerance.
double ref_output(const std::vector<float>& wv, const QuantBuffers& qb, int64_t cols, int64_t i, int64_t r,
                  double* mag) {
  double acc = 0, m = 0;
  for (int64_t c = 0; c < cols; ++c) {
    const double xv = static_cast<double>(qb.q[i * cols + c]) * qb.d[i * (cols / 32) + c / 32];
    acc += wv[r * cols + c] * xv;
    m += std::fabs(wv[r * cols + c] * xv);
  }
  *mag = m;
  return acc;
}

// Quantized activations in 32-byte aligned storage, as the backend keeps them.
struct AlignedActs {
  std::vector<int8_t> storage;
  std::vector<float> d;
  std::vector<int32_t> bias;
  std::vector<int16_t> sum16;
  QuantActs view;
  AlignedActs(const QuantBuffers& b, int64_t cols) : storage(b.q.size() + 64), d(b.d), bias(b.bias) {
    for (size_t g = 0; g < b.q.size() / 16; ++g) {
      int32_t s = 0;
      for (int j = 0; j < 16; ++j) s += b.q[g * 16 + j];
      sum16.push_back(static_cast<int16_t>(s));
    }
    int8_t* p = storage.data();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    std::copy(b.q.begin(), b.q.end(), p);
    view.q = p;
    view.d = d.data();
    view.bias = bias.data();
    view.sum16 = sum16.data();
    view.cols = cols;
  }
};

// Weights of dtype t for a [rows, cols] matrix, and their f32 values.
std::vector<uint8_t> make_weights(DType t, std::mt19937& rng, int64_t rows, int64_t cols, std::vector<float>* values) {
  std::vector<float> w = random_floats(rng, rows * cols);
  uint64_t row_bytes = 0;
  REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
  std::vector<uint8_t> out(row_bytes * rows);
  values->resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(t, w.data() + r * cols, out.data() + r * row_bytes, cols);
    dequantize_row(t, out.data() + r * row_bytes, values->data() + r * cols, cols);
  }
  return out;
}

// A K-quant or IQ4_XS block's d (and dmin) set to the f16 `d`, where each
// type keeps them: finite scales for blocks otherwise filled with any bytes.
void set_block_scales(DType t, uint8_t* blk, uint16_t d) {
  if (t == DType::Q6_K) {
    std::memcpy(blk + 208, &d, 2);
  } else if (t == DType::Q3_K) {
    std::memcpy(blk + 108, &d, 2);
  } else if (t == DType::Q2_K) {
    std::memcpy(blk + 80, &d, 2);
    std::memcpy(blk + 82, &d, 2);
  } else {
    std::memcpy(blk, &d, 2);
    if (t != DType::IQ4_XS) std::memcpy(blk + 2, &d, 2);
  }
}

struct Shape {
  int64_t rows, cols;
  int32_t n;
};

// Shapes covering every remainder of the 4-row and 2/4-token tiles and of
// the 8/16-float vectors.
std::vector<Shape> shapes(bool quantized, std::mt19937& rng) {
  std::vector<Shape> s;
  const int64_t rows[] = {1, 2, 3, 4, 5, 6, 7, 9, 16, 17, 33};
  for (int64_t r : rows) {
    for (int32_t n = 1; n <= 17; n += (n < 6 ? 1 : 5)) {
      const int64_t cols = quantized ? 32 * (1 + static_cast<int64_t>(rng() % 9))
                                     : 1 + static_cast<int64_t>(rng() % 70);
      s.push_back({r, cols, n});
    }
  }
  s.push_back({40, quantized ? 32 * 40 : 1031, 3});
  return s;
}

}  // namespace

TEST_SUITE("kernels") {

TEST_CASE("the probe and the dispatch agree: generic always, the best path supported") {
  const auto isas = supported_isas();
  REQUIRE(!isas.empty());
  CHECK(isas.front() == CpuIsa::Generic);
  CHECK(cpu_isa_supported(cpu_best_isa()));
  for (CpuIsa isa : isas) {
    const CpuKernels& k = cpu_kernels_for(isa);
    CHECK(k.isa == isa);
    CHECK((k.q8_0_rows16_gemv && k.q8_0_rows16_gemm && k.q4_0_rows16_gemv && k.q4_0_rows16_gemm));
    CHECK((k.quantize_q8 && k.q8_0_gemv && k.q8_0_gemm && k.q4_0_gemv && k.q4_0_gemm && k.f32_gemv && k.f32_gemm &&
           k.f16_gemv && k.f16_gemm && k.bf16_gemv && k.bf16_gemm && k.f32_rows16_gemv && k.f32_rows16_gemm &&
           k.f16_rows16_gemv && k.f16_rows16_gemm && k.bf16_rows16_gemv && k.bf16_rows16_gemm && k.rmsnorm && k.swiglu && k.add && k.dot && k.axpy && k.dot_rows && k.axpy_rows && k.softmax));
    CpuIsa back;
    REQUIRE(cpu_isa_from_name(cpu_isa_name(isa), &back));
    CHECK(back == isa);
  }
  MESSAGE("kernel paths on this machine: " << isas.size() << ", best " << std::string(cpu_isa_name(cpu_best_isa())));
}

TEST_CASE("q8 activation quantization gives the reference bytes on every path") {
  std::mt19937 rng(7);
  for (CpuIsa isa : supported_isas()) {
    CAPTURE(cpu_isa_name(isa));
    const CpuKernels& k = cpu_kernels_for(isa);
    for (int64_t blocks = 1; blocks <= 12; ++blocks) {
      const int64_t cols = 32 * blocks;
      std::vector<float> x = random_floats(rng, cols, 3.0f);
      for (int j = 0; j < 32; ++j) x[j] = 0.0f;  // an all-zero block
      if (blocks > 1) x[40] = 1e-3f;
      QuantBuffers ref;
      ref_quantize(x.data(), cols, &ref.q, &ref.d, &ref.bias);
      std::vector<int8_t> q(cols);
      std::vector<float> d(blocks);
      std::vector<int32_t> bias(blocks);
      k.quantize_q8(x.data(), cols, q.data(), d.data(), bias.data());
      CHECK(q == ref.q);
      CHECK(d == ref.d);
      CHECK(bias == ref.bias);
    }
  }
}

TEST_CASE("quantized matmuls (q8_0, q4_0, gemv and gemm) match the scalar reference on every path") {
  for (DType t : {DType::Q8_0, DType::Q4_0}) {
    CAPTURE(dtype_name(t));
    std::mt19937 rng(11);
    for (const Shape& s : shapes(true, rng)) {
      CAPTURE(s.rows);
      CAPTURE(s.cols);
      CAPTURE(s.n);
      std::vector<float> wv;
      const std::vector<uint8_t> w = make_weights(t, rng, s.rows, s.cols, &wv);
      const std::vector<float> x = random_floats(rng, s.n * s.cols);
      QuantBuffers qb;
      for (int32_t i = 0; i < s.n; ++i) ref_quantize(x.data() + i * s.cols, s.cols, &qb.q, &qb.d, &qb.bias);
      AlignedActs acts(qb, s.cols);
      // Reference: the dequantized weights times the dequantized activations.
      std::vector<double> ref(s.n * s.rows), mag(s.n * s.rows);
      for (int32_t i = 0; i < s.n; ++i) {
        for (int64_t r = 0; r < s.rows; ++r) {
          double acc = 0, m = 0;
          for (int64_t c = 0; c < s.cols; ++c) {
            const double xv = static_cast<double>(qb.q[i * s.cols + c]) * qb.d[i * (s.cols / 32) + c / 32];
            acc += wv[r * s.cols + c] * xv;
            m += std::fabs(wv[r * s.cols + c] * xv);
          }
          ref[i * s.rows + r] = acc;
          mag[i * s.rows + r] = m;
        }
      }
      for (CpuIsa isa : supported_isas()) {
        CAPTURE(cpu_isa_name(isa));
        const CpuKernels& k = cpu_kernels_for(isa);
        for (QMatmulFn fn : t == DType::Q8_0 ? std::vector<QMatmulFn>{k.q8_0_gemv, k.q8_0_gemm}
                                             : std::vector<QMatmulFn>{k.q4_0_gemv, k.q4_0_gemm}) {
          std::vector<float> out(s.n * s.rows, NAN);
          // Two calls over a split of the rows, as two threads would make.
          const int64_t mid = s.rows / 3;
          fn(w.data(), s.cols, 0, mid, acts.view, s.n, out.data(), s.rows);
          fn(w.data(), s.cols, mid, s.rows, acts.view, s.n, out.data(), s.rows);
          for (size_t i = 0; i < out.size(); ++i) {
            REQUIRE(std::fabs(out[i] - ref[i]) <= 2e-6 * mag[i] + 1e-6);
          }
        }
      }
    }
  }
}

// The GGUF block types' kernels (q4_1 .. iq4_xs) of table k.
std::vector<QMatmulFn> gguf_kernels(const CpuKernels& k, DType t) {
  const QMatmulPair p = cpu_quant_matmuls(k, t, Layout::RowMajor);
  return {p.gemv, p.gemm};
}

TEST_CASE("GGUF block types (q4_1 .. iq4_xs, gemv and gemm) match the scalar reference on every path") {
  const DType types[] = {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                         DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};
  int checked = 0;
  for (DType t : types) {
    CAPTURE(dtype_name(t));
    const int64_t block = dtype_block_elements(t);
    std::mt19937 rng(23 + static_cast<int>(t));
    std::vector<Shape> cases;
    const int64_t rows[] = {1, 3, 4, 5, 7, 9, 16, 17, 33};
    for (int64_t r : rows) {
      for (int32_t n = 1; n <= 17; n += (n < 5 ? 1 : 6)) {
        cases.push_back({r, block * (1 + static_cast<int64_t>(rng() % (block == 32 ? 9 : 3))), n});
      }
    }
    cases.push_back({40, block == 32 ? 32 * 28 : 256 * 4, 3});
    for (const Shape& s : cases) {
      CAPTURE(s.rows);
      CAPTURE(s.cols);
      CAPTURE(s.n);
      std::vector<float> wv;
      const std::vector<uint8_t> w = make_weights(t, rng, s.rows, s.cols, &wv);
      const std::vector<float> x = random_floats(rng, s.n * s.cols);
      QuantBuffers qb;
      for (int32_t i = 0; i < s.n; ++i) ref_quantize(x.data() + i * s.cols, s.cols, &qb.q, &qb.d, &qb.bias);
      AlignedActs acts(qb, s.cols);
      std::vector<double> ref(s.n * s.rows), mag(s.n * s.rows);
      for (int32_t i = 0; i < s.n; ++i) {
        for (int64_t r = 0; r < s.rows; ++r) {
          double acc = 0, m = 0;
          for (int64_t c = 0; c < s.cols; ++c) {
            const double xv = static_cast<double>(qb.q[i * s.cols + c]) * qb.d[i * (s.cols / 32) + c / 32];
            acc += wv[r * s.cols + c] * xv;
            m += std::fabs(wv[r * s.cols + c] * xv);
          }
          ref[i * s.rows + r] = acc;
          mag[i * s.rows + r] = m;
        }
      }
      for (CpuIsa isa : supported_isas()) {
        CAPTURE(cpu_isa_name(isa));
        const CpuKernels& k = cpu_kernels_for(isa);
        for (QMatmulFn fn : gguf_kernels(k, t)) {
          REQUIRE((fn != nullptr));
          std::vector<float> out(s.n * s.rows, NAN);
          const int64_t mid = s.rows / 3;
          fn(w.data(), s.cols, 0, mid, acts.view, s.n, out.data(), s.rows);
          fn(w.data(), s.cols, mid, s.rows, acts.view, s.n, out.data(), s.rows);
          for (size_t i = 0; i < out.size(); ++i) {
            REQUIRE(std::fabs(out[i] - ref[i]) <= 2e-6 * mag[i] + 1e-6);
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked >= 10 * 2 * 2);
}

TEST_CASE("kernel block mirrors: the IQ4 levels equal core's") {
  for (int i = 0; i < 16; ++i) CHECK(kKIq4Levels[i] == kIq4Levels[i]);
}

TEST_CASE("rows16 layout: pack and unpack are inverse, rows read back, matmuls match the reference on every path") {
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K, DType::IQ4_XS}) {
    CAPTURE(dtype_name(t));
    std::mt19937 rng(23);
    const int64_t block = dtype_block_elements(t);
    for (int64_t rows : {16, 32, 48, 80}) {
      // Every token remainder of the gemm's tiles, past its 32-token chunk
      // and, at 16 rows, past AVX-512's 128-token one (Q2_K, Q3_K, Q5_K, Q6_K).
      std::vector<int32_t> ns = {1, 2, 3, 4, 5, 6, 11, 16, 33, 37};
      if (rows == 16) ns.push_back(133);
      for (int32_t n : ns) {
        const int64_t cols = block * (1 + static_cast<int64_t>(rng() % (block == 32 ? 9 : 3)));
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(n);
        std::vector<float> wv;
        const std::vector<uint8_t> plain = make_weights(t, rng, rows, cols, &wv);
        REQUIRE(layout_fits(Layout::Rows16, t, rows, cols));
        std::vector<uint8_t> packed(plain.size()), back(plain.size());
        pack_rows16(t, plain.data(), packed.data(), rows, cols);
        CHECK(packed != plain);
        unpack_rows16(t, packed.data(), back.data(), rows, cols);
        REQUIRE(back == plain);
        uint64_t row_bytes = 0;
        REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
        std::vector<uint8_t> scratch(row_bytes);
        for (int64_t r = 0; r < rows; r += 7) {
          const uint8_t* row = layout_row(Layout::Rows16, t, packed.data(), cols, r, scratch.data());
          REQUIRE(std::equal(row, row + row_bytes, plain.begin() + r * row_bytes));
        }
        const std::vector<float> x = random_floats(rng, n * cols);
        QuantBuffers qb;
        for (int32_t i = 0; i < n; ++i) ref_quantize(x.data() + i * cols, cols, &qb.q, &qb.d, &qb.bias);
        AlignedActs acts(qb, cols);
        // The reference once per shape, for every path and kernel below.
        std::vector<double> ref(n * rows), mag(n * rows);
        for (int32_t i = 0; i < n; ++i) {
          for (int64_t r = 0; r < rows; ++r) ref[i * rows + r] = ref_output(wv, qb, cols, i, r, &mag[i * rows + r]);
        }
        for (CpuIsa isa : supported_isas()) {
          CAPTURE(cpu_isa_name(isa));
          const CpuKernels& k = cpu_kernels_for(isa);
          const QMatmulPair fns = cpu_quant_matmuls(k, t, Layout::Rows16);
          std::vector<float> outs[2];
          for (QMatmulFn fn : {fns.gemv, fns.gemm}) {
            REQUIRE((fn != nullptr));
            std::vector<float>& out = outs[fn == fns.gemm];
            out.assign(n * rows, NAN);
            const int64_t mid = rows / 16 / 2 * 16;
            fn(packed.data(), cols, 0, mid, acts.view, n, out.data(), rows);
            fn(packed.data(), cols, mid, rows, acts.view, n, out.data(), rows);
            for (size_t i = 0; i < out.size(); ++i) REQUIRE(std::fabs(out[i] - ref[i]) <= 2e-6 * mag[i] + 1e-6);
          }
          // Decode and prefill give each output bit for bit the same.
          CHECK(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)) == 0);
        }
      }
    }
  }
  CHECK(!layout_fits(Layout::Rows16, DType::Q8_0, 24, 64));
  CHECK(layout_fits(Layout::Rows16, DType::F16, 32, 64));  // float rows16: its own test case
  CHECK(!layout_fits(Layout::Rows16, DType::Q4_1, 32, 64));
  CHECK(!layout_fits(Layout::Rows16, DType::Q4_K, 32, 128));  // not whole super-blocks
  CHECK(!layout_fits(Layout::Rows16, DType::Q4_K, 40, 256));
  CHECK(layout_fits(Layout::Rows16, DType::Q4_K, 32, 512));
  CHECK(layout_fits(Layout::Rows16, DType::Q6_K, 32, 512));
  CHECK(!layout_fits(Layout::Rows16, DType::Q6_K, 32, 768 + 32));
  CHECK(layout_fits(Layout::Rows16, DType::Q5_K, 32, 512));
  CHECK(layout_fits(Layout::Rows16, DType::Q3_K, 32, 512));
  CHECK(!layout_fits(Layout::Rows16, DType::Q3_K, 32, 256 + 32));
  CHECK(layout_fits(Layout::Rows16, DType::Q2_K, 32, 512));
  CHECK(!layout_fits(Layout::Rows16, DType::Q2_K, 32, 256 + 32));
  CHECK(layout_fits(Layout::Rows16, DType::IQ4_XS, 32, 512));
  CHECK(!layout_fits(Layout::Rows16, DType::IQ4_XS, 32, 256 + 32));
  CHECK(!layout_fits(Layout::Rows16, DType::IQ4_NL, 32, 512));  // no rows16 form
  CHECK(layout_fits(Layout::RowMajor, DType::F16, 3, 5));
}

TEST_CASE("rows16 K-quants and IQ4_XS at the extremes: largest quants and scales x activations of +-127 stay exact on every path") {
  // Where the integer sums are tightest (AVX2's int16 sums, plain NEON's
  // int16 products): every quant at its largest (or random bytes, every
  // scale included), activations all +127, all -127 or random signs.
  const int64_t rows = 32, cols = 512;
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS}) {
    CAPTURE(dtype_name(t));
    const int bb = dtype_block_bytes(t);
    const int64_t nsb = cols / 256;
    std::mt19937 rng(41);
    // IQ4_XS and Q3_K also all zero bytes: every quant at its most negative
    // level (IQ4_XS -127, Q3_K -4) and every scale at -32 (Q3_K: products
    // of +128). Q2_K's all-ones bytes: quants 3, scales and mins 15.
    const int fills = t == DType::IQ4_XS || t == DType::Q3_K ? 3 : 2;
    for (int fill = 0; fill < fills; ++fill) {
      std::vector<uint8_t> plain(rows * nsb * bb);
      for (auto& v : plain) v = fill == 0 ? 0xff : fill == 2 ? 0x00 : static_cast<uint8_t>(rng());
      // Finite scales: Q6_K's d is its last 2 bytes, Q3_K's at 108, Q2_K's d and dmin at 80,
      // Q4_K/Q5_K's d and dmin their first 4.
      for (int64_t b = 0; b < rows * nsb; ++b) {
        uint8_t* blk = plain.data() + b * bb;
        const uint16_t d = f32_to_f16(0.001f * (1 + static_cast<int>(rng() % 7)));
        set_block_scales(t, blk, d);
        if (t == DType::Q6_K && fill == 0) std::memset(blk + 192, 0x80, 16);  // scale -128
      }
      std::vector<float> wv(rows * cols);
      for (int64_t r = 0; r < rows; ++r) dequantize_row(t, plain.data() + r * nsb * bb, wv.data() + r * cols, cols);
      std::vector<uint8_t> packed(plain.size());
      pack_rows16(t, plain.data(), packed.data(), rows, cols);
      for (int sign = 0; sign < 3; ++sign) {
        CAPTURE(fill);
        CAPTURE(sign);
        const int32_t n = 5;
        QuantBuffers qb;
        for (int64_t i = 0; i < n * cols; ++i) {
          const int8_t q = sign == 0 ? 127 : sign == 1 ? -127 : (rng() & 1 ? 127 : -127);
          qb.q.push_back(q);
        }
        for (int64_t b = 0; b < n * cols / 32; ++b) {
          int32_t sum = 0;
          for (int j = 0; j < 32; ++j) sum += qb.q[b * 32 + j];
          qb.d.push_back(0.01f);
          qb.bias.push_back(-8 * sum);
        }
        AlignedActs acts(qb, cols);
        std::vector<double> ref(n * rows), mag(n * rows);
        for (int32_t i = 0; i < n; ++i) {
          for (int64_t r = 0; r < rows; ++r) ref[i * rows + r] = ref_output(wv, qb, cols, i, r, &mag[i * rows + r]);
        }
        for (CpuIsa isa : supported_isas()) {
          CAPTURE(cpu_isa_name(isa));
          const QMatmulPair fns = cpu_quant_matmuls(cpu_kernels_for(isa), t, Layout::Rows16);
          std::vector<float> outs[2];
          for (QMatmulFn fn : {fns.gemv, fns.gemm}) {
            REQUIRE((fn != nullptr));
            std::vector<float>& out = outs[fn == fns.gemm];
            out.assign(n * rows, NAN);
            fn(packed.data(), cols, 0, rows, acts.view, n, out.data(), rows);
            for (size_t i = 0; i < out.size(); ++i) REQUIRE(std::fabs(out[i] - ref[i]) <= 2e-6 * mag[i] + 1e-6);
          }
          CHECK(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("AMX prefill: the tile gemm gives the avx512vnni gemv's and gemm's bits, on random and extreme weights") {
  // Where the CPU grants AMX (Sapphire Rapids and later); elsewhere the
  // choice must refuse EMBER_AMX=1 with a reason.
  CpuFamilies fam;
  fam.int8 = fam.fp = CpuIsa::Avx512;
  const bool have = cpu_isa_supported(CpuIsa::Avx512) && cpu_choose_amx(cpu_features(), CpuIsa::Avx512, "1").is_ok();
  if (!have) {
    const Result<bool> r = cpu_choose_amx(cpu_features(), CpuIsa::Avx512, "1");
    REQUIRE(!r.is_ok());
    CHECK(r.status().code() == EMBER_ERR_UNSUPPORTED);
    MESSAGE("AMX: not on this CPU (" << r.status().message() << "); its kernels are not run here");
    return;
  }
  const CpuKernels vnni = cpu_kernels_for(fam);
  fam.amx = true;
  const CpuKernels amx = cpu_kernels_for(fam);
  int tiled = 0;
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS}) {
    CAPTURE(dtype_name(t));
    const QMatmulPair v = cpu_quant_matmuls(vnni, t, Layout::Rows16), a = cpu_quant_matmuls(amx, t, Layout::Rows16);
    REQUIRE((a.gemv == v.gemv));  // decode stays on the vector kernels
    if (a.gemm == v.gemm) continue;
    ++tiled;
    std::mt19937 rng(61);
    const int bb = dtype_block_bytes(t);
    // 4352 columns: a chunk of 240 tokens, so 300 tokens cross it.
    for (int64_t cols : {256, 768, 4352}) {
      for (int64_t rows : {16, 48}) {
        for (int fill = 0; fill < 2; ++fill) {
          CAPTURE(cols);
          CAPTURE(rows);
          CAPTURE(fill);
          // fill 0: quantized random weights; 1: random bytes (every quant
          // and scale bit pattern), finite f16 scales in the first 4 bytes.
          std::vector<float> wv;
          std::vector<uint8_t> plain = make_weights(t, rng, rows, cols, &wv);
          if (fill == 1) {
            for (auto& b : plain) b = static_cast<uint8_t>(rng());
            for (size_t b = 0; b < plain.size() / bb; ++b) {
              const uint16_t d = f32_to_f16(0.001f * (1 + static_cast<int>(rng() % 7)));
              set_block_scales(t, plain.data() + b * bb, d);
            }
          }
          std::vector<uint8_t> packed(plain.size());
          pack_rows16(t, plain.data(), packed.data(), rows, cols);
          for (int32_t n : {16, 17, 31, 32, 48, 100, 300}) {
            if (cols > 256 && n == 31) continue;
            CAPTURE(n);
            const std::vector<float> x = random_floats(rng, n * cols);
            QuantBuffers qb;
            for (int32_t i = 0; i < n; ++i) ref_quantize(x.data() + i * cols, cols, &qb.q, &qb.d, &qb.bias);
            if (fill == 1 && n == 48) {
              for (auto& q : qb.q) q = rng() & 1 ? 127 : -127;
              for (size_t b = 0; b < qb.bias.size(); ++b) {
                int32_t sum = 0;
                for (int j = 0; j < 32; ++j) sum += qb.q[b * 32 + j];
                qb.bias[b] = -8 * sum;
              }
            }
            AlignedActs acts(qb, cols);
            std::vector<float> ref(n * rows, NAN), got(n * rows, NAN), dec(n * rows, NAN);
            v.gemm(packed.data(), cols, 0, rows, acts.view, n, ref.data(), rows);
            const int64_t mid = rows / 16 / 2 * 16;
            a.gemm(packed.data(), cols, 0, mid, acts.view, n, got.data(), rows);
            a.gemm(packed.data(), cols, mid, rows, acts.view, n, got.data(), rows);
            CHECK(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)) == 0);
            // Token by token through decode's gemv: the same bits again.
            for (int32_t i = 0; i < n; i += 7) {
              QuantActs one = acts.view;
              one.q += i * cols;
              one.d += i * (cols / 32);
              one.bias += i * (cols / 32);
              one.sum16 += i * (cols / 16);
              v.gemv(packed.data(), cols, 0, rows, one, 1, dec.data() + i * rows, rows);
              CHECK(std::memcmp(dec.data() + i * rows, got.data() + i * rows, rows * sizeof(float)) == 0);
            }
          }
        }
      }
    }
  }
  CHECK(tiled >= 3);  // Q4_K, Q5_K, IQ4_XS at least
  MESSAGE("AMX: " << tiled << " rows16 types' gemm on tiles, bit-identical to avx512vnni");
}

TEST_CASE("float matmuls (f32, f16, bf16, gemv and gemm) match the scalar reference on every path") {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(t));
    std::mt19937 rng(13);
    std::vector<Shape> all = shapes(false, rng);
    // Wide enough that the gemm runs its tokens in several L2-sized blocks
    // (kFloatGemmBlockBytes: 12 tokens of 5000 columns), with a ragged last
    // block and a column tail.
    all.push_back({9, 5000, 29});
    for (const Shape& s : all) {
      CAPTURE(s.rows);
      CAPTURE(s.cols);
      CAPTURE(s.n);
      std::vector<float> wv;
      const std::vector<uint8_t> w = make_weights(t, rng, s.rows, s.cols, &wv);
      const std::vector<float> x = random_floats(rng, s.n * s.cols);
      for (CpuIsa isa : supported_isas()) {
        CAPTURE(cpu_isa_name(isa));
        const CpuKernels& k = cpu_kernels_for(isa);
        const FMatmulFn gemv = t == DType::F32 ? k.f32_gemv : t == DType::F16 ? k.f16_gemv : k.bf16_gemv;
        const FMatmulFn gemm = t == DType::F32 ? k.f32_gemm : t == DType::F16 ? k.f16_gemm : k.bf16_gemm;
        std::vector<float> outs[2];
        for (FMatmulFn fn : {gemv, gemm}) {
          REQUIRE((fn != nullptr));
          std::vector<float>& out = outs[!outs[0].empty()];
          out.assign(s.n * s.rows, NAN);
          const int64_t mid = (s.rows + 1) / 2;
          fn(w.data(), s.cols, 0, mid, x.data(), s.n, out.data(), s.rows);
          fn(w.data(), s.cols, mid, s.rows, x.data(), s.n, out.data(), s.rows);
          for (int32_t i = 0; i < s.n; ++i) {
            for (int64_t r = 0; r < s.rows; ++r) {
              double acc = 0, m = 0;
              for (int64_t c = 0; c < s.cols; ++c) {
                acc += static_cast<double>(wv[r * s.cols + c]) * x[i * s.cols + c];
                m += std::fabs(static_cast<double>(wv[r * s.cols + c]) * x[i * s.cols + c]);
              }
              REQUIRE(std::fabs(out[i * s.rows + r] - acc) <= 1e-6 * m + 1e-6);
            }
          }
        }
        // A token's outputs have the same bits from gemv and gemm (batched
        // and one-at-a-time prefill agree).
        CHECK(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("float rows16 matmuls (f32, f16, bf16): the layout round-trips, every path matches the reference, vector paths give the two fused chains' bits") {
  struct R16Shape {
    int64_t rows, cols;
    int32_t n;
  };
  // Rows in one, two, three and five groups (the 32-row tiles and a lone
  // group), columns from 2 to 5000 (odd where the type allows), tokens
  // covering every tile and tail (12, 8, 4, 2, 1 on AVX-512; 6 / 4 on AVX2)
  // and several L2 token blocks (5000 columns: 12 tokens a block).
  const R16Shape all[] = {{16, 2, 1},  {16, 8, 13}, {32, 64, 12}, {48, 130, 29}, {80, 6, 7},
                          {16, 33, 3}, {64, 96, 25}, {32, 5000, 29}, {16, 1, 2}};
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(t));
    std::mt19937 rng(29);
    for (const R16Shape& s : all) {
      if (t == DType::BF16 && s.cols % 2 != 0) {
        CHECK_FALSE(layout_fits(Layout::Rows16, t, s.rows, s.cols));
        continue;
      }
      CAPTURE(s.rows);
      CAPTURE(s.cols);
      CAPTURE(s.n);
      REQUIRE(layout_fits(Layout::Rows16, t, s.rows, s.cols));
      CHECK_FALSE(layout_fits(Layout::Rows16, t, s.rows + 1, s.cols));
      std::vector<float> wv;
      const std::vector<uint8_t> plain = make_weights(t, rng, s.rows, s.cols, &wv);
      std::vector<uint8_t> packed(plain.size()), back(plain.size()), row(plain.size() / s.rows);
      pack_rows16(t, plain.data(), packed.data(), s.rows, s.cols);
      unpack_rows16(t, packed.data(), back.data(), s.rows, s.cols);
      REQUIRE(back == plain);
      for (int64_t r = 0; r < s.rows; r += 7) {
        const uint8_t* got = layout_row(Layout::Rows16, t, packed.data(), s.cols, r, row.data());
        REQUIRE(std::memcmp(got, plain.data() + r * row.size(), row.size()) == 0);
      }
      const std::vector<float> x = random_floats(rng, s.n * s.cols);
      // Per output two fused multiply-add chains, the even and the odd
      // columns ascending, added at the end.
      std::vector<float> chain(s.n * s.rows);
      for (int32_t i = 0; i < s.n; ++i)
        for (int64_t r = 0; r < s.rows; ++r) {
          float acc[2] = {0.0f, 0.0f};
          for (int64_t c = 0; c < s.cols; ++c) acc[c % 2] = std::fma(wv[r * s.cols + c], x[i * s.cols + c], acc[c % 2]);
          chain[i * s.rows + r] = acc[0] + acc[1];
        }
      for (CpuIsa isa : supported_isas()) {
        CAPTURE(cpu_isa_name(isa));
        const FMatmulPair fns = cpu_float_matmuls(cpu_kernels_for(isa), t, Layout::Rows16);
        REQUIRE((fns.gemv != nullptr && fns.gemm != nullptr));
        for (FMatmulFn fn : {fns.gemv, fns.gemm}) {
          std::vector<float> out(s.n * s.rows, NAN);
          // Two calls split at a group boundary, as the backend splits rows.
          const int64_t mid = s.rows / 32 * 16;
          fn(packed.data(), s.cols, 0, mid, x.data(), s.n, out.data(), s.rows);
          fn(packed.data(), s.cols, mid, s.rows, x.data(), s.n, out.data(), s.rows);
          for (int32_t i = 0; i < s.n; ++i) {
            for (int64_t r = 0; r < s.rows; ++r) {
              double acc = 0, m = 0;
              for (int64_t c = 0; c < s.cols; ++c) {
                acc += static_cast<double>(wv[r * s.cols + c]) * x[i * s.cols + c];
                m += std::fabs(static_cast<double>(wv[r * s.cols + c]) * x[i * s.cols + c]);
              }
              REQUIRE(std::fabs(out[i * s.rows + r] - acc) <= 1e-6 * m + 1e-6);
            }
          }
          // The vector paths fuse every multiply-add: the chains' bits, so a
          // token's outputs do not depend on the tile, the tokens beside it
          // or the rows of the call.
          if (isa != CpuIsa::Generic) CHECK(std::memcmp(out.data(), chain.data(), out.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

#if defined(__x86_64__)
TEST_CASE("BF16 dot-product rows16 matmuls (AVX512-BF16): the reference with activations rounded to BF16, gemv's bits from gemm, any split") {
  if (!cpu_features().avx512bf16) {
    MESSAGE("this CPU has no AVX512-BF16: the BF16 dot-product kernels are not run");
    return;
  }
  auto round_bf16 = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;  // nearest even (finite values)
    std::memcpy(&f, &u, 4);
    return f;
  };
  struct S {
    int64_t rows, cols;
    int32_t n;
  };
  // Column counts with odd pair counts, rows in one to five groups, every
  // token tail, several token blocks (5000 columns).
  const S all[] = {{16, 2, 1}, {32, 6, 13}, {48, 256, 12}, {80, 258, 29}, {16, 510, 7}, {64, 896, 25}, {32, 5000, 14}};
  std::mt19937 rng(31);
  for (const S& s : all) {
    CAPTURE(s.rows);
    CAPTURE(s.cols);
    CAPTURE(s.n);
    std::vector<float> wv;
    const std::vector<uint8_t> plain = make_weights(DType::BF16, rng, s.rows, s.cols, &wv);
    std::vector<uint8_t> packed(plain.size());
    pack_rows16(DType::BF16, plain.data(), packed.data(), s.rows, s.cols);
    const std::vector<float> x = random_floats(rng, s.n * s.cols);
    // The rounding: nearest even, every value (a ragged tail included).
    std::vector<uint16_t> xb(s.n * s.cols + 1, 0xABCD);
    bf16_round__avx512bf16(x.data(), s.n * s.cols, xb.data());
    CHECK(xb.back() == 0xABCD);  // nothing past the end
    for (size_t i = 0; i < x.size(); ++i) {
      const float r = round_bf16(x[i]);
      uint32_t u;
      std::memcpy(&u, &r, 4);
      REQUIRE(xb[i] == (u >> 16));
    }
    std::vector<float> outs[2];
    int which = 0;
    for (Bf16MatmulFn fn : {bf16_rows16_gemv__avx512bf16, bf16_rows16_gemm__avx512bf16}) {
      std::vector<float>& out = outs[which++];
      out.assign(s.n * s.rows, NAN);
      const int64_t mid = s.rows / 32 * 16;
      fn(packed.data(), s.cols, 0, mid, xb.data(), s.n, out.data(), s.rows);
      fn(packed.data(), s.cols, mid, s.rows, xb.data(), s.n, out.data(), s.rows);
      double worst_exact = 0;
      for (int32_t i = 0; i < s.n; ++i) {
        for (int64_t r = 0; r < s.rows; ++r) {
          double acc = 0, exact = 0, m = 0;
          for (int64_t c = 0; c < s.cols; ++c) {
            const double w = wv[r * s.cols + c];
            acc += w * round_bf16(x[i * s.cols + c]);
            exact += w * x[i * s.cols + c];
            m += std::fabs(w * x[i * s.cols + c]);
          }
          // f32 sums of exact BF16 products: the reference within f32 rounding.
          REQUIRE(std::fabs(out[i * s.rows + r] - acc) <= 2e-6 * m + 1e-6);
          worst_exact = std::max(worst_exact, std::fabs(out[i * s.rows + r] - exact) / (m + 1e-30));
        }
      }
      // The rounding of the activations, and no more: within 2^-8 of the
      // magnitude of the products against f32 activations.
      CHECK(worst_exact <= 1.0 / 256);
    }
    CHECK(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)) == 0);
  }
}
#endif

TEST_CASE("vector kernels (rmsnorm, swiglu, gelu, add, dot, axpy) match the scalar reference on every path") {
  std::mt19937 rng(17);
  for (CpuIsa isa : supported_isas()) {
    CAPTURE(cpu_isa_name(isa));
    const CpuKernels& k = cpu_kernels_for(isa);
    for (int64_t n = 1; n <= 80; n += (n < 40 ? 1 : 13)) {
      CAPTURE(n);
      const std::vector<float> a = random_floats(rng, n, 4.0f), b = random_floats(rng, n, 2.0f);
      std::vector<float> w = random_floats(rng, n);
      std::vector<float> out(n);
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(a[i]) * a[i];
      const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
      k.rmsnorm(out.data(), a.data(), w.data(), n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) REQUIRE(std::fabs(out[i] - w[i] * a[i] * inv) <= 1e-5 * (1 + std::fabs(w[i] * a[i] * inv)));
      k.swiglu(out.data(), a.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double e = a[i] / (1.0 + std::exp(-static_cast<double>(a[i]))) * b[i];
        REQUIRE(std::fabs(out[i] - e) <= 1e-5 * (1 + std::fabs(e)));
      }
      // GELU (tanh form), alone and gated, on [-12, 12] so both tails show.
      std::vector<float> ga = a;
      for (auto& v : ga) v *= 3.0f;
      for (const float* gate : {static_cast<const float*>(nullptr), b.data()}) {
        REQUIRE((k.gelu != nullptr));
        k.gelu(out.data(), ga.data(), gate, n);
        for (int64_t i = 0; i < n; ++i) {
          const double x = ga[i];
          const double e = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * (gate ? gate[i] : 1.0);
          REQUIRE(std::fabs(out[i] - e) <= 2e-6 * (1 + std::fabs(e)));
        }
      }
      k.add(out.data(), a.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) REQUIRE(out[i] == a[i] + b[i]);
      double dot = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        dot += static_cast<double>(a[i]) * b[i];
        mag += std::fabs(static_cast<double>(a[i]) * b[i]);
      }
      REQUIRE(std::fabs(k.dot(a.data(), b.data(), n) - dot) <= 1e-6 * mag + 1e-6);
      std::vector<float> sm = a;
      for (auto& v : sm) v *= 8.0f;  // scores spread over [-32, 32]
      double smax = -1e30, ssum = 0;
      for (float v : sm) smax = std::max<double>(smax, v);
      for (float v : sm) ssum += std::exp(static_cast<double>(v) - smax);
      std::vector<float> want(n);
      for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(std::exp(static_cast<double>(sm[i]) - smax) / ssum);
      k.softmax(sm.data(), n);
      double total = 0;
      for (int64_t i = 0; i < n; ++i) {
        REQUIRE(std::fabs(sm[i] - want[i]) <= 1e-6 * want[i] + 1e-12);
        total += sm[i];
      }
      REQUIRE(std::fabs(total - 1.0) <= 1e-5);
      std::vector<float> y = w;
      k.axpy(y.data(), 0.75f, a.data(), n);
      for (int64_t i = 0; i < n; ++i) REQUIRE(std::fabs(y[i] - (w[i] + 0.75 * a[i])) <= 1e-6 * (1 + std::fabs(y[i])));
    }
    // Extreme inputs to swiglu stay finite (the vector exp clamps).
    const float big[3] = {-200.0f, 0.0f, 200.0f}, one[3] = {1.0f, 1.0f, 1.0f};
    float o[3];
    k.swiglu(o, big, one, 3);
    CHECK(std::fabs(o[0]) < 1e-30f);
    CHECK(o[1] == 0.0f);
    CHECK(o[2] == doctest::Approx(200.0f));
  }
}

TEST_CASE("attention row kernels (dot_rows, axpy_rows) equal dot and axpy row by row and head by head, bit for bit") {
  std::mt19937 rng(29);
  for (CpuIsa isa : supported_isas()) {
    CAPTURE(cpu_isa_name(isa));
    const CpuKernels& k = cpu_kernels_for(isa);
    for (int64_t n : {1, 7, 16, 31, 32, 64, 80, 128, 130}) {
      for (int32_t rows : {1, 2, 5, 16, 33, 50}) {
        // 1 head, a group of 4 (the blocked paths), and remainders of them.
        for (int32_t heads : {1, 3, 4, 7, 8}) {
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(heads);
          const int64_t stride = n + 3 + static_cast<int64_t>(rng() % 5);
          const int64_t q_stride = n + static_cast<int64_t>(rng() % 3), s_stride = rows + 2;
          const std::vector<float> q = random_floats(rng, heads * q_stride);
          const std::vector<float> kv = random_floats(rng, rows * stride, 2.0f);
          const std::vector<float> alpha = random_floats(rng, heads * s_stride);
          std::vector<float> scores(heads * s_stride, NAN);
          k.dot_rows(q.data(), heads, q_stride, kv.data(), stride, rows, n, 0.125f, scores.data(), s_stride);
          for (int32_t h = 0; h < heads; ++h) {
            for (int32_t t = 0; t < rows; ++t) {
              REQUIRE(scores[h * s_stride + t] == k.dot(q.data() + h * q_stride, kv.data() + t * stride, n) * 0.125f);
            }
            CHECK(std::isnan(scores[h * s_stride + rows]));  // nothing past the rows
          }
          std::vector<float> y = random_floats(rng, heads * q_stride), want = y;
          k.axpy_rows(y.data(), heads, q_stride, alpha.data(), s_stride, kv.data(), stride, rows, n);
          for (int32_t h = 0; h < heads; ++h) {
            for (int32_t t = 0; t < rows; ++t) {
              k.axpy(want.data() + h * q_stride, alpha[h * s_stride + t], kv.data() + t * stride, n);
            }
          }
          REQUIRE(y == want);
        }
      }
    }
  }
}

TEST_CASE("logits are bit-identical for 1, 2 and 3 threads on every path and weight type") {
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  // Q2_K / Q3_K / Q4_K / Q5_K / Q6_K / IQ4_XS (rows16) need whole 256-element super-blocks: a 256-wide shape.
  const SynthShape k256 = {"k256", 256, 512, 2, 4, 2, 0, 64};
  const std::string dir = test::temp_dir("kernels");
  const char* saved = std::getenv("EMBER_ISA");
  const std::string saved_isa = saved ? saved : "";
  for (DType t : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K, DType::IQ4_XS}) {
    CAPTURE(dtype_name(t));
    const bool super = t == DType::Q2_K ||
        t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K || t == DType::IQ4_XS;
    const SynthShape& shape = super ? k256 : tiny;
    auto m = make_synthetic(shape, t, 5, "");
    REQUIRE(m.is_ok());
    const std::string path = dir + "/tiny-" + dtype_name(t) + ".ember";
    REQUIRE(write_model(m.value()->spec, path).is_ok());
    ember_model* model = nullptr;
    REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
    const int32_t vocab = info.vocab_size;
    for (CpuIsa isa : supported_isas()) {
      CAPTURE(cpu_isa_name(isa));
      setenv("EMBER_ISA", cpu_isa_name(isa), 1);
      std::vector<std::vector<float>> per_threads;
      for (int threads = 1; threads <= 3; ++threads) {
        ember_session_options so;
        ember_session_options_default(&so);
        so.context_length = 64;
        so.max_batch = 16;
        so.n_threads = threads;
        ember_session* s = nullptr;
        REQUIRE(ember_session_create(model, &so, &s) == EMBER_OK);
        std::vector<int32_t> prompt;
        for (int i = 0; i < 13; ++i) prompt.push_back(3 + (i * 29) % (vocab - 3));
        std::vector<float> logits(vocab), all;
        REQUIRE(ember_session_prefill(s, prompt.data(), prompt.size(), logits.data()) == EMBER_OK);
        all = logits;
        for (int i = 0; i < 4; ++i) {
          REQUIRE(ember_session_decode(s, 5 + i, logits.data()) == EMBER_OK);
          all.insert(all.end(), logits.begin(), logits.end());
        }
        ember_session_free(s);
        for (float v : all) REQUIRE(std::isfinite(v));
        per_threads.push_back(all);
      }
      CHECK(per_threads[0] == per_threads[1]);
      CHECK(per_threads[0] == per_threads[2]);
    }
    ember_model_free(model);
  }
  if (saved) {
    setenv("EMBER_ISA", saved_isa.c_str(), 1);
  } else {
    unsetenv("EMBER_ISA");
  }
}

TEST_CASE("an unknown or unsupported EMBER_ISA is an error with a message, not a crash") {
  const char* saved = std::getenv("EMBER_ISA");
  const std::string saved_isa = saved ? saved : "";
  setenv("EMBER_ISA", "sse9", 1);
  auto r = cpu_select_families();
  CHECK(r.status().code() == EMBER_ERR_UNSUPPORTED);
  CHECK(r.status().message().find("sse9") != std::string::npos);
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const CpuIsa isa = static_cast<CpuIsa>(i);
    setenv("EMBER_ISA", cpu_isa_name(isa), 1);
    auto k = cpu_select_families();
    CHECK(k.is_ok() == cpu_isa_supported(isa));
    if (k.is_ok()) {
      CHECK(k.value().int8 == isa);
      // Capped to the float family: neondot's float kernels are neon's.
      CHECK(k.value().fp == (isa == CpuIsa::NeonDot ? CpuIsa::Neon : isa));
    }
  }
  if (saved) {
    setenv("EMBER_ISA", saved_isa.c_str(), 1);
  } else {
    unsetenv("EMBER_ISA");
  }
}

TEST_CASE("IQ4_XS, Q4_K, Q5_K and Q6_K rows16 prefill over several panel slices and token chunks: gemv's bits, the reference's values") {
  // AVX-512's gemm unpacks slices of 4 super-blocks per chunk of up to 256
  // tokens from 16 tokens on: 9 super-blocks (slices of 4, 4, 1), a thread
  // range ending in a lone 16-row group, token counts at and past the edges.
  for (DType t : {DType::IQ4_XS, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    CAPTURE(dtype_name(t));
    const int64_t rows = 48, cols = 256 * 9;
    std::mt19937 rng(59);
    std::vector<float> wv;
    const std::vector<uint8_t> plain = make_weights(t, rng, rows, cols, &wv);
    std::vector<uint8_t> packed(plain.size());
    pack_rows16(t, plain.data(), packed.data(), rows, cols);
    for (int32_t n : {15, 16, 21, 260}) {
      CAPTURE(n);
      const std::vector<float> x = random_floats(rng, n * cols);
      QuantBuffers qb;
      for (int32_t i = 0; i < n; ++i) ref_quantize(x.data() + i * cols, cols, &qb.q, &qb.d, &qb.bias);
      AlignedActs acts(qb, cols);
      for (CpuIsa isa : supported_isas()) {
        CAPTURE(cpu_isa_name(isa));
        const QMatmulPair fns = cpu_quant_matmuls(cpu_kernels_for(isa), t, Layout::Rows16);
        std::vector<float> outs[2];
        for (int g = 0; g < 2; ++g) {
          outs[g].assign(n * rows, NAN);
          const QMatmulFn fn = g ? fns.gemm : fns.gemv;
          fn(packed.data(), cols, 0, 16, acts.view, n, outs[g].data(), rows);
          fn(packed.data(), cols, 16, rows, acts.view, n, outs[g].data(), rows);
        }
        CHECK(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)) == 0);
        for (int32_t i = 0; i < n; i += 7) {
          for (int64_t r = 0; r < rows; r += 5) {
            double m = 0;
            const double acc = ref_output(wv, qb, cols, i, r, &m);
            REQUIRE(std::fabs(outs[1][i * rows + r] - acc) <= 2e-6 * m + 1e-6);
          }
        }
      }
    }
  }
}

}  // TEST_SUITE

// ember quantize: per-element error bounds of Q8_0/Q4_0 against the f32
// weights, rows that are not whole blocks keeping f32, norms staying f32,
// the recipe in provenance, and the loader accepting the result.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "tools/convert/quantize.h"
#include "tools_helpers.h"

namespace ember {
namespace {

// dim 64, hidden 80: ffn_down's rows (80 elements) are not whole blocks.
SynthShape odd_shape() {
  SynthShape s;
  s.name = "odd";
  s.dim = 64;
  s.hidden_dim = 80;
  s.n_layers = 1;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.context = 64;
  return s;
}

// Largest |x - x̂| over a block, relative to the block's own scale bound:
// Q8_0 rounds to d/2 with d = amax/127 (plus the f16 rounding of d, up to
// 127 * d * 2^-11); Q4_0 to d/2 with d = amax/8, except that +8 clamps to
// +7 (error up to d).
void check_error_bounds(DType dtype, const float* ref, const uint8_t* q, int64_t rows, int64_t cols) {
  std::vector<float> back(cols);
  uint64_t row_bytes = 0;
  REQUIRE(dtype_bytes(dtype, cols, &row_bytes));
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(dtype, q + r * row_bytes, back.data(), cols);
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
      float amax = 0;
      for (int j = 0; j < kQuantBlock; ++j) amax = std::fmax(amax, std::fabs(ref[r * cols + b * kQuantBlock + j]));
      const double d = dtype == DType::Q8_0 ? amax / 127.0 : amax / 8.0;
      const double bound = dtype == DType::Q8_0 ? 0.5 * d + 127 * d / 2048 + 1e-12 : 1.0 * d + 8 * d / 2048 + 1e-12;
      for (int j = 0; j < kQuantBlock; ++j) {
        const int64_t i = b * kQuantBlock + j;
        const double err = std::fabs(static_cast<double>(back[i]) - ref[r * cols + i]);
        worst = std::fmax(worst, err / (bound > 0 ? bound : 1));
        if (err > bound) {
          FAIL_CHECK(std::string(dtype_name(dtype)) << " row " << r << " element " << i << ": |" << back[i] << " - "
                                        << ref[r * cols + i] << "| > " << bound);
          return;
        }
      }
    }
  }
  CHECK(worst <= 1.0);
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("quantize: q8_0 and q4_0 within per-block bounds of f32, odd rows keep f32, norms f32") {
  for (DType target : {DType::Q8_0, DType::Q4_0, DType::F16}) {
    const std::string target_name = dtype_name(target);
    CAPTURE(target_name);
    auto ref = make_synthetic(odd_shape(), DType::F32, 7, "");
    REQUIRE(ref.is_ok());
    auto q = make_synthetic(odd_shape(), DType::F32, 7, "");
    REQUIRE(q.is_ok());
    QuantizeReport rep;
    REQUIRE(quantize_model(q.value().get(), target, &rep).is_ok());
    const auto& rt = ref.value()->spec.tensors;
    const auto& qt = q.value()->spec.tensors;
    REQUIRE(rt.size() == qt.size());
    for (size_t i = 0; i < rt.size(); ++i) {
      CAPTURE(qt[i].name);
      CHECK(qt[i].shape == rt[i].shape);
      if (rt[i].shape.size() == 1) {
        CHECK(qt[i].dtype == DType::F32);
        continue;
      }
      const int64_t rows = rt[i].shape[0], cols = rt[i].shape[1];
      const bool odd = cols % kQuantBlock != 0;
      if (odd && dtype_is_quantized(target)) {
        CHECK(qt[i].name.find("ffn_down") != std::string::npos);
        CHECK(qt[i].dtype == DType::F32);
        CHECK(std::memcmp(qt[i].data, rt[i].data, rt[i].size) == 0);
        continue;
      }
      REQUIRE(qt[i].dtype == target);
      const float* f = static_cast<const float*>(rt[i].data);
      const uint8_t* b = static_cast<const uint8_t*>(qt[i].data);
      if (target == DType::F16) {
        std::vector<float> back(cols);
        for (int64_t r = 0; r < rows; ++r) {
          dequantize_row(DType::F16, b + r * cols * 2, back.data(), cols);
          for (int64_t c = 0; c < cols; ++c) {
            REQUIRE(std::fabs(back[c] - f[r * cols + c]) <= std::fabs(f[r * cols + c]) / 2048 + 1e-7);
          }
        }
      } else {
        check_error_bounds(target, f, b, rows, cols);
      }
    }
    if (dtype_is_quantized(target)) {
      REQUIRE(rep.kept.size() == 1);
      CHECK(rep.kept[0].tensor == "blk.0.ffn_down.weight");
      CHECK(rep.kept[0].kept == DType::F32);
      CHECK(q.value()->spec.provenance.quantization.find("1 matrices kept f32") != std::string::npos);
    } else {
      CHECK(rep.kept.empty());
    }
    CHECK(rep.norms == 3);
    CHECK(q.value()->spec.provenance.quantization.rfind(dtype_name(target), 0) == 0);
    // The loader accepts what was written.
    const std::string dir = test::temp_dir("quantize");
    const std::string path = dir + "/q.ember";
    REQUIRE(write_model(q.value()->spec, path).is_ok());
    auto file = ModelFile::open(path, ModelFile::Options{true});
    REQUIRE_MESSAGE(file.is_ok(), file.status().message());
  }
}

TEST_CASE("quantize: the CLI re-types an .ember file and names what it kept") {
  const std::string dir = test::temp_dir("quantize-cli");
  const std::string in = test::synth_ember(dir, odd_shape(), DType::F32, 3, "odd-f32.ember");
  const std::string out = dir + "/odd-q8.ember";
  auto r = test::run_cli("quantize " + in + " -o " + out + " --dtype q8_0 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("'blk.0.ffn_down.weight' kept f32") != std::string::npos);
  auto f = ModelFile::open(out, ModelFile::Options{true});
  REQUIRE(f.is_ok());
  std::map<std::string, DType> types;
  for (const auto& t : f.value()->tensors()) types[t.name] = t.dtype;
  CHECK(types["blk.0.attn_q.weight"] == DType::Q8_0);
  CHECK(types["token_embd.weight"] == DType::Q8_0);
  CHECK(types["blk.0.ffn_down.weight"] == DType::F32);
  CHECK(types["blk.0.attn_norm.weight"] == DType::F32);
  CHECK(f.value()->provenance().quantization.find("q8_0") == 0);

  // Errors name the flag and the value, on one line starting with the status.
  r = test::run_cli("quantize " + in + " -o " + out + " --dtype iq2_xxs 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.rfind("EMBER_ERR_INVALID_ARGUMENT: --dtype 'iq2_xxs'", 0) == 0);
}

}  // TEST_SUITE
}  // namespace ember

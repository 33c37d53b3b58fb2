// Whole models with XNNPACK running the float matmuls (EMBER_KERNELS=xnnpack)
// and with ember's own kernels (EMBER_KERNELS=ember, and auto), against
// scalar references: llama2.c's plain forward pass for the real
// stories260K (f32), and for synthetic models with F32, F16 and BF16
// weights the same weights widened to f32 and run on the generic (scalar)
// path. Also: the plan counts XNNPACK's packed copies exactly, steps
// allocate nothing, and a freed session gives every byte back.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/xnnpack_provider.h"
#include "platforms/linux/cpu_features.h"
#include "core/dtype.h"
#include "ember.h"
#include "memory/alloc_counter.h"
#include "model/stories_fixture.h"
#include "reference/llama2c_reference.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

// Sets an environment variable for a scope, restoring it after.
struct EnvGuard {
  std::string name, saved;
  bool had;
  EnvGuard(const char* n, const char* value) : name(n) {
    const char* v = std::getenv(n);
    had = v != nullptr;
    if (had) saved = v;
    set(value);
  }
  void set(const char* value) {
    if (value) setenv(name.c_str(), value, 1);
    else unsetenv(name.c_str());
  }
  ~EnvGuard() { set(had ? saved.c_str() : nullptr); }
};

SynthShape shape() {
  SynthShape s;
  s.name = "xnnpack";
  s.dim = 128;
  s.hidden_dim = 352;  // 22 runs of 16 rows: slices of unequal length
  s.n_layers = 2;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.context = 64;
  return s;
}

std::string write_synthetic(DType t, bool widened) {
  auto m = make_synthetic(shape(), t, 23, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  ModelSpec spec = m.value()->spec;
  std::vector<std::vector<float>> owned;
  if (widened) {  // every matrix as f32, holding exactly the values stored as t
    owned.reserve(spec.tensors.size());
    for (TensorSource& ts : spec.tensors) {
      if (ts.dtype == DType::F32 || ts.shape.size() != 2) continue;
      const int64_t rows = ts.shape[0], cols = ts.shape[1];
      std::vector<float> f(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(ts.dtype, static_cast<const uint8_t*>(ts.data) + r * cols * 2, f.data() + r * cols, cols);
      }
      ts.dtype = DType::F32;
      ts.data = f.data();
      ts.size = f.size() * sizeof(float);
      owned.push_back(std::move(f));
    }
  }
  const std::string path = test::temp_dir("xnnpack") + "/" + dtype_name(t) + (widened ? "-wide" : "") + ".ember";
  const Status s = write_model(spec, path);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  return path;
}

ember_session_options options(int32_t threads) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.backend = EMBER_BACKEND_CPU;
  so.context_length = 32;
  so.max_batch = 16;
  so.n_threads = threads;
  return so;
}

// Logits after a 12-token prefill (n > 1: the prefill family) and after
// each of 3 decode steps (the decode family).
std::vector<std::vector<float>> run_logits(const std::string& path, int32_t threads) {
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  const ember_session_options so = options(threads);
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(m, &so, &s) == EMBER_OK, ember_last_error());
  const int32_t vocab = info.vocab_size;
  std::vector<int32_t> prompt{1};
  for (int i = 1; i < 12; ++i) prompt.push_back(3 + (i * 37) % (vocab - 3));
  std::vector<std::vector<float>> out(1, std::vector<float>(vocab));
  REQUIRE(ember_session_prefill(s, prompt.data(), prompt.size(), out[0].data()) == EMBER_OK);
  for (int i = 0; i < 3; ++i) {
    out.emplace_back(vocab);
    REQUIRE(ember_session_decode(s, 40 + 17 * i, out.back().data()) == EMBER_OK);
  }
  ember_session_free(s);
  ember_model_free(m);
  return out;
}

// The logits of the 12-token prompt prefilled as one batch and fed one
// token at a time: a provider must give the same bits (turns of a
// conversation are prefilled in pieces; tests/api/test_sessions.cpp).
bool batch_equals_single(const std::string& path) {
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  const ember_session_options so = options(2);
  ember_session *a = nullptr, *b = nullptr;
  REQUIRE(ember_session_create(m, &so, &a) == EMBER_OK);
  REQUIRE(ember_session_create(m, &so, &b) == EMBER_OK);
  std::vector<int32_t> prompt{1};
  for (int i = 1; i < 12; ++i) prompt.push_back(3 + (i * 37) % (info.vocab_size - 3));
  std::vector<float> la(info.vocab_size), lb(info.vocab_size);
  REQUIRE(ember_session_prefill(a, prompt.data(), prompt.size(), la.data()) == EMBER_OK);
  for (int32_t t : prompt) REQUIRE(ember_session_decode(b, t, lb.data()) == EMBER_OK);
  ember_session_free(a);
  ember_session_free(b);
  ember_model_free(m);
  return la == lb;
}

double max_rel_l2(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& ref) {
  REQUIRE(a.size() == ref.size());
  double worst = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref[k].size(); ++i) {
      REQUIRE(std::isfinite(a[k][i]));
      const double d = static_cast<double>(a[k][i]) - ref[k][i];
      num += d * d;
      den += static_cast<double>(ref[k][i]) * ref[k][i];
    }
    REQUIRE(den > 0);
    worst = std::max(worst, std::sqrt(num / den));
  }
  return worst;
}

}  // namespace

TEST_SUITE("model") {

TEST_CASE("xnnpack and ember kernels: F32, F16, BF16 models match the scalar path on the same weights") {
  if (!xnnpack_info().usable) {
    MESSAGE("XNNPACK not usable here (" << xnnpack_info().reason << "): ember's kernels only");
  }
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(t));
    const std::string model = write_synthetic(t, false);
    std::vector<std::vector<float>> ref;
    {
      // The scalar reference: the weights widened to f32, generic kernels.
      EnvGuard isa("EMBER_ISA", "generic"), kernels("EMBER_KERNELS", "ember");
      ref = run_logits(write_synthetic(t, true), 2);
    }
    // The exact kernels (f32 activations); the BF16 dot products have
    // their own case below.
    EnvGuard exact("EMBER_BF16_DOT", "0");
    for (const char* k : {"ember", "xnnpack", "auto"}) {
      CAPTURE(k);
      if (std::string(k) == "xnnpack" && !xnnpack_info().usable) continue;
      EnvGuard kernels("EMBER_KERNELS", k);
      const std::vector<std::vector<float>> got = run_logits(model, 2);
      // f32 sums in another order than the scalar path's: ~1e-6 here; a
      // wrong row, slice or batch offset is of order 1.
      CHECK(max_rel_l2(got, ref) < 1e-4);
      if (std::string(k) == "xnnpack") {
        // One operator per run of rows, each output computed by one of
        // them: the same bits on 1 and 3 threads.
        CHECK(run_logits(model, 1) == got);
        CHECK(run_logits(model, 3) == got);
      }
      // Each family runs one provider for 1 row and n rows, whose sums agree bit for bit.
      CHECK(batch_equals_single(model));
    }
  }
}

TEST_CASE("BF16 dot products (AVX512-BF16): a BF16 model within the activations' rounding of the scalar path, a token's logits the same bits alone or in a batch, for any thread count") {
  if (!cpu_features().avx512bf16) {
    MESSAGE("this CPU has no AVX512-BF16: the exact BF16 kernels run (the case above)");
    return;
  }
  const std::string model = write_synthetic(DType::BF16, false);
  std::vector<std::vector<float>> ref;
  {
    EnvGuard isa("EMBER_ISA", "generic"), kernels("EMBER_KERNELS", "ember");
    ref = run_logits(write_synthetic(DType::BF16, true), 2);
  }
  EnvGuard dot("EMBER_BF16_DOT", "1"), kernels("EMBER_KERNELS", "ember");
  const std::vector<std::vector<float>> got = run_logits(model, 2);
  // Activations rounded to BF16 (2^-9 relative per value): of order 1e-3
  // here, against ~1e-6 for the exact kernels.
  const double d = max_rel_l2(got, ref);
  MESSAGE("BF16 dot products vs the scalar path: relative L2 " << d);
  CHECK(d < 2e-2);
  CHECK(d > 0);  // they did run: the rounding shows
  CHECK(run_logits(model, 1) == got);
  CHECK(run_logits(model, 3) == got);
  CHECK(batch_equals_single(model));
}

TEST_CASE("xnnpack: the plan counts the packed copies, steps allocate nothing, a freed session gives them back") {
  if (!xnnpack_info().usable) return;  // the case above says why
  const std::string path = write_synthetic(DType::F16, false);
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  const ember_session_options so = options(2);
  ember_memory_plan ember_plan_, xnn_plan;
  ember_plan_.struct_size = xnn_plan.struct_size = sizeof(ember_memory_plan);
  {
    EnvGuard kernels("EMBER_KERNELS", "ember");
    REQUIRE(ember_plan(m, &so, &ember_plan_) == EMBER_OK);
  }
  EnvGuard kernels("EMBER_KERNELS", "xnnpack");
  REQUIRE(ember_plan(m, &so, &xnn_plan) == EMBER_OK);
  CHECK(ember_plan_.weights_resident_bytes == 0);
  // Every matrix packed as f32: more than its f16 bytes in the file.
  CHECK(xnn_plan.weights_resident_bytes > xnn_plan.weights_mapped_bytes / 2);
  CHECK(xnn_plan.private_bytes == ember_plan_.private_bytes + xnn_plan.weights_resident_bytes);
  CHECK(xnn_plan.arena_bytes == ember_plan_.arena_bytes);

  const uint64_t live = xnnpack_live_bytes();
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  CHECK(std::string(ember_session_backend(s)).find("float matmuls: xnnpack") != std::string::npos);
  // What the operators hold is the plan's figure, to the byte.
  CHECK(xnnpack_live_bytes() - live == xnn_plan.weights_resident_bytes);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  std::vector<float> logits(info.vocab_size);
  const std::vector<int32_t> prompt{1, 5, 9, 13, 17, 21, 25};
  const uint64_t calls = xnnpack_allocations();
  REQUIRE(ember_session_prefill(s, prompt.data(), prompt.size(), logits.data()) == EMBER_OK);
  ember::test::start_counting_allocations();
  for (int i = 0; i < 4; ++i) REQUIRE(ember_session_decode(s, 30 + i, logits.data()) == EMBER_OK);
  CHECK(ember::test::stop_counting_allocations() == 0);
  CHECK(xnnpack_allocations() == calls);
  ember_session_free(s);
  CHECK(xnnpack_live_bytes() == live);
  ember_model_free(m);
}

TEST_CASE("xnnpack: stories260K follows llama2.c's scalar forward pass") {
  if (!xnnpack_info().usable) return;
  const std::string bin = test::test_data("models/stories260K.bin");
  const std::string path = test::stories_model("llama2c");
  if (bin.empty() || path.empty()) return;
  EnvGuard kernels("EMBER_KERNELS", "xnnpack");
  test::ReferenceLlama ref;
  REQUIRE(ref.load(bin));
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_session_options so = options(2);
  so.context_length = 128;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  CHECK(std::string(ember_session_backend(s)).find("float matmuls: xnnpack") != std::string::npos);
  const std::string text = "Once upon a time, there was a little girl";
  std::vector<int32_t> ids(text.size() + 8);
  size_t n = 0;
  REQUIRE(ember_tokenize(m, text.data(), text.size(), 1, ids.data(), ids.size(), &n) == EMBER_OK);
  ids.resize(n);
  std::vector<float> logits(ref.vocab_size()), expect;
  REQUIRE(ember_session_prefill(s, ids.data(), ids.size(), logits.data()) == EMBER_OK);
  for (size_t i = 0; i < ids.size(); ++i) expect = ref.forward(ids[i], static_cast<int32_t>(i));
  int32_t pos = static_cast<int32_t>(ids.size());
  double max_diff = 0;
  for (int step = 0; step < 40; ++step) {
    int32_t next = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(logits[i] - expect[i])));
      if (expect[i] > expect[next]) next = static_cast<int32_t>(i);
    }
    int32_t got = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
      if (logits[i] > logits[got]) got = static_cast<int32_t>(i);
    }
    REQUIRE(got == next);
    expect = ref.forward(next, pos++);
    REQUIRE(ember_session_decode(s, next, logits.data()) == EMBER_OK);
  }
  CHECK(max_diff < 1e-4);
  ember_session_free(s);
  ember_model_free(m);
}

}  // TEST_SUITE

}  // namespace ember

// Tiled attention (issue 44, item 2): the kernels it adds (scores with keys
// in lanes, the unnormalized softmax, f16 widening) against scalar
// references; cpu_attention over contexts of several spans, every KV type,
// windows and soft-capping, against a double-precision softmax; and the
// invariant exact speculative decoding rests on, at depth: a row's result
// is bitwise the same alone, in a small step split over threads, or in a
// whole prefill, for any thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_attention.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/thread_pool.h"
#include "core/dtype.h"
#include "ember.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

std::vector<float> uniform(std::mt19937& rng, size_t n, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

AttentionKernels attention_kernels(CpuIsa isa, bool in_place) {
  const CpuKernels& k = cpu_kernels_for(isa);
  AttnScoresFn scores = nullptr;
  AttnScoresF16Fn scores_f16 = nullptr;
  AxpyRowsF16Fn axpy_f16 = nullptr;
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512) {
    scores = f32_attn_scores__avx512;
    if (in_place) {
      scores_f16 = f16_attn_scores__avx512;
      axpy_f16 = f16_axpy_rows__avx512;
    }
  }
#endif
  return AttentionKernels{k.dot_rows, k.axpy_rows, k.exp_sum, k.f16_widen, scores, scores_f16, axpy_f16};
}

// A cache of `len` positions of one sequence with random keys and values,
// stored through kv_store_row (so f16 and q8_0 hold rounded values).
struct Cache {
  KvType type;
  int64_t kv_dim;
  uint64_t row_bytes = 0;
  std::vector<uint8_t> k, v;
  std::vector<float> kf, vf;  // what the cache holds, widened
  CpuKvLayer layer;
};

Cache make_cache(KvType type, int64_t kv_dim, int32_t len, std::mt19937& rng) {
  Cache c{type, kv_dim};
  c.row_bytes = kv_row_bytes(type, static_cast<uint64_t>(kv_dim)).value();
  c.k.assign(c.row_bytes * len, 0);
  c.v.assign(c.row_bytes * len, 0);
  c.kf.resize(static_cast<size_t>(kv_dim) * len);
  c.vf.resize(static_cast<size_t>(kv_dim) * len);
  for (int32_t t = 0; t < len; ++t) {
    const std::vector<float> kr = uniform(rng, kv_dim, 1.5f), vr = uniform(rng, kv_dim, 1.0f);
    kv_store_row(type, kr.data(), c.k.data() + t * c.row_bytes, kv_dim);
    kv_store_row(type, vr.data(), c.v.data() + t * c.row_bytes, kv_dim);
    kv_load_row(type, c.k.data() + t * c.row_bytes, c.kf.data() + t * kv_dim, kv_dim);
    kv_load_row(type, c.v.data() + t * c.row_bytes, c.vf.data() + t * kv_dim, kv_dim);
  }
  c.layer.k = c.k.data();
  c.layer.v = c.v.data();
  c.layer.rows = len;
  c.layer.k_type = c.layer.v_type = type;
  c.layer.k_row_bytes = c.layer.v_row_bytes = c.row_bytes;
  return c;
}

// softmax(q k^T * scale) v in double precision, over the positions the row sees.
std::vector<double> naive(const AttentionParams& p, const Cache& c, const float* q, int32_t pos) {
  const int64_t d = p.head_dim, g = p.n_heads / p.n_kv_heads;
  const int32_t hi = pos + 1, lo = p.window != 0 && hi > static_cast<int32_t>(p.window) ? hi - p.window : 0;
  std::vector<double> out(static_cast<size_t>(d) * p.n_heads, 0.0);
  for (int64_t h = 0; h < p.n_heads; ++h) {
    const int64_t kh = h / g;
    std::vector<double> s(static_cast<size_t>(hi - lo));
    double mx = -INFINITY;
    for (int32_t t = lo; t < hi; ++t) {
      double dot = 0;
      for (int64_t j = 0; j < d; ++j) dot += static_cast<double>(q[h * d + j]) * c.kf[t * c.kv_dim + kh * d + j];
      dot *= p.scale;
      if (p.softcap != 0.0f) dot = p.softcap * std::tanh(dot / p.softcap);
      s[t - lo] = dot;
      mx = std::max(mx, dot);
    }
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (int32_t t = lo; t < hi; ++t) {
      for (int64_t j = 0; j < d; ++j) out[h * d + j] += s[t - lo] / sum * c.vf[t * c.kv_dim + kh * d + j];
    }
  }
  return out;
}

// cpu_attention for query rows at positions `pos` (one sequence), on a pool
// of `threads`.
std::vector<float> attend(const AttentionParams& p, const Cache& c, const std::vector<float>& q,
                          const std::vector<int32_t>& pos, int threads, const AttentionKernels& k, int32_t context) {
  auto pool = ThreadPool::create(threads);
  REQUIRE(pool.is_ok());
  AttentionShape shape;
  shape.head_dim = static_cast<int32_t>(p.head_dim);
  shape.n_heads = static_cast<int32_t>(p.n_heads);
  shape.group = static_cast<int32_t>(p.n_heads / p.n_kv_heads);
  shape.kv_dim = static_cast<int32_t>(c.kv_dim);
  shape.context = context;
  const int64_t tf = cpu_attention_thread_floats(shape);
  std::vector<float> scratch(static_cast<size_t>(tf * threads)), partials(cpu_attention_partial_floats(shape));
  const int32_t n = static_cast<int32_t>(pos.size());
  std::vector<int32_t> seq(pos.size(), 0);
  CpuStepRows rows;
  rows.pos = pos.data();
  rows.seq = seq.data();
  std::vector<float> out(static_cast<size_t>(n) * p.n_heads * p.head_dim, NAN);
  cpu_attention(*pool.value(), p, c.layer, q.data(), out.data(), rows, n, scratch.data(), tf, partials.data(), k,
                shape);
  return out;
}

}  // namespace

TEST_SUITE("kernels") {

#if defined(__x86_64__)
TEST_CASE("attention scores with keys in lanes (AVX-512): one fused multiply-add chain per score, any tile") {
  if (!cpu_isa_supported(CpuIsa::Avx512)) {
    MESSAGE("this CPU has no AVX-512: f32_attn_scores__avx512 is not run");
    return;
  }
  std::mt19937 rng(44);
  for (int64_t d : {40, 64, 80, 128}) {
    for (int32_t n_q : {1, 2, 5, 6, 7, 13, 63}) {
      for (int32_t n_keys : {1, 15, 16, 17, 33, 48, 64}) {
        CAPTURE(d);
        CAPTURE(n_q);
        CAPTURE(n_keys);
        const int64_t k_stride = d + 8;
        const std::vector<float> q = uniform(rng, static_cast<size_t>(n_q * d), 1.0f);
        const std::vector<float> k = uniform(rng, static_cast<size_t>(n_keys * k_stride), 1.0f);
        const int64_t s_stride = 64 + 3;
        std::vector<float> s(static_cast<size_t>(n_q * s_stride), NAN), kt(static_cast<size_t>(64 * ((d + 15) / 16 * 16)));
        f32_attn_scores__avx512(q.data(), n_q, d, k.data(), k_stride, n_keys, 0.125f, s.data(), s_stride, kt.data());
        for (int32_t r = 0; r < n_q; ++r) {
          for (int32_t t = 0; t < n_keys; ++t) {
            float acc = 0.0f;
            for (int64_t j = 0; j < d; ++j) acc = std::fma(q[r * d + j], k[t * k_stride + j], acc);
            REQUIRE(s[r * s_stride + t] == acc * 0.125f);
          }
          CHECK(std::isnan(s[r * s_stride + n_keys]));  // nothing past the keys
        }
      }
    }
  }
}
#endif

TEST_CASE("exp_sum from a running maximum and f16 widening, every path") {
  std::mt19937 rng(45);
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const CpuIsa isa = static_cast<CpuIsa>(i);
    if (!cpu_isa_supported(isa)) continue;
    CAPTURE(cpu_isa_name(isa));
    const CpuKernels& k = cpu_kernels_for(isa);
    for (int64_t n : {1, 3, 15, 16, 17, 40, 64}) {
      CAPTURE(n);
      const std::vector<float> x = uniform(rng, static_cast<size_t>(n), 8.0f);
      for (float floor : {-INFINITY, 2.0f, 9.0f}) {
        CAPTURE(floor);
        std::vector<float> y = x;
        float m = floor;
        const float sum = k.exp_sum(y.data(), n, &m);
        float want_m = floor;
        for (float v : x) want_m = std::max(want_m, v);
        CHECK(m == want_m);
        double want_sum = 0;
        for (int64_t t = 0; t < n; ++t) {
          const double e = std::exp(static_cast<double>(x[t]) - want_m);
          CHECK(std::fabs(y[t] - e) <= 2e-6 * e + 1e-30);
          want_sum += e;
        }
        CHECK(std::fabs(sum - want_sum) <= 1e-5 * want_sum);
      }
      // softmax is exp_sum from -inf, normalized.
      std::vector<float> y = x, z = x;
      k.softmax(y.data(), n);
      float m = -INFINITY;
      const float inv = 1.0f / k.exp_sum(z.data(), n, &m);
      for (int64_t t = 0; t < n; ++t) CHECK(y[t] == z[t] * inv);
    }
    // Every half value widens exactly (NaNs stay NaNs).
    std::vector<uint16_t> h(65536);
    for (uint32_t b = 0; b < 65536; ++b) h[b] = static_cast<uint16_t>(b);
    std::vector<float> f(65536);
    k.f16_widen(h.data() + 1, f.data() + 1, 65535);  // an odd start and length: the tails
    k.f16_widen(h.data(), f.data(), 1);
    for (uint32_t b = 0; b < 65536; ++b) {
      const float want = f16_to_f32(h[b]);
      if (std::isnan(want)) {
        REQUIRE(std::isnan(f[b]));
      } else {
        REQUIRE(std::memcmp(&f[b], &want, sizeof want) == 0);
      }
    }
  }
}

TEST_CASE("tiled attention over several spans: each row's bits whatever its step and threads, near a double softmax") {
  // 6 query heads on 2 key heads of 64; 1100 positions: three spans of
  // kAttnSpan, a partial chunk at the end.
  static_assert(kAttnSpan < 1100 / 2, "the context must take several spans");
  const int32_t len = 1100;
  std::mt19937 rng(46);
  struct Variant {
    const char* name;
    uint32_t window;
    float softcap;
  };
  for (KvType type : {KvType::F32, KvType::F16, KvType::Q8_0}) {
    CAPTURE(kv_type_name(type));
    Cache c = make_cache(type, 2 * 64, len, rng);
    for (const Variant& var : {Variant{"full", 0, 0.0f}, Variant{"window 300", 300, 0.0f},
                               Variant{"softcap 30", 0, 30.0f}}) {
      CAPTURE(var.name);
      AttentionParams p;
      p.n_heads = 6;
      p.n_kv_heads = 2;
      p.head_dim = 64;
      p.scale = 0.125f;
      p.window = var.window;
      p.softcap = var.softcap;
      const std::vector<float> q_all = uniform(rng, static_cast<size_t>(len) * 6 * 64, 2.0f);
      // The last 5 positions, as one small step.
      std::vector<int32_t> last;
      for (int32_t t = len - 5; t < len; ++t) last.push_back(t);
      const std::vector<float> q_last(q_all.end() - 5 * 6 * 64, q_all.end());
      for (int i = 0; i < kCpuIsaCount; ++i) {
        const CpuIsa isa = static_cast<CpuIsa>(i);
        if (!cpu_isa_supported(isa)) continue;
        CAPTURE(cpu_isa_name(isa));
        // An f16 cache converted into scratch, or (AVX-512) read in place:
        // the same bits.
        const AttentionKernels copy = attention_kernels(isa, false), k = attention_kernels(isa, true);
        const std::vector<float> one = attend(p, c, q_last, last, 1, copy, len);
        CHECK(attend(p, c, q_last, last, 1, k, len) == one);
        // Within the tolerance of a float softmax of this length.
        for (int32_t r = 0; r < 5; ++r) {
          const std::vector<double> want = naive(p, c, q_last.data() + r * 6 * 64, last[r]);
          double err = 0, norm = 0;
          for (size_t x = 0; x < want.size(); ++x) {
            err = std::max(err, std::fabs(one[r * 6 * 64 + x] - want[x]));
            norm = std::max(norm, std::fabs(want[x]));
          }
          CHECK(err <= 2e-5 * std::max(norm, 1.0));
        }
        // Bits: 3 threads (the spans split over them), each row alone, and
        // (f16) the whole prefill on 2 threads.
        CHECK(attend(p, c, q_last, last, 3, k, len) == one);
        for (int32_t r = 0; r < 5; ++r) {
          const std::vector<float> q1(q_last.begin() + r * 6 * 64, q_last.begin() + (r + 1) * 6 * 64);
          const std::vector<float> alone = attend(p, c, q1, {last[r]}, 2, k, len);
          CHECK(std::memcmp(alone.data(), one.data() + r * 6 * 64, alone.size() * sizeof(float)) == 0);
        }
        if (type != KvType::F16) continue;  // the whole prefill once per path (slow under qemu)
        std::vector<int32_t> all;
        for (int32_t t = 0; t < len; ++t) all.push_back(t);
        const std::vector<float> whole = attend(p, c, q_all, all, 2, k, len);
        CHECK(std::memcmp(whole.data() + (len - 5) * 6 * 64, one.data(), one.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("at depth, a row's logits are the same bits whatever its step and threads, every KV type") {
  // A tiny model with 600 tokens of context (two spans): the last row alone
  // after a prefill, the last 4 in a step, or the whole prompt, on 1 and 3
  // threads.
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  auto m = make_synthetic(tiny, DType::F32, 5, "");
  REQUIRE(m.is_ok());
  const std::string dir = test::temp_dir("attention-tiles");
  const std::string path = dir + "/tiny.ember";
  REQUIRE(write_model(m.value()->spec, path).is_ok());
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
  std::vector<int32_t> prompt;
  static_assert(kAttnSpan < 600, "the context must take two spans");
  for (int i = 0; i < 600; ++i) prompt.push_back(3 + (i * 29) % (info.vocab_size - 3));
  for (int32_t kv : {EMBER_KV_F32, EMBER_KV_F16, EMBER_KV_Q8_0}) {
    CAPTURE(kv);
    std::vector<float> first;
    for (int threads : {1, 3}) {
      for (size_t split : {599u, 596u, 0u}) {
        if (threads == 1 && split == 596u) continue;
        CAPTURE(threads);
        CAPTURE(split);
        ember_session_options so;
        ember_session_options_default(&so);
        so.context_length = 640;
        so.max_batch = 600;
        so.n_threads = threads;
        so.kv_type_k = so.kv_type_v = kv;
        ember_session* s = nullptr;
        REQUIRE(ember_session_create(model, &so, &s) == EMBER_OK);
        std::vector<float> logits(static_cast<size_t>(info.vocab_size));
        if (split > 0) REQUIRE(ember_session_prefill(s, prompt.data(), split, logits.data()) == EMBER_OK);
        REQUIRE(ember_session_prefill(s, prompt.data() + split, prompt.size() - split, logits.data()) == EMBER_OK);
        if (first.empty()) {
          first = logits;
        } else {
          CHECK(std::memcmp(logits.data(), first.data(), logits.size() * sizeof(float)) == 0);
        }
        ember_session_free(s);
      }
    }
  }
  ember_model_free(model);
}

}  // TEST_SUITE
}  // namespace ember

// A developer measurement, not a test and not part of `ember`: XNNPACK's
// fully-connected operators against ember's own float matmuls on the 0.5b
// shape's matrices (docs/decisions.md "XNNPACK: operators created once").
//
// Each XNNPACK operator is created ONCE per matrix (its weights packed
// once, timed apart as "create"); a measurement then times only what a
// session would run per step: xnn_setup_fully_connected_nc_* (this snapshot's
// setup takes the batch size) and xnn_run_operator, each timed on its own.
// ember's kernels run as the backend runs them (rows in runs of 16, one
// chunk per thread for one row, four per thread otherwise, on ember's pool).
// The providers are interleaved round by round and each keeps its fastest
// single call, since the machine may be shared.
//
//   ember_xnnpack_probe [--rounds N] [--threads 1,2] [--batches 1,64,512]
//
// Prints one line per (matrix, batch, threads): GFLOP/s of each provider,
// the ratio XNNPACK / ember, and setup vs run microseconds. Providers:
// ember32/ember16 (ember's f32/f16 kernels), xnn32 (f32 operator on a
// pthreadpool of the same size), xnnpool (f32 operators over runs of 16
// rows, 4 per thread, each single-threaded on ember's pool: how the
// provider runs), xnn16w (f16 weights widened to f32, pthreadpool), xnn16
// (the native f16 operator: f16 activations, f16 accumulation on x86;
// err16 is its distance from ember's f32 result, relative to max |out|).
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/thread_pool.h"
#include "core/dtype.h"

using namespace ember;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Matrix {
  const char* name;
  int64_t rows, cols;  // rows = output features
};

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  while (*s) {
    v.push_back(std::atoi(s));
    const char* c = std::strchr(s, ',');
    if (!c) break;
    s = c + 1;
  }
  return v;
}

// One timing: calls fn until min_s has passed (and at least 3 times) and
// returns the fastest single call, in seconds: on a shared machine the
// fastest call is the one least disturbed by other processes.
template <typename F>
double time_per_call(F&& fn, double min_s) {
  fn();  // warm
  double best = 1e30;
  int calls = 0;
  const double t0 = now_s();
  double t = t0;
  do {
    const double c0 = now_s();
    fn();
    t = now_s();
    best = std::min(best, t - c0);
    ++calls;
  } while (t - t0 < min_s || calls < 3);
  return best;
}

struct ProbeArgs {
  int rounds = 5;
  std::vector<int> threads = {1, 2};
  std::vector<int> batches = {1, 64, 512};
};

bool parse_args(int argc, char** argv, ProbeArgs* a) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) a->rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) a->threads = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--batches") && i + 1 < argc) a->batches = parse_list(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--threads 1,2] [--batches 1,64,512]\n", argv[0]);
      return false;
    }
  }
  return true;
}

// Pseudo-random values in [-1, 1): the activations first, then each
// matrix's weights, from one sequence.
struct Rand {
  uint32_t seed = 12345;
  float operator()() {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(seed >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  }
};

// Activations (f32 and f16) and the outputs of each provider.
struct Buffers {
  std::vector<float> x;
  std::vector<uint16_t> x16;
  std::vector<float> out_e, out_x;
  std::vector<uint16_t> out_h;
};

Buffers make_buffers(int max_batch, Rand& rnd) {
  const int64_t max_cols = 4864, max_rows = 4864;
  Buffers b;
  b.x.resize(static_cast<size_t>(max_batch) * max_cols);
  b.x16.resize(b.x.size());
  for (size_t i = 0; i < b.x.size(); ++i) {
    b.x[i] = rnd();
    b.x16[i] = f32_to_f16(b.x[i]);
  }
  b.out_e.resize(static_cast<size_t>(max_batch) * max_rows);
  b.out_x.resize(b.out_e.size());
  b.out_h.resize(b.out_e.size());
  return b;
}

struct Pools {
  std::unique_ptr<ThreadPool> ember;
  pthreadpool_t xnn = nullptr;
};

// Per matrix: the weights (f32 and f16) and the operators, created once.
struct Mat {
  Matrix m;
  std::vector<float> w;
  std::vector<uint16_t> w16;
  xnn_operator_t op32 = nullptr;     // f32 weights
  xnn_operator_t op16w = nullptr;    // f16 weights widened to f32 (what a provider would pack)
  xnn_operator_t op16 = nullptr;     // native f16 operator (f16 in, f16 out), when this build has one
  // Per thread count: 4 x threads operators over runs of 16 rows, each run
  // single-threaded (threadpool NULL) on a chunk of ember's pool.
  std::vector<std::vector<xnn_operator_t>> slices;
  double create32_s = 0, create16_s = 0;
};

bool make_mat(const Matrix& m, const std::vector<int>& threads, Rand& rnd, Mat* out) {
  Mat& mt = *out;
  mt.m = m;
  mt.w.resize(static_cast<size_t>(m.rows * m.cols));
  mt.w16.resize(mt.w.size());
  for (size_t i = 0; i < mt.w.size(); ++i) {
    mt.w16[i] = f32_to_f16(rnd() * 0.05f);
    mt.w[i] = f16_to_f32(mt.w16[i]);
  }
  double t0 = now_s();
  xnn_status st = xnn_create_fully_connected_nc_f32(m.cols, m.rows, m.cols, m.rows, mt.w.data(), nullptr, -INFINITY,
                                                    INFINITY, 0, &mt.op32);
  mt.create32_s = now_s() - t0;
  if (st != xnn_status_success) {
    std::fprintf(stderr, "create f32 %s: status %d\n", m.name, st);
    return false;
  }
  xnn_create_fully_connected_nc_f32(m.cols, m.rows, m.cols, m.rows, mt.w.data(), nullptr, -INFINITY, INFINITY, 0,
                                    &mt.op16w);
  t0 = now_s();
  st = xnn_create_fully_connected_nc_f16(m.cols, m.rows, m.cols, m.rows, mt.w16.data(), nullptr, -65504.0f, 65504.0f,
                                         0, &mt.op16);
  mt.create16_s = now_s() - t0;
  if (st != xnn_status_success) {
    std::printf("%s: no native f16 operator (status %d)\n", m.name, st);
    mt.op16 = nullptr;
  }
  for (int t : threads) {
    std::vector<xnn_operator_t> sl;
    for (int c = 0; c < 4 * t; ++c) {
      int64_t r0, r1;
      split_range(m.rows, 16, c, 4 * t, &r0, &r1);
      xnn_operator_t op = nullptr;
      if (r0 < r1 && xnn_create_fully_connected_nc_f32(m.cols, r1 - r0, m.cols, m.rows, mt.w.data() + r0 * m.cols,
                                                       nullptr, -INFINITY, INFINITY, 0, &op) != xnn_status_success) {
        return false;
      }
      sl.push_back(op);
    }
    mt.slices.push_back(std::move(sl));
  }
  return true;
}

// best[config][provider]: seconds per call; setup/run separately for xnn.
enum { kEmber32, kXnn32, kEmber16, kXnn16w, kXnn16, kXnnSlices, kProviders };
struct Best {
  double total[kProviders];
  double setup[kProviders];
  double run[kProviders];
  double maxerr[kProviders];
};

// One (matrix, batch, threads) configuration and what it runs on.
struct Config {
  Mat* mt;
  int n;       // batch
  size_t ti;   // index into the thread counts
  ThreadPool* pool;
  pthreadpool_t tp;
};

constexpr double kMinSeconds = 0.02;

// xnnpool: f32 operators over runs of 16 rows, each single-threaded on a
// chunk of ember's pool.
void time_slices(const Config& c, Buffers& io, Best& b) {
  const std::vector<xnn_operator_t>& sl = c.mt->slices[c.ti];
  const int64_t rows = c.mt->m.rows;
  auto call = [&] {
    c.pool->run(static_cast<int>(sl.size()), [&](int chunk, int, int) {
      int64_t r0, r1;
      split_range(rows, 16, chunk, static_cast<int>(sl.size()), &r0, &r1);
      if (r0 >= r1) return;
      xnn_setup_fully_connected_nc_f32(sl[chunk], c.n, io.x.data(), io.out_x.data() + r0, nullptr);
      xnn_run_operator(sl[chunk], nullptr);
    });
  };
  b.total[kXnnSlices] = std::min(b.total[kXnnSlices], time_per_call(call, kMinSeconds));
}

// ember's kernels as the backend runs them.
void time_ember(int p, const Config& c, const CpuKernels& k, Buffers& io, Best& b) {
  const Mat& mt = *c.mt;
  const int64_t rows = mt.m.rows, cols = mt.m.cols;
  const uint8_t* w = p == kEmber32 ? reinterpret_cast<const uint8_t*>(mt.w.data())
                                   : reinterpret_cast<const uint8_t*>(mt.w16.data());
  FMatmulFn f = p == kEmber32 ? (c.n == 1 ? k.f32_gemv : k.f32_gemm) : (c.n == 1 ? k.f16_gemv : k.f16_gemm);
  const int n_chunks = c.n == 1 ? c.pool->size() : 4 * c.pool->size();
  auto call = [&] {
    c.pool->run(n_chunks, [&](int chunk, int nc, int) {
      int64_t r0, r1;
      split_range(rows, 16, chunk, nc, &r0, &r1);
      if (r0 < r1) f(w, cols, r0, r1, io.x.data(), c.n, io.out_e.data(), rows);
    });
  };
  b.total[p] = std::min(b.total[p], time_per_call(call, kMinSeconds));
}

// An XNNPACK operator on its pthreadpool: setup and run together, then each.
void time_xnn(int p, const Config& c, Buffers& io, Best& b) {
  const Mat& mt = *c.mt;
  xnn_operator_t op = p == kXnn32 ? mt.op32 : p == kXnn16w ? mt.op16w : mt.op16;
  auto setup = [&] {
    if (p == kXnn16) xnn_setup_fully_connected_nc_f16(op, c.n, io.x16.data(), io.out_h.data(), c.tp);
    else xnn_setup_fully_connected_nc_f32(op, c.n, io.x.data(), io.out_x.data(), c.tp);
  };
  auto run = [&] { xnn_run_operator(op, c.tp); };
  auto both = [&] {
    setup();
    run();
  };
  b.total[p] = std::min(b.total[p], time_per_call(both, kMinSeconds));
  b.setup[p] = std::min(b.setup[p], time_per_call(setup, kMinSeconds / 4));
  setup();
  b.run[p] = std::min(b.run[p], time_per_call(run, kMinSeconds));
}

// Agreement (first round): XNNPACK's outputs against ember's f32 ones.
void check_agreement(const Config& c, const CpuKernels& k, Buffers& io, Best& b) {
  const Mat& mt = *c.mt;
  const int64_t rows = mt.m.rows, cols = mt.m.cols;
  FMatmulFn f = c.n == 1 ? k.f32_gemv : k.f32_gemm;
  f(reinterpret_cast<const uint8_t*>(mt.w.data()), cols, 0, rows, io.x.data(), c.n, io.out_e.data(), rows);
  double scale = 0;
  for (int64_t i = 0; i < c.n * rows; ++i) scale = std::max(scale, std::fabs(double(io.out_e[i])));
  for (int p : {kXnn32, kXnn16}) {
    xnn_operator_t op = p == kXnn32 ? mt.op32 : mt.op16;
    if (!op) continue;
    if (p == kXnn16) xnn_setup_fully_connected_nc_f16(op, c.n, io.x16.data(), io.out_h.data(), c.tp);
    else xnn_setup_fully_connected_nc_f32(op, c.n, io.x.data(), io.out_x.data(), c.tp);
    xnn_run_operator(op, c.tp);
    double e = 0;
    for (int64_t i = 0; i < c.n * rows; ++i) {
      const double v = p == kXnn16 ? f16_to_f32(io.out_h[i]) : io.out_x[i];
      e = std::max(e, std::fabs(v - io.out_e[i]));
    }
    b.maxerr[p] = e / (scale > 0 ? scale : 1);
  }
}

// One round: every configuration, every provider in turn (interleaved).
void measure_round(int r, const ProbeArgs& a, std::vector<Mat>& ms, std::vector<Pools>& pools, const CpuKernels& k,
                   Buffers& io, std::vector<Best>& best) {
  size_t ci = 0;
  for (Mat& mt : ms) {
    for (int n : a.batches) {
      for (size_t ti = 0; ti < a.threads.size(); ++ti, ++ci) {
        const Config c{&mt, n, ti, pools[ti].ember.get(), pools[ti].xnn};
        Best& b = best[ci];
        for (int p = 0; p < kProviders; ++p) {
          if (p == kXnn16 && !mt.op16) continue;
          if (p == kXnnSlices) {
            time_slices(c, io, b);
          } else if (p == kEmber32 || p == kEmber16) {
            time_ember(p, c, k, io, b);
          } else {
            time_xnn(p, c, io, b);
          }
        }
        if (r == 0) check_agreement(c, k, io, b);
      }
    }
  }
}

void print_results(const ProbeArgs& a, const std::vector<Mat>& ms, const std::vector<Best>& best) {
  std::printf("\nGFLOP/s (best of %d rounds, interleaved); x/e = XNNPACK / ember; setup|run in us\n", a.rounds);
  std::printf("%-22s %5s %3s | %8s %8s %6s %9s %8s %6s | %8s %8s %6s | %8s %6s %9s %9s\n", "matrix", "batch", "thr",
              "ember32", "xnn32", "x/e", "setup|run", "xnnpool", "x/e", "ember16", "xnn16w", "x/e", "xnn16", "x/e", "setup|run", "err16");
  size_t ci = 0;
  for (const Mat& mt : ms) {
    for (int n : a.batches) {
      for (size_t ti = 0; ti < a.threads.size(); ++ti, ++ci) {
        const Best& b = best[ci];
        const double flop = 2.0 * mt.m.rows * mt.m.cols * n;
        auto gf = [&](int p) { return b.total[p] < 1e29 ? flop / b.total[p] / 1e9 : 0.0; };
        char s32[32], s16[32];
        std::snprintf(s32, sizeof s32, "%.1f|%.0f", b.setup[kXnn32] * 1e6, b.run[kXnn32] * 1e6);
        std::snprintf(s16, sizeof s16, "%.1f|%.0f", b.setup[kXnn16] < 1e29 ? b.setup[kXnn16] * 1e6 : 0.0,
                      b.run[kXnn16] < 1e29 ? b.run[kXnn16] * 1e6 : 0.0);
        std::printf("%-22s %5d %3d | %8.1f %8.1f %6.2f %9s %8.1f %6.2f | %8.1f %8.1f %6.2f | %8.1f %6.2f %9s %9.1e\n",
                    mt.m.name, n, a.threads[ti], gf(kEmber32), gf(kXnn32), gf(kXnn32) / gf(kEmber32), s32,
                    gf(kXnnSlices), gf(kXnnSlices) / gf(kEmber32), gf(kEmber16),
                    gf(kXnn16w), gf(kXnn16w) / gf(kEmber16), gf(kXnn16), gf(kXnn16) / gf(kEmber16), s16,
                    b.maxerr[kXnn16]);
      }
    }
  }
  std::printf("max |xnn32 - ember32| / max|out| over all configs: ");
  double e32 = 0;
  for (const Best& b : best) e32 = std::max(e32, b.maxerr[kXnn32]);
  std::printf("%.1e\n", e32);
}

void release(std::vector<Mat>& ms, std::vector<Pools>& pools) {
  for (Mat& mt : ms) {
    xnn_delete_operator(mt.op32);
    xnn_delete_operator(mt.op16w);
    if (mt.op16) xnn_delete_operator(mt.op16);
    for (auto& sl : mt.slices) {
      for (xnn_operator_t op : sl) {
        if (op) xnn_delete_operator(op);
      }
    }
  }
  for (Pools& p : pools) pthreadpool_destroy(p.xnn);
}

}  // namespace

int main(int argc, char** argv) {
  ProbeArgs a;
  if (!parse_args(argc, argv, &a)) return 2;
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
  Result<CpuFamilies> fam = cpu_select_families();
  if (!fam.is_ok()) {
    std::fprintf(stderr, "%s\n", fam.status().message());
    return 1;
  }
  const CpuKernels k = cpu_kernels_for(fam.value());
  std::printf("ember float family: %s\n", cpu_float_family_name(fam.value().fp));

  const Matrix mats[] = {{"attn_q/o 896x896", 896, 896},
                         {"attn_k/v 128x896", 128, 896},
                         {"ffn_gate/up 4864x896", 4864, 896},
                         {"ffn_down 896x4864", 896, 4864}};
  Rand rnd;
  Buffers io = make_buffers(*std::max_element(a.batches.begin(), a.batches.end()), rnd);
  std::vector<Pools> pools(a.threads.size());
  for (size_t t = 0; t < a.threads.size(); ++t) {
    Result<std::unique_ptr<ThreadPool>> p = ThreadPool::create(a.threads[t]);
    if (!p.is_ok()) return 1;
    pools[t].ember = std::move(p.value());
    pools[t].xnn = pthreadpool_create(a.threads[t]);
  }
  std::vector<Mat> ms;
  for (const Matrix& m : mats) {
    Mat mt;
    if (!make_mat(m, a.threads, rnd, &mt)) return 1;
    ms.push_back(std::move(mt));
  }
  for (const Mat& mt : ms) {
    std::printf("%-22s create (pack) f32 %.2f ms, f16 %.2f ms\n", mt.m.name, mt.create32_s * 1e3,
                mt.create16_s * 1e3);
  }
  std::vector<Best> best(ms.size() * a.batches.size() * a.threads.size());
  for (Best& b : best) {
    for (int p = 0; p < kProviders; ++p) b.total[p] = b.setup[p] = b.run[p] = 1e30, b.maxerr[p] = 0;
  }
  for (int r = 0; r < a.rounds; ++r) {
    measure_round(r, a, ms, pools, k, io, best);
    std::fprintf(stderr, "round %d/%d done\n", r + 1, a.rounds);
  }
  print_results(a, ms, best);
  release(ms, pools);
  xnn_deinitialize();
  return 0;
}

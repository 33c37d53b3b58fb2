// A developer measurement, not a test and not part of `ember`: the decode
// gemv (one token) of one GGUF type in the rows16 layout over a matrix much
// larger than the caches, on the backend's thread pool, at several decode
// prefetch distances interleaved call by call (the machine may be shared),
// each keeping its median and best call. Prints GB/s of weights read.
//
//   ember_decode_gemv_probe [--type q5_0] [--rows 65536] [--cols 1024]
//                           [--threads 2] [--rounds 15] [--prefetch 0,8192]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "backends/cpu/thread_pool.h"
#include "core/dtype.h"
#include "core/layout.h"
#include "tools/dev/probe_util.h"

using namespace ember;

using probe::arg;
using probe::now_us;

int main(int argc, char** argv) {
  const std::string type = arg(argc, argv, "--type", "q5_0");
  const int64_t rows = std::atoll(arg(argc, argv, "--rows", "65536"));
  const int64_t cols = std::atoll(arg(argc, argv, "--cols", "1024"));
  const int threads = std::atoi(arg(argc, argv, "--threads", "2"));
  const int rounds = std::atoi(arg(argc, argv, "--rounds", "15"));
  std::vector<uint64_t> dists;
  for (const char* p = arg(argc, argv, "--prefetch", "0,8192"); *p;) {
    dists.push_back(std::strtoull(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  DType t = DType::F32;
  if (!dtype_from_name(type.c_str(), &t) || !layout_fits(Layout::Rows16, t, rows, cols)) {
    std::fprintf(stderr, "ember_decode_gemv_probe: type %s has no rows16 form for %lld x %lld\n", type.c_str(),
                 static_cast<long long>(rows), static_cast<long long>(cols));
    return 2;
  }
  // Random quants: a block of random bytes is a valid block of every type
  // but for its scales, whose values do not change the speed.
  uint64_t row_bytes = 0;
  dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes);
  std::vector<uint8_t> packed(row_bytes * rows);
  std::mt19937 rng(7);
  for (size_t i = 0; i < packed.size(); i += 4) {
    const uint32_t v = rng() & 0x3bff3bffu;  // f16 scales stay finite
    std::memcpy(packed.data() + i, &v, std::min<size_t>(4, packed.size() - i));
  }
  const int64_t nb = cols / 32;
  std::vector<int8_t> q(static_cast<size_t>(cols) + 64);
  int8_t* qa = q.data() + (64 - reinterpret_cast<uintptr_t>(q.data()) % 64) % 64;
  for (int64_t i = 0; i < cols; ++i) qa[i] = static_cast<int8_t>(rng() % 255 - 127);
  std::vector<float> d(static_cast<size_t>(nb), 0.01f);
  std::vector<int32_t> bias(static_cast<size_t>(nb), 0);
  std::vector<int16_t> sum16(static_cast<size_t>(cols / 16), 0);
  QuantActs acts;
  acts.q = qa;
  acts.d = d.data();
  acts.bias = bias.data();
  acts.sum16 = sum16.data();
  acts.cols = cols;
  std::vector<float> out(static_cast<size_t>(rows));

  const Result<CpuFamilies> fam = cpu_select_families();
  if (!fam.is_ok() || !cpu_select_decode_prefetch().is_ok()) {
    std::fprintf(stderr, "ember_decode_gemv_probe: no kernels for this CPU\n");
    return 2;
  }
  const CpuKernels k = cpu_kernels_for(fam.value());
  const QMatmulFn gemv = cpu_quant_matmuls(k, t, Layout::Rows16).gemv;
  Result<std::unique_ptr<ThreadPool>> pool = ThreadPool::create(threads);
  if (!pool.is_ok() || gemv == nullptr) return 2;
  ThreadPool& tp = *pool.value();
  const int64_t units = rows / 16, piece = std::max<int64_t>(1, units / (16 * threads));
  std::vector<std::vector<double>> us(dists.size());
  for (int round = 0; round < rounds; ++round) {
    // Forward on even rounds, backward on odd ones: no setting always
    // follows the same one.
    for (size_t i = 0; i < us.size(); ++i) {
      const size_t v = round % 2 ? us.size() - 1 - i : i;
      g_decode_prefetch_bytes.store(dists[v]);
      const double t0 = now_us();
      tp.run_ranges(units, piece, [&](int64_t u0, int64_t u1, int) {
        gemv(packed.data(), cols, u0 * 16, u1 * 16, acts, 1, out.data(), rows);
      });
      us[v].push_back(now_us() - t0);
    }
  }
  std::printf("%s %lld x %lld rows16 gemv, %d thread(s), %.1f MB, %d rounds interleaved\n", type.c_str(),
              static_cast<long long>(rows), static_cast<long long>(cols), threads, packed.size() / 1e6, rounds);
  for (size_t v = 0; v < us.size(); ++v) {
    std::sort(us[v].begin(), us[v].end());
    const double med = us[v][us[v].size() / 2], best = us[v][0];
    std::printf("  prefetch %6llu B: median %8.1f us %6.1f GB/s   best %8.1f us %6.1f GB/s\n",
                static_cast<unsigned long long>(dists[v]), med, packed.size() / med / 1e3, best,
                packed.size() / best / 1e3);
  }
  return 0;
}

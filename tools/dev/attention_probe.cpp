// A developer measurement, not a test and not part of `ember`: decode
// attention (one query row) at a depth, over `layers` separate caches (so
// that, as in a model, the cache comes from memory), on the backend's
// thread pool with the kernels this CPU's float family runs. Prints the
// time per token (all layers) and the cache bytes read per second.
//
//   ember_attention_probe [--depth 4096] [--kv f16] [--threads 2] [--layers 24]
//                         [--heads 14] [--kv-heads 2] [--head-dim 64] [--rows 1] [--rounds 20] [--huge 1]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "backends/cpu/cpu_attention.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/thread_pool.h"
#include "core/kv_type.h"
#include "tools/dev/probe_util.h"

using namespace ember;

using probe::arg;
using probe::now_us;

int main(int argc, char** argv) {
  const int32_t depth = std::atoi(arg(argc, argv, "--depth", "4096"));
  const std::string kv_name = arg(argc, argv, "--kv", "f16");
  const int threads = std::atoi(arg(argc, argv, "--threads", "2"));
  const int layers = std::atoi(arg(argc, argv, "--layers", "24"));
  const int32_t heads = std::atoi(arg(argc, argv, "--heads", "14"));
  const int32_t kv_heads = std::atoi(arg(argc, argv, "--kv-heads", "2"));
  const int32_t head_dim = std::atoi(arg(argc, argv, "--head-dim", "64"));
  const int32_t n_rows = std::atoi(arg(argc, argv, "--rows", "1"));
  const int rounds = std::atoi(arg(argc, argv, "--rounds", "20"));
  KvType kv = KvType::F16;
  if (!kv_type_from_name(kv_name.c_str(), &kv) || depth < n_rows || kv_heads < 1 || heads % kv_heads != 0) {
    std::fprintf(stderr, "ember_attention_probe: bad arguments\n");
    return 2;
  }
  const int64_t kv_dim = static_cast<int64_t>(kv_heads) * head_dim;
  const uint64_t row_bytes = kv_row_bytes(kv, static_cast<uint64_t>(kv_dim)).value();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(kv_dim));
  // The caches in one block, as in a session's arena; --huge 1: 2 MiB
  // pages (MADV_HUGEPAGE), as ember's arena is mapped.
  const bool huge = std::atoi(arg(argc, argv, "--huge", "1")) != 0;
  const size_t per = (row_bytes * depth + 4095) / 4096 * 4096, total = (2 * per * layers + (2u << 20)) / (2u << 20) * (2u << 20);
  uint8_t* block = static_cast<uint8_t*>(std::aligned_alloc(2u << 20, total));
  if (huge) madvise(block, total, MADV_HUGEPAGE);
  std::vector<uint8_t*> k(layers), v(layers);
  for (int l = 0; l < layers; ++l) {
    k[l] = block + 2 * l * per;
    v[l] = block + (2 * l + 1) * per;
    for (int32_t t = 0; t < depth; ++t) {
      for (float& x : row) x = u(rng);
      kv_store_row(kv, row.data(), k[l] + t * row_bytes, kv_dim);
      kv_store_row(kv, row.data(), v[l] + t * row_bytes, kv_dim);
    }
  }
  auto pool = ThreadPool::create(threads);
  if (!pool.is_ok()) return 1;
  Result<CpuFamilies> fam = cpu_select_families();
  const CpuKernels kern = cpu_kernels_for(fam.value());
  const AttentionKernels ak{kern.dot_rows, kern.axpy_rows, kern.exp_sum, kern.f16_widen, kern.attn_scores,
                             kern.attn_scores_f16, kern.axpy_rows_f16};
  AttentionShape shape;
  shape.head_dim = head_dim;
  shape.n_heads = heads;
  shape.group = heads / kv_heads;
  shape.kv_dim = static_cast<int32_t>(kv_dim);
  shape.context = depth;
  const int64_t tf = cpu_attention_thread_floats(shape);
  std::vector<float> scratch(static_cast<size_t>(tf * threads)), partials(cpu_attention_partial_floats(shape));
  std::vector<float> q(static_cast<size_t>(n_rows) * heads * head_dim), out(q.size());
  for (float& x : q) x = u(rng);
  std::vector<int32_t> pos(n_rows), seq(n_rows, 0);
  for (int32_t i = 0; i < n_rows; ++i) pos[i] = depth - n_rows + i;
  CpuStepRows rows;
  rows.pos = pos.data();
  rows.seq = seq.data();
  AttentionParams p;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.scale = 0.125f;
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = now_us();
    for (int l = 0; l < layers; ++l) {
      CpuKvLayer layer;
      layer.k = k[l];
      layer.v = v[l];
      layer.rows = depth;
      layer.k_type = layer.v_type = kv;
      layer.k_row_bytes = layer.v_row_bytes = row_bytes;
      cpu_attention(*pool.value(), p, layer, q.data(), out.data(), rows, n_rows, scratch.data(), tf, partials.data(),
                    ak, shape);
    }
    ms.push_back((now_us() - t0) / 1000.0);
  }
  std::sort(ms.begin(), ms.end());
  const double bytes = 2.0 * row_bytes * depth * layers;
  std::printf("depth %d, kv %s, %d layers, %d rows, %d threads: median %.3f ms, best %.3f ms per step; %.1f GB/s of cache (median)\n",
              depth, kv_name.c_str(), layers, n_rows, threads, ms[ms.size() / 2], ms[0], bytes / (ms[ms.size() / 2] / 1e3) / 1e9);
  std::free(block);
  return 0;
}

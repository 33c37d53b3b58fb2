// A developer measurement, not a test and not part of `ember`: one GGUF
// type's int8 matmul kernels in the Row-major and Rows16 layouts, side by
// side on one thread (docs/decisions.md "K-quant rows16 layout": the rows16 layout is the writers'
// default for a type only where its gemv and gemm are not slower).
//
//   ember_rows16_probe [--type iq4_xs] [--rows 1024] [--cols 2048]
//                      [--tokens 64] [--rounds 25] [--isa avx512vnni,amx,avx2]
//
// The layouts are interleaved round by round and each keeps its fastest
// call (the machine may be shared). Prints per ISA the gemv (1 token) and
// gemm (--tokens) microseconds of each layout and rows16 / row-major speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "platforms/linux/cpu_features.h"
#include "core/dtype.h"
#include "core/layout.h"
#include "tools/dev/probe_util.h"

using namespace ember;

using probe::arg;
using probe::now_us;

int main(int argc, char** argv) {
  const std::string type = arg(argc, argv, "--type", "iq4_xs");
  const int64_t rows = std::atoll(arg(argc, argv, "--rows", "1024"));
  const int64_t cols = std::atoll(arg(argc, argv, "--cols", "2048"));
  const int32_t tokens = std::atoi(arg(argc, argv, "--tokens", "64"));
  const int rounds = std::atoi(arg(argc, argv, "--rounds", "25"));
  const std::string isas = arg(argc, argv, "--isa", "avx512vnni,amx,avx2,neondot,neon");
  // The decode prefetch distance as the backend would choose it (EMBER_DECODE_PREFETCH overrides).
  const Result<uint64_t> prefetch = cpu_select_decode_prefetch();
  if (!prefetch.is_ok()) {
    std::fprintf(stderr, "%s\n", prefetch.status().message().c_str());
    return 2;
  }
  std::printf("decode prefetch: %llu bytes\n", static_cast<unsigned long long>(prefetch.value()));
  DType t = DType::F32;
  bool found = false;
  for (int i = 0; i < kDTypeCount && !found; ++i) {
    const char* n = dtype_name(static_cast<DType>(i));
    if (n && type == n) {
      t = static_cast<DType>(i);
      found = true;
    }
  }
  if (!found || !layout_fits(Layout::Rows16, t, rows, cols)) {
    std::fprintf(stderr, "ember_rows16_probe: type %s has no rows16 form for %lld x %lld\n", type.c_str(),
                 static_cast<long long>(rows), static_cast<long long>(cols));
    return 2;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(rows * cols));
  for (float& v : wf) v = nd(rng);
  uint64_t row_bytes = 0;
  dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes);
  std::vector<uint8_t> plain(row_bytes * rows), packed(row_bytes * rows);
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, wf.data() + r * cols, plain.data() + r * row_bytes, cols);
  pack_rows16(t, plain.data(), packed.data(), rows, cols);

  // Activations as the backend quantizes them (q8 blocks of 32, sum16).
  const CpuKernels& gen = cpu_kernels_for(CpuIsa::Generic);
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = nd(rng);
  const int64_t nb = cols / 32;
  std::vector<int8_t> q(static_cast<size_t>(tokens * cols) + 64);
  int8_t* qa = q.data() + (64 - reinterpret_cast<uintptr_t>(q.data()) % 64) % 64;
  std::vector<float> d(static_cast<size_t>(tokens * nb));
  std::vector<int32_t> bias(static_cast<size_t>(tokens * nb));
  std::vector<int16_t> sum16(static_cast<size_t>(tokens * cols / 16));
  for (int32_t i = 0; i < tokens; ++i) {
    gen.quantize_q8(x.data() + i * cols, cols, qa + i * cols, d.data() + i * nb, bias.data() + i * nb);
    for (int64_t g = 0; g < cols / 16; ++g) {
      int s = 0;
      for (int k = 0; k < 16; ++k) s += qa[i * cols + 16 * g + k];
      sum16[i * (cols / 16) + g] = static_cast<int16_t>(s);
    }
  }
  QuantActs acts;
  acts.q = qa;
  acts.d = d.data();
  acts.bias = bias.data();
  acts.sum16 = sum16.data();
  acts.cols = cols;
  std::vector<float> out(static_cast<size_t>(tokens * rows));

  std::printf("%s %lld x %lld, gemm %d tokens, one thread, best of %d (us)\n", type.c_str(),
              static_cast<long long>(rows), static_cast<long long>(cols), tokens, rounds);
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const CpuIsa isa = static_cast<CpuIsa>(i);
    if (!cpu_isa_supported(isa) || isas.find(cpu_isa_name(isa)) == std::string::npos) continue;
    const CpuKernels& k = cpu_kernels_for(isa);
    const QMatmulPair rm = cpu_quant_matmuls(k, t, Layout::RowMajor), r16 = cpu_quant_matmuls(k, t, Layout::Rows16);
    double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};  // [layout][gemv, gemm]
    for (int round = 0; round < rounds; ++round) {
      for (int l = 0; l < 2; ++l) {
        const QMatmulPair& p = l ? r16 : rm;
        const uint8_t* w = l ? packed.data() : plain.data();
        double t0 = now_us();
        p.gemv(w, cols, 0, rows, acts, 1, out.data(), rows);
        double t1 = now_us();
        best[l][0] = std::min(best[l][0], t1 - t0);
        t0 = now_us();
        p.gemm(w, cols, 0, rows, acts, tokens, out.data(), rows);
        t1 = now_us();
        best[l][1] = std::min(best[l][1], t1 - t0);
      }
    }
    std::printf("%-10s gemv row-major %8.1f rows16 %8.1f (x%.2f)   gemm row-major %9.1f rows16 %9.1f (x%.2f)\n",
                cpu_isa_name(isa), best[0][0], best[1][0], best[0][0] / best[1][0], best[0][1], best[1][1],
                best[0][1] / best[1][1]);
  }
  // AMX (where the CPU grants it): the rows16 gemm on tiles against the
  // avx512vnni one, interleaved, and whether the outputs are the same bits.
  CpuFamilies fam;
  fam.int8 = fam.fp = CpuIsa::Avx512;
  if (isas.find("amx") != std::string::npos && cpu_isa_supported(CpuIsa::Avx512) &&
      cpu_choose_amx(cpu_features(), CpuIsa::Avx512, "1").is_ok()) {
    const CpuKernels vnni = cpu_kernels_for(fam);
    fam.amx = true;
    const CpuKernels amx = cpu_kernels_for(fam);
    const QMatmulFn g[2] = {cpu_quant_matmuls(vnni, t, Layout::Rows16).gemm, cpu_quant_matmuls(amx, t, Layout::Rows16).gemm};
    if (g[0] == g[1]) {
      std::printf("amx        no AMX kernel for %s\n", type.c_str());
      return 0;
    }
    std::vector<float> o2(out.size());
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < rounds; ++round) {
      for (int l = 0; l < 2; ++l) {
        const double t0 = now_us();
        g[l](packed.data(), cols, 0, rows, acts, tokens, l ? o2.data() : out.data(), rows);
        best[l] = std::min(best[l], now_us() - t0);
      }
    }
    std::printf("amx        gemm avx512vnni %9.1f amx %9.1f (x%.2f), outputs %s\n", best[0], best[1], best[0] / best[1],
                std::memcmp(out.data(), o2.data(), out.size() * sizeof(float)) == 0 ? "bit-identical" : "DIFFER");
  }
  return 0;
}

// Prefill of the Rows16 K-quant types on AMX (Intel Sapphire Rapids and
// later): the integer sums of kquant_rows16__avx512vnni.cpp's gemm computed
// by tile multiplies, the float work after them unchanged, so every output
// is bit for bit what the VNNI gemv and gemm give (the kernels suite checks
// it). dispatch.cpp puts these in the avx512vnni table when EMBER_AMX=1
// asks, the CPU has AMX-INT8 and the kernel lets the process use it
// (cpu_choose_amx; not the default: docs/decisions.md, "AMX prefill: built,
// off by default").
//
// A 64-byte chunk of a Rows16 tile is 16 rows x 4 consecutive quants: one
// row of an AMX B tile in its 4-byte interleaved form. A sub-block (32
// elements) of a 16-row group is therefore one B tile of 8 rows x 64 bytes,
// the traits' unpacked quants (kquant_rows16_avx512.inc: W::quants) stored
// in order; the activations of 16 tokens are an A tile of 16 rows x 32
// bytes read in place (row stride: cols); tdpbsud (signed activations x
// unsigned quants) gives C = 16 tokens x 16 rows of exact int32 sums, the
// same integers as the VNNI chains (exact int32 arithmetic; a seed is added
// afterwards instead of first). Stored, each C row is one token's 16 rows:
// the zmm the VNNI kernel holds, and the same convert / multiply / FMAs
// follow in the same sub-block order.
//
// Types: those with one scale per sub-block (Q4_K, Q5_K, IQ4_XS). Tokens
// past the last whole 16 take the VNNI gemm (same results).
//
// Why it is not faster yet (measured on a 2-vCPU Sapphire Rapids VM): the
// activations' scale is per 32 elements, so every sub-block's C tile must be
// stored and taken through the vector units (16 tokens x 4 float ops)
// before the next; a 16 x 16 x 32 multiply plus its loads and store cost
// ~35 TSC cycles there, the float work ~46, and the two did not overlap.
#if defined(__x86_64__)
#include "backends/cpu/kernels/quant-matmul/kquant_rows16_avx512.inc"

namespace ember {
namespace {

// The tile registers' shapes: 0, 1 activations (A: 16 tokens x 32 bytes),
// 2, 3 quants (B: 8 rows x 64 bytes), 4, 5 sums (C: 16 tokens x 16 int32);
// two sets, so one sub-block's multiply runs while the vector units take
// the previous one's sums.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

TileConfig tile_config() {
  TileConfig c;
  for (int i = 0; i < 2; ++i) {
    c.rows[i] = 16;
    c.colsb[i] = 32;
    c.rows[2 + i] = 8;
    c.colsb[2 + i] = 64;
    c.rows[4 + i] = 16;
    c.colsb[4 + i] = 64;
  }
  return c;
}

// Tokens per chunk: every 16-row group unpacks each super-block once per
// chunk, and the chunk's activations (cols bytes a token) stay in L2.
constexpr int64_t kMaxChunk = 256;
int64_t amx_chunk(int64_t cols) {
  const int64_t c = (int64_t{1} << 20) / cols / 16 * 16;
  return c < 16 ? 16 : c > kMaxChunk ? kMaxChunk : c;
}

// The sums of 16 tokens from t over sub-block u of super-block sb, into C
// tile 4 + S (and its store, c). GCC's tile intrinsics spell the register
// numbers into the instruction text, so they must be literals: one function
// per set.
#define EMBER_AMX_MULTIPLY_(S)                                                                              \
  __attribute__((always_inline)) inline void multiply##S(const QuantActs& x, int64_t t, int64_t sb, int u,   \
                                                         const uint8_t* quants, int32_t* c) {                \
    _tile_loadd(EMBER_AMX_A##S, x.q + t * x.cols + sb * 256 + 32 * u, x.cols);                             \
    _tile_loadd(EMBER_AMX_B##S, quants + 512 * u, 64);                                                     \
    _tile_zero(EMBER_AMX_C##S);                                                                            \
    _tile_dpbsud(EMBER_AMX_C##S, EMBER_AMX_A##S, EMBER_AMX_B##S);                                           \
    _tile_stored(EMBER_AMX_C##S, c, 64);                                                                   \
  }
#define EMBER_AMX_A0 0
#define EMBER_AMX_B0 2
#define EMBER_AMX_C0 4
#define EMBER_AMX_A1 1
#define EMBER_AMX_B1 3
#define EMBER_AMX_C1 5
EMBER_AMX_MULTIPLY_(0)
EMBER_AMX_MULTIPLY_(1)
#undef EMBER_AMX_MULTIPLY_

// Sub-block u's sums of tokens t + j0 .. t + j0 + 7 (c: [token][row]
// int32) into their accumulators, as the VNNI superblock() does per lane:
// seed added (IQ4_XS), f = float(isum) * sc - mn * sum(a), acc += f * d_act.
// Eight tokens at a time: their accumulators, the scales and the mins stay
// in the 32 zmm registers.
template <class W>
__attribute__((always_inline)) inline void accumulate(const int32_t* c, const QuantActs& x, int64_t t, int j0,
                                                      int64_t sb, int u, const __m512* sc, const __m512* mn,
                                                      const float (*xsum)[8], __m512* acc) {
  const int64_t nb = x.cols / 32, b = sb * 8 + u;
  for (int j = 0; j < 8; ++j) {
    __m512i i = _mm512_load_si512(c + 16 * (j0 + j));
    if constexpr (bias_seed<W>() != 0) {
      i = _mm512_add_epi32(i, _mm512_set1_epi32(bias_seed<W>() * x.bias[(t + j0 + j) * nb + b]));
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(i), sc[u]);
    if constexpr (W::kHasMin) f = _mm512_fnmadd_ps(mn[u], _mm512_set1_ps(xsum[j0 + j][u]), f);
    acc[j] = _mm512_fmadd_ps(f, _mm512_set1_ps(x.d[(t + j0 + j) * nb + b]), acc[j]);
  }
}

template <class W>
void rows16_gemm_amx(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                     int64_t out_stride, QMatmulFn vnni_gemm) {
  static_assert(!W::kPer16, "one scale per sub-block");
  const int64_t n16 = n / 16 * 16;
  if (n16 < n) {
    // The last 1-15 tokens: the VNNI gemm on a view from token n16.
    const int64_t nb = cols / 32;
    QuantActs tail = x;
    tail.q = x.q + n16 * cols;
    tail.d = x.d + n16 * nb;
    tail.bias = x.bias + n16 * nb;
    if (x.sum16) tail.sum16 = x.sum16 + n16 * (cols / 16);
    vnni_gemm(w, cols, r0, r1, tail, static_cast<int32_t>(n - n16), out + n16 * out_stride, out_stride);
  }
  if (n16 == 0) return;
  static const TileConfig config = tile_config();
  _tile_loadconfig(&config);
  const int64_t nsb = cols / 256, group_bytes = nsb * W::kTileBytes, chunk = amx_chunk(cols);
  alignas(64) uint8_t quants[8 * 512];      // the super-block's B tiles, by sub-block
  alignas(64) int32_t csum[2][8][16 * 16];  // C stored, [tile parity][sub-block][token][row]
  alignas(64) float sums[kMaxChunk * 16];   // [token][row] between super-blocks
  alignas(32) float xsum[16][8];            // sum(a) of the tile's tokens' blocks
  for (int64_t t0 = 0; t0 < n16; t0 += chunk) {
    const int64_t t1 = t0 + chunk < n16 ? t0 + chunk : n16;
    for (int64_t r = r0; r < r1; r += 16) {
      const uint8_t* group = w + r / 16 * group_bytes;
      for (int64_t i = 0; i < (t1 - t0) * 16; i += 16) _mm512_store_ps(sums + i, _mm512_setzero_ps());
      for (int64_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* tile = group + sb * W::kTileBytes;
        __m512 sc[8], mn[8];
        W::scales(tile, sc, mn);
        for (int p = 0; p < 4; ++p) {
          for (int c = 0; c < 8; ++c) {
            __m512i lo, hi;
            W::quants(tile, p, c, &lo, &hi);
            _mm512_store_si512(quants + 512 * W::sub(p, 0) + 64 * c, lo);
            _mm512_store_si512(quants + 512 * W::sub(p, 1) + 64 * c, hi);
          }
        }
        // Sub-blocks in the VNNI order (pair p: sub(p, 0), then sub(p, 1)).
        // Software-pipelined by one tile of tokens: the tile multiplies of
        // tokens t + 16 are issued beside the float work on tokens t's
        // stored sums, so the tiles' latency (multiply, store, reload) hides
        // behind the vector units' work.
        int order[8];
        for (int p = 0; p < 4; ++p) {
          order[2 * p] = W::sub(p, 0);
          order[2 * p + 1] = W::sub(p, 1);
        }
        auto issue = [&](int64_t t, int k, int32_t* c) __attribute__((always_inline)) {
          if (k % 2 == 0) {
            multiply0(x, t, sb, order[k], quants, c);
          } else {
            multiply1(x, t, sb, order[k], quants, c);
          }
        };
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) issue(t0, k, csum[0][k]);
        for (int64_t t = t0; t < t1; t += 16) {
          const int cur = static_cast<int>((t - t0) / 16 % 2);
          const bool next = t + 16 < t1;
          if constexpr (W::kHasMin) {
            const int64_t nb = cols / 32;
            for (int j = 0; j < 16; ++j) {
              const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias + (t + j) * nb + sb * 8));
              _mm256_store_ps(xsum[j],
                              _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_srai_epi32(b, 3))));
            }
          }
          float* s = sums + 16 * (t - t0);
          for (int h = 0; h < 2; ++h) {
            __m512 acc[8];
            for (int j = 0; j < 8; ++j) acc[j] = _mm512_load_ps(s + 16 * (8 * h + j));
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
              if (next && k % 2 == 0) issue(t + 16, 4 * h + k / 2, csum[cur ^ 1][4 * h + k / 2]);
              accumulate<W>(csum[cur][k], x, t, 8 * h, sb, order[k], sc, mn, xsum, acc);
            }
            for (int j = 0; j < 8; ++j) _mm512_store_ps(s + 16 * (8 * h + j), acc[j]);
          }
        }
      }
      for (int64_t t = t0; t < t1; ++t) _mm512_storeu_ps(out + t * out_stride + r, _mm512_load_ps(sums + 16 * (t - t0)));
    }
  }
  _tile_release();
}

}  // namespace

#define EMBER_DEFINE_AMX_GEMM_(t, W)                                                                        \
  void t##_rows16_gemm__amx(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,   \
                            int32_t n, float* out, int64_t out_stride) {                                  \
    rows16_gemm_amx<W>(w, cols, r0, r1, x, n, out, out_stride, t##_rows16_gemm__avx512vnni);              \
  }
EMBER_DEFINE_AMX_GEMM_(q4_k, Q4_KRows16)
EMBER_DEFINE_AMX_GEMM_(q5_k, Q5_KRows16)
EMBER_DEFINE_AMX_GEMM_(iq4_xs, IQ4_XSRows16)
#undef EMBER_DEFINE_AMX_GEMM_

}  // namespace ember
#endif  // __x86_64__

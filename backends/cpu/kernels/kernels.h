// Declarations of every CPU kernel, by family and ISA. Names follow STYLE.md:
// what it computes, a double underscore, then how (q8_0_gemv__avx512vnni).
// One family per folder under backends/cpu/kernels/; within a family, one
// file per ISA, compiled with that ISA's flags only (CMakeLists.txt), so
// everything outside those files stays baseline and runs on any core of the
// architecture. backends/cpu/dispatch.cpp picks among them once.
//
// Rules for the per-ISA files: include only this header, <immintrin.h> or
// <arm_neon.h>, C headers and their family's .inc for that ISA
// (quant-matmul/quant_matmul_avx2.inc: templates and traits in an anonymous
// namespace, so each file compiles its own copy with its own flags); keep
// helpers `static` / in an anonymous namespace. An inline function or template from a shared
// header, compiled with -mavx512f, could otherwise be chosen by the linker
// for baseline code.
//
// Matmul contract (all dtypes): weight w is [rows, cols] row-major as stored
// in the file; for rows r in [r0, r1) and tokens t in [0, n):
//   out[t * out_stride + r] = sum_k w[r][k] * x[t][k]
// Each output is computed by one fixed sequence of operations that does not
// depend on r0, r1 or n, so any split of rows over threads gives
// bit-identical results.
#pragma once

#include <atomic>
#include <cstdint>

namespace ember {

// Float gemm token blocking: the f32/f16 gemm kernels run their tokens in
// blocks whose activations (block x cols f32) fit this many bytes, so a block
// stays in L2 while every row of the thread's chunk passes over it (instead
// of all n tokens streaming past each 4-row tile). Whole 4-token tiles; the
// operations per output do not change, so results are bit-identical to the
// unblocked loop and to gemv.
constexpr int64_t kFloatGemmBlockBytes = 256 * 1024;

// Decode (one token) reads every weight from memory once per step, each
// thread one ascending stream of rows16 tiles. The gemv tiles ask for the
// lines g_decode_prefetch_bytes ahead of the tile they start, or nothing
// when it is 0; the backend sets it once from the CPU
// (cpu_choose_decode_prefetch, dispatch.h: why each CPU gets what it gets)
// before any kernel runs. Prefetches never fault: past the tensor's end they
// only fetch what is there.
extern std::atomic<uint64_t> g_decode_prefetch_bytes;
inline void prefetch_ahead(const uint8_t* tile, int64_t bytes) {
  const uint64_t ahead = g_decode_prefetch_bytes.load(std::memory_order_relaxed);
  if (ahead == 0) return;
  // The lines that start in [tile + ahead, tile + ahead + bytes): tiles
  // follow each other, so each line is asked for exactly once, whatever the
  // tile size. (A 16-row tile of a 32-element block type is 352 to 544
  // bytes and starts on 32 bytes; a prefetch every 64 bytes from its start
  // asked for one line in 12-17 twice, and the 0.5b Q4_K_M mixture, mostly
  // Q5_0 and Q8_0, decoded 8% slower: docs/decisions.md "The decode prefetch".)
  const uintptr_t at = reinterpret_cast<uintptr_t>(tile) + ahead;
  for (uintptr_t l = (at + 63) & ~uintptr_t{63}; l < at + bytes; l += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(l), 0, 3);
  }
}

// A step of at most this many tokens (a verification step of speculative
// decoding, a few batched streams) still streams every weight from memory
// once, as decode does: its matmul kernels prefetch ahead as gemv does and
// the backend splits its rows as decode's (docs/decisions.md "Small steps
// stream the weights").
constexpr int32_t kStreamTokens = 16;

// Activations quantized on the fly for the Q8_0 / Q4_0 matmuls: per token,
// cols/32 blocks of 32 int8 with a float scale (x ~= q * d). `bias` holds
// -8 * sum(q) per block: the Q4_0 kernels multiply the unsigned nibbles
// (0..15) by q and add it, which gives sum((nibble - 8) * q) exactly.
struct QuantActs {
  const int8_t* q = nullptr;      // [n][cols], 32-byte aligned rows
  const float* d = nullptr;       // [n][cols / 32]
  const int32_t* bias = nullptr;  // [n][cols / 32]
  // [n][cols / 16]: sum of q over each 16 elements, for weight types whose
  // sub-blocks of 16 carry a min or an offset (Q2_K's mins; any type may use
  // it). Set by the backend whenever a graph has a GGUF block type
  // (EMBER_GGUF_QUANT_TYPES); null otherwise.
  const int16_t* sum16 = nullptr;
  int64_t cols = 0;
};

// Quantizes one row of `cols` floats (a multiple of 32): d = max|x| / 127,
// q = x / d rounded to nearest-even. Every ISA gives identical bytes.
using QuantizeQ8Fn = void (*)(const float* x, int64_t cols, int8_t* q, float* d, int32_t* bias);
using QMatmulFn = void (*)(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                           float* out, int64_t out_stride);
using FMatmulFn = void (*)(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,
                           float* out, int64_t out_stride);
// BF16 weights x activations already rounded to BF16 (x: n rows of cols
// BF16 values, Bf16RoundFn's output), FMatmulFn's other arguments.
using Bf16MatmulFn = void (*)(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const uint16_t* x, int32_t n,
                              float* out, int64_t out_stride);
// Rounds n floats to BF16, nearest even (what the BF16 dot products read).
using Bf16RoundFn = void (*)(const float* x, int64_t n, uint16_t* out);
// out = x / rms(x) * w over n floats.
using RmsNormFn = void (*)(float* out, const float* x, const float* w, int64_t n, float eps);
// out = silu(a) * b.
using SwigluFn = void (*)(float* out, const float* a, const float* b, int64_t n);
// out = a + b.
using AddFn = void (*)(float* out, const float* a, const float* b, int64_t n);
// sum a * b (attention scores).
using DotFn = float (*)(const float* a, const float* b, int64_t n);
// y += alpha * x (attention's weighted sum of values).
using AxpyFn = void (*)(float* y, float alpha, const float* x, int64_t n);
// out[h * out_stride + t] = dot(q + h * q_stride, k + t * k_stride) * scale
// for h < n_q, t < n_rows (the scores of n_q query heads sharing one key
// head, over the keys), each exactly as DotFn computes it: a kernel may
// read each key once for several heads (grouped-query attention).
using DotRowsFn = void (*)(const float* q, int32_t n_q, int64_t q_stride, const float* k, int64_t k_stride,
                           int32_t n_rows, int64_t n, float scale, float* out, int64_t out_stride);
// For h < n_y: y_h += alpha[h * alpha_stride + t] * (x + t * x_stride) for
// t = 0 .. n_rows - 1 in order, y_h = y + h * y_stride, each exactly as
// AxpyFn computes it.
using AxpyRowsFn = void (*)(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                            const float* x, int64_t x_stride, int32_t n_rows, int64_t n);
// x = softmax(x) in place: exp(x - max) / sum (attention scores).
using SoftmaxFn = void (*)(float* x, int64_t n);
// The unnormalized half of SoftmaxFn: m = max(*max_inout, max(x)), x =
// exp(x - m) in place, *max_inout = m, returns the sum of x. SoftmaxFn is
// this from -inf, then a multiply by 1 / sum; tiled attention passes the
// running maximum of the keys before.
using ExpSumFn = float (*)(float* x, int64_t n, float* max_inout);
// Attention scores with keys in vector lanes: s[r * s_stride + t] = scale *
// sum_j q[r * d + j] * k[t * k_stride + j] for r < n_q, t < n_keys <= 64,
// each score one fused multiply-add chain over j = 0 .. d - 1 in order
// (then the multiply by scale), whatever n_q and n_keys; kt: scratch of
// 64 x (d rounded up to 16) floats for the keys transposed.
using AttnScoresFn = void (*)(const float* q, int32_t n_q, int64_t d, const float* k, int64_t k_stride,
                              int32_t n_keys, float scale, float* s, int64_t s_stride, float* kt);
// dst = src, n IEEE half values widened to f32 (exact).
using F16WidenFn = void (*)(const uint16_t* src, float* dst, int64_t n);
// AttnScoresFn and AxpyRowsFn over an f16 cache's rows (k_stride, x_stride
// in elements), widened as they are read: bitwise the f32 kernels' results
// on the widened rows (the widening is exact). The AVX-512 attention
// kernels also prefetch the rows 64 on as they read (the next chunk of a
// cache read in place; a hint, whatever lies there).
using AttnScoresF16Fn = void (*)(const float* q, int32_t n_q, int64_t d, const uint16_t* k, int64_t k_stride,
                                 int32_t n_keys, float scale, float* s, int64_t s_stride, float* kt);
using AxpyRowsF16Fn = void (*)(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                               const uint16_t* x, int64_t x_stride, int32_t n_rows, int64_t n);
#if defined(__x86_64__)
void f16_attn_scores__avx512(const float* q, int32_t n_q, int64_t d, const uint16_t* k, int64_t k_stride,
                             int32_t n_keys, float scale, float* s, int64_t s_stride, float* kt);
void f16_axpy_rows__avx512(float* y, int32_t n_y, int64_t y_stride, const float* alpha, int64_t alpha_stride,
                           const uint16_t* x, int64_t x_stride, int32_t n_rows, int64_t n);
void f32_attn_scores__avx512(const float* q, int32_t n_q, int64_t d, const float* k, int64_t k_stride, int32_t n_keys,
                             float scale, float* s, int64_t s_stride, float* kt);
#endif
// out = gelu(a) (b null) or gelu(a) * b, over n floats: GELU's tanh form,
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (BERT's FFN, Gemma's
// GeGLU); the vector paths compute it as x / (1 + e^(-2u)), the same
// function, within a few ulp.
using GeluFn = void (*)(float* out, const float* a, const float* b, int64_t n);

// Block layouts as stored in the file (bit-compatible with GGUF and with
// format/dtype.h, which the ISA files do not include; see the rule above).
struct KBlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t q[32];
};
struct KBlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t q[16];  // element j in the low nibble of q[j], j + 16 in the high
};
static_assert(sizeof(KBlockQ8_0) == 34 && sizeof(KBlockQ4_0) == 18);

// The other GGUF block types, mirrors of core/dtype.h's structs (the meaning
// of every field and the placement of every element are documented there;
// dispatch.cpp asserts the two agree field by field). Quantized activations
// stay in 32-element blocks: a kernel for a 256-element super-block type
// meets 8 activation blocks per super-block.
struct KBlockQ4_1 {
  uint16_t d, m;
  uint8_t q[16];
};
struct KBlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t q[16];
};
struct KBlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t q[16];
};
struct KBlockQ2_K {
  uint8_t scales[16];
  uint8_t q[64];
  uint16_t d, dmin;
};
struct KBlockQ3_K {
  uint8_t hmask[32];
  uint8_t q[64];
  uint8_t scales[12];
  uint16_t d;
};
struct KBlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t q[128];
};
struct KBlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t q[128];
};
struct KBlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct KBlockIQ4_NL {
  uint16_t d;
  uint8_t q[16];
};
struct KBlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t q[128];
};
static_assert(sizeof(KBlockQ4_1) == 20 && sizeof(KBlockQ5_0) == 22 && sizeof(KBlockQ5_1) == 24 &&
              sizeof(KBlockQ2_K) == 84 && sizeof(KBlockQ3_K) == 110 && sizeof(KBlockQ4_K) == 144 &&
              sizeof(KBlockQ5_K) == 176 && sizeof(KBlockQ6_K) == 210 && sizeof(KBlockIQ4_NL) == 18 &&
              sizeof(KBlockIQ4_XS) == 136);
// IQ4_NL / IQ4_XS levels (core/dtype.h's kIq4Levels; a test checks they are
// equal). constexpr: internal linkage, each ISA file has its own copy.
constexpr int8_t kKIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Where the Q2_K / Q3_K / Q5_K / Q6_K rows16 kernels find a 64-byte chunk, in bytes from
// the tile's start (core/layout.h's order since schema 2; core/layout.cpp's
// chunk_at writes it, and the layout and kernels tests hold the two
// together). static: internal linkage, each ISA file has its own copy.
// Q5_K: nibble chunk w (0..31) and qh chunk c (0..7): pair 0's side by side.
static constexpr int64_t q5_k_rows16_qs(int w) { return w < 8 ? 256 + 128 * w : 768 + 64 * w; }
static constexpr int64_t q5_k_rows16_qh(int c) { return 320 + 128 * c; }
// Q2_K: q chunk w (0..15), one after another after the scales.
static constexpr int64_t q2_k_rows16_qs(int w) { return 320 + 64 * w; }
// Q3_K: q chunk w (0..15) and hmask chunk c (0..7): pair 0's side by side,
// as Q5_K's.
static constexpr int64_t q3_k_rows16_qs(int w) { return w < 8 ? 224 + 128 * w : 224 + 1024 + 64 * (w - 8); }
static constexpr int64_t q3_k_rows16_hm(int c) { return 224 + 128 * c + 64; }
// Q6_K: unit u (0..15) of 192 bytes holds ql chunks 16 (u / 8) + u % 8 and
// that + 8, then qh chunk u.
static constexpr int64_t q6_k_rows16_unit(int u) { return 288 + 192 * u; }
static constexpr int64_t q6_k_rows16_ql(int w) { return q6_k_rows16_unit(8 * (w / 16) + w % 8) + 64 * (w % 16 / 8); }
static constexpr int64_t q6_k_rows16_qh(int u) { return q6_k_rows16_unit(u) + 128; }

// The GGUF block types with int8-activation matmuls (row-major), in the
// order of CpuKernels' members. Every path has every one: a path without its
// own kernel for a type takes generic's (dispatch.cpp says which).
#define EMBER_GGUF_QUANT_TYPES(X) X(q4_1) X(q5_0) X(q5_1) X(q2_k) X(q3_k) X(q4_k) X(q5_k) X(q6_k) X(iq4_nl) X(iq4_xs)

#define EMBER_DECLARE_GGUF_KERNEL_PAIR_(t, isa)                                                             \
  void t##_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,        \
                       int32_t n, float* out, int64_t out_stride);                                       \
  void t##_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,        \
                       int32_t n, float* out, int64_t out_stride);
#define EMBER_DECLARE_GGUF_KERNEL_GENERIC_(t) EMBER_DECLARE_GGUF_KERNEL_PAIR_(t, generic)
#define EMBER_DECLARE_GGUF_KERNEL_AVX2_(t) EMBER_DECLARE_GGUF_KERNEL_PAIR_(t, avx2)
#define EMBER_DECLARE_GGUF_KERNEL_AVX512VNNI_(t) EMBER_DECLARE_GGUF_KERNEL_PAIR_(t, avx512vnni)
#define EMBER_DECLARE_GGUF_KERNEL_NEON_(t) EMBER_DECLARE_GGUF_KERNEL_PAIR_(t, neon)
#define EMBER_DECLARE_GGUF_KERNEL_NEONDOT_(t) EMBER_DECLARE_GGUF_KERNEL_PAIR_(t, neondot)

#define EMBER_DECLARE_QUANT_KERNELS(isa)                                                                    \
  void q8_0_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,        \
                        int32_t n, float* out, int64_t out_stride);                                       \
  void q8_0_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,        \
                        int32_t n, float* out, int64_t out_stride);                                       \
  void q4_0_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,        \
                        int32_t n, float* out, int64_t out_stride);                                       \
  void q4_0_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x,        \
                        int32_t n, float* out, int64_t out_stride);

// The same matmuls for weights in the Rows16 layout (format/layout.h): w is
// the whole tensor, r0 and r1 multiples of 16.
#define EMBER_DECLARE_ROWS16_KERNELS(isa)                                                                   \
  void q8_0_rows16_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                               int32_t n, float* out, int64_t out_stride);                                 \
  void q8_0_rows16_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                               int32_t n, float* out, int64_t out_stride);                                 \
  void q4_0_rows16_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                               int32_t n, float* out, int64_t out_stride);                                 \
  void q4_0_rows16_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                               int32_t n, float* out, int64_t out_stride);

// The GGUF types that have a Rows16 form (core/layout.h), in the order of
// CpuKernels' members; their matmuls (q5_0_rows16_gemv, ...) are declared
// for every path (generic, avx2, avx512vnni, neon, neondot).
#define EMBER_GGUF_ROWS16_TYPES(X) X(q5_0) X(q2_k) X(q3_k) X(q4_k) X(q5_k) X(q6_k) X(iq4_xs)
#define EMBER_DECLARE_GGUF_ROWS16_PAIR_(t, isa)                                                          \
  void t##_rows16_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                              int32_t n, float* out, int64_t out_stride);                                 \
  void t##_rows16_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                              int32_t n, float* out, int64_t out_stride);
#define EMBER_DECLARE_GGUF_ROWS16_GENERIC_(t) EMBER_DECLARE_GGUF_ROWS16_PAIR_(t, generic)
#define EMBER_DECLARE_GGUF_ROWS16_AVX2_(t) EMBER_DECLARE_GGUF_ROWS16_PAIR_(t, avx2)
#define EMBER_DECLARE_GGUF_ROWS16_AVX512VNNI_(t) EMBER_DECLARE_GGUF_ROWS16_PAIR_(t, avx512vnni)
#define EMBER_DECLARE_GGUF_ROWS16_NEON_(t) EMBER_DECLARE_GGUF_ROWS16_PAIR_(t, neon)
#define EMBER_DECLARE_GGUF_ROWS16_NEONDOT_(t) EMBER_DECLARE_GGUF_ROWS16_PAIR_(t, neondot)
#define EMBER_DECLARE_GGUF_ROWS16_KERNELS(isa) EMBER_GGUF_ROWS16_TYPES(EMBER_DECLARE_GGUF_ROWS16_##isa##_)

// The float types' matmuls in the Rows16 layout (float-rows16/): t_rows16_gemv
// and t_rows16_gemm, FMatmulFn's signature, r0 and r1 multiples of 16.
#define EMBER_DECLARE_FLOAT_ROWS16_(t, isa)                                                                 \
  void t##_rows16_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x,      \
                              int32_t n, float* out, int64_t out_stride);                                  \
  void t##_rows16_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x,      \
                              int32_t n, float* out, int64_t out_stride);
#define EMBER_DECLARE_FLOAT_KERNELS(isa)                                                                    \
  void q8_quantize__##isa(const float* x, int64_t cols, int8_t* q, float* d, int32_t* bias);               \
  void f32_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,  \
                       float* out, int64_t out_stride);                                                    \
  void f32_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,  \
                       float* out, int64_t out_stride);                                                    \
  void f16_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,  \
                       float* out, int64_t out_stride);                                                    \
  void f16_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n,  \
                       float* out, int64_t out_stride);                                                    \
  void bf16_gemv__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, \
                        float* out, int64_t out_stride);                                                   \
  void bf16_gemm__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const float* x, int32_t n, \
                        float* out, int64_t out_stride);                                                   \
  EMBER_DECLARE_FLOAT_ROWS16_(f32, isa)                                                                    \
  EMBER_DECLARE_FLOAT_ROWS16_(f16, isa)                                                                    \
  EMBER_DECLARE_FLOAT_ROWS16_(bf16, isa)                                                                   \
  void f32_rmsnorm__##isa(float* out, const float* x, const float* w, int64_t n, float eps);               \
  void f32_swiglu__##isa(float* out, const float* a, const float* b, int64_t n);                           \
  void f32_add__##isa(float* out, const float* a, const float* b, int64_t n);                              \
  float f32_dot__##isa(const float* a, const float* b, int64_t n);                                         \
  void f32_axpy__##isa(float* y, float alpha, const float* x, int64_t n);                                   \
  void f32_dot_rows__##isa(const float* q, int32_t n_q, int64_t q_stride, const float* k, int64_t k_stride, \
                           int32_t n_rows, int64_t n, float scale, float* out, int64_t out_stride);         \
  void f32_axpy_rows__##isa(float* y, int32_t n_y, int64_t y_stride, const float* alpha,                   \
                            int64_t alpha_stride, const float* x, int64_t x_stride, int32_t n_rows,          \
                            int64_t n);                                                                      \
  void f32_softmax__##isa(float* x, int64_t n);                                                            \
  void f32_gelu__##isa(float* out, const float* a, const float* b, int64_t n);                             \
  float f32_exp_sum__##isa(float* x, int64_t n, float* max_inout);                                           \
  void f16_widen__##isa(const uint16_t* src, float* dst, int64_t n);

// Defines the kernel name__isa (QMatmulFn's signature) as a call of impl, a
// template instantiated in the ISA's file: quant-matmul/quant_matmul__<isa>.cpp
// writes EMBER_DEFINE_QMATMUL(q8_0_gemv, avx2, gemv<Q8_0>).
#define EMBER_DEFINE_QMATMUL(name, isa, impl)                                                             \
  void name##__##isa(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, \
                     float* out, int64_t out_stride) {                                                    \
    impl(w, cols, r0, r1, x, n, out, out_stride);                                                         \
  }

// generic: portable C++, the reference every other path is tested against.
EMBER_DECLARE_QUANT_KERNELS(generic)
EMBER_DECLARE_ROWS16_KERNELS(generic)
EMBER_DECLARE_FLOAT_KERNELS(generic)
EMBER_GGUF_QUANT_TYPES(EMBER_DECLARE_GGUF_KERNEL_GENERIC_)
EMBER_DECLARE_GGUF_ROWS16_KERNELS(GENERIC)
#if defined(__x86_64__)
// Declared for every type; defined for the types a path has its own kernel
// for (dispatch.cpp's tables name only those).
EMBER_GGUF_QUANT_TYPES(EMBER_DECLARE_GGUF_KERNEL_AVX2_)
EMBER_GGUF_QUANT_TYPES(EMBER_DECLARE_GGUF_KERNEL_AVX512VNNI_)
EMBER_DECLARE_GGUF_ROWS16_KERNELS(AVX2)
EMBER_DECLARE_GGUF_ROWS16_KERNELS(AVX512VNNI)
// avx2: AVX2 + FMA + F16C (int8 products with vpmaddubsw).
EMBER_DECLARE_QUANT_KERNELS(avx2)
EMBER_DECLARE_ROWS16_KERNELS(avx2)
EMBER_DECLARE_FLOAT_KERNELS(avx2)
// avx512: F + BW + VL; the int8 kernels also use VNNI (vpdpbusd).
EMBER_DECLARE_QUANT_KERNELS(avx512vnni)
EMBER_DECLARE_ROWS16_KERNELS(avx512vnni)
EMBER_DECLARE_FLOAT_KERNELS(avx512)
// amx: the Rows16 prefill (gemm) of the types with one scale per sub-block
// on AMX-INT8 tiles, bit for bit the avx512vnni gemm's results
// (kquant_rows16__amx.cpp); dispatch.cpp swaps them into the avx512vnni
// table when EMBER_AMX=1 asks and the CPU and the kernel allow AMX
// (cpu_choose_amx).
#define EMBER_GGUF_ROWS16_AMX_TYPES(X) X(q4_k) X(q5_k) X(iq4_xs)
#define EMBER_DECLARE_GGUF_ROWS16_AMX_(t)                                                                 \
  void t##_rows16_gemm__amx(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, \
                            int32_t n, float* out, int64_t out_stride);
EMBER_GGUF_ROWS16_AMX_TYPES(EMBER_DECLARE_GGUF_ROWS16_AMX_)
// avx512bf16: BF16 Rows16 matmuls by vdpbf16ps, activations rounded to BF16
// (float_rows16__avx512bf16.cpp); dispatch.cpp swaps them into the avx512
// float family where the CPU has AVX512-BF16 (cpu_choose_bf16_dot).
void bf16_round__avx512bf16(const float* x, int64_t n, uint16_t* out);
void bf16_rows16_gemv__avx512bf16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const uint16_t* x,
                                  int32_t n, float* out, int64_t out_stride);
void bf16_rows16_gemm__avx512bf16(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const uint16_t* x,
                                  int32_t n, float* out, int64_t out_stride);
#endif
#if defined(__aarch64__)
// neon: ASIMD (int8 products with vmull/vpadal); neondot adds SDOT.
EMBER_DECLARE_QUANT_KERNELS(neon)
EMBER_DECLARE_ROWS16_KERNELS(neon)
EMBER_DECLARE_FLOAT_KERNELS(neon)
EMBER_DECLARE_QUANT_KERNELS(neondot)
EMBER_DECLARE_ROWS16_KERNELS(neondot)
EMBER_DECLARE_GGUF_ROWS16_KERNELS(NEON)
EMBER_DECLARE_GGUF_ROWS16_KERNELS(NEONDOT)
EMBER_GGUF_QUANT_TYPES(EMBER_DECLARE_GGUF_KERNEL_NEON_)
EMBER_GGUF_QUANT_TYPES(EMBER_DECLARE_GGUF_KERNEL_NEONDOT_)
#endif

}  // namespace ember

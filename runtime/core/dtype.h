// Tensor element types and their storage sizes. Every quantized type is
// stored exactly as GGUF stores it (the same blocks, bit for bit), so a GGUF
// import is a byte copy and comparisons with llama.cpp are like for like.
// 32-element blocks: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL. 256-element
// super-blocks: Q2_K .. Q6_K, IQ4_XS. Multi-byte fields are little-endian.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember {

// Values are stored in files: append, never renumber.
enum class DType : uint8_t {
  F32 = 0, F16 = 1, BF16 = 2, Q8_0 = 3, Q4_0 = 4,
  Q4_1 = 5, Q5_0 = 6, Q5_1 = 7,
  Q2_K = 8, Q3_K = 9, Q4_K = 10, Q5_K = 11, Q6_K = 12,
  IQ4_NL = 13, IQ4_XS = 14,
};
constexpr int kDTypeCount = 15;
constexpr int kQuantBlock = 32;    // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL
constexpr int kSuperBlock = 256;   // K-quants and IQ4_XS

struct BlockQ8_0 {
  uint16_t scale;  // f16
  int8_t q[kQuantBlock];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  uint16_t scale;  // f16
  uint8_t q[kQuantBlock / 2];  // element j in the low nibble of q[j], j+16 in the high
};
static_assert(sizeof(BlockQ4_0) == 18);

// x = d * q + m, q in 0..15 (nibbles placed as Q4_0's).
struct BlockQ4_1 {
  uint16_t d, m;  // f16
  uint8_t q[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x = d * (q - 16), q in 0..31: low 4 bits as Q4_0's nibbles, bit 4 of
// element j is bit j of the little-endian u32 in qh.
struct BlockQ5_0 {
  uint16_t d;  // f16
  uint8_t qh[4];
  uint8_t q[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x = d * q + m, q in 0..31, bits placed as Q5_0's.
struct BlockQ5_1 {
  uint16_t d, m;  // f16
  uint8_t qh[4];
  uint8_t q[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// 16 sub-blocks of 16: x = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4),
// q in 0..3. Element e (sub-block s = e / 16): h = e / 128, g = (e % 128) / 32,
// its 2 bits at bit 2g of q[32h + e % 32].
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t q[64];
  uint16_t d, dmin;  // f16
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 sub-blocks of 16: x = d * (sc - 32) * (q - 4), sc a 6-bit scale, q in
// 0..7. q's low 2 bits are placed as Q2_K's; its bit 2 is bit (e / 32) of
// hmask[e % 32]. sc of sub-block s: low 4 bits in nibble (s / 8) of
// scales[s % 8], high 2 bits at bit 2 * (s / 4) of scales[8 + s % 4].
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t q[64];
  uint8_t scales[12];
  uint16_t d;  // f16
};
static_assert(sizeof(BlockQ3_K) == 110);

// 8 sub-blocks of 32: x = d * sc * q - dmin * mn, 6-bit sc and mn, q in 0..15.
// Element e: c = e / 64, nibble (e % 64) / 32 of q[32c + e % 32]. sc, mn of
// sub-block s < 4: low 6 bits of scales[s], scales[s + 4]; s >= 4: low 4 bits
// from the nibbles of scales[s + 4] (sc low, mn high), high 2 bits from the
// top bits of scales[s - 4] (sc) and scales[s] (mn).
struct BlockQ4_K {
  uint16_t d, dmin;  // f16
  uint8_t scales[12];
  uint8_t q[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q4_K plus a fifth bit: bit (e / 32) of qh[e % 32] (q in 0..31).
struct BlockQ5_K {
  uint16_t d, dmin;  // f16
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t q[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 sub-blocks of 16: x = d * scales[s] * (q - 32), q in 0..63. Element e:
// h = e / 128, k = (e % 128) / 32, l = e % 32; low 4 bits in nibble (k / 2)
// of ql[64h + 32(k % 2) + l], high 2 bits at bit 2k of qh[32h + l].
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;  // f16
};
static_assert(sizeof(BlockQ6_K) == 210);

// The 16 non-linear levels of IQ4_NL and IQ4_XS (GGUF's table).
extern const int8_t kIq4Levels[16];

// x = d * kIq4Levels[q], nibbles placed as Q4_0's.
struct BlockIQ4_NL {
  uint16_t d;  // f16
  uint8_t q[kQuantBlock / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// 8 sub-blocks of 32, each placed as an IQ4_NL block's nibbles (q[16s..]):
// x = d * (ls - 32) * kIq4Levels[q], ls a 6-bit scale: low 4 bits in nibble
// (s % 2) of scales_l[s / 2], high 2 bits at bit 2s of scales_h.
struct BlockIQ4_XS {
  uint16_t d;  // f16
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t q[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// Scale and min (6 bits each) of sub-block s (0..7) of a Q4_K / Q5_K block's
// scales[12]; the 6-bit scale (0..63, as stored) of Q3_K sub-block s (0..15).
// Shared by the codecs and the generic kernels.
void k4_scale_min(const uint8_t* scales, int s, int* scale, int* min);
int q3_scale(const uint8_t* scales, int s);

const char* dtype_name(DType t);
bool dtype_from_name(const char* name, DType* out);
bool dtype_is_valid(uint8_t raw);
// True for the block types (every type but F32, F16, BF16).
bool dtype_is_quantized(DType t);
// Elements per storage block: 1 for float types, 32 or 256 for the others.
// A row of a quantized type is a whole number of blocks.
int dtype_block_elements(DType t);
// Bytes per storage block.
int dtype_block_bytes(DType t);
// Bits per element averaged over a block (Q8_0: 8.5, Q4_K: 4.5, Q6_K:
// 6.5625), exact.
double dtype_bits(DType t);
// Bytes of `n` elements; false when n is not a whole number of blocks or the
// size overflows.
bool dtype_bytes(DType t, uint64_t n, uint64_t* out);

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);

// Converts `n` elements of a row of type t to f32 (n a multiple of the block).
// The reference for every kernel and for the generic fallback.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Quantizes n floats (n a multiple of dtype_block_elements(t)) into type t.
// A reference quantizer, not a fast one: each (sub-)block's scale (and min)
// is chosen among a few candidates by least squares; docs/decisions.md
// ("Weight types: GGUF's blocks, bit for bit") says what each type does.
void quantize_row(DType t, const float* src, void* dst, int64_t n);
// quantize_row with an importance per element (n floats, >= 0: an
// importance matrix's mean square of each input column, the expected square
// of what a rounding error is multiplied by; issue 45): each (sub-)block's
// scale search minimizes sum w (x - q)^2 with w = importance x sqrt(sigma^2
// + x^2), sigma^2 the row's mean square. Q8_0 and the float types have no
// search and ignore it; null is quantize_row.
void quantize_row_weighted(DType t, const float* src, void* dst, int64_t n, const float* importance);

}  // namespace ember

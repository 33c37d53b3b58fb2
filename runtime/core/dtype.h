// Tensor element types and their storage sizes. Q8_0 and Q4_0 are stored
// exactly as GGUF stores them (32-element blocks with an f16 scale), so a GGUF
// import is a byte copy and comparisons with llama.cpp are like for like.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember {

enum class DType : uint8_t { F32 = 0, F16 = 1, BF16 = 2, Q8_0 = 3, Q4_0 = 4 };
constexpr int kDTypeCount = 5;
constexpr int kQuantBlock = 32;

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

const char* dtype_name(DType t);
bool dtype_from_name(const char* name, DType* out);
bool dtype_is_valid(uint8_t raw);
bool dtype_is_quantized(DType t);
// Elements per storage block (1 for float types, 32 for Q8_0/Q4_0).
int dtype_block_elements(DType t);
// Bytes per storage block.
int dtype_block_bytes(DType t);
// Bits per element averaged over a block (Q8_0: 8.5, Q4_0: 4.5).
double dtype_bits(DType t);
// Bytes of `n` elements; false when n is not a whole number of blocks or the
// size overflows.
bool dtype_bytes(DType t, uint64_t n, uint64_t* out);

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);

// Converts `n` elements of a row of type t to f32 (n a multiple of the block).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Quantizes n floats (n a multiple of 32 for Q8_0/Q4_0) into type t.
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace ember

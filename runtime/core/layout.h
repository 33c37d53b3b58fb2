// How a weight's bytes are arranged in the data segment.
//
// RowMajor: shape [rows, cols], each row contiguous; quantized rows are runs
// of 32-element blocks (as GGUF stores them).
//
// Rows16 (Q8_0, Q4_0, Q5_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, F32, F16 and BF16 matrices whose row count is a multiple of 16): the
// same bytes regrouped so that a 64-byte load feeds one int8 dot-product
// instruction per 16 rows, with no horizontal sums and no scale shuffling.
// Rows are taken 16 at a time; group g occupies the bytes that rows
// [16g, 16g + 16) occupy in RowMajor (16 x row bytes): cols/32 tiles, one
// per block, each 16 x the block's bytes (Q8_0 544, Q4_0 288, Q5_0 352):
//
//   0    16 f16 scales, rows 0..15
//   Q5_0 only: 32  16 words of high bits, row i's at 32 + 4*i: the bit of
//          element 16p + 4c + k (GGUF's qh bit) at bit 8k + 2c + p, so that
//          shifting the word right by 2c + p puts part p of chunk c in bit 0
//          of the 4 bytes it meets
//   Q (32; Q5_0 96)  chunks c of 64 bytes holding, for row i, 4 bytes at
//        Q + 64*c + 4*i:
//          Q8_0 (8 chunks): q_i[4c .. 4c+3] + 128, as u8
//          Q4_0, Q5_0 (4 chunks): the nibble bytes q_i[4c .. 4c+3]
//            (low nibble element j, high nibble element j + 16)
//
// Q4_K (matrices whose rows are a multiple of 16 and columns of 256): per
// super-block of 256 columns one tile of 16 x 144 bytes (2304). Each field
// of GGUF's block at byte offset o, n bytes long, takes 16n bytes at 16o in
// the tile, so the tile is the 16 blocks' bytes regrouped (lossless, same
// size: 4.5 bits per weight, plan figures unchanged):
//   0     16 f16 d, rows 0..15          32    16 f16 dmin
//   64    the 12 packed 6-bit scale/min bytes, transposed: byte k of row i
//         at 64 + 16k + i, so one 16-byte load holds byte k of all 16 rows
//         and the 8 scales and mins decode with byte-vector operations
//   256   32 chunks of 64 bytes: row i's quant bytes 4c..4c+3 at
//         256 + 64c + 4i (chunk c = 8p + j: low nibbles = elements
//         64p + 4j.. of sub-block 2p, high nibbles = sub-block 2p + 1's)
//
// Q5_K (the same rule, per super-block one tile of 16 x 176 bytes, 2816):
//   0, 32, 64  d, dmin and the scale bytes as Q4_K's
//   256   for j = 0..7: the nibble chunk j (as Q4_K's chunk j) at 256 +
//         128j, then qh chunk j at 256 + 128j + 64 (row i's qh bytes
//         4j..4j+3 at + 4i; bit s = sub-block s's fifth bit of elements
//         4j..4j+3): what sub-block pair 0 reads, side by side
//   1280  nibble chunks 8..31: chunk w at 1280 + 64 (w - 8)
//
// Q6_K (the same rule, per super-block one tile of 16 x 210 bytes, 3360):
//   0     16 f16 d
//   32    the 16 int8 scales transposed: scale k of row i at 32 + 16k + i
//   288   16 units of 192 bytes; unit 8h + j holds ql chunk 16h + j, ql
//         chunk 16h + 8 + j and qh chunk 8h + j (64 bytes each, row i's
//         4 bytes at + 4i): everything chunk j of pairs 2h and 2h + 1
//         reads. ql chunk c = 8p + j: low nibbles = elements 4j.. of
//         sub-block 4 (p / 2) + p % 2, high nibbles = sub-block
//         4 (p / 2) + p % 2 + 2; qh chunk 8h + j: bit pair k = sub-block
//         4h + k's high bits
//
// IQ4_XS (the same rule, per super-block one tile of 16 x 136 bytes, 2176):
//   0     16 f16 d                      32    scales_h transposed (its low
//         byte of the 16 rows at 32, its high byte at 48)
//   64    the 4 scales_l bytes transposed: byte k of row i at 64 + 16k + i
//   128   32 chunks of 64 bytes: row i's quant bytes 4c..4c+3 at 128 + 64c
//         + 4i (chunk c = 4s + j: low nibbles = elements 4j.. of sub-block
//         s, high nibbles = elements 16 + 4j..)
//
// Q3_K (the same rule, per super-block one tile of 16 x 110 bytes, 1760):
//   0     16 f16 d
//   32    the 12 packed 6-bit scale bytes transposed: byte k of row i at
//         32 + 16k + i
//   224   for j = 0..7: q chunk j at 224 + 128j (row i's q bytes 4j..4j+3 at
//         + 4i), then hmask chunk j at 224 + 128j + 64 (row i's hmask bytes
//         4j..4j+3); then q chunks 8..15 at 1248 + 64 (w - 8). q chunk
//         8h + j: bit pair k = elements 128h + 32k + 4j.. (sub-block 4h + k
//         of 32, its elements 4j..); hmask chunk j: bit s = the third bit of
//         sub-block s's elements 4j..
//
// Q2_K (the same rule, per super-block one tile of 16 x 84 bytes, 1344):
//   0     16 f16 d                      32    16 f16 dmin
//   64    the 16 scale bytes transposed (low nibble the scale, high the
//         min of group g of 16 elements): byte g of row i at 64 + 16g + i,
//         so the 16 bytes at 64 + 16g are group g's of all 16 rows
//   320   16 q chunks of 64 bytes: row i's q bytes 4j..4j+3 at 320 + 64j +
//         4i; q chunk 8h + j: bit pair k = elements 128h + 32k + 4j.. (as
//         Q3_K's q chunks)
//
// F32, F16 (matrices whose rows are a multiple of 16) and BF16 (also an even
// column count): per group of 16 rows the values k-major, so that one load
// gives 16 rows' weights at one column (a broadcast activation times it
// feeds 16 outputs, no horizontal sums):
//   F32, F16  element (16g + i, k) at group + (16k + i) * 4 or 2 bytes
//   BF16      pairs of columns: element (16g + i, k) at group + (32 (k / 2)
//             + 2i + k % 2) * 2 bytes, so a 64-byte load holds 16 rows x
//             columns k, k + 1 (AVX512-BF16's vdpbf16ps and ARM's bfdot
//             pairs; a shift and a mask give the two columns exactly)
//
// One stream per tile: every type's fields are placed in the order its
// kernels read them (scales first). Scales kept in a separate run read as a
// second stream measured half the bandwidth on an AMD Zen core, and Q6_K's
// first rows16 order (ql, qh, scales, d as four runs) made its gemv 0.33-0.44x
// row-major's there (docs/decisions.md "K-quant rows16 layout").
// The tensor's size and every plan figure are those of RowMajor. Written at
// conversion time (`--layout`), so the mapped weights stay zero-copy.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ember {

enum class Layout : uint8_t { RowMajor = 0, Rows16 = 1 };
constexpr int kLayoutCount = 2;
constexpr int kRows16 = 16;

const char* layout_name(Layout l);  // "row-major", "rows16"
bool layout_from_name(const char* name, Layout* out);
// Whether a [rows, cols] matrix of type t can be stored as l.
bool layout_fits(Layout l, DType t, int64_t rows, int64_t cols);
// RowMajor -> Rows16 and back, for a whole [rows, cols] tensor (layout_fits).
void pack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols);
void unpack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols);

// Row r of a tensor stored as l, in RowMajor bytes (cols / 32 blocks): the
// row itself for RowMajor, else gathered into `scratch` (row bytes).
const uint8_t* layout_row(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, uint8_t* scratch);

// Byte offset of element (r, k) of a float (F32, F16, BF16) Rows16 tensor of
// `cols` columns.
int64_t float_rows16_offset(DType t, int64_t cols, int64_t r, int64_t k);

// Storage block j of row r (for F32 / F16 / BF16 element j; else 32 elements; for Q2_K / Q3_K / Q4_K / Q5_K / Q6_K / IQ4_XS the 256-element
// super-block), in RowMajor bytes, into `out` (34, 18, 22, 84, 110, 144, 176, 210 or 136 bytes). For
// a RowMajor tensor, a copy.
void layout_block(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, int64_t j, uint8_t* out);

}  // namespace ember

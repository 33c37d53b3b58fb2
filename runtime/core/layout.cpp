#include "core/layout.h"

#include <cstring>

namespace ember {
namespace {

constexpr const char* kNames[kLayoutCount] = {"row-major", "rows16"};

// Bytes of one block (scale, then the quants; Q5_0: scale, high bits, nibbles).
int block_bytes(DType t) {
  switch (t) {
    case DType::Q8_0: return 34;
    case DType::Q5_0: return 22;
    default: return 18;
  }
}
int chunks(DType t) { return t == DType::Q8_0 ? 8 : 4; }                 // 64-byte quant chunks per tile
int src_quants(DType t) { return t == DType::Q5_0 ? 6 : 2; }             // quant bytes' offset in a block
int tile_quants(DType t) { return t == DType::Q5_0 ? 32 + 64 : 32; }     // and in a tile

// Where row i's block b lives in a Rows16 group: its scale at tile + 2i,
// its quant bytes 4c..4c+3 at tile + tile_quants + 64c + 4i (core/layout.h).
uint8_t* tile_of(uint8_t* group, DType t, int64_t b) { return group + b * block_bytes(t) * kRows16; }
const uint8_t* tile_of(const uint8_t* group, DType t, int64_t b) { return group + b * block_bytes(t) * kRows16; }
uint8_t flip_of(DType t) { return t == DType::Q8_0 ? 0x80 : 0x00; }

// Q5_0's high bits: element 16p + 4c + k (bit of GGUF's qh) at bit 8k + 2c + p
// of the tile's word (core/layout.h), and back.
uint32_t q5_high_to_tile(uint32_t h) {
  uint32_t o = 0;
  for (int p = 0; p < 2; ++p)
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 4; ++k) o |= ((h >> (16 * p + 4 * c + k)) & 1u) << (8 * k + 2 * c + p);
  return o;
}
uint32_t q5_high_from_tile(uint32_t o) {
  uint32_t h = 0;
  for (int p = 0; p < 2; ++p)
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 4; ++k) h |= ((o >> (8 * k + 2 * c + p)) & 1u) << (16 * p + 4 * c + k);
  return h;
}

// One RowMajor block (scale, quants) into row i of a Rows16 tile, and back.
void put_block(DType t, const uint8_t* blk, uint8_t* tile, int i) {
  std::memcpy(tile + 2 * i, blk, 2);
  if (t == DType::Q5_0) {
    uint32_t h;
    std::memcpy(&h, blk + 2, 4);
    h = q5_high_to_tile(h);
    std::memcpy(tile + 2 * kRows16 + 4 * i, &h, 4);
  }
  for (int c = 0; c < chunks(t); ++c) {
    for (int k = 0; k < 4; ++k) {
      tile[tile_quants(t) + 64 * c + 4 * i + k] = static_cast<uint8_t>(blk[src_quants(t) + 4 * c + k] ^ flip_of(t));
    }
  }
}
void get_block(DType t, const uint8_t* tile, int i, uint8_t* blk) {
  std::memcpy(blk, tile + 2 * i, 2);
  if (t == DType::Q5_0) {
    uint32_t h;
    std::memcpy(&h, tile + 2 * kRows16 + 4 * i, 4);
    h = q5_high_from_tile(h);
    std::memcpy(blk + 2, &h, 4);
  }
  for (int c = 0; c < chunks(t); ++c) {
    for (int k = 0; k < 4; ++k) {
      blk[src_quants(t) + 4 * c + k] = static_cast<uint8_t>(tile[tile_quants(t) + 64 * c + 4 * i + k] ^ flip_of(t));
    }
  }
}

// ---- Super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): per 256 columns one tile of 16 x the
// block's bytes. Each field of the GGUF block (source offset `off`, `n`
// bytes) takes 16 x n bytes at `base` in the tile, arranged by `how`
// (core/layout.h): the 16 rows' copies one after another, or transposed
// (byte k of row i at 16k + i), or as 4-byte words (word c of row i at
// 64c + 4i of its 64-byte chunk c, the chunk placed by chunk_at).
enum class How : uint8_t { Copy, Transpose, Words };
struct Field {
  int off, n;
  How how;
  int base;
};
struct SuperShape {
  int nfields;
  Field f[5];
};
bool super_shape(DType t, SuperShape* s) {
  switch (t) {
    case DType::Q4_K:
      *s = {4, {{0, 2, How::Copy, 0}, {2, 2, How::Copy, 32}, {4, 12, How::Transpose, 64}, {16, 128, How::Words, 256}}};
      return true;
    case DType::Q5_K:
      *s = {5,
            {{0, 2, How::Copy, 0},
             {2, 2, How::Copy, 32},
             {4, 12, How::Transpose, 64},
             {16, 32, How::Words, 256},
             {48, 128, How::Words, 256}}};
      return true;
    case DType::Q6_K:
      *s = {4,
            {{208, 2, How::Copy, 0}, {192, 16, How::Transpose, 32}, {0, 128, How::Words, 288}, {128, 64, How::Words, 288}}};
      return true;
    case DType::IQ4_XS:
      *s = {4,
            {{0, 2, How::Copy, 0}, {2, 2, How::Transpose, 32}, {4, 4, How::Transpose, 64}, {8, 128, How::Words, 128}}};
      return true;
    case DType::Q2_K:
      *s = {4, {{80, 2, How::Copy, 0}, {82, 2, How::Copy, 32}, {0, 16, How::Transpose, 64}, {16, 64, How::Words, 320}}};
      return true;
    case DType::Q3_K:
      *s = {4,
            {{108, 2, How::Copy, 0}, {96, 12, How::Transpose, 32}, {32, 64, How::Words, 224}, {0, 32, How::Words, 224}}};
      return true;
    default: return false;
  }
}
bool is_super(DType t) {
  SuperShape s{};
  return super_shape(t, &s);
}

// Where chunk w of a Words field starts in the tile. The chunks are placed in
// the order the kernels read them, so each tile is one ascending stream:
//   Q5_K: nibble chunk j, then qh chunk j (j = 0..7: pair 0 reads both),
//         then nibble chunks 8..31
//   Q3_K: q chunk j, then hmask chunk j (j = 0..7: pair 0 reads both), then
//         q chunks 8..15
//   Q6_K: 16 units of 192 bytes (ql chunks 16h + j and 16h + 8 + j, qh
//         chunk 8h + j: all that chunk j of pairs 2h and 2h + 1 read)
//   the others: the field's chunks one after another
int64_t chunk_at(DType t, const Field& f, int w) {
  if (t == DType::Q5_K) {
    if (f.off == 16) return f.base + 128 * w + 64;  // qh
    return w < 8 ? f.base + 128 * w : f.base + 1024 + 64 * (w - 8);
  }
  if (t == DType::Q3_K) {
    if (f.off == 0) return f.base + 128 * w + 64;  // hmask chunk j, beside q chunk j
    return w < 8 ? f.base + 128 * w : f.base + 1024 + 64 * (w - 8);
  }
  if (t == DType::Q6_K) {
    if (f.off == 128) return f.base + 192 * w + 128;  // qh chunk 8h + j = unit 8h + j
    const int h = w / 16, r = w % 16;                  // ql
    return f.base + 192 * (8 * h + r % 8) + 64 * (r / 8);
  }
  return f.base + 64 * w;
}

// Byte `k` of row i's field f, in the tile: its offset.
int64_t field_byte(DType t, const Field& f, int i, int k) {
  switch (f.how) {
    case How::Copy: return f.base + static_cast<int64_t>(f.n) * i + k;
    case How::Transpose: return f.base + 16 * k + i;
    case How::Words: return chunk_at(t, f, k / 4) + 4 * i + k % 4;
  }
  return 0;
}

void put_super(DType t, const uint8_t* blk, uint8_t* tile, int i) {
  SuperShape s{};
  super_shape(t, &s);
  for (int fi = 0; fi < s.nfields; ++fi) {
    const Field& f = s.f[fi];
    for (int k = 0; k < f.n; ++k) tile[field_byte(t, f, i, k)] = blk[f.off + k];
  }
}
void get_super(DType t, const uint8_t* tile, int i, uint8_t* blk) {
  SuperShape s{};
  super_shape(t, &s);
  for (int fi = 0; fi < s.nfields; ++fi) {
    const Field& f = s.f[fi];
    for (int k = 0; k < f.n; ++k) blk[f.off + k] = tile[field_byte(t, f, i, k)];
  }
}

// The storage block of t (elements, bytes) and its row's block count.
int64_t elems_of(DType t) { return is_super(t) ? dtype_block_elements(t) : kQuantBlock; }
int64_t bytes_of(DType t) { return is_super(t) ? dtype_block_bytes(t) : block_bytes(t); }

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
int64_t float_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

}  // namespace

namespace {

// Row r of a float Rows16 tensor to or from row-major bytes `row` (cols
// values): to_rows16 writes the tensor, else reads it.
template <typename E>
void float_row(E* tensor, int64_t cols, int64_t r, E* row, bool bf16_pairs, bool to_rows16) {
  E* group = tensor + r / kRows16 * kRows16 * cols;
  const int64_t i = r % kRows16;
  for (int64_t k = 0; k < cols; ++k) {
    E* at = bf16_pairs ? group + k / 2 * 2 * kRows16 + 2 * i + k % 2 : group + k * kRows16 + i;
    if (to_rows16) {
      *at = row[k];
    } else {
      row[k] = *at;
    }
  }
}

void float_row_bytes(DType t, uint8_t* tensor, int64_t cols, int64_t r, uint8_t* row, bool to_rows16) {
  if (t == DType::F32) {
    float_row(reinterpret_cast<uint32_t*>(tensor), cols, r, reinterpret_cast<uint32_t*>(row), false, to_rows16);
  } else {
    float_row(reinterpret_cast<uint16_t*>(tensor), cols, r, reinterpret_cast<uint16_t*>(row), t == DType::BF16,
              to_rows16);
  }
}

}  // namespace

int64_t float_rows16_offset(DType t, int64_t cols, int64_t r, int64_t k) {
  const int64_t group = r / kRows16 * kRows16 * cols;  // elements before the group
  const int64_t i = r % kRows16;
  const int64_t e = t == DType::BF16 ? group + k / 2 * 2 * kRows16 + 2 * i + k % 2 : group + k * kRows16 + i;
  return e * float_bytes(t);
}

void layout_block(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, int64_t j, uint8_t* out) {
  if (is_float(t)) {
    const int64_t e = float_bytes(t);
    std::memcpy(out, data + (l == Layout::RowMajor ? (r * cols + j) * e : float_rows16_offset(t, cols, r, j)), e);
    return;
  }
  const int64_t nb = cols / elems_of(t);
  const int64_t block = bytes_of(t);
  if (l == Layout::RowMajor) {
    std::memcpy(out, data + (r * nb + j) * block, block);
    return;
  }
  const uint8_t* group = data + r / kRows16 * kRows16 * nb * block;
  if (is_super(t)) {
    get_super(t, group + j * block * kRows16, static_cast<int>(r % kRows16), out);
    return;
  }
  get_block(t, tile_of(group, t, j), static_cast<int>(r % kRows16), out);
}

const char* layout_name(Layout l) {
  const int i = static_cast<int>(l);
  return i >= 0 && i < kLayoutCount ? kNames[i] : "unknown";
}

bool layout_from_name(const char* name, Layout* out) {
  for (int i = 0; i < kLayoutCount; ++i) {
    if (std::strcmp(name, kNames[i]) == 0) {
      *out = static_cast<Layout>(i);
      return true;
    }
  }
  return false;
}

bool layout_fits(Layout l, DType t, int64_t rows, int64_t cols) {
  if (l == Layout::RowMajor) return true;
  if (is_float(t)) return rows > 0 && rows % kRows16 == 0 && cols > 0 && (t != DType::BF16 || cols % 2 == 0);
  return (t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q5_0 || is_super(t)) && rows > 0 &&
         rows % kRows16 == 0 && cols > 0 && cols % elems_of(t) == 0;
}

void pack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  if (is_float(t)) {
    for (int64_t r = 0; r < rows; ++r)
      float_row_bytes(t, dst, cols, r, const_cast<uint8_t*>(src) + r * cols * float_bytes(t), true);
    return;
  }
  const int64_t nb = cols / elems_of(t);
  const int64_t block = bytes_of(t);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* group = dst + r / kRows16 * kRows16 * nb * block;
    for (int64_t b = 0; b < nb; ++b) {
      if (is_super(t)) {
        put_super(t, src + (r * nb + b) * block, group + b * block * kRows16, static_cast<int>(r % kRows16));
        continue;
      }
      put_block(t, src + (r * nb + b) * block, tile_of(group, t, b), static_cast<int>(r % kRows16));
    }
  }
}

void unpack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  if (is_float(t)) {
    for (int64_t r = 0; r < rows; ++r)
      float_row_bytes(t, const_cast<uint8_t*>(src), cols, r, dst + r * cols * float_bytes(t), false);
    return;
  }
  const int64_t nb = cols / elems_of(t);
  const int64_t block = bytes_of(t);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) layout_block(Layout::Rows16, t, src, cols, r, b, dst + (r * nb + b) * block);
  }
}

const uint8_t* layout_row(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, uint8_t* scratch) {
  if (is_float(t) && l == Layout::Rows16) {
    float_row_bytes(t, const_cast<uint8_t*>(data), cols, r, scratch, false);
    return scratch;
  }
  const int64_t nb = cols / elems_of(t);
  const int64_t block = bytes_of(t);
  if (l == Layout::RowMajor) {
    uint64_t row_bytes = 0;
    dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes);
    return data + static_cast<uint64_t>(r) * row_bytes;
  }
  for (int64_t b = 0; b < nb; ++b) layout_block(l, t, data, cols, r, b, scratch + b * block);
  return scratch;
}

}  // namespace ember

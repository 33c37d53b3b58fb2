#include "format/layout.h"

#include <cstring>

namespace ember {
namespace {

constexpr const char* kNames[kLayoutCount] = {"row-major", "rows16"};

// Bytes of one block's quants in a Rows16 tile, per row.
int quant_bytes(DType t) { return t == DType::Q8_0 ? 32 : 16; }

// Copies row i (0..15) of group `group` (Rows16) into RowMajor blocks, or
// the reverse (to_rows16), block by block.
void move_row(DType t, uint8_t* group, uint8_t* row, int64_t nb, int i, bool to_rows16) {
  const int qb = quant_bytes(t);
  const int block = qb + 2;
  const uint8_t flip = t == DType::Q8_0 ? 0x80 : 0x00;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* scale = group + b * block * kRows16 + 2 * i;
    uint8_t* tile = group + b * block * kRows16 + 2 * kRows16;
    uint8_t* blk = row + b * block;
    if (to_rows16) {
      std::memcpy(scale, blk, 2);
    } else {
      std::memcpy(blk, scale, 2);
    }
    for (int c = 0; c < qb / 4; ++c) {
      for (int k = 0; k < 4; ++k) {
        uint8_t* packed = tile + 64 * c + 4 * i + k;
        uint8_t* plain = blk + 2 + 4 * c + k;
        if (to_rows16) {
          *packed = static_cast<uint8_t>(*plain ^ flip);
        } else {
          *plain = static_cast<uint8_t>(*packed ^ flip);
        }
      }
    }
  }
}

}  // namespace

void layout_block(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, int64_t j, uint8_t* out) {
  const int64_t nb = cols / kQuantBlock;
  const int block = quant_bytes(t) + 2;
  if (l == Layout::RowMajor) {
    std::memcpy(out, data + (r * nb + j) * block, block);
    return;
  }
  const uint8_t* group = data + r / kRows16 * kRows16 * nb * block;
  const int i = static_cast<int>(r % kRows16);
  const uint8_t flip = t == DType::Q8_0 ? 0x80 : 0x00;
  std::memcpy(out, group + j * block * kRows16 + 2 * i, 2);
  const uint8_t* tile = group + j * block * kRows16 + 2 * kRows16;
  for (int c = 0; c < quant_bytes(t) / 4; ++c) {
    for (int k = 0; k < 4; ++k) out[2 + 4 * c + k] = static_cast<uint8_t>(tile[64 * c + 4 * i + k] ^ flip);
  }
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
  return (t == DType::Q8_0 || t == DType::Q4_0) && rows > 0 && rows % kRows16 == 0 && cols > 0 &&
         cols % kQuantBlock == 0;
}

void pack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  const int64_t nb = cols / kQuantBlock;
  const int64_t row_bytes = nb * (quant_bytes(t) + 2);
  for (int64_t g = 0; g < rows / kRows16; ++g) {
    uint8_t* group = dst + g * kRows16 * row_bytes;
    for (int i = 0; i < kRows16; ++i) {
      move_row(t, group, const_cast<uint8_t*>(src + (g * kRows16 + i) * row_bytes), nb, i, true);
    }
  }
}

void unpack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  const int64_t nb = cols / kQuantBlock;
  const int64_t row_bytes = nb * (quant_bytes(t) + 2);
  for (int64_t g = 0; g < rows / kRows16; ++g) {
    uint8_t* group = const_cast<uint8_t*>(src + g * kRows16 * row_bytes);
    for (int i = 0; i < kRows16; ++i) move_row(t, group, dst + (g * kRows16 + i) * row_bytes, nb, i, false);
  }
}

const uint8_t* layout_row(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, uint8_t* scratch) {
  uint64_t row_bytes = 0;
  dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes);
  if (l == Layout::RowMajor) return data + static_cast<uint64_t>(r) * row_bytes;
  uint8_t* group = const_cast<uint8_t*>(data + static_cast<uint64_t>(r / kRows16) * kRows16 * row_bytes);
  move_row(t, group, scratch, cols / kQuantBlock, static_cast<int>(r % kRows16), false);
  return scratch;
}

}  // namespace ember

#include "core/layout.h"

#include <cstring>

namespace ember {
namespace {

constexpr const char* kNames[kLayoutCount] = {"row-major", "rows16"};

// Bytes of one block's quants, per row.
int quant_bytes(DType t) { return t == DType::Q8_0 ? 32 : 16; }

// Where row i's block b lives in a Rows16 group: its scale at tile + 2i,
// its quant bytes 4c..4c+3 at tile + 32 + 64c + 4i (core/layout.h).
uint8_t* tile_of(uint8_t* group, DType t, int64_t b) { return group + b * (quant_bytes(t) + 2) * kRows16; }
const uint8_t* tile_of(const uint8_t* group, DType t, int64_t b) {
  return group + b * (quant_bytes(t) + 2) * kRows16;
}
uint8_t flip_of(DType t) { return t == DType::Q8_0 ? 0x80 : 0x00; }

// One RowMajor block (scale, quants) into row i of a Rows16 tile, and back.
void put_block(DType t, const uint8_t* blk, uint8_t* tile, int i) {
  std::memcpy(tile + 2 * i, blk, 2);
  for (int c = 0; c < quant_bytes(t) / 4; ++c) {
    for (int k = 0; k < 4; ++k) {
      tile[2 * kRows16 + 64 * c + 4 * i + k] = static_cast<uint8_t>(blk[2 + 4 * c + k] ^ flip_of(t));
    }
  }
}
void get_block(DType t, const uint8_t* tile, int i, uint8_t* blk) {
  std::memcpy(blk, tile + 2 * i, 2);
  for (int c = 0; c < quant_bytes(t) / 4; ++c) {
    for (int k = 0; k < 4; ++k) {
      blk[2 + 4 * c + k] = static_cast<uint8_t>(tile[2 * kRows16 + 64 * c + 4 * i + k] ^ flip_of(t));
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
  return (t == DType::Q8_0 || t == DType::Q4_0) && rows > 0 && rows % kRows16 == 0 && cols > 0 &&
         cols % kQuantBlock == 0;
}

void pack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  const int64_t nb = cols / kQuantBlock;
  const int block = quant_bytes(t) + 2;
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* group = dst + r / kRows16 * kRows16 * nb * block;
    for (int64_t b = 0; b < nb; ++b) {
      put_block(t, src + (r * nb + b) * block, tile_of(group, t, b), static_cast<int>(r % kRows16));
    }
  }
}

void unpack_rows16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  const int64_t nb = cols / kQuantBlock;
  const int block = quant_bytes(t) + 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) layout_block(Layout::Rows16, t, src, cols, r, b, dst + (r * nb + b) * block);
  }
}

const uint8_t* layout_row(Layout l, DType t, const uint8_t* data, int64_t cols, int64_t r, uint8_t* scratch) {
  const int64_t nb = cols / kQuantBlock;
  const int block = quant_bytes(t) + 2;
  if (l == Layout::RowMajor) {
    uint64_t row_bytes = 0;
    dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes);
    return data + static_cast<uint64_t>(r) * row_bytes;
  }
  for (int64_t b = 0; b < nb; ++b) layout_block(l, t, data, cols, r, b, scratch + b * block);
  return scratch;
}

}  // namespace ember

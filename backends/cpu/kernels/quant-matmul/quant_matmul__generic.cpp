// Quantized weights x 8-bit activations, portable C++: the reference every
// vector path is tested against. One template per layout, instantiated per
// weight type by a traits struct (how a block's quants meet the activation
// bytes, where its scale lives, which correction the activation's bias
// makes); exact int32 sums per 32-element block, then one float
// multiply-add per block. Bound by memory on decode.
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"

namespace ember {
namespace {

// Weight-type traits, one struct per type and layout. Block b of a row
// covers elements [32b, 32b + 32) (one activation block); a type with
// larger super-blocks maps b to its part of one in scale() and dot().
//   row_bytes(cols)      bytes of one row-major row
//   scale(row, b)        block b's scale as a float
//   dot(row, b, q, bias) exact int32 sum of w * q over the block, q its 32
//                        activation bytes, bias the activation's -8 * sum(q)
// Rows16 (format/layout.h): 16 rows per tile, one tile per block.
//   kTileBytes              bytes of one tile
//   kScaleOffset            where its 16 f16 row scales are
//   kQuantOffset            where its quants are
//   tile_dot(quants, i, q, bias)  row i's exact int32 sum
struct Q8_0 {
  static constexpr int64_t kBlockBytes = sizeof(KBlockQ8_0);
  static int64_t row_bytes(int64_t cols) { return cols / 32 * kBlockBytes; }
  static float scale(const uint8_t* row, int64_t b) {
    return f16_to_f32(reinterpret_cast<const KBlockQ8_0*>(row)[b].d);
  }
  static int32_t dot(const uint8_t* row, int64_t b, const int8_t* q, int32_t /*bias*/) {
    const KBlockQ8_0& w = reinterpret_cast<const KBlockQ8_0*>(row)[b];
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += static_cast<int32_t>(w.q[j]) * q[j];
    return s;
  }
};

// Rows16 stores q + 128 (u8): sum(u8 * x) - 128 * sum(x), and -128 * sum(x)
// is 16 * the activation's bias.
struct Q8_0Rows16 {
  static constexpr int64_t kTileBytes = 16 * Q8_0::kBlockBytes, kScaleOffset = 0, kQuantOffset = 32;
  static int32_t tile_dot(const uint8_t* quants, int i, const int8_t* q, int32_t bias) {
    int32_t s = 16 * bias;
    for (int c = 0; c < 8; ++c) {
      for (int k = 0; k < 4; ++k) s += static_cast<int32_t>(quants[64 * c + 4 * i + k]) * q[4 * c + k];
    }
    return s;
  }
};

// Unsigned nibbles (0..15) times q plus the activation's bias (-8 * sum q)
// is the exact block sum.
struct Q4_0 {
  static constexpr int64_t kBlockBytes = sizeof(KBlockQ4_0);
  static int64_t row_bytes(int64_t cols) { return cols / 32 * kBlockBytes; }
  static float scale(const uint8_t* row, int64_t b) {
    return f16_to_f32(reinterpret_cast<const KBlockQ4_0*>(row)[b].d);
  }
  static int32_t dot(const uint8_t* row, int64_t b, const int8_t* q, int32_t bias) {
    const KBlockQ4_0& w = reinterpret_cast<const KBlockQ4_0*>(row)[b];
    int32_t s = bias;
    for (int j = 0; j < 16; ++j) {
      s += static_cast<int32_t>(w.q[j] & 0x0f) * q[j];
      s += static_cast<int32_t>(w.q[j] >> 4) * q[j + 16];
    }
    return s;
  }
};

// Chunk c of a tile holds each row's nibble bytes 4c..4c+3: low nibbles
// are elements 4c+k, high nibbles 16+4c+k.
struct Q4_0Rows16 {
  static constexpr int64_t kTileBytes = 16 * Q4_0::kBlockBytes, kScaleOffset = 0, kQuantOffset = 32;
  static int32_t tile_dot(const uint8_t* quants, int i, const int8_t* q, int32_t bias) {
    int32_t s = bias;
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t v = quants[64 * c + 4 * i + k];
        s += static_cast<int32_t>(v & 0x0f) * q[4 * c + k] + static_cast<int32_t>(v >> 4) * q[16 + 4 * c + k];
      }
    }
    return s;
  }
};

// Q5_0 (w = d * (q - 16), q 5-bit): the nibbles as Q4_0Rows16's, each
// part's high bit from row i's word of high bits (bit 8k + 2c + p), and the
// -16 * sum(q) twice the activation's bias.
struct Q5_0Rows16 {
  static constexpr int64_t kTileBytes = 16 * static_cast<int64_t>(sizeof(KBlockQ5_0)), kScaleOffset = 0,
                           kQuantOffset = 96;
  static int32_t tile_dot(const uint8_t* quants, int i, const int8_t* q, int32_t bias) {
    uint32_t h;
    std::memcpy(&h, quants - 64 + 4 * i, 4);
    int32_t s = 2 * bias;
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t v = quants[64 * c + 4 * i + k];
        const int32_t lo = (v & 0x0f) | static_cast<int32_t>(((h >> (8 * k + 2 * c)) & 1u) << 4);
        const int32_t hi = (v >> 4) | static_cast<int32_t>(((h >> (8 * k + 2 * c + 1)) & 1u) << 4);
        s += lo * q[4 * c + k] + hi * q[16 + 4 * c + k];
      }
    }
    return s;
  }
};

template <class W>
float row_dot(const uint8_t* row, const QuantActs& x, int32_t t) {
  const int64_t nb = x.cols / 32;
  const int8_t* q = x.q + t * x.cols;
  const float* d = x.d + t * nb;
  const int32_t* bias = x.bias + t * nb;
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t s = W::dot(row, b, q + b * 32, bias[b]);
    acc += static_cast<float>(s) * (W::scale(row, b) * d[b]);
  }
  return acc;
}

template <class W>
void gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
          int64_t out_stride) {
  const int64_t row_bytes = W::row_bytes(cols);
  for (int64_t r = r0; r < r1; ++r) {
    for (int32_t t = 0; t < n; ++t) out[t * out_stride + r] = row_dot<W>(w + r * row_bytes, x, t);
  }
}

template <class W>
void rows16_gemv(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
                 int64_t out_stride) {
  const int64_t nb = cols / 32;
  const int64_t group_bytes = nb * W::kTileBytes;
  for (int64_t r = r0; r < r1; r += 16) {
    const uint8_t* group = w + r / 16 * group_bytes;
    for (int32_t t = 0; t < n; ++t) {
      const int8_t* q = x.q + t * cols;
      float acc[16] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const float dx = x.d[t * nb + b];
        const uint8_t* tile = group + b * W::kTileBytes;
        for (int i = 0; i < 16; ++i) {
          const int32_t s = W::tile_dot(tile + W::kQuantOffset, i, q + b * 32, x.bias[t * nb + b]);
          uint16_t h;
          std::memcpy(&h, tile + W::kScaleOffset + 2 * i, 2);
          acc[i] += static_cast<float>(s) * (f16_to_f32(h) * dx);
        }
      }
      for (int i = 0; i < 16; ++i) out[t * out_stride + r + i] = acc[i];
    }
  }
}

}  // namespace

// gemm is gemv here: the reference has no token tiling.
EMBER_DEFINE_QMATMUL(q8_0_gemv, generic, gemv<Q8_0>)
EMBER_DEFINE_QMATMUL(q8_0_gemm, generic, gemv<Q8_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemv, generic, gemv<Q4_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemm, generic, gemv<Q4_0>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemv, generic, rows16_gemv<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemm, generic, rows16_gemv<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemv, generic, rows16_gemv<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemm, generic, rows16_gemv<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemv, generic, rows16_gemv<Q5_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemm, generic, rows16_gemv<Q5_0Rows16>)

}  // namespace ember

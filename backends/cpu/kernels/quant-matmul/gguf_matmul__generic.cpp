// The GGUF block types (Q4_1 .. IQ4_XS) x 8-bit activations, portable C++:
// the reference every vector path is tested against, and the kernel of any
// path without its own for a type. One template; a traits struct per type
// decodes 32 elements (one activation block) into small integers with a
// scale and a min per 16:
//   w[e] = s[e / 16] * q[e] + m[e / 16]
// so a block's contribution is d_act * (s0 * sum(q * a) + m0 * sum(a) + the
// same for the second 16), the integer sums exact. Super-block types (256
// elements) give block b's part of super-block b / 8.
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "core/dtype.h"
#include "core/layout.h"

namespace ember {
namespace {

struct Decoded {
  int32_t q[32];
  float s[2];
  float m[2];
};

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Nibble j of a 32-element block stored as Q4_0's: low nibbles 0..15, high 16..31.
int nibble(const uint8_t* q, int j) { return j < 16 ? q[j] & 0x0f : q[j - 16] >> 4; }

void set_scale(Decoded* o, float s, float m) {
  o->s[0] = o->s[1] = s;
  o->m[0] = o->m[1] = m;
}

template <class B>
const B& block(const uint8_t* row, int64_t i) {
  return reinterpret_cast<const B*>(row)[i];
}

struct Q4_1 {
  static constexpr int kBlocksPer = 1;
  using Block = KBlockQ4_1;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b);
    for (int j = 0; j < 32; ++j) o->q[j] = nibble(w.q, j);
    set_scale(o, f16_to_f32(w.d), f16_to_f32(w.m));
  }
};

struct Q5_0 {
  static constexpr int kBlocksPer = 1;
  using Block = KBlockQ5_0;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b);
    const uint32_t qh = load_u32(w.qh);
    for (int j = 0; j < 32; ++j) o->q[j] = (nibble(w.q, j) | (((qh >> j) & 1) << 4)) - 16;
    set_scale(o, f16_to_f32(w.d), 0.0f);
  }
};

struct Q5_1 {
  static constexpr int kBlocksPer = 1;
  using Block = KBlockQ5_1;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b);
    const uint32_t qh = load_u32(w.qh);
    for (int j = 0; j < 32; ++j) o->q[j] = nibble(w.q, j) | (((qh >> j) & 1) << 4);
    set_scale(o, f16_to_f32(w.d), f16_to_f32(w.m));
  }
};

struct IQ4_NL {
  static constexpr int kBlocksPer = 1;
  using Block = KBlockIQ4_NL;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b);
    for (int j = 0; j < 32; ++j) o->q[j] = kKIq4Levels[nibble(w.q, j)];
    set_scale(o, f16_to_f32(w.d), 0.0f);
  }
};

// Super-block types: block b is elements [32 (b % 8), + 32) of super-block b / 8.
struct Q2_K {
  static constexpr int kBlocksPer = 8;
  using Block = KBlockQ2_K;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b / 8);
    const int p = static_cast<int>(b % 8);
    const float d = f16_to_f32(w.d), dmin = f16_to_f32(w.dmin);
    for (int j = 0; j < 32; ++j) {
      const int e = 32 * p + j;
      o->q[j] = (w.q[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    }
    for (int h = 0; h < 2; ++h) {
      const int sc = w.scales[2 * p + h];
      o->s[h] = d * static_cast<float>(sc & 0x0f);
      o->m[h] = -(dmin * static_cast<float>(sc >> 4));
    }
  }
};

struct Q3_K {
  static constexpr int kBlocksPer = 8;
  using Block = KBlockQ3_K;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b / 8);
    const int p = static_cast<int>(b % 8);
    const float d = f16_to_f32(w.d);
    for (int j = 0; j < 32; ++j) {
      const int e = 32 * p + j;
      const int low = (w.q[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const int high = (w.hmask[e % 32] >> (e / 32)) & 1;
      o->q[j] = (low | (high << 2)) - 4;
    }
    for (int h = 0; h < 2; ++h) {
      o->s[h] = d * static_cast<float>(q3_scale(w.scales, 2 * p + h) - 32);
      o->m[h] = 0.0f;
    }
  }
};

struct Q4_K {
  static constexpr int kBlocksPer = 8;
  using Block = KBlockQ4_K;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b / 8);
    const int s = static_cast<int>(b % 8);
    int sc, mn;
    k4_scale_min(w.scales, s, &sc, &mn);
    const uint8_t* q = w.q + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; ++l) o->q[l] = (q[l] >> shift) & 0x0f;
    set_scale(o, f16_to_f32(w.d) * static_cast<float>(sc), -(f16_to_f32(w.dmin) * static_cast<float>(mn)));
  }
};

struct Q5_K {
  static constexpr int kBlocksPer = 8;
  using Block = KBlockQ5_K;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b / 8);
    const int s = static_cast<int>(b % 8);
    int sc, mn;
    k4_scale_min(w.scales, s, &sc, &mn);
    const uint8_t* q = w.q + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; ++l) o->q[l] = ((q[l] >> shift) & 0x0f) | (((w.qh[l] >> s) & 1) << 4);
    set_scale(o, f16_to_f32(w.d) * static_cast<float>(sc), -(f16_to_f32(w.dmin) * static_cast<float>(mn)));
  }
};

struct Q6_K {
  static constexpr int kBlocksPer = 8;
  using Block = KBlockQ6_K;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b / 8);
    const int p = static_cast<int>(b % 8);
    const float d = f16_to_f32(w.d);
    for (int j = 0; j < 32; ++j) {
      const int e = 32 * p + j;
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int low = (w.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
      const int high = (w.qh[32 * h + l] >> (2 * k)) & 3;
      o->q[j] = (low | (high << 4)) - 32;
    }
    for (int h = 0; h < 2; ++h) {
      o->s[h] = d * static_cast<float>(w.scales[2 * p + h]);
      o->m[h] = 0.0f;
    }
  }
};

struct IQ4_XS {
  static constexpr int kBlocksPer = 8;
  using Block = KBlockIQ4_XS;
  static void decode(const uint8_t* row, int64_t b, Decoded* o) {
    const Block& w = block<Block>(row, b / 8);
    const int s = static_cast<int>(b % 8);
    const int ls = ((w.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f) | (((w.scales_h >> (2 * s)) & 3) << 4);
    for (int j = 0; j < 32; ++j) o->q[j] = kKIq4Levels[nibble(w.q + 16 * s, j)];
    set_scale(o, f16_to_f32(w.d) * static_cast<float>(ls - 32), 0.0f);
  }
};

// One output: every block decoded, its two halves' exact integer sums, then
// one float expression per block in a fixed order.
template <class W>
float row_dot(const uint8_t* row, const QuantActs& x, int32_t t) {
  const int64_t nb = x.cols / 32;
  const int8_t* a = x.q + t * x.cols;
  const float* ad = x.d + t * nb;
  float acc = 0.0f;
  Decoded dec;
  for (int64_t b = 0; b < nb; ++b) {
    W::decode(row, b, &dec);
    float block = 0.0f;
    for (int h = 0; h < 2; ++h) {
      int32_t dot = 0, sum = 0;
      for (int j = 16 * h; j < 16 * h + 16; ++j) {
        dot += dec.q[j] * a[32 * b + j];
        sum += a[32 * b + j];
      }
      block += dec.s[h] * static_cast<float>(dot) + dec.m[h] * static_cast<float>(sum);
    }
    acc += ad[b] * block;
  }
  return acc;
}

template <class W>
void matmul(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n, float* out,
            int64_t out_stride) {
  const int64_t row_bytes = cols / (32 * W::kBlocksPer) * static_cast<int64_t>(sizeof(typename W::Block));
  for (int32_t t = 0; t < n; ++t) {
    for (int64_t r = r0; r < r1; ++r) out[t * out_stride + r] = row_dot<W>(w + r * row_bytes, x, t);
  }
}

// Rows16 (core/layout.h): each row gathered back to GGUF's blocks, then the
// row-major reference, so a path without its own rows16 kernel computes
// exactly what generic's row-major one does.
template <class W, DType kType>
void rows16_matmul(const uint8_t* w, int64_t cols, int64_t r0, int64_t r1, const QuantActs& x, int32_t n,
                   float* out, int64_t out_stride) {
  const int64_t row_bytes = cols / (32 * W::kBlocksPer) * static_cast<int64_t>(sizeof(typename W::Block));
  std::vector<uint8_t> scratch(static_cast<size_t>(row_bytes));
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = layout_row(Layout::Rows16, kType, w, cols, r, scratch.data());
    for (int32_t t = 0; t < n; ++t) out[t * out_stride + r] = row_dot<W>(row, x, t);
  }
}

}  // namespace

EMBER_DEFINE_QMATMUL(q2_k_rows16_gemv, generic, (rows16_matmul<Q2_K, DType::Q2_K>))
EMBER_DEFINE_QMATMUL(q2_k_rows16_gemm, generic, (rows16_matmul<Q2_K, DType::Q2_K>))
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemv, generic, (rows16_matmul<Q3_K, DType::Q3_K>))
EMBER_DEFINE_QMATMUL(q3_k_rows16_gemm, generic, (rows16_matmul<Q3_K, DType::Q3_K>))
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemv, generic, (rows16_matmul<Q4_K, DType::Q4_K>))
EMBER_DEFINE_QMATMUL(q4_k_rows16_gemm, generic, (rows16_matmul<Q4_K, DType::Q4_K>))
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemv, generic, (rows16_matmul<Q5_K, DType::Q5_K>))
EMBER_DEFINE_QMATMUL(q5_k_rows16_gemm, generic, (rows16_matmul<Q5_K, DType::Q5_K>))
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemv, generic, (rows16_matmul<Q6_K, DType::Q6_K>))
EMBER_DEFINE_QMATMUL(q6_k_rows16_gemm, generic, (rows16_matmul<Q6_K, DType::Q6_K>))
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemv, generic, (rows16_matmul<IQ4_XS, DType::IQ4_XS>))
EMBER_DEFINE_QMATMUL(iq4_xs_rows16_gemm, generic, (rows16_matmul<IQ4_XS, DType::IQ4_XS>))

#define EMBER_GGUF_GENERIC(t, W)                 \
  EMBER_DEFINE_QMATMUL(t##_gemv, generic, matmul<W>) \
  EMBER_DEFINE_QMATMUL(t##_gemm, generic, matmul<W>)
EMBER_GGUF_GENERIC(q4_1, Q4_1)
EMBER_GGUF_GENERIC(q5_0, Q5_0)
EMBER_GGUF_GENERIC(q5_1, Q5_1)
EMBER_GGUF_GENERIC(q2_k, Q2_K)
EMBER_GGUF_GENERIC(q3_k, Q3_K)
EMBER_GGUF_GENERIC(q4_k, Q4_K)
EMBER_GGUF_GENERIC(q5_k, Q5_K)
EMBER_GGUF_GENERIC(q6_k, Q6_K)
EMBER_GGUF_GENERIC(iq4_nl, IQ4_NL)
EMBER_GGUF_GENERIC(iq4_xs, IQ4_XS)

}  // namespace ember

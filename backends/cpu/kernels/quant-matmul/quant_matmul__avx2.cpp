// Quantized weights x 8-bit activations with AVX2: the tiling of
// quant_matmul_avx2.inc instantiated per weight type. Products by
// vpmaddubsw (unsigned x signed bytes) then vpmaddwd. Decode is bound by
// memory bandwidth, prefill by the int8 and per-block float work.
#if defined(__x86_64__)
#include "backends/cpu/kernels/quant-matmul/quant_matmul_avx2.inc"

namespace ember {
namespace {

// Weight-type traits, one struct per type and layout: what the templates
// ask of a type.
//   row-major: row_bytes(cols); Quants load(row, b) (block b's quants);
//              float scale(row, b); __m256i dot(quants, a, seed): the 8 lane
//              sums with the token's activation bytes a, seed holding
//              kBiasMul x the activation's bias in lane 0 to add or ignore;
//              kHasMin and float min(row, b) (w = scale * q + min)
//   rows16:    kTileBytes, kScaleOffset (16 f16), kQuantOffset; kParts and
//              unpack(32 bytes, chunk, Part[kParts]): a half chunk's 4 bytes
//              per row as kParts parts (1: 8-bit quants; 2: low, high nibbles);
//              __m256i mul(part, word): its vpmaddubsw products; kMaxQuant,
//              the largest |quant| a product meets; kBiasMul
// kBiasMul: the int32 sums get kBiasMul times the activation's bias
// (-8 * sum(q)), 0 for none.

// Q8_0: |w| (unsigned) times the activation carrying w's sign, exact with
// no correction (128 * 127 * 2 < 2^15: vpmaddubsw does not saturate).
struct Q8_0 {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0)); }
  static const KBlockQ8_0& block(const uint8_t* row, int64_t b) { return reinterpret_cast<const KBlockQ8_0*>(row)[b]; }
  struct Quants {
    __m256i abs, w;
  };
  static Quants load(const uint8_t* row, int64_t b) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block(row, b).q));
    return {_mm256_abs_epi8(w), w};
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i /*seed*/) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(a, w.w)), _mm256_set1_epi16(1));
  }
};

// Rows16 stores q + 128: flipped back to signed (xor 0x80), then as above.
struct Q8_0Rows16 {
  static constexpr int kBiasMul = 0;
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ8_0), kScaleOffset = 0, kQuantOffset = 32;
  static constexpr int kParts = 1, kMaxQuant = 128;
  using Part = Q8_0::Quants;
  static void unpack(const uint8_t* p, int /*chunk*/, Part* out) {
    const __m256i w = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                       _mm256_set1_epi8(static_cast<char>(0x80)));
    out[0] = {_mm256_abs_epi8(w), w};
  }
  static __m256i mul(const Part& w, __m256i x) { return _mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.w)); }
};

// Q4_0: the nibbles (0..15) are unsigned bytes as they are; the
// activation's bias (-8 * sum q) makes the sums exact.
struct Q4_0 {
  static constexpr int kBiasMul = 1;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ4_0)); }
  static const KBlockQ4_0& block(const uint8_t* row, int64_t b) { return reinterpret_cast<const KBlockQ4_0*>(row)[b]; }
  using Quants = __m256i;  // elements 0..15 in the low half, 16..31 in the high
  static Quants load(const uint8_t* row, int64_t b) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block(row, b).q));
    return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1),
                            _mm256_set1_epi8(0x0f));
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) {
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)), seed);
  }
};

// Rows16 chunks hold the nibble bytes: part 0 the low nibbles, 1 the high.
struct Q4_0Rows16 {
  static constexpr int kBiasMul = 1;
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ4_0), kScaleOffset = 0, kQuantOffset = 32;
  static constexpr int kParts = 2, kMaxQuant = 15;
  using Part = __m256i;
  static void unpack(const uint8_t* p, int /*chunk*/, Part* out) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    out[0] = _mm256_and_si256(v, m0f);
    out[1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m0f);
  }
  static __m256i mul(const Part& w, __m256i x) { return _mm256_maddubs_epi16(w, x); }
};

// ---- The other 32-element block types (GGUF): the same tiles. Their
// quants become bytes as Q4_0's or Q8_0's do; what differs is said by the
// traits' constants.

// A block's 16 nibble bytes as 32 bytes 0..15 in element order (low
// nibbles: elements 0..15, high: 16..31).
inline __m256i nibbles(const uint8_t* q) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1),
                          _mm256_set1_epi8(0x0f));
}

// Bit j of the 4 bytes qh (little-endian) as 0x10 in byte j: byte j / 8 of
// qh spread over 8 bytes, each tested against its own bit.
inline __m256i high_bits(const uint8_t* qh) {
  uint32_t h;
  memcpy(&h, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(h)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// Unsigned quants (bytes 0..31) times the signed activation, seeded.
inline __m256i dot_unsigned(__m256i w, __m256i a, __m256i seed) {
  return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)), seed);
}

template <class B>
const B& block_of(const uint8_t* row, int64_t b) {
  return reinterpret_cast<const B*>(row)[b];
}

// Q4_1: w = d * q + m, q the nibbles (0..15) unsigned as they are.
struct Q4_1 {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = true;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ4_1)); }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) { return nibbles(block_of<KBlockQ4_1>(row, b).q); }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ4_1>(row, b).d); }
  static float min(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ4_1>(row, b).m); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return dot_unsigned(w, a, seed); }
};

// Q5_0: w = d * (q - 16), q = nibble | high bit << 4 (0..31) unsigned; the
// -16 * sum(a) is twice the activation's bias (2 * 31 * 128 < 2^15: no
// saturation).
struct Q5_0 {
  static constexpr int kBiasMul = 2;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ5_0)); }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) {
    const KBlockQ5_0& k = block_of<KBlockQ5_0>(row, b);
    return _mm256_or_si256(nibbles(k.q), high_bits(k.qh));
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ5_0>(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return dot_unsigned(w, a, seed); }
};

// Q5_0 in Rows16 (core/layout.h): the nibbles as Q4_0Rows16's, each part's
// high bit shifted out of the half's 8 words of high bits (bit 2c + p of
// each byte), the same bias as row-major. Sums of 16 products of 31 * 127
// overflow int16: one vpmaddwd per product (Rows16Shape::kInt16 false).
struct Q5_0Rows16 {
  static constexpr int kBiasMul = 2;
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ5_0), kScaleOffset = 0, kQuantOffset = 96;
  static constexpr int kParts = 2, kMaxQuant = 31;
  using Part = __m256i;
  static void unpack(const uint8_t* p, int chunk, Part* out) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i h = _mm256_srl_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p - 64 * chunk - 64)),
                                       _mm_cvtsi32_si128(2 * chunk));
    const __m256i m0f = _mm256_set1_epi8(0x0f), m10 = _mm256_set1_epi8(0x10);
    out[0] = _mm256_or_si256(_mm256_and_si256(v, m0f), _mm256_and_si256(_mm256_slli_epi32(h, 4), m10));
    out[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m0f),
                             _mm256_and_si256(_mm256_slli_epi32(h, 3), m10));
  }
  static __m256i mul(const Part& w, __m256i x) { return _mm256_maddubs_epi16(w, x); }
};

// Q5_1: w = d * q + m, q as Q5_0's with no offset.
struct Q5_1 {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = true;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ5_1)); }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) {
    const KBlockQ5_1& k = block_of<KBlockQ5_1>(row, b);
    return _mm256_or_si256(nibbles(k.q), high_bits(k.qh));
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ5_1>(row, b).d); }
  static float min(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ5_1>(row, b).m); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return dot_unsigned(w, a, seed); }
};

// IQ4_NL: w = d * level[nibble], the 16 signed levels looked up with
// vpshufb, then Q8_0's sign trick (|level| <= 127).
struct IQ4_NL {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockIQ4_NL)); }
  using Quants = Q8_0::Quants;
  static Quants load(const uint8_t* row, int64_t b) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kKIq4Levels)));
    const __m256i w = _mm256_shuffle_epi8(levels, nibbles(block_of<KBlockIQ4_NL>(row, b).q));
    return {_mm256_abs_epi8(w), w};
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockIQ4_NL>(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return Q8_0::dot(w, a, seed); }
};

}  // namespace

EMBER_DEFINE_QMATMUL(q8_0_gemv, avx2, gemv<Q8_0>)
EMBER_DEFINE_QMATMUL(q8_0_gemm, avx2, gemm<Q8_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemv, avx2, gemv<Q4_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemm, avx2, gemm<Q4_0>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemv, avx2, rows16_gemv<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemm, avx2, rows16_gemm<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemv, avx2, rows16_gemv<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemm, avx2, rows16_gemm<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemv, avx2, rows16_gemv<Q5_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemm, avx2, rows16_gemm<Q5_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_1_gemv, avx2, gemv<Q4_1>)
EMBER_DEFINE_QMATMUL(q4_1_gemm, avx2, gemm<Q4_1>)
EMBER_DEFINE_QMATMUL(q5_0_gemv, avx2, gemv<Q5_0>)
EMBER_DEFINE_QMATMUL(q5_0_gemm, avx2, gemm<Q5_0>)
EMBER_DEFINE_QMATMUL(q5_1_gemv, avx2, gemv<Q5_1>)
EMBER_DEFINE_QMATMUL(q5_1_gemm, avx2, gemm<Q5_1>)
EMBER_DEFINE_QMATMUL(iq4_nl_gemv, avx2, gemv<IQ4_NL>)
EMBER_DEFINE_QMATMUL(iq4_nl_gemm, avx2, gemm<IQ4_NL>)

}  // namespace ember
#endif  // __x86_64__

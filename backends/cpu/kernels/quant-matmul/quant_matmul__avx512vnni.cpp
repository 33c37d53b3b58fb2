// Quantized weights x 8-bit activations with AVX-512 VNNI: the tiling of
// quant_matmul_avx512vnni.inc instantiated per weight type. vpdpbusd
// multiplies unsigned by signed bytes into int32 lanes with no
// intermediate rounding; each type says which side is unsigned and how the
// sums are corrected. Decode is bound by memory bandwidth, prefill by the
// per-block float work.
#if defined(__x86_64__)
#include "backends/cpu/kernels/quant-matmul/quant_matmul_avx512vnni.inc"

namespace ember {
namespace {

// Weight-type traits, one struct per type and layout: what the templates
// ask of a type.
//   row-major: row_bytes(cols); __m256i act(a): a token's 32 activation
//              bytes as dot() wants them; Quants load(row, b) (block b's
//              quants); float scale(row, b); __m256i dot(quants, a, seed):
//              the 8 lane sums, seed holding kBiasMul x the activation's bias
//              in lane 0 to use or ignore; kHasMin and float min(row, b)
//              (w = scale * q + min)
//   rows16:    kTileBytes, kScaleOffset (16 f16), kQuantOffset; kParts and
//              unpack(64 bytes, chunk, __m512i[kParts]): a chunk's 4 bytes
//              per row as kParts unsigned parts (1: 8-bit quants; 2: low,
//              high nibbles)
// kBiasMul: the int32 sums get kBiasMul times the activation's bias
// (-8 * sum(q)), 0 for none.

// Q8_0: the activations are offset by 128 (xor 0x80, once per token and
// block) to be the unsigned side, and 128 * sum(w) — itself one vpdpbusd per
// weight block, shared by every token of the tile — seeds the sums negated.
struct Q8_0 {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ8_0)); }
  static const KBlockQ8_0& block(const uint8_t* row, int64_t b) { return reinterpret_cast<const KBlockQ8_0*>(row)[b]; }
  static __m256i act(__m256i a) { return _mm256_xor_si256(a, _mm256_set1_epi8(static_cast<char>(0x80))); }
  struct Quants {
    __m256i w, negc;
  };
  static Quants load(const uint8_t* row, int64_t b) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block(row, b).q));
    return {w, _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, _mm256_set1_epi8(static_cast<char>(0x80)), w))};
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i /*seed*/) { return _mm256_dpbusd_epi32(w.negc, a, w.w); }
};

// Rows16 stores q + 128 (u8), vpdpbusd's unsigned side as it is:
// sum((q + 128) * x) - 128 * sum(x), and -128 * sum(x) is 16 x the bias.
struct Q8_0Rows16 {
  static constexpr int kBiasMul = 16;
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ8_0), kScaleOffset = 0, kQuantOffset = 32;
  static constexpr int kParts = 1;
  static void unpack(const uint8_t* p, int /*chunk*/, __m512i* out) { out[0] = _mm512_loadu_si512(p); }
};

// Q4_0: the nibbles (0..15) are unsigned bytes as they are; the
// activation's bias (-8 * sum q) makes the sums exact.
struct Q4_0 {
  static constexpr int kBiasMul = 1;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ4_0)); }
  static const KBlockQ4_0& block(const uint8_t* row, int64_t b) { return reinterpret_cast<const KBlockQ4_0*>(row)[b]; }
  static __m256i act(__m256i a) { return a; }
  using Quants = __m256i;  // elements 0..15 in the low half, 16..31 in the high
  static Quants load(const uint8_t* row, int64_t b) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block(row, b).q));
    return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1),
                            _mm256_set1_epi8(0x0f));
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return _mm256_dpbusd_epi32(seed, w, a); }
};

// Rows16 chunks hold the nibble bytes: part 0 the low nibbles, 1 the high.
struct Q4_0Rows16 {
  static constexpr int kBiasMul = 1;
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ4_0), kScaleOffset = 0, kQuantOffset = 32;
  static constexpr int kParts = 2;
  static void unpack(const uint8_t* p, int /*chunk*/, __m512i* out) {
    const __m512i v = _mm512_loadu_si512(p);
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    out[0] = _mm512_and_si512(v, m0f);
    out[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
  }
};

// ---- The other 32-element block types (GGUF): the same tiles, the quants
// always vpdpbusd's unsigned side against the activations as they are.

// A block's 16 nibble bytes as 32 bytes 0..15 in element order (low
// nibbles: elements 0..15, high: 16..31).
inline __m256i nibbles(const uint8_t* q) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1),
                          _mm256_set1_epi8(0x0f));
}

// The nibbles plus 16 where bit j of the 4 bytes qh is set: qh is a byte
// mask as it is.
inline __m256i nibbles_5bit(const uint8_t* q, const uint8_t* qh) {
  uint32_t h;
  memcpy(&h, qh, 4);
  const __m256i n = nibbles(q);
  return _mm256_mask_add_epi8(n, static_cast<__mmask32>(h), n, _mm256_set1_epi8(16));
}

template <class B>
const B& block_of(const uint8_t* row, int64_t b) {
  return reinterpret_cast<const B*>(row)[b];
}

// Q4_1: w = d * q + m, q the nibbles (0..15).
struct Q4_1 {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = true;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ4_1)); }
  static __m256i act(__m256i a) { return a; }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) { return nibbles(block_of<KBlockQ4_1>(row, b).q); }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ4_1>(row, b).d); }
  static float min(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ4_1>(row, b).m); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return _mm256_dpbusd_epi32(seed, w, a); }
};

// Q5_0: w = d * (q - 16), q = nibble | high bit << 4 (0..31); the
// -16 * sum(a) is twice the activation's bias.
struct Q5_0 {
  static constexpr int kBiasMul = 2;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ5_0)); }
  static __m256i act(__m256i a) { return a; }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) {
    const KBlockQ5_0& k = block_of<KBlockQ5_0>(row, b);
    return nibbles_5bit(k.q, k.qh);
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ5_0>(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return _mm256_dpbusd_epi32(seed, w, a); }
};

// Q5_0 in Rows16 (core/layout.h): the nibbles as Q4_0Rows16's, each part's
// high bit shifted out of the 16 words of high bits (bit 2c + p of each
// byte), the same bias as row-major.
struct Q5_0Rows16 {
  static constexpr int kBiasMul = 2;
  static constexpr int64_t kTileBytes = 16 * sizeof(KBlockQ5_0), kScaleOffset = 0, kQuantOffset = 96;
  static constexpr int kParts = 2;
  static void unpack(const uint8_t* p, int chunk, __m512i* out) {
    // Each part's high bit tested in place (a byte mask) and added as 16
    // where set: 7 operations a chunk instead of 10 with shifts and ors
    // (the gemm is bound by the vector ALU ops beside its vpdpbusd).
    const __m512i v = _mm512_loadu_si512(p);
    const __m512i h = _mm512_loadu_si512(p - 64 * chunk - 64);
    const __m512i m0f = _mm512_set1_epi8(0x0f), k16 = _mm512_set1_epi8(16);
    const __mmask64 b0 = _mm512_test_epi8_mask(h, _mm512_set1_epi8(static_cast<char>(1 << (2 * chunk))));
    const __mmask64 b1 = _mm512_test_epi8_mask(h, _mm512_set1_epi8(static_cast<char>(1 << (2 * chunk + 1))));
    const __m512i lo = _mm512_and_si512(v, m0f), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
    out[0] = _mm512_mask_add_epi8(lo, b0, lo, k16);
    out[1] = _mm512_mask_add_epi8(hi, b1, hi, k16);
  }
};

// Q5_1: w = d * q + m, q as Q5_0's with no offset.
struct Q5_1 {
  static constexpr int kBiasMul = 0;
  static constexpr bool kHasMin = true;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockQ5_1)); }
  static __m256i act(__m256i a) { return a; }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) {
    const KBlockQ5_1& k = block_of<KBlockQ5_1>(row, b);
    return nibbles_5bit(k.q, k.qh);
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ5_1>(row, b).d); }
  static float min(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockQ5_1>(row, b).m); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return _mm256_dpbusd_epi32(seed, w, a); }
};

// IQ4_NL: w = d * level[nibble]. The levels + 128 (1..241, unsigned) are
// looked up with vpshufb: sum((level + 128) * a) - 128 * sum(a), and
// -128 * sum(a) is 16 x the activation's bias.
struct IQ4_NL {
  static constexpr int kBiasMul = 16;
  static constexpr bool kHasMin = false;
  static int64_t row_bytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(KBlockIQ4_NL)); }
  static __m256i act(__m256i a) { return a; }
  using Quants = __m256i;
  static Quants load(const uint8_t* row, int64_t b) {
    const __m256i levels = _mm256_xor_si256(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kKIq4Levels))),
        _mm256_set1_epi8(static_cast<char>(0x80)));
    return _mm256_shuffle_epi8(levels, nibbles(block_of<KBlockIQ4_NL>(row, b).q));
  }
  static float scale(const uint8_t* row, int64_t b) { return _cvtsh_ss(block_of<KBlockIQ4_NL>(row, b).d); }
  static __m256i dot(const Quants& w, __m256i a, __m256i seed) { return _mm256_dpbusd_epi32(seed, w, a); }
};

}  // namespace

EMBER_DEFINE_QMATMUL(q8_0_gemv, avx512vnni, gemv<Q8_0>)
EMBER_DEFINE_QMATMUL(q8_0_gemm, avx512vnni, gemm<Q8_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemv, avx512vnni, gemv<Q4_0>)
EMBER_DEFINE_QMATMUL(q4_0_gemm, avx512vnni, gemm<Q4_0>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemv, avx512vnni, rows16_gemv<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q8_0_rows16_gemm, avx512vnni, rows16_gemm<Q8_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemv, avx512vnni, rows16_gemv<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_0_rows16_gemm, avx512vnni, rows16_gemm<Q4_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemv, avx512vnni, rows16_gemv<Q5_0Rows16>)
EMBER_DEFINE_QMATMUL(q5_0_rows16_gemm, avx512vnni, rows16_gemm<Q5_0Rows16>)
EMBER_DEFINE_QMATMUL(q4_1_gemv, avx512vnni, gemv<Q4_1>)
EMBER_DEFINE_QMATMUL(q4_1_gemm, avx512vnni, gemm<Q4_1>)
EMBER_DEFINE_QMATMUL(q5_0_gemv, avx512vnni, gemv<Q5_0>)
EMBER_DEFINE_QMATMUL(q5_0_gemm, avx512vnni, gemm<Q5_0>)
EMBER_DEFINE_QMATMUL(q5_1_gemv, avx512vnni, gemv<Q5_1>)
EMBER_DEFINE_QMATMUL(q5_1_gemm, avx512vnni, gemm<Q5_1>)
EMBER_DEFINE_QMATMUL(iq4_nl_gemv, avx512vnni, gemv<IQ4_NL>)
EMBER_DEFINE_QMATMUL(iq4_nl_gemm, avx512vnni, gemm<IQ4_NL>)

}  // namespace ember
#endif  // __x86_64__

// KV cache rows on the device (memory.h kv_row_words). Type 0 f32: a word per
// element. Type 1 f16: two per word, low half first. Type 2 q8_0: the row's
// quants as words (byte j of block b at byte 32b + j), then its blocks' f16
// scales, two per word (block 2m in the low half of word m).
//
// Stores round exactly as the CPU's quantize_row does (core/dtype.cpp), so
// both backends keep the same cache bits for the same inputs: f16 by round to
// nearest even done here in integer arithmetic (packHalf2x16's rounding is up
// to the driver); q8_0 with d = amax / 127, quants lround(x * (1 / d)) (ties
// away from zero) and the scale stored as f16(d).
//
// A store writes one "unit" of a row, the smallest piece no other invocation
// touches: an element pair (f32, f16) or a pair of q8_0 blocks (they share a
// scale word). The includer defines KV_DIM.

// f32 -> f16 bits, round to nearest even: the CPU's f32_to_f16.
uint f16_bits(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u);
  if (absx >= 0x477ff000u) return sign | 0x7c00u;
  if (absx < 0x38800000u) {
    if (absx < 0x33000000u) return sign;
    uint e = absx >> 23;
    uint m = (absx & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;
    uint v = m >> shift;
    uint rem = m & ((1u << shift) - 1u);
    uint half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (v & 1u) != 0u)) ++v;
    return sign | v;
  }
  uint v = (absx - 0x38000000u) >> 13;
  uint rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u) != 0u)) ++v;
  return sign | v;
}

// std::lround: ties away from zero. v - trunc(v) is exact.
int lround_away(float v) {
  precise float t = trunc(v);
  precise float frac = abs(v - t);
  if (frac >= 0.5) t += sign(v);
  return int(t);
}

uint kv_units(uint type) { return type == 2u ? (KV_DIM / 32u + 1u) / 2u : KV_DIM / 2u; }
uint kv_unit_first(uint type, uint u) { return type == 2u ? 64u * u : 2u * u; }
uint kv_unit_count(uint type, uint u) { return type == 2u ? min(64u, KV_DIM - 64u * u) : 2u; }

// One q8_0 block of x[off .. off + 31] as 8 quant words; returns the scale's
// f16 bits.
uint q8_block(float x[64], uint off, out uint q[8]) {
  float amax = 0.0;
  for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(x[off + j]));
  precise float d = amax / 127.0;
  precise float id = d != 0.0 ? 1.0 / d : 0.0;
  for (uint k = 0u; k < 8u; ++k) {
    uint word = 0u;
    for (uint b = 0u; b < 4u; ++b) {
      precise float s = x[off + 4u * k + b] * id;
      // int8_t cast of the CPU: the low byte.
      word |= (uint(lround_away(s)) & 0xffu) << (8u * b);
    }
    q[k] = word;
  }
  return f16_bits(d);
}

float q8_elem(uint qword, uint sword, uint e) {
  float d = unpackHalf2x16(sword)[(e >> 5) & 1u];
  return d * float(bitfieldExtract(int(qword), int((e & 3u) * 8u), 8));
}

// Element e of row `row` of cache BUF (type, row words).
#define KV_LOAD_FN(NAME, BUF)                                                   \
  float NAME(uint type, uint roww, uint row, uint e) {                          \
    uint base = row * roww;                                                     \
    if (type == 0u) return uintBitsToFloat(BUF[base + e]);                      \
    if (type == 1u) return unpackHalf2x16(BUF[base + (e >> 1)])[e & 1u];        \
    return q8_elem(BUF[base + (e >> 2)], BUF[base + KV_DIM / 4u + (e >> 6)], e); \
  }

// Unit u of row `row` of cache BUF from x[0 .. kv_unit_count(type, u) - 1].
#define KV_STORE_FN(NAME, BUF)                                                  \
  void NAME(uint type, uint roww, uint row, uint u, float x[64]) {              \
    uint base = row * roww;                                                     \
    if (type == 0u) {                                                           \
      BUF[base + 2u * u] = floatBitsToUint(x[0]);                               \
      BUF[base + 2u * u + 1u] = floatBitsToUint(x[1]);                          \
    } else if (type == 1u) {                                                    \
      BUF[base + u] = f16_bits(x[0]) | (f16_bits(x[1]) << 16);                  \
    } else {                                                                    \
      uint q[8];                                                                \
      uint s = q8_block(x, 0u, q);                                              \
      for (uint k = 0u; k < 8u; ++k) BUF[base + 16u * u + k] = q[k];            \
      if (kv_unit_count(type, u) == 64u) {                                     \
        s |= q8_block(x, 32u, q) << 16;                                         \
        for (uint k = 0u; k < 8u; ++k) BUF[base + 16u * u + 8u + k] = q[k];     \
      }                                                                         \
      BUF[base + KV_DIM / 4u + u] = s;                                          \
    }                                                                           \
  }

KV_LOAD_FN(k_load, kc)
KV_LOAD_FN(v_load, vc)
KV_STORE_FN(k_store, kc)
KV_STORE_FN(v_store, vc)

// Reading a weight in its device layout (memory.h WeightLayout). WTYPE is
// the weight's DType value (core/dtype.h):
//   0 f32, 1 f16, 2 bf16 (two per word);
//   3 q8_0, 4 q4_0: repacked at upload (quants as words, then one f32 scale
//     per 32-element block at word soff);
//   5 q4_1 ... 14 iq4_xs: GGUF's blocks byte for byte ("raw" types). Blocks
//     are 18..210 bytes, most not a multiple of 4, so a block starts at any
//     even byte: fields are read as bytes, half-words and unaligned words
//     from the uint buffer and f16 values are assembled by hand.
// Every raw type is decoded 8 consecutive elements at a time (w_unit8): in
// every GGUF layout those 8 elements take their quants from 8 consecutive
// bytes (one bit field of each) and share one (sub-)block scale.

#if WTYPE >= 5
// Block geometry: elements and bytes per block.
#if WTYPE == 5
#define BLK_ELEMS 32u
#define BLK_BYTES 20u
#elif WTYPE == 6
#define BLK_ELEMS 32u
#define BLK_BYTES 22u
#elif WTYPE == 7
#define BLK_ELEMS 32u
#define BLK_BYTES 24u
#elif WTYPE == 8
#define BLK_ELEMS 256u
#define BLK_BYTES 84u
#elif WTYPE == 9
#define BLK_ELEMS 256u
#define BLK_BYTES 110u
#elif WTYPE == 10
#define BLK_ELEMS 256u
#define BLK_BYTES 144u
#elif WTYPE == 11
#define BLK_ELEMS 256u
#define BLK_BYTES 176u
#elif WTYPE == 12
#define BLK_ELEMS 256u
#define BLK_BYTES 210u
#elif WTYPE == 13
#define BLK_ELEMS 32u
#define BLK_BYTES 18u
#elif WTYPE == 14
#define BLK_ELEMS 256u
#define BLK_BYTES 136u
#else
#error "WTYPE must be 0..14"
#endif

// Byte b of the weight.
uint wb8(uint b) { return (w[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }
// The little-endian u16 at even byte b.
uint wb16(uint b) { return (w[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu; }
// The little-endian u32 at even byte b (two words when b is not a multiple
// of 4; the second word then holds bytes of the same block, so it exists).
uint wb32(uint b) {
  uint lo = w[b >> 2];
  return (b & 2u) == 0u ? lo : (lo >> 16) | (w[(b >> 2) + 1u] << 16);
}
// The f16 at even byte b, widened exactly (subnormals included) with
// integer operations only, so no device flushes or rounds it.
float wf16(uint b) {
  uint h = wb16(b);
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 0u) return uintBitsToFloat(s | floatBitsToUint(float(m) * 5.9604644775390625e-8));  // m * 2^-24
  if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}
// The four bytes of v as floats, lowest first.
vec4 bytes4(uint v) { return vec4(v & 0xffu, (v >> 8) & 0xffu, (v >> 16) & 0xffu, v >> 24); }
// Bits 0..3 of v, each moved to bit 0 of its own byte.
uint spread4(uint v) { return (v & 1u) | ((v & 2u) << 7) | ((v & 4u) << 14) | ((v & 8u) << 21); }

#if WTYPE == 13 || WTYPE == 14
// GGUF's 16 non-linear levels (core/dtype.h kIq4Levels).
const float kIq4[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0,
                                 53.0, 69.0, 89.0, 113.0);
// The levels of the four nibbles held one per byte of v.
vec4 iq4_levels(uint v) {
  return vec4(kIq4[v & 15u], kIq4[(v >> 8) & 15u], kIq4[(v >> 16) & 15u], kIq4[(v >> 24) & 15u]);
}
#endif

// The four nibbles, as bytes, of elements j..j+3 of a 32-element nibble run
// at byte q (element j in the low nibble of q[j], j + 16 in the high; j a
// multiple of 4).
uint nibbles4(uint q, uint j) { return (wb32(q + (j & 15u)) >> (j & 16u) / 4u) & 0x0f0f0f0fu; }

// Elements e0..e0+7 (e0 a multiple of 8) of the block at byte bb, as two
// vec4: the type's dequantization, as core/dtype_codecs.cpp computes it.
void w_unit8(uint bb, uint e0, out vec4 lo, out vec4 hi) {
#if WTYPE == 5  // q4_1: d * q + m
  float d = wf16(bb), m = wf16(bb + 2u);
  lo = bytes4(nibbles4(bb + 4u, e0)) * d + m;
  hi = bytes4(nibbles4(bb + 4u, e0 + 4u)) * d + m;
#elif WTYPE == 6 || WTYPE == 7  // q5_0: d * (q - 16); q5_1: d * q + m
  // Bit 4 of element j is bit j of the u32 qh.
#if WTYPE == 6
  float d = wf16(bb);
  uint qh = wb32(bb + 2u) >> e0, qs = bb + 6u;
  lo = (bytes4(nibbles4(qs, e0) | (spread4(qh) << 4)) - 16.0) * d;
  hi = (bytes4(nibbles4(qs, e0 + 4u) | (spread4(qh >> 4) << 4)) - 16.0) * d;
#else
  float d = wf16(bb), m = wf16(bb + 2u);
  uint qh = wb32(bb + 4u) >> e0, qs = bb + 8u;
  lo = bytes4(nibbles4(qs, e0) | (spread4(qh) << 4)) * d + m;
  hi = bytes4(nibbles4(qs, e0 + 4u) | (spread4(qh >> 4) << 4)) * d + m;
#endif
#elif WTYPE == 13  // iq4_nl: d * level[q]
  float d = wf16(bb);
  lo = d * iq4_levels(nibbles4(bb + 2u, e0));
  hi = d * iq4_levels(nibbles4(bb + 2u, e0 + 4u));
#elif WTYPE == 8 || WTYPE == 9
  // Q2_K / Q3_K: 2-bit fields of q[64] at 16 / 32; element e's byte is
  // q[32 (e / 128) + e % 32], its field at bit 2 ((e % 128) / 32).
  uint qb = bb + (WTYPE == 8 ? 16u : 32u) + 32u * (e0 >> 7) + (e0 & 31u), sh = 2u * ((e0 & 127u) >> 5);
  uint q0 = (wb32(qb) >> sh) & 0x03030303u, q1 = (wb32(qb + 4u) >> sh) & 0x03030303u;
  uint s = e0 >> 4;  // the 16-element sub-block
#if WTYPE == 8  // q2_k: d * (sc & 15) * q - dmin * (sc >> 4)
  uint sc = wb8(bb + s);
  float dl = wf16(bb + 80u) * float(sc & 15u), ml = wf16(bb + 82u) * float(sc >> 4);
  lo = dl * bytes4(q0) - ml;
  hi = dl * bytes4(q1) - ml;
#else  // q3_k: d * (sc - 32) * (q - 4), bit 2 of q at bit e / 32 of hmask[e % 32]
  uint hm = bb + (e0 & 31u), hs = e0 >> 5;
  q0 |= ((wb32(hm) >> hs) & 0x01010101u) << 2;
  q1 |= ((wb32(hm + 4u) >> hs) & 0x01010101u) << 2;
  uint sc = ((wb8(bb + 96u + (s & 7u)) >> (4u * (s >> 3))) & 15u) |
            (((wb8(bb + 104u + (s & 3u)) >> (2u * (s >> 2))) & 3u) << 4);
  float dl = wf16(bb + 108u) * (float(sc) - 32.0);
  lo = dl * (bytes4(q0) - 4.0);
  hi = dl * (bytes4(q1) - 4.0);
#endif
#elif WTYPE == 10 || WTYPE == 11
  // Q4_K / Q5_K: d * sc * q - dmin * mn over 32-element sub-blocks; q's low
  // 4 bits in nibble (e / 32) % 2 of q[32 (e / 64) + e % 32].
  uint s = e0 >> 5;
  uint sc, mn;
  if (s < 4u) {
    sc = wb8(bb + 4u + s) & 63u;
    mn = wb8(bb + 8u + s) & 63u;
  } else {
    uint packed = wb8(bb + 8u + s);
    sc = (packed & 15u) | ((wb8(bb + s) >> 6) << 4);
    mn = (packed >> 4) | ((wb8(bb + 4u + s) >> 6) << 4);
  }
  float dl = wf16(bb) * float(sc), ml = wf16(bb + 2u) * float(mn);
  uint qb = bb + (WTYPE == 10 ? 16u : 48u) + 32u * (e0 >> 6) + (e0 & 31u), sh = 4u * (s & 1u);
  uint q0 = (wb32(qb) >> sh) & 0x0f0f0f0fu, q1 = (wb32(qb + 4u) >> sh) & 0x0f0f0f0fu;
#if WTYPE == 11  // the fifth bit: bit e / 32 of qh[e % 32]
  uint hm = bb + 16u + (e0 & 31u);
  q0 |= ((wb32(hm) >> s) & 0x01010101u) << 4;
  q1 |= ((wb32(hm + 4u) >> s) & 0x01010101u) << 4;
#endif
  lo = dl * bytes4(q0) - ml;
  hi = dl * bytes4(q1) - ml;
#elif WTYPE == 12
  // Q6_K: d * scales[e / 16] * (q - 32); h = e / 128, k = (e % 128) / 32,
  // l = e % 32: low 4 bits in nibble k / 2 of ql[64 h + 32 (k % 2) + l], high
  // 2 bits at bit 2k of qh[32 h + l].
  uint h = e0 >> 7, k = (e0 & 127u) >> 5, l = e0 & 31u;
  uint lb = bb + 64u * h + 32u * (k & 1u) + l, ls = 4u * (k >> 1);
  uint hb = bb + 128u + 32u * h + l, hs = 2u * k;
  uint q0 = ((wb32(lb) >> ls) & 0x0f0f0f0fu) | (((wb32(hb) >> hs) & 0x03030303u) << 4);
  uint q1 = ((wb32(lb + 4u) >> ls) & 0x0f0f0f0fu) | (((wb32(hb + 4u) >> hs) & 0x03030303u) << 4);
  float d = wf16(bb + 208u) * float(bitfieldExtract(int(wb8(bb + 192u + (e0 >> 4))), 0, 8));
  lo = d * (bytes4(q0) - 32.0);
  hi = d * (bytes4(q1) - 32.0);
#elif WTYPE == 14
  // IQ4_XS: d * (ls - 32) * level[q]; sub-block s of 32 placed as an IQ4_NL
  // block's nibbles at q + 16 s; ls's low 4 bits in nibble s % 2 of
  // scales_l[s / 2], high 2 bits at bit 2s of scales_h.
  uint s = e0 >> 5;
  uint ls = ((wb8(bb + 4u + (s >> 1)) >> (4u * (s & 1u))) & 15u) | (((wb16(bb + 2u) >> (2u * s)) & 3u) << 4);
  float dl = wf16(bb) * (float(ls) - 32.0);
  uint qs = bb + 8u + 16u * s, j = e0 & 31u;
  lo = dl * iq4_levels(nibbles4(qs, j));
  hi = dl * iq4_levels(nibbles4(qs, j + 4u));
#endif
}
#endif  // WTYPE >= 5

// Element e of a weight (embedding rows).
float w_elem(uint e, uint soff) {
#if WTYPE == 0
  return uintBitsToFloat(w[e]);
#elif WTYPE == 1
  return unpackHalf2x16(w[e >> 1])[e & 1u];
#elif WTYPE == 2
  return uintBitsToFloat(((w[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu) << 16);
#elif WTYPE == 3
  uint blk = e >> 5, j = e & 31u;
  int q = bitfieldExtract(int(w[blk * 8u + (j >> 2)]), int((j & 3u) * 8u), 8);
  return uintBitsToFloat(w[soff + blk]) * float(q);
#elif WTYPE == 4
  uint blk = e >> 5, j = e & 31u, jj = j & 15u;
  uint byte_ = (w[blk * 4u + (jj >> 2)] >> ((jj & 3u) * 8u)) & 0xffu;
  uint nib = j < 16u ? (byte_ & 0xfu) : (byte_ >> 4);
  return uintBitsToFloat(w[soff + blk]) * float(int(nib) - 8);
#else
  // A row is whole blocks, so element e is in block e / BLK_ELEMS of the
  // whole tensor.
  uint j = e % BLK_ELEMS;
  vec4 lo, hi;
  w_unit8((e / BLK_ELEMS) * BLK_BYTES, j & ~7u, lo, hi);
  uint k = j & 7u;
  return k < 4u ? lo[k] : hi[k - 4u];
#endif
}

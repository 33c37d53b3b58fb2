// Element e of a weight in its device layout (memory.h WeightLayout):
// WTYPE 0 f32, 1 f16, 2 bf16 (two per word), 3 q8_0, 4 q4_0 (quants as words,
// then one f32 scale per 32-element block at word soff).
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
#error "WTYPE must be 0..4"
#endif
}

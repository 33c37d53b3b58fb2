#version 450
// out = a + bias on every row (out may be a); the bias is an f32 vector of
// COLS floats in the weight binding, read as raw words.
#include "common.glsl"
#define COLS pc.p[0]
#define COUNT pc.p[1]

void main() {
  uint idx = flat_index();
  if (idx < COUNT) o[idx] = a[idx] + uintBitsToFloat(w[idx % COLS]);
}

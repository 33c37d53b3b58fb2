#version 450
// out = gelu(a) with GELU's tanh approximation (BERT's FFN), elementwise
// (out may be a).
#include "common.glsl"
#define COUNT pc.p[0]

void main() {
  uint idx = flat_index();
  if (idx < COUNT) {
    float x = a[idx];
    o[idx] = 0.5 * x * (1.0 + tanh(0.79788456080286535588 * x * (1.0 + 0.044715 * x * x)));
  }
}

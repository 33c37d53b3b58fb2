#version 450
// out = silu(a) * b, elementwise (out may be a).
#include "common.glsl"
#define COUNT pc.p[0]

void main() {
  uint idx = flat_index();
  if (idx < COUNT) {
    float x = a[idx];
    o[idx] = x / (1.0 + exp(-x)) * b[idx];
  }
}

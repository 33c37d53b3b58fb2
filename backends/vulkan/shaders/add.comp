#version 450
// out = a + b, elementwise (out may be a).
#include "common.glsl"
#define COUNT pc.p[0]

void main() {
  uint idx = flat_index();
  if (idx < COUNT) o[idx] = a[idx] + b[idx];
}

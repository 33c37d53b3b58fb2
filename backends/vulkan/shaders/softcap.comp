#version 450
// out = cap * tanh(a / cap), elementwise (Gemma's logits; out may be a).
#include "common.glsl"
#define COUNT pc.p[0]
#define CAP uintBitsToFloat(pc.p[1])

void main() {
  uint idx = flat_index();
  if (idx < COUNT) o[idx] = CAP * tanh(a[idx] / CAP);
}

#version 450
// Stores this step's keys (a) and values (b) at rows pos .. pos + n - 1 of
// the layer's cache, as f32 (type 0) or f16 pairs (type 1).
#include "common.glsl"
#define KV_DIM pc.p[0]
#define KTYPE pc.p[1]
#define VTYPE pc.p[2]
#define COUNT pc.p[3]

void main() {
  uint idx = flat_index();
  if (idx >= COUNT) return;
  uint pairs = KV_DIM / 2u;
  uint i = idx / pairs, pr = idx % pairs;
  uint row = uint(step_buf.pos) + i;
  uint src = i * KV_DIM + 2u * pr;
  vec2 k = vec2(a[src], a[src + 1u]);
  vec2 v = vec2(b[src], b[src + 1u]);
  if (KTYPE == 0u) {
    kc[row * KV_DIM + 2u * pr] = floatBitsToUint(k.x);
    kc[row * KV_DIM + 2u * pr + 1u] = floatBitsToUint(k.y);
  } else {
    kc[row * pairs + pr] = packHalf2x16(k);
  }
  if (VTYPE == 0u) {
    vc[row * KV_DIM + 2u * pr] = floatBitsToUint(v.x);
    vc[row * KV_DIM + 2u * pr + 1u] = floatBitsToUint(v.y);
  } else {
    vc[row * pairs + pr] = packHalf2x16(v);
  }
}

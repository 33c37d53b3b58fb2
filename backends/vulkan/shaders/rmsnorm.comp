#version 450
// out[i] = w * a[i + row0] / rms(a[i + row0]); one workgroup per row.
#include "common.glsl"
#define COLS pc.p[0]
#define ROW0 pc.p[1]
#define EPS uintBitsToFloat(pc.p[2])

shared float red[64];

void main() {
  uint i = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint in_base = (i + ROW0) * COLS, out_base = i * COLS;
  float ss = 0.0;
  for (uint c = tid; c < COLS; c += 64u) ss += a[in_base + c] * a[in_base + c];
  red[tid] = ss;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  float inv = 1.0 / sqrt(red[0] / float(COLS) + EPS);
  for (uint c = tid; c < COLS; c += 64u) o[out_base + c] = uintBitsToFloat(w[c]) * (inv * a[in_base + c]);
}

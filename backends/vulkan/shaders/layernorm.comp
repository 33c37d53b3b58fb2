#version 450
// out[i] = (a[i] - mean) / sqrt(var + eps) * w + bias, one workgroup per row
// of COLS floats (BERT's norms); w in the weight binding and the bias in the
// aux binding, both f32 vectors of COLS. GATHER (the last layer's norm):
// output row r reads the step's output row r (step_out_row). The mean and
// then the variance are reduced by a shared-memory tree.
#include "common.glsl"
#define COLS pc.p[0]
#define GATHER pc.p[1]
#define EPS uintBitsToFloat(pc.p[2])

shared float red[64];

float row_sum(float part) {
  uint tid = gl_LocalInvocationID.x;
  barrier();
  red[tid] = part;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  return red[0];
}

void main() {
  uint i = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint in_base = (GATHER != 0u ? step_out_row(i) : i) * COLS, out_base = i * COLS;
  float s = 0.0;
  for (uint c = tid; c < COLS; c += 64u) s += a[in_base + c];
  float mean = row_sum(s) / float(COLS);
  float v = 0.0;
  for (uint c = tid; c < COLS; c += 64u) {
    float d = a[in_base + c] - mean;
    v += d * d;
  }
  float inv = 1.0 / sqrt(row_sum(v) / float(COLS) + EPS);
  // Every invocation has read its elements: out may be a.
  barrier();
  for (uint c = tid; c < COLS; c += 64u) {
    o[out_base + c] = (a[in_base + c] - mean) * inv * uintBitsToFloat(w[c]) + aux[c];
  }
}

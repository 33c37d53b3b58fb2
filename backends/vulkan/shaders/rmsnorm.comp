#version 450
// out[i] = w * a[i] / rms(a[i]); one workgroup per row of COLS floats. A row
// may be one group of a wider activation row (Qwen3's per-head norm): the
// dispatch is (groups per row, rows), and every group is a row of COLS here
// with the same COLS-long weight. GATHER (the logits head's norm): output
// row r reads the step's output row r (step_out_row), the dispatch being
// (groups, n_out). The sum of squares is reduced by
// subgroupAdd (SUBGROUP) or a shared-memory tree.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#define COLS pc.p[0]
#define GATHER pc.p[1]
#define EPS uintBitsToFloat(pc.p[2])

shared float red[64];

void main() {
  uint i = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint in_i = GATHER != 0u ? step_out_row(gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x : i;
  uint in_base = in_i * COLS, out_base = i * COLS;
  float ss = 0.0;
  for (uint c = tid; c < COLS; c += 64u) ss += a[in_base + c] * a[in_base + c];
#ifdef SUBGROUP
  float sum = subgroupAdd(ss);
  if (subgroupElect()) red[gl_SubgroupID] = sum;
  barrier();
  float total = 0.0;
  for (uint g = 0u; g < gl_NumSubgroups; ++g) total += red[g];
#else
  red[tid] = ss;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  float total = red[0];
#endif
  float inv = 1.0 / sqrt(total / float(COLS) + EPS);
  for (uint c = tid; c < COLS; c += 64u) o[out_base + c] = uintBitsToFloat(w[c]) * (inv * a[in_base + c]);
}

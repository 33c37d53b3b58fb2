#version 450
// out[t, r] = dot(weight row r, a[t]) for up to TILE tokens per workgroup:
// one workgroup per (row, token tile), so each dequantized weight is reused
// TILE times (mat-mat); with one token it is a mat-vec. Decode is bound by
// reading the weights once. The 64 partial sums per token are added by
// subgroupAdd (SUBGROUP: no barriers within a subgroup) or by a shared-memory
// tree (portable: six barriers); pipelines.h chooses.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "weights.glsl"
#define ROWS pc.p[0]
#define COLS pc.p[1]
#define NTOK pc.p[2]
#define SOFF pc.p[3]
#define GROUPS_X pc.p[4]
#define TILE 8

shared float red[TILE * 64];

void main() {
  uint r = gl_WorkGroupID.x + gl_WorkGroupID.z * GROUPS_X;
  if (r >= ROWS) return;  // uniform across the workgroup
  uint t0 = gl_WorkGroupID.y * TILE;
  uint nt = min(uint(TILE), NTOK - t0);
  uint tid = gl_LocalInvocationID.x;
  float acc[TILE];
  for (uint t = 0; t < TILE; ++t) acc[t] = 0.0;
#if WTYPE == 3 || WTYPE == 4
#if WTYPE == 3
  const uint WPB = 8u;  // words of quants per block
#else
  const uint WPB = 4u;
#endif
  uint nb = COLS >> 5;
  uint rb = r * nb;
  for (uint it = tid; it < nb * WPB; it += 64u) {
    uint blk = it / WPB, k = it % WPB;
    uint word = w[(rb + blk) * WPB + k];
    float s = uintBitsToFloat(w[SOFF + rb + blk]);
    uint c = blk * 32u + k * 4u;
#if WTYPE == 3
    int iw = int(word);
    vec4 wv = s * vec4(bitfieldExtract(iw, 0, 8), bitfieldExtract(iw, 8, 8), bitfieldExtract(iw, 16, 8),
                       bitfieldExtract(iw, 24, 8));
    for (uint t = 0; t < TILE; ++t) {
      if (t < nt) {
        uint base = (t0 + t) * COLS + c;
        acc[t] += dot(wv, vec4(a[base], a[base + 1u], a[base + 2u], a[base + 3u]));
      }
    }
#else
    vec4 lo = s * (vec4(word & 0xfu, (word >> 8) & 0xfu, (word >> 16) & 0xfu, (word >> 24) & 0xfu) - 8.0);
    vec4 hi = s * (vec4((word >> 4) & 0xfu, (word >> 12) & 0xfu, (word >> 20) & 0xfu, (word >> 28) & 0xfu) - 8.0);
    for (uint t = 0; t < TILE; ++t) {
      if (t < nt) {
        uint base = (t0 + t) * COLS + c;
        acc[t] += dot(lo, vec4(a[base], a[base + 1u], a[base + 2u], a[base + 3u])) +
                  dot(hi, vec4(a[base + 16u], a[base + 17u], a[base + 18u], a[base + 19u]));
      }
    }
#endif
  }
#elif WTYPE >= 5
  // GGUF blocks as stored (weights.glsl): each invocation takes 8 columns
  // at a time, so neighbouring invocations read neighbouring quant bytes
  // and the 8 share one decoded scale.
  const uint UPB = BLK_ELEMS / 8u;  // 8-column units per block
  uint rb = r * (COLS / BLK_ELEMS) * BLK_BYTES;
  for (uint u = tid; u < (COLS >> 3); u += 64u) {
    vec4 lo, hi;
    w_unit8(rb + (u / UPB) * BLK_BYTES, (u % UPB) * 8u, lo, hi);
    uint c = u * 8u;
    for (uint t = 0; t < TILE; ++t) {
      if (t < nt) {
        uint base = (t0 + t) * COLS + c;
        acc[t] += dot(lo, vec4(a[base], a[base + 1u], a[base + 2u], a[base + 3u])) +
                  dot(hi, vec4(a[base + 4u], a[base + 5u], a[base + 6u], a[base + 7u]));
      }
    }
  }
#else
  uint rc = r * COLS;
  for (uint c = tid; c < COLS; c += 64u) {
    float wv = w_elem(rc + c, 0u);
    for (uint t = 0; t < TILE; ++t) {
      if (t < nt) acc[t] += wv * a[(t0 + t) * COLS + c];
    }
  }
#endif
#ifdef SUBGROUP
  // Each subgroup's sum, then the sums of the workgroup's subgroups (at most
  // 64: a subgroup has at least one invocation).
  for (uint t = 0; t < TILE; ++t) {
    float sum = subgroupAdd(acc[t]);
    if (subgroupElect()) red[t * 64u + gl_SubgroupID] = sum;
  }
  barrier();
  if (tid < nt) {
    float sum = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) sum += red[tid * 64u + g];
    o[(t0 + tid) * ROWS + r] = sum;
  }
#else
  for (uint t = 0; t < TILE; ++t) red[t * 64u + tid] = acc[t];
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (tid < s) {
      for (uint t = 0; t < TILE; ++t) red[t * 64u + tid] += red[t * 64u + tid + s];
    }
    barrier();
  }
  if (tid < nt) o[(t0 + tid) * ROWS + r] = red[tid * 64u];
#endif
}

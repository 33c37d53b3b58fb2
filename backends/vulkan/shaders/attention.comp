#version 450
// Causal grouped-query attention for query row i and head h, one workgroup
// each: row i sees its own sequence's keys at positions up to its own (those
// this step stored for earlier rows of the sequence included), nothing of
// the other sequences. Positions are taken CHUNK at a time with an online
// softmax (running max and sum), so any context fits in shared memory.
// Bound by reading the cache: context x head_dim per head per token.
#include "common.glsl"
#define HEAD_DIM pc.p[0]
#define N_HEADS pc.p[1]
#define GROUP pc.p[2]
#define KV_DIM pc.p[3]
#define KTYPE pc.p[4]
#define VTYPE pc.p[5]
#define SCALE uintBitsToFloat(pc.p[6])
#define K_ROWW pc.p[7]
#define V_ROWW pc.p[8]
#define WINDOW pc.p[9]
#define SOFTCAP uintBitsToFloat(pc.p[10])
// Non-causal (encoders): row i sees every position its sequence holds after
// the step (the largest position of its sequence's rows in it, + 1).
#define NONCAUSAL pc.p[11]
#define CHUNK 256u
#define MAX_HEAD_DIM 256u

shared float qsh[MAX_HEAD_DIM];
shared float sc[CHUNK];

#include "kv.glsl"

// Element d of cache row t (row0 + position).
float k_elem(uint t, uint d) { return k_load(KTYPE, K_ROWW, t, d); }
float v_elem(uint t, uint d) { return v_load(VTYPE, V_ROWW, t, d); }

void main() {
  uint h = gl_WorkGroupID.x, i = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint q_dim = HEAD_DIM * N_HEADS;
  uint npos = step_pos(i) + 1u;
  uint row0 = step_seq_row0(i);
  if (NONCAUSAL != 0u) {
    for (uint r = 0u; r < uint(step_buf.n); ++r) {
      if (step_seq_row0(r) == row0) npos = max(npos, step_pos(r) + 1u);
    }
  }
  // A sliding window sees the last WINDOW positions only (0: all).
  uint t0 = WINDOW != 0u && npos > WINDOW ? npos - WINDOW : 0u;
  uint kvo = (h / GROUP) * HEAD_DIM;
  for (uint d = tid; d < HEAD_DIM; d += 64u) qsh[d] = a[i * q_dim + h * HEAD_DIM + d];
  barrier();
  float m = uintBitsToFloat(0xff800000u);  // -inf
  float l = 0.0;
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
  for (uint base = t0; base < npos; base += CHUNK) {
    uint cnt = min(CHUNK, npos - base);
    for (uint t = tid; t < cnt; t += 64u) {
      float s = 0.0;
      for (uint d = 0u; d < HEAD_DIM; ++d) s += qsh[d] * k_elem(row0 + base + t, kvo + d);
      s *= SCALE;
      // Gemma 2's soft-capping of the scores (0: none).
      if (pc.p[10] != 0u) s = SOFTCAP * tanh(s / SOFTCAP);
      sc[t] = s;
    }
    barrier();
    // Every invocation reduces the chunk itself: same order, same result.
    float cm = m;
    for (uint t = 0u; t < cnt; ++t) cm = max(cm, sc[t]);
    float corr = exp(m - cm);
    l *= corr;
    for (uint k = 0u; k < 4u; ++k) acc[k] *= corr;
    for (uint t = 0u; t < cnt; ++t) {
      float pr = exp(sc[t] - cm);
      l += pr;
      for (uint k = 0u; k < 4u; ++k) {
        uint d = tid + 64u * k;
        if (d < HEAD_DIM) acc[k] += pr * v_elem(row0 + base + t, kvo + d);
      }
    }
    m = cm;
    barrier();
  }
  float inv = 1.0 / l;
  for (uint k = 0u; k < 4u; ++k) {
    uint d = tid + 64u * k;
    if (d < HEAD_DIM) o[i * q_dim + h * HEAD_DIM + d] = acc[k] * inv;
  }
}

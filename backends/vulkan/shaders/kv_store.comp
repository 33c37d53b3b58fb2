#version 450
// Stores this step's keys (a) and values (b) in the layer's cache in its
// type (kv.glsl), row i at its sequence's row for its position: one
// invocation per (row, unit).
#include "common.glsl"
#define KV_DIM pc.p[0]
#define KTYPE pc.p[1]
#define VTYPE pc.p[2]
#define COUNT pc.p[3]
#define K_ROWW pc.p[4]
#define V_ROWW pc.p[5]
#define UNITS pc.p[6]
#include "kv.glsl"

void main() {
  uint idx = flat_index();
  if (idx >= COUNT) return;
  uint i = idx / UNITS, u = idx % UNITS;
  uint row = step_seq_row0(i) + step_pos(i);
  float x[64];
  if (u < kv_units(KTYPE)) {
    uint first = i * KV_DIM + kv_unit_first(KTYPE, u), cnt = kv_unit_count(KTYPE, u);
    for (uint e = 0u; e < cnt; ++e) x[e] = a[first + e];
    k_store(KTYPE, K_ROWW, row, u, x);
  }
  if (u < kv_units(VTYPE)) {
    uint first = i * KV_DIM + kv_unit_first(VTYPE, u), cnt = kv_unit_count(VTYPE, u);
    for (uint e = 0u; e < cnt; ++e) x[e] = b[first + e];
    v_store(VTYPE, V_ROWW, row, u, x);
  }
}

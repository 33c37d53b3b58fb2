#version 450
// Context shifting: rewrites keys that move from position p to p - d. The
// host copied the moving rows (a chunk) to a scratch buffer, bound here in
// place of the value cache (vc, in the key cache's type); this shader rotates
// them by -d positions and stores them at rows DST0 .. of the key cache, as
// the CPU does (load, rotate, store: cpu_kv_shift.cpp). aux holds cos[half]
// then sin[half] of the -d angles, computed on the host as the CPU does.
// One invocation per (row, unit); a rare operation, bound by the copy.
#include "common.glsl"
#define KV_DIM pc.p[0]
#define KTYPE pc.p[1]
#define K_ROWW pc.p[2]
#define COUNT pc.p[3]
#define UNITS pc.p[4]
#define DST0 pc.p[5]
#define HEAD_DIM pc.p[6]
#define ADJACENT pc.p[7]
#define TABLE_OFF pc.p[8]
#define ROT pc.p[9]
#include "kv.glsl"

// Element e of source row i after the rotation (the CPU's rotate_row): the
// first ROT elements of each head rotate (partial rotary), the rest stay.
float rotated(uint i, uint e) {
  uint half_ = ROT / 2u;
  uint hd = e % HEAD_DIM, base = e - hd;
  if (hd >= ROT) return v_load(KTYPE, K_ROWW, i, e);
  uint j, ia, ib;
  if (ADJACENT != 0u) {
    j = hd / 2u;
    ia = base + 2u * j;
    ib = ia + 1u;
  } else {
    j = hd % half_;
    ia = base + j;
    ib = ia + half_;
  }
  float c = aux[TABLE_OFF + j], s = aux[TABLE_OFF + half_ + j];
  float v0 = v_load(KTYPE, K_ROWW, i, ia), v1 = v_load(KTYPE, K_ROWW, i, ib);
  precise float r = e == ia ? v0 * c - v1 * s : v0 * s + v1 * c;
  return r;
}

void main() {
  uint idx = flat_index();
  if (idx >= COUNT) return;
  uint i = idx / UNITS, u = idx % UNITS;
  uint first = kv_unit_first(KTYPE, u), cnt = kv_unit_count(KTYPE, u);
  float x[64];
  for (uint e = 0u; e < cnt; ++e) x[e] = rotated(i, first + e);
  k_store(KTYPE, K_ROWW, DST0 + i, u, x);
}

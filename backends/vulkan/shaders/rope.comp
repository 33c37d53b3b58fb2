#version 450
// Rotates pairs of a[i] in place for row i's position. cos/sin come from a
// table the host computed exactly as the CPU backend does (aux: cos for
// [context][half], then sin; one such table per distinct RoPE, TABLE_OFF
// floats in), so both backends rotate by the same angles. HALF is the
// rotated pairs per head (partial rotary: the elements past 2 x HALF stay);
// the host scaled cos/sin by the rope's mscale.
#include "common.glsl"
#define COLS pc.p[0]
#define HEAD_DIM pc.p[1]
#define ADJACENT pc.p[2]
#define COUNT pc.p[3]
#define HALF pc.p[4]
#define SIN_OFF pc.p[5]
#define TABLE_OFF pc.p[6]

void main() {
  uint idx = flat_index();
  if (idx >= COUNT) return;
  uint j = idx % HALF, rest = idx / HALF;
  uint heads = COLS / HEAD_DIM;
  uint hh = rest % heads, i = rest / heads;
  uint p = step_pos(i);
  float c = aux[TABLE_OFF + p * HALF + j], s = aux[TABLE_OFF + SIN_OFF + p * HALF + j];
  uint base = i * COLS + hh * HEAD_DIM;
  uint ia = ADJACENT != 0u ? 2u * j : j;
  uint ib = ADJACENT != 0u ? 2u * j + 1u : j + HALF;
  float v0 = a[base + ia], v1 = a[base + ib];
  a[base + ia] = v0 * c - v1 * s;
  a[base + ib] = v0 * s + v1 * c;
}

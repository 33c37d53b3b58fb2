#version 450
// out[i] = a[i] + weight row r, dequantized, where r is row i's position
// (BY_POSITION: BERT's learned positions) or 0 (its token type). Out may be a.
#include "common.glsl"
#include "weights.glsl"
#define COLS pc.p[0]
#define COUNT pc.p[1]
#define SOFF pc.p[2]
#define ROWS pc.p[3]
#define BY_POSITION pc.p[4]

void main() {
  uint idx = flat_index();
  if (idx >= COUNT) return;
  uint i = idx / COLS, c = idx % COLS;
  // The host holds positions below ROWS; the clamp keeps a bad one inside the buffer.
  uint r = BY_POSITION != 0u ? min(step_pos(i), ROWS - 1u) : 0u;
  o[idx] = a[idx] + w_elem(r * COLS + c, SOFF);
}

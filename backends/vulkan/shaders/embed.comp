#version 450
// out[i] = weight row tokens[i], dequantized. Bound by reading the rows.
#include "common.glsl"
#include "weights.glsl"
#define COLS pc.p[0]
#define COUNT pc.p[1]
#define SOFF pc.p[2]
#define VOCAB pc.p[3]
#define SCALE pc.p[4]

void main() {
  uint idx = flat_index();
  if (idx >= COUNT) return;
  uint i = idx / COLS, c = idx % COLS;
  // The host checks token ids; the clamp keeps a bad one inside the buffer.
  uint tok = min(uint(step_token(i)), VOCAB - 1u);
  float v = w_elem(tok * COLS + c, SOFF);
  // Gemma scales the embeddings (bits of a float; 0: none).
  o[idx] = SCALE != 0u ? v * uintBitsToFloat(SCALE) : v;
}

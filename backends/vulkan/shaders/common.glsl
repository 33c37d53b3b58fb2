// Shared by every ember compute shader: one descriptor-set layout of eight
// storage buffers (pipelines.h) and sixteen 32-bit push constants whose
// meaning each shader names with #defines. Workgroups are 64 invocations.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;

// binding 0: the step, written by the host before each submit
// (vulkan_backend.cpp write_step): its row count, output rows, the stride of
// the per-row arrays (max_batch) and the context, then per row its token,
// position and sequence (stride ints each), then the output rows (the rows
// the logits head reads, in order). The rest are bound per op (unused ones
// to a dummy).
layout(std430, set = 0, binding = 0) readonly buffer StepBuf {
  int n;
  int n_out;
  int stride;
  int context;
  int v[];
} step_buf;

int step_token(uint i) { return step_buf.v[i]; }
uint step_pos(uint i) { return uint(step_buf.v[uint(step_buf.stride) + i]); }
// Row i's sequence's first cache row: sequence s holds rows s * context ..
// s * context + context - 1 of every layer's cache (memory plan: n_seqs x context).
uint step_seq_row0(uint i) { return uint(step_buf.v[2u * uint(step_buf.stride) + i]) * uint(step_buf.context); }
uint step_out_row(uint r) { return uint(step_buf.v[3u * uint(step_buf.stride) + r]); }
layout(std430, set = 0, binding = 1) buffer ABuf { float a[]; };
layout(std430, set = 0, binding = 2) buffer BBuf { float b[]; };
layout(std430, set = 0, binding = 3) readonly buffer WBuf { uint w[]; };
layout(std430, set = 0, binding = 4) readonly buffer AuxBuf { float aux[]; };
layout(std430, set = 0, binding = 5) buffer OutBuf { float o[]; };
layout(std430, set = 0, binding = 6) buffer KBuf { uint kc[]; };
layout(std430, set = 0, binding = 7) buffer VBuf { uint vc[]; };

layout(push_constant) uniform Push { uint p[16]; } pc;

// Element index for 1-D dispatches split over x and y (x is at most 65535).
uint flat_index() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
}

// Shared by every ember compute shader: one descriptor-set layout of eight
// storage buffers (pipelines.h) and sixteen 32-bit push constants whose
// meaning each shader names with #defines. Workgroups are 64 invocations.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;

// binding 0: the step (position, token count, token ids), written by the host
// before each submit; the rest are bound per op (unused ones to a dummy).
layout(std430, set = 0, binding = 0) readonly buffer StepBuf { int pos; int n; int tokens[]; } step_buf;
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

// The compute shaders, compiled from shaders/*.comp to SPIR-V by glslc at
// build time and embedded by the build (a generated source in the build
// directory): no run-time compiler, nothing to install beside the library.
#pragma once

#include <cstddef>
#include <cstring>

namespace ember::vk {

struct ShaderBlob {
  const char* name;  // "matmul_q8_0", "attention", ...
  const unsigned char* code;  // SPIR-V words, 4-byte aligned
  size_t size;       // bytes
};

extern const ShaderBlob kShaderBlobs[];
extern const size_t kShaderBlobCount;

inline const ShaderBlob* find_shader(const char* name) {
  for (size_t i = 0; i < kShaderBlobCount; ++i) {
    if (std::strcmp(kShaderBlobs[i].name, name) == 0) return &kShaderBlobs[i];
  }
  return nullptr;
}

}  // namespace ember::vk

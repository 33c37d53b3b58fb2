#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"

namespace ember {

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::Embed: return "embed";
    case OpKind::RmsNorm: return "rmsnorm";
    case OpKind::MatMul: return "matmul";
    case OpKind::Rope: return "rope";
    case OpKind::Attention: return "attention";
    case OpKind::Add: return "add";
    case OpKind::SwiGLU: return "swiglu";
  }
  return "unknown";
}

Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options) {
  switch (kind) {
    case BackendKind::Cpu:
      return std::unique_ptr<Backend>(new CpuBackend(options));
  }
  return Status::error(EMBER_ERR_UNSUPPORTED, "backend %u is not built into this library",
                       static_cast<unsigned>(kind));
}

}  // namespace ember

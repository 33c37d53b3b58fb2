#include "core/graph.h"

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

}  // namespace ember

#include "core/kv_type.h"

#include <cstring>

namespace ember {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
  }
  return "unknown";
}

bool kv_type_from_name(const char* name, KvType* out) {
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) {
    if (std::strcmp(name, kv_type_name(t)) == 0) {
      *out = t;
      return true;
    }
  }
  return false;
}

DType kv_dtype(KvType t) {
  switch (t) {
    case KvType::F32: return DType::F32;
    case KvType::F16: return DType::F16;
    case KvType::Q8_0: return DType::Q8_0;
  }
  return DType::F32;
}

Result<uint64_t> kv_row_bytes(KvType t, uint64_t kv_dim) {
  uint64_t bytes = 0;
  if (!dtype_bytes(kv_dtype(t), kv_dim, &bytes)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "kv type %s needs kv_dim (%llu) to be a multiple of 32",
                         kv_type_name(t), static_cast<unsigned long long>(kv_dim));
  }
  return bytes;
}

void kv_store_row(KvType t, const float* src, void* dst, int64_t kv_dim) {
  quantize_row(kv_dtype(t), src, dst, kv_dim);
}

void kv_load_row(KvType t, const void* src, float* dst, int64_t kv_dim) {
  dequantize_row(kv_dtype(t), src, dst, kv_dim);
}

}  // namespace ember

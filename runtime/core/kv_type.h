// The KV cache's element types and row format, independent of the weights'
// (a q4_0 model may keep f16 keys; an f32 model q8_0 values). One row is one
// position's keys (or values) for all kv heads: kv_dim elements.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace ember {

enum class KvType : uint8_t { F32 = 0, F16 = 1, Q8_0 = 2 };

const char* kv_type_name(KvType t);
bool kv_type_from_name(const char* name, KvType* out);
DType kv_dtype(KvType t);

// Bytes of one row of kv_dim elements; fails (EMBER_ERR_UNSUPPORTED) when
// q8_0 is asked for a kv_dim that is not a multiple of 32.
Result<uint64_t> kv_row_bytes(KvType t, uint64_t kv_dim);

// Stores kv_dim floats as one row of type t.
void kv_store_row(KvType t, const float* src, void* dst, int64_t kv_dim);
// Loads one row of type t into floats.
void kv_load_row(KvType t, const void* src, float* dst, int64_t kv_dim);

}  // namespace ember

// A reader for GGUF v2/v3 files (llama.cpp's model format), used by the
// converter and the vocabulary importer. It parses a byte span it does not
// own and checks the whole structure before returning: every length, count
// and offset is bounded by the span, so a hostile file gets a Status, never a
// crash or a huge allocation.
//
// Lifetime: a GgufFile holds pointers and string_views into the span passed
// to parse(); that memory must outlive the GgufFile and everything taken from
// it (keys, string values, tensor names, tensor data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace ember {

// Metadata value types, numbered as in the GGUF specification.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "u32", "string", ...; "unknown" for values outside the enum.
const char* gguf_type_name(GgufType type);

// Some ggml tensor type ids (ggml.h's numbering). The reader knows the byte
// size of every type ember stores (ggml_type_to_dtype); other ids are kept
// as parsed (GgufTensorInfo::type) with size_known == false.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10, Q3_K = 11,
  Q4_K = 12, Q5_K = 13, Q6_K = 14, IQ4_NL = 20, IQ4_XS = 23, BF16 = 30,
};

// ggml's lowercase name of a type id ("f32", "q4_k", "iq2_xxs", ... as
// llama.cpp prints them), for every id ggml has named; nullptr for an id it
// never had.
const char* ggml_type_name(uint32_t type);

// The ember type whose blocks are ggml type `type`'s, bit for bit; false for
// a type ember does not store.
bool ggml_type_to_dtype(uint32_t type, DType* out);
// The inverse: the ggml type id of an ember type.
uint32_t ggml_type_of(DType t);

// One metadata value, viewed in place in the file.
struct GgufValue {
  GgufType type = GgufType::U8;
  // Scalars: integers and bool are widened into `u` (unsigned types, bool)
  // or `i` (signed types); F32/F64 into `f`.
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string_view str;  // String: the bytes as stored (not NUL-terminated)
  // Array: element type, element count, and the first element's bytes. The
  // reader has walked every element, so they are known to lie in the span.
  GgufType elem_type = GgufType::U8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;
  size_t elems_size = 0;  // bytes from `elems` to the end of the array
};

struct GgufKv {
  std::string_view key;
  GgufValue value;
};

// Maximum number of dimensions a tensor may have (as in ggml).
inline constexpr uint32_t kGgufMaxDims = 4;

struct GgufTensorInfo {
  std::string_view name;
  uint32_t n_dims = 0;
  // GGUF / ggml order: dims[0] is ne[0], the fastest-varying (contiguous)
  // dimension; for a weight matrix W[out][in] that is `in`. Entries past
  // n_dims are 1.
  uint64_t dims[kGgufMaxDims] = {1, 1, 1, 1};
  uint32_t type = 0;    // ggml type id, as stored (may be unknown here)
  uint64_t offset = 0;  // relative to the data section, as stored
  uint64_t n_elements = 0;
  // False for a type id this reader does not know: `size` is 0 and `data`
  // points at the offset only; the caller rejects such a tensor by name.
  bool size_known = false;
  uint64_t size = 0;              // bytes
  const uint8_t* data = nullptr;  // in the span; offset + size checked inside it
};

class GgufFile {
 public:
  // Parses and checks `size` bytes at `data` (not copied; see lifetime above).
  // Errors: EMBER_ERR_FORMAT (magic, value types, duplicate keys or tensor
  // names, bad alignment, nesting too deep), EMBER_ERR_VERSION (not 2 or 3),
  // EMBER_ERR_TRUNCATED (a count, length or section that needs more bytes
  // than remain, including absurd counts), EMBER_ERR_BAD_TENSOR (n_dims,
  // element count overflow, quantized row not a multiple of the block,
  // misaligned offset, data outside the file). Messages name the field.
  static Result<GgufFile> parse(const uint8_t* data, size_t size);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Offset of the data section from the start of the span; tensor offsets
  // are relative to it. Equals the span size when the file ends there.
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<GgufKv>& kvs() const { return kvs_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  // The entry for `key`, or nullptr when absent.
  const GgufKv* find(std::string_view key) const;
  // The tensor named `name`, or nullptr when absent.
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters. Integer getters accept any integer type whose value fits
  // losslessly; get_f32 accepts F32 and F64; get_bool accepts Bool only.
  // Errors: EMBER_ERR_FORMAT naming the key when it is absent, when its type
  // does not match (naming the actual type) or the value does not fit.
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<int32_t> get_i32(std::string_view key) const;
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  // The view lives as long as the span.
  Result<std::string_view> get_string(std::string_view key) const;
  // Arrays. get_i32_array accepts any integer element type whose values fit;
  // get_f32_array accepts F32 and F64 elements.
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;

 private:
  Result<const GgufKv*> require(std::string_view key) const;

  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace ember

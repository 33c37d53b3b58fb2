#include "tools/convert/gguf.h"

#include <cinttypes>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace ember {
namespace {

// Nested arrays are legal GGUF but no real file nests deeply; the bound keeps
// a hostile file from exhausting the stack through recursion.
constexpr uint32_t kMaxArrayDepth = 8;

// Smallest encoding of a key/value pair (u64 key length + u32 type + 1 byte
// value) and of a tensor info (u64 name length + u32 n_dims + u32 type + u64
// offset): bounds on n_kv and n_tensors before anything is read.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

// Bytes of a fixed-size scalar type; 0 for String/Array/unknown.
uint64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    default: return 0;
  }
}

bool is_known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::F64); }

// GGUF is little-endian; assembling bytes keeps the reader host-independent.
uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Sequential bounded reader over the span. Every read checks the remaining
// bytes first; failures name what was being read and where.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  Status need(uint64_t n, const char* what) const {
    if (n > remaining()) {
      return Status::error(EMBER_ERR_TRUNCATED,
                           "gguf: %s at offset %zu needs %" PRIu64 " bytes, %zu remain", what,
                           pos_, n, remaining());
    }
    return Status::ok();
  }
  Status skip(uint64_t n, const char* what) {
    EMBER_TRY(need(n, what));
    pos_ += static_cast<size_t>(n);
    return Status::ok();
  }
  Status u32(uint32_t* v, const char* what) {
    EMBER_TRY(need(4, what));
    *v = static_cast<uint32_t>(load_le(here(), 4));
    pos_ += 4;
    return Status::ok();
  }
  Status u64(uint64_t* v, const char* what) {
    EMBER_TRY(need(8, what));
    *v = load_le(here(), 8);
    pos_ += 8;
    return Status::ok();
  }
  Status string(std::string_view* s, const char* what) {
    uint64_t len = 0;
    EMBER_TRY(u64(&len, what));
    if (len > remaining()) {
      return Status::error(EMBER_ERR_TRUNCATED,
                           "gguf: %s at offset %zu has length %" PRIu64 ", %zu bytes remain",
                           what, pos_ - 8, len, remaining());
    }
    *s = std::string_view(reinterpret_cast<const char*>(here()), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return Status::ok();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

Status bad_type(std::string_view key, uint32_t type) {
  return Status::error(EMBER_ERR_FORMAT, "gguf: key '%.*s' has unknown value type %u",
                       static_cast<int>(key.size()), key.data(), type);
}

// Walks one value of type `t` (already known valid) without keeping it;
// used for array elements. `depth` counts enclosing arrays.
Status skip_value(Reader& r, GgufType t, uint32_t depth, std::string_view key) {
  if (t == GgufType::String) {
    std::string_view s;
    return r.string(&s, "array string element");
  }
  if (t != GgufType::Array) return r.skip(scalar_size(t), "array element");
  if (depth >= kMaxArrayDepth) {
    return Status::error(EMBER_ERR_FORMAT, "gguf: key '%.*s' nests arrays deeper than %u",
                         static_cast<int>(key.size()), key.data(), kMaxArrayDepth);
  }
  uint32_t elem_type = 0;
  uint64_t count = 0;
  EMBER_TRY(r.u32(&elem_type, "nested array element type"));
  if (!is_known_type(elem_type)) return bad_type(key, elem_type);
  EMBER_TRY(r.u64(&count, "nested array count"));
  const GgufType et = static_cast<GgufType>(elem_type);
  const uint64_t min_elem = et == GgufType::String ? 8 : et == GgufType::Array ? 12
                                                                            : scalar_size(et);
  if (count > r.remaining() / min_elem) {
    return Status::error(EMBER_ERR_TRUNCATED,
                         "gguf: nested array in key '%.*s' claims %" PRIu64
                         " elements of at least %" PRIu64 " bytes, %zu bytes remain",
                         static_cast<int>(key.size()), key.data(), count, min_elem,
                         r.remaining());
  }
  if (scalar_size(et) != 0) return r.skip(count * min_elem, "nested array data");
  for (uint64_t i = 0; i < count; ++i) EMBER_TRY(skip_value(r, et, depth + 1, key));
  return Status::ok();
}

Status read_value(Reader& r, uint32_t raw_type, std::string_view key, GgufValue* v) {
  if (!is_known_type(raw_type)) return bad_type(key, raw_type);
  v->type = static_cast<GgufType>(raw_type);
  switch (v->type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
    case GgufType::Bool: {
      const uint64_t n = scalar_size(v->type);
      EMBER_TRY(r.need(n, "metadata value"));
      v->u = load_le(r.here(), n);
      return r.skip(n, "metadata value");
    }
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64: {
      const uint64_t n = scalar_size(v->type);
      EMBER_TRY(r.need(n, "metadata value"));
      uint64_t raw = load_le(r.here(), n);
      if (n < 8 && (raw >> (8 * n - 1)) & 1) raw |= ~uint64_t{0} << (8 * n);  // sign-extend
      v->i = static_cast<int64_t>(raw);
      return r.skip(n, "metadata value");
    }
    case GgufType::F32: {
      EMBER_TRY(r.need(4, "metadata value"));
      const uint32_t bits = static_cast<uint32_t>(load_le(r.here(), 4));
      float f;
      std::memcpy(&f, &bits, 4);
      v->f = f;
      return r.skip(4, "metadata value");
    }
    case GgufType::F64: {
      EMBER_TRY(r.need(8, "metadata value"));
      const uint64_t bits = load_le(r.here(), 8);
      std::memcpy(&v->f, &bits, 8);
      return r.skip(8, "metadata value");
    }
    case GgufType::String:
      return r.string(&v->str, "metadata string value");
    case GgufType::Array: {
      uint32_t elem_type = 0;
      EMBER_TRY(r.u32(&elem_type, "array element type"));
      if (!is_known_type(elem_type)) return bad_type(key, elem_type);
      v->elem_type = static_cast<GgufType>(elem_type);
      EMBER_TRY(r.u64(&v->count, "array count"));
      const GgufType et = v->elem_type;
      const uint64_t min_elem = et == GgufType::String ? 8 : et == GgufType::Array ? 12
                                                                                : scalar_size(et);
      // Checked before any walk or allocation: a count that cannot fit in
      // the rest of the file is rejected here, whatever its size.
      if (v->count > r.remaining() / min_elem) {
        return Status::error(EMBER_ERR_TRUNCATED,
                             "gguf: array '%.*s' claims %" PRIu64
                             " elements of at least %" PRIu64 " bytes, %zu bytes remain",
                             static_cast<int>(key.size()), key.data(), v->count, min_elem,
                             r.remaining());
      }
      v->elems = r.here();
      const size_t start = r.pos();
      if (scalar_size(et) != 0) {
        EMBER_TRY(r.skip(v->count * min_elem, "array data"));
      } else {
        for (uint64_t i = 0; i < v->count; ++i) EMBER_TRY(skip_value(r, et, 1, key));
      }
      v->elems_size = r.pos() - start;
      return Status::ok();
    }
  }
  return bad_type(key, raw_type);
}

// Byte size of `info` when its type is known; BAD_TENSOR for shapes the
// type cannot hold.
Status tensor_size(GgufTensorInfo* info) {
  const int nl = static_cast<int>(info->name.size());
  const char* nm = info->name.data();
  DType t;
  if (!ggml_type_to_dtype(info->type, &t)) {
    info->size_known = false;
    info->size = 0;
    return Status::ok();
  }
  const uint64_t block = static_cast<uint64_t>(dtype_block_elements(t));
  if (info->dims[0] % block != 0) {
    return Status::error(EMBER_ERR_BAD_TENSOR,
                         "gguf: tensor '%.*s' of type %s has ne[0]=%" PRIu64
                         ", not a multiple of the %" PRIu64 "-element block",
                         nl, nm, ggml_type_name(info->type), info->dims[0], block);
  }
  uint64_t bytes = 0;
  if (!dtype_bytes(t, info->n_elements, &bytes)) {
    return Status::error(EMBER_ERR_BAD_TENSOR, "gguf: tensor '%.*s' byte size overflows", nl, nm);
  }
  info->size_known = true;
  info->size = bytes;
  return Status::ok();
}

Status read_tensor_info(Reader& r, uint32_t alignment, GgufTensorInfo* info) {
  EMBER_TRY(r.string(&info->name, "tensor name"));
  const int nl = static_cast<int>(info->name.size());
  const char* nm = info->name.data();
  EMBER_TRY(r.u32(&info->n_dims, "tensor n_dims"));
  if (info->n_dims > kGgufMaxDims) {
    return Status::error(EMBER_ERR_BAD_TENSOR, "gguf: tensor '%.*s' has n_dims=%u (max %u)", nl,
                         nm, info->n_dims, kGgufMaxDims);
  }
  uint64_t n = 1;
  for (uint32_t d = 0; d < info->n_dims; ++d) {
    EMBER_TRY(r.u64(&info->dims[d], "tensor dimension"));
    if (__builtin_mul_overflow(n, info->dims[d], &n) ||
        n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status::error(EMBER_ERR_BAD_TENSOR,
                           "gguf: tensor '%.*s' element count overflows at dims[%u]=%" PRIu64,
                           nl, nm, d, info->dims[d]);
    }
  }
  info->n_elements = n;
  EMBER_TRY(r.u32(&info->type, "tensor type"));
  EMBER_TRY(r.u64(&info->offset, "tensor offset"));
  if (info->offset % alignment != 0) {
    return Status::error(EMBER_ERR_BAD_TENSOR,
                         "gguf: tensor '%.*s' offset %" PRIu64 " is not a multiple of the alignment %u",
                         nl, nm, info->offset, alignment);
  }
  return tensor_size(info);
}

bool value_as_u64(const GgufValue& v, uint64_t* out) {
  switch (v.type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
      *out = v.u;
      return true;
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
      if (v.i < 0) return false;
      *out = static_cast<uint64_t>(v.i);
      return true;
    default:
      return false;
  }
}

bool value_as_i64(const GgufValue& v, int64_t* out) {
  switch (v.type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
      if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(v.u);
      return true;
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
      *out = v.i;
      return true;
    default:
      return false;
  }
}

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
      return true;
    default:
      return false;
  }
}

Status type_mismatch(const GgufKv& kv, const char* wanted) {
  if (kv.value.type == GgufType::Array) {
    return Status::error(EMBER_ERR_FORMAT, "gguf: key '%.*s' is array of %s, expected %s",
                         static_cast<int>(kv.key.size()), kv.key.data(),
                         gguf_type_name(kv.value.elem_type), wanted);
  }
  return Status::error(EMBER_ERR_FORMAT, "gguf: key '%.*s' is %s, expected %s",
                       static_cast<int>(kv.key.size()), kv.key.data(),
                       gguf_type_name(kv.value.type), wanted);
}

Status out_of_range(const GgufKv& kv, const char* wanted) {
  return Status::error(EMBER_ERR_FORMAT, "gguf: key '%.*s' (%s) value does not fit in %s",
                       static_cast<int>(kv.key.size()), kv.key.data(),
                       gguf_type_name(kv.value.type), wanted);
}

// Decodes array element `i` of fixed-size type `et` at `p` into a GgufValue
// scalar so the integer coercions above can be reused.
GgufValue element_at(GgufType et, const uint8_t* p) {
  GgufValue v;
  v.type = et;
  const uint64_t n = scalar_size(et);
  uint64_t raw = load_le(p, n);
  switch (et) {
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
      if (n < 8 && (raw >> (8 * n - 1)) & 1) raw |= ~uint64_t{0} << (8 * n);
      v.i = static_cast<int64_t>(raw);
      break;
    case GgufType::F32: {
      const uint32_t bits = static_cast<uint32_t>(raw);
      float f;
      std::memcpy(&f, &bits, 4);
      v.f = f;
      break;
    }
    case GgufType::F64:
      std::memcpy(&v.f, &raw, 8);
      break;
    default:
      v.u = raw;
  }
  return v;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::U8: return "u8";
    case GgufType::I8: return "i8";
    case GgufType::U16: return "u16";
    case GgufType::I16: return "i16";
    case GgufType::U32: return "u32";
    case GgufType::I32: return "i32";
    case GgufType::F32: return "f32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::U64: return "u64";
    case GgufType::I64: return "i64";
    case GgufType::F64: return "f64";
  }
  return "unknown";
}

const char* ggml_type_name(uint32_t type) {
  // ggml.h's ids; the gaps are types ggml removed.
  static const char* const kNames[] = {
      "f32",     "f16",    "q4_0",   "q4_1",  "q4_2",    "q4_3",    "q5_0",   "q5_1",  "q8_0",
      "q8_1",    "q2_k",   "q3_k",   "q4_k",  "q5_k",    "q6_k",    "q8_k",   "iq2_xxs", "iq2_xs",
      "iq3_xxs", "iq1_s",  "iq4_nl", "iq3_s", "iq2_s",   "iq4_xs",  "i8",     "i16",   "i32",
      "i64",     "f64",    "iq1_m",  "bf16",  "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0", "tq2_0",
      "iq4_nl_4_4", "iq4_nl_4_8", "iq4_nl_8_8", "mxfp4", "nvfp4", "q1_0", "q2_0",
  };
  return type < sizeof(kNames) / sizeof(kNames[0]) ? kNames[type] : nullptr;
}

namespace {
constexpr struct { GgmlType ggml; DType ember; } kStoredTypes[] = {
    {GgmlType::F32, DType::F32},     {GgmlType::F16, DType::F16},       {GgmlType::BF16, DType::BF16},
    {GgmlType::Q8_0, DType::Q8_0},   {GgmlType::Q4_0, DType::Q4_0},     {GgmlType::Q4_1, DType::Q4_1},
    {GgmlType::Q5_0, DType::Q5_0},   {GgmlType::Q5_1, DType::Q5_1},     {GgmlType::Q2_K, DType::Q2_K},
    {GgmlType::Q3_K, DType::Q3_K},   {GgmlType::Q4_K, DType::Q4_K},     {GgmlType::Q5_K, DType::Q5_K},
    {GgmlType::Q6_K, DType::Q6_K},   {GgmlType::IQ4_NL, DType::IQ4_NL}, {GgmlType::IQ4_XS, DType::IQ4_XS},
};
static_assert(sizeof(kStoredTypes) / sizeof(kStoredTypes[0]) == kDTypeCount, "every ember type has a ggml id");
}  // namespace

bool ggml_type_to_dtype(uint32_t type, DType* out) {
  for (const auto& m : kStoredTypes) {
    if (static_cast<uint32_t>(m.ggml) == type) {
      *out = m.ember;
      return true;
    }
  }
  return false;
}

uint32_t ggml_type_of(DType t) {
  for (const auto& m : kStoredTypes) {
    if (m.ember == t) return static_cast<uint32_t>(m.ggml);
  }
  return 0;
}

Result<GgufFile> GgufFile::parse(const uint8_t* data, size_t size) {
  if (data == nullptr && size != 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "gguf: data is NULL with size %zu", size);
  }
  Reader r(data, size);
  GgufFile file;

  uint32_t magic = 0;
  EMBER_TRY(r.u32(&magic, "magic"));
  if (std::memcmp(data, "GGUF", 4) != 0) {
    return Status::error(EMBER_ERR_FORMAT,
                         "gguf: magic is %02x %02x %02x %02x, expected \"GGUF\"", data[0],
                         data[1], data[2], data[3]);
  }
  EMBER_TRY(r.u32(&file.version_, "version"));
  if (file.version_ != 2 && file.version_ != 3) {
    return Status::error(EMBER_ERR_VERSION,
                         "gguf: version %u is not supported (2 and 3 are)", file.version_);
  }
  uint64_t n_tensors = 0, n_kv = 0;
  EMBER_TRY(r.u64(&n_tensors, "tensor count"));
  EMBER_TRY(r.u64(&n_kv, "metadata count"));
  if (n_kv > r.remaining() / kMinKvBytes) {
    return Status::error(EMBER_ERR_TRUNCATED,
                         "gguf: metadata count %" PRIu64 " cannot fit in the %zu bytes left",
                         n_kv, r.remaining());
  }

  std::unordered_set<std::string_view> seen;
  for (uint64_t k = 0; k < n_kv; ++k) {
    GgufKv kv;
    uint32_t type = 0;
    EMBER_TRY(r.string(&kv.key, "metadata key"));
    EMBER_TRY(r.u32(&type, "metadata value type"));
    EMBER_TRY(read_value(r, type, kv.key, &kv.value));
    if (!seen.insert(kv.key).second) {
      return Status::error(EMBER_ERR_FORMAT, "gguf: duplicate metadata key '%.*s'",
                           static_cast<int>(kv.key.size()), kv.key.data());
    }
    file.kvs_.push_back(kv);
  }

  if (const GgufKv* a = file.find("general.alignment")) {
    uint64_t v = 0;
    if (!value_as_u64(a->value, &v) || v == 0 || v > (1u << 30) || (v & (v - 1)) != 0) {
      return Status::error(EMBER_ERR_FORMAT,
                           "gguf: general.alignment (%s) must be a power of two integer, got %" PRIu64,
                           gguf_type_name(a->value.type), v);
    }
    file.alignment_ = static_cast<uint32_t>(v);
  }

  if (n_tensors > r.remaining() / kMinTensorInfoBytes) {
    return Status::error(EMBER_ERR_TRUNCATED,
                         "gguf: tensor count %" PRIu64 " cannot fit in the %zu bytes left",
                         n_tensors, r.remaining());
  }
  seen.clear();
  for (uint64_t t = 0; t < n_tensors; ++t) {
    GgufTensorInfo info;
    EMBER_TRY(read_tensor_info(r, file.alignment_, &info));
    if (!seen.insert(info.name).second) {
      return Status::error(EMBER_ERR_FORMAT, "gguf: duplicate tensor name '%.*s'",
                           static_cast<int>(info.name.size()), info.name.data());
    }
    file.tensors_.push_back(info);
  }

  // The data section starts at the next alignment boundary. A file without
  // tensors may end before it (vocabulary-only files do).
  const uint64_t pos = r.pos();
  const uint64_t data_offset = pos + (file.alignment_ - pos % file.alignment_) % file.alignment_;
  if (data_offset > size) {
    if (!file.tensors_.empty()) {
      return Status::error(EMBER_ERR_TRUNCATED,
                           "gguf: data section starts at %" PRIu64 " but the file has %zu bytes",
                           data_offset, size);
    }
    file.data_offset_ = size;
  } else {
    file.data_offset_ = data_offset;
  }
  const uint64_t data_size = size - file.data_offset_;
  for (GgufTensorInfo& info : file.tensors_) {
    if (info.offset > data_size || info.size > data_size - info.offset) {
      return Status::error(EMBER_ERR_BAD_TENSOR,
                           "gguf: tensor '%.*s' data at offset %" PRIu64 " size %" PRIu64
                           " lies outside the data section (%" PRIu64 " bytes)",
                           static_cast<int>(info.name.size()), info.name.data(), info.offset,
                           info.size, data_size);
    }
    info.data = data + file.data_offset_ + info.offset;
  }
  return file;
}

const GgufKv* GgufFile::find(std::string_view key) const {
  for (const GgufKv& kv : kvs_) {
    if (kv.key == key) return &kv;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<const GgufKv*> GgufFile::require(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) {
    return Status::error(EMBER_ERR_FORMAT, "gguf: key '%.*s' is missing",
                         static_cast<int>(key.size()), key.data());
  }
  return kv;
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  uint64_t v = 0;
  if (!is_integer(kv->value.type)) return type_mismatch(*kv, "u32");
  if (!value_as_u64(kv->value, &v) || v > std::numeric_limits<uint32_t>::max()) {
    return out_of_range(*kv, "u32");
  }
  return static_cast<uint32_t>(v);
}

Result<int32_t> GgufFile::get_i32(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  int64_t v = 0;
  if (!is_integer(kv->value.type)) return type_mismatch(*kv, "i32");
  if (!value_as_i64(kv->value, &v) || v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    return out_of_range(*kv, "i32");
  }
  return static_cast<int32_t>(v);
}

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  uint64_t v = 0;
  if (!is_integer(kv->value.type)) return type_mismatch(*kv, "u64");
  if (!value_as_u64(kv->value, &v)) return out_of_range(*kv, "u64");
  return v;
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  if (kv->value.type != GgufType::F32 && kv->value.type != GgufType::F64) {
    return type_mismatch(*kv, "f32");
  }
  return static_cast<float>(kv->value.f);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  if (kv->value.type != GgufType::Bool) return type_mismatch(*kv, "bool");
  return kv->value.u != 0;
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  if (kv->value.type != GgufType::String) return type_mismatch(*kv, "string");
  return kv->value.str;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  const GgufValue& v = kv->value;
  if (v.type != GgufType::Array || v.elem_type != GgufType::String) {
    return type_mismatch(*kv, "array of string");
  }
  // parse() walked these elements, so the re-walk stays inside the array.
  Reader r(v.elems, v.elems_size);
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(v.count));
  for (uint64_t i = 0; i < v.count; ++i) {
    std::string_view s;
    EMBER_TRY(r.string(&s, "array string element"));
    out.emplace_back(s);
  }
  return out;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  const GgufValue& v = kv->value;
  if (v.type != GgufType::Array ||
      (v.elem_type != GgufType::F32 && v.elem_type != GgufType::F64)) {
    return type_mismatch(*kv, "array of f32");
  }
  const uint64_t es = scalar_size(v.elem_type);
  std::vector<float> out;
  out.reserve(static_cast<size_t>(v.count));
  for (uint64_t i = 0; i < v.count; ++i) {
    out.push_back(static_cast<float>(element_at(v.elem_type, v.elems + i * es).f));
  }
  return out;
}

Result<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  EMBER_ASSIGN_OR_RETURN(const GgufKv* kv, require(key));
  const GgufValue& v = kv->value;
  if (v.type != GgufType::Array || !is_integer(v.elem_type)) {
    return type_mismatch(*kv, "array of i32");
  }
  const uint64_t es = scalar_size(v.elem_type);
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(v.count));
  for (uint64_t i = 0; i < v.count; ++i) {
    int64_t x = 0;
    if (!value_as_i64(element_at(v.elem_type, v.elems + i * es), &x) ||
        x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
      return Status::error(EMBER_ERR_FORMAT,
                           "gguf: key '%.*s' element %" PRIu64 " (%s) does not fit in i32",
                           static_cast<int>(kv->key.size()), kv->key.data(), i,
                           gguf_type_name(v.elem_type));
    }
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

}  // namespace ember

// The C API's inspection section (ember.h "Inspection: backends and model
// files"): the backends built in and what each probe found, what an open
// model's file holds, and its digest and signature checked on demand.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "api/c_api_internal.h"
#include "backend/backend.h"
#include "core/kv_type.h"
#include "format/model_file.h"
#include "model/model.h"
#include "security/signature.h"

namespace {

// ember.h's numbers are the runtime's own, so they convert by value.
static_assert(EMBER_TYPE_COUNT == ember::kDTypeCount);
static_assert(EMBER_TYPE_Q8_0 == static_cast<int>(ember::DType::Q8_0) &&
              EMBER_TYPE_Q2_K == static_cast<int>(ember::DType::Q2_K) &&
              EMBER_TYPE_IQ4_XS == static_cast<int>(ember::DType::IQ4_XS));
static_assert(EMBER_DEVICE_CPU == static_cast<int>(ember::DeviceType::Cpu) &&
              EMBER_DEVICE_INTEGRATED_GPU == static_cast<int>(ember::DeviceType::IntegratedGpu) &&
              EMBER_DEVICE_DISCRETE_GPU == static_cast<int>(ember::DeviceType::DiscreteGpu) &&
              EMBER_DEVICE_VIRTUAL == static_cast<int>(ember::DeviceType::Virtual) &&
              EMBER_DEVICE_OTHER == static_cast<int>(ember::DeviceType::Other));

ember_status fail(ember_status code, const char* message) {
  return ember::set_last_error(ember::Status::error(code, "%s", message));
}

bool struct_ok(size_t got, size_t want) { return got >= sizeof(size_t) && got <= want; }

ember_status bad_struct_size(const char* type, size_t got, size_t want) {
  return ember::set_last_error(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                                    "%s.struct_size = %zu: set it to sizeof(%s) = %zu", type, got,
                                                    type, want));
}

// 64 hex digits and a NUL; "" for a digest of another size (not recorded).
void hex_into(const uint8_t* bytes, size_t n, char out[65]) {
  out[0] = '\0';
  if (n != 32) return;
  const std::string hex = ember::to_hex(bytes, n);
  std::memcpy(out, hex.c_str(), 65);
}

// Every backend's probe, made once: the answers (and the strings
// ember_backend_info points at) live for the process.
const std::vector<ember::DeviceInfo>& probes() {
  static const std::vector<ember::DeviceInfo> all = [] {
    std::vector<ember::DeviceInfo> v;
    for (const ember::BackendEntry& e : ember::backend_entries()) v.push_back(e.probe());
    return v;
  }();
  return all;
}

// NUL-terminated when len is 0; at most 64 KiB (a P-256 PEM key is ~180 bytes).
bool pem_view(const char* pem, size_t len, std::string_view* out) {
  constexpr size_t kMaxPem = 1 << 16;
  if (!len) len = strnlen(pem, kMaxPem + 1);
  if (len == 0 || len > kMaxPem) {
    ember::set_last_error(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                               "the PEM key is %zu bytes: a P-256 PEM key is about 180", len));
    return false;
  }
  *out = std::string_view(pem, len);
  return true;
}

}  // namespace

extern "C" {

size_t ember_backend_count(void) { return ember::backend_entries().size(); }

ember_status ember_backend_get_info(size_t index, ember_backend_info* info) {
  ember::clear_last_error();
  if (!info) return fail(EMBER_ERR_INVALID_ARGUMENT, "info is NULL");
  if (!struct_ok(info->struct_size, sizeof *info)) {
    return bad_struct_size("ember_backend_info", info->struct_size, sizeof *info);
  }
  const std::vector<ember::BackendEntry>& entries = ember::backend_entries();
  if (index >= entries.size()) {
    return ember::set_last_error(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                                      "backend index %zu: this library has %zu backends", index,
                                                      entries.size()));
  }
  const ember::BackendEntry& e = entries[index];
  const ember::DeviceInfo& d = probes()[index];
  ember_backend_info full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.name = e.name;
  full.kind = e.kind == ember::BackendKind::Cpu ? EMBER_BACKEND_CPU : EMBER_BACKEND_VULKAN;
  full.available = d.available ? 1 : 0;
  full.device_type = static_cast<int32_t>(d.type);
  full.device_type_name = ember::device_type_name(d.type);
  full.device_name = d.name.c_str();
  full.memory_bytes = d.memory_bytes;
  full.unavailable_reason = d.available ? "" : d.reason.c_str();
  // What the entry's capabilities say it runs.
  full.batched_decoding = e.caps.batched_sequences ? 1 : 0;
  full.weight_types = e.caps.weight_types;
  full.kv_types = e.caps.kv_types;
  std::memcpy(info, &full, info->struct_size);
  return EMBER_OK;
}

ember_status ember_model_get_file_info(const ember_model* model, ember_model_file_info* info) {
  ember::clear_last_error();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!info) return fail(EMBER_ERR_INVALID_ARGUMENT, "info is NULL");
  if (!struct_ok(info->struct_size, sizeof *info)) {
    return bad_struct_size("ember_model_file_info", info->struct_size, sizeof *info);
  }
  const ember::ModelFile& file = ember::model_of(model).file();
  const ember::ModelContents& c = file.contents();
  ember_model_file_info full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.file_bytes = file.mapping().size();
  full.schema_version = c.schema_version;
  full.data_offset = c.data_offset;
  full.data_bytes = c.data_size;
  hex_into(c.data_sha256.data(), c.data_sha256.size(), full.data_sha256);
  full.signed_bytes = c.signed_size;
  full.has_signature = c.has_signature ? 1 : 0;
  if (c.has_signature) hex_into(c.signature_key_id.data(), c.signature_key_id.size(), full.signature_key_id);
  full.source_file = c.provenance.source_file.c_str();
  hex_into(c.provenance.source_sha256.data(), c.provenance.source_sha256.size(), full.source_sha256);
  full.converter = c.provenance.converter.c_str();
  full.quantization = c.provenance.quantization.c_str();
  full.n_tensors = c.tensors.size();
  for (const ember::TensorView& t : c.tensors) {
    full.weight_bytes += t.size;
    // A decode step reads one row of the embedding table (all of it when it
    // is also the output matrix) and every other tensor whole.
    const bool one_row = t.name == "token_embd.weight" && !c.hparams.tied_embeddings;
    full.decode_weight_bytes += one_row ? t.size / std::max<int64_t>(1, t.rows()) : t.size;
  }
  std::memcpy(info, &full, info->struct_size);
  return EMBER_OK;
}

ember_status ember_model_get_tensor_info(const ember_model* model, size_t index, ember_tensor_info* info) {
  ember::clear_last_error();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!info) return fail(EMBER_ERR_INVALID_ARGUMENT, "info is NULL");
  if (!struct_ok(info->struct_size, sizeof *info)) {
    return bad_struct_size("ember_tensor_info", info->struct_size, sizeof *info);
  }
  const std::vector<ember::TensorView>& tensors = ember::model_of(model).file().tensors();
  if (index >= tensors.size()) {
    return ember::set_last_error(ember::Status::error(
        EMBER_ERR_INVALID_ARGUMENT, "tensor index %zu: the model has %zu tensors", index, tensors.size()));
  }
  const ember::TensorView& t = tensors[index];
  ember_tensor_info full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.name = t.name.c_str();
  full.type = static_cast<int32_t>(t.dtype);
  full.type_name = ember::dtype_name(t.dtype);
  full.layout = ember::layout_name(t.layout);
  full.n_dims = t.n_dims;
  for (int i = 0; i < 4 && i < ember::kMaxDims; ++i) full.shape[i] = i < t.n_dims ? t.shape[i] : 0;
  full.elements = t.elements();
  full.offset = t.offset;
  full.bytes = t.size;
  full.bits_per_weight = ember::dtype_bits(t.dtype);
  std::memcpy(info, &full, info->struct_size);
  return EMBER_OK;
}

ember_status ember_model_check_digest(const ember_model* model) {
  ember::clear_last_error();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  const ember::ModelFile& file = ember::model_of(model).file();
  ember::Status s = ember::check_data_digest(file.mapping().data(), file.contents());
  if (s.is_ok()) s = file.check_intact();
  return ember::set_last_error(s);
}

ember_status ember_model_check_signature(const ember_model* model, const char* public_key_pem,
                                         size_t public_key_pem_len) {
  ember::clear_last_error();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!public_key_pem) return fail(EMBER_ERR_INVALID_ARGUMENT, "public_key_pem is NULL");
  std::string_view pem;
  if (!pem_view(public_key_pem, public_key_pem_len, &pem)) return EMBER_ERR_INVALID_ARGUMENT;
  const ember::ModelFile& file = ember::model_of(model).file();
  return ember::set_last_error(ember::check_signature(file.mapping().data(), file.contents(), pem));
}

ember_status ember_key_id(const char* pem, size_t pem_len, char out_hex[65]) {
  ember::clear_last_error();
  if (!out_hex) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_hex is NULL");
  out_hex[0] = '\0';
  if (!pem) return fail(EMBER_ERR_INVALID_ARGUMENT, "pem is NULL");
  std::string_view text;
  if (!pem_view(pem, pem_len, &text)) return EMBER_ERR_INVALID_ARGUMENT;
  ember::Result<ember::Sha256Digest> id = ember::key_id_from_pem(text);
  if (!id.is_ok()) return ember::set_last_error(id.status());
  hex_into(id->data(), id->size(), out_hex);
  return EMBER_OK;
}

}  // extern "C"

extern "C" const char* ember_weight_type_name(int32_t type) {
  if (type < 0 || type >= ember::kDTypeCount) return "?";
  return ember::dtype_name(static_cast<ember::DType>(type));
}

extern "C" const char* ember_kv_type_name(int32_t type) {
  if (type < EMBER_KV_F32 || type > EMBER_KV_Q8_0) return "?";
  return ember::kv_type_name(static_cast<ember::KvType>(type));
}

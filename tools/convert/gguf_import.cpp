// GGUF (llama architecture) to ember: hyper-parameters from llama.* keys, the
// vocabulary from tokenizer.ggml.*, tensors byte for byte (GGUF's blocks are
// ember's for every type ember stores; core/dtype.h). GGUF dims are innermost first; ember shapes are
// outermost first, so the dims are reversed and the bytes kept.
#include <cstring>

#include "model/llama_graph.h"
#include "tools/convert/gguf.h"
#include "tools/convert/importers.h"
#include "tools/convert/vocab_import.h"

namespace ember {
namespace {

Result<DType> dtype_from_ggml(const GgufTensorInfo& t) {
  DType d;
  if (ggml_type_to_dtype(t.type, &d)) return d;
  const char* name = ggml_type_name(t.type);
  if (name) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "tensor '%.*s' has type %s, which ember does not run",
                         static_cast<int>(t.name.size()), t.name.data(), name);
  }
  return Status::error(EMBER_ERR_UNSUPPORTED, "tensor '%.*s' has ggml type %u, which ember does not run",
                       static_cast<int>(t.name.size()), t.name.data(), t.type);
}

}  // namespace

bool is_gguf_file(const std::string& path) {
  // Only the magic: the input may be gigabytes, and import maps it anyway.
  auto mapped = MappedFile::open(path);
  return mapped.is_ok() && mapped->size() >= 4 && std::memcmp(mapped->data(), "GGUF", 4) == 0;
}

Result<std::unique_ptr<ImportedModel>> import_gguf(const std::string& path) {
  auto model = std::make_unique<ImportedModel>();
  EMBER_ASSIGN_OR_RETURN(model->source, MappedFile::open(path));
  EMBER_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::parse(model->source.data(), model->source.size()));
  EMBER_ASSIGN_OR_RETURN(std::string_view arch, gguf.get_string("general.architecture"));
  if (arch != "llama") {
    return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': general.architecture = '%.*s'; ember converts 'llama'",
                         path.c_str(), static_cast<int>(arch.size()), arch.data());
  }
  HParams& hp = model->spec.hparams;
  EMBER_ASSIGN_OR_RETURN(hp.dim, gguf.get_u32("llama.embedding_length"));
  EMBER_ASSIGN_OR_RETURN(hp.hidden_dim, gguf.get_u32("llama.feed_forward_length"));
  EMBER_ASSIGN_OR_RETURN(hp.n_layers, gguf.get_u32("llama.block_count"));
  EMBER_ASSIGN_OR_RETURN(hp.n_heads, gguf.get_u32("llama.attention.head_count"));
  hp.n_kv_heads = hp.n_heads;
  if (gguf.find("llama.attention.head_count_kv")) {
    EMBER_ASSIGN_OR_RETURN(hp.n_kv_heads, gguf.get_u32("llama.attention.head_count_kv"));
  }
  EMBER_ASSIGN_OR_RETURN(hp.max_seq_len, gguf.get_u32("llama.context_length"));
  if (gguf.find("llama.attention.layer_norm_rms_epsilon")) {
    EMBER_ASSIGN_OR_RETURN(hp.norm_eps, gguf.get_f32("llama.attention.layer_norm_rms_epsilon"));
  }
  if (gguf.find("llama.rope.freq_base")) {
    EMBER_ASSIGN_OR_RETURN(hp.rope_theta, gguf.get_f32("llama.rope.freq_base"));
  }
  // GGUF "llama" files rotate adjacent pairs (their converter permutes the
  // Hugging Face Q/K rows to make it so).
  hp.rope_style = RopeStyle::Adjacent;
  EMBER_ASSIGN_OR_RETURN(model->spec.vocab, vocab_from_gguf(gguf));
  hp.vocab_size = static_cast<uint32_t>(model->spec.vocab.pieces.size());
  hp.tied_embeddings = gguf.find_tensor("output.weight") == nullptr;

  for (const GgufTensorInfo& t : gguf.tensors()) {
    EMBER_ASSIGN_OR_RETURN(DType dtype, dtype_from_ggml(t));
    TensorSource s;
    s.name.assign(t.name.data(), t.name.size());
    s.dtype = dtype;
    for (int d = static_cast<int>(t.n_dims) - 1; d >= 0; --d) s.shape.push_back(static_cast<int64_t>(t.dims[d]));
    s.data = t.data;
    s.size = t.size;
    // Norm vectors run in f32 (tiny; ember's kernels read them as f32).
    const bool is_vector = t.n_dims == 1;
    if (is_vector && dtype != DType::F32) {
      std::vector<uint8_t> f32(t.n_elements * sizeof(float));
      dequantize_row(dtype, t.data, reinterpret_cast<float*>(f32.data()), static_cast<int64_t>(t.n_elements));
      s.dtype = DType::F32;
      s.data = f32.data();
      s.size = f32.size();
      model->owned.push_back(std::move(f32));
    }
    model->spec.tensors.push_back(std::move(s));
  }
  set_provenance(model.get(), path);
  return model;
}

void set_provenance(ImportedModel* model, const std::string& source_path) {
  Provenance& p = model->spec.provenance;
  const size_t slash = source_path.find_last_of('/');
  p.source_file = slash == std::string::npos ? source_path : source_path.substr(slash + 1);
  const Sha256Digest d = sha256(model->source.data(), model->source.size());
  p.source_sha256.assign(d.begin(), d.end());
  p.converter = std::string("ember convert ") + EMBER_VERSION_STRING;
  // A short summary of the weight types: "f32", or "q8_0 (+f32 x11)".
  int counts[kDTypeCount] = {};
  for (const auto& t : model->spec.tensors) counts[static_cast<int>(t.dtype)]++;
  std::string q;
  for (int i = 0; i < kDTypeCount; ++i) {
    if (!counts[i]) continue;
    if (!q.empty()) q += ", ";
    q += std::string(dtype_name(static_cast<DType>(i))) + " x" + std::to_string(counts[i]);
  }
  p.quantization = q;
}

}  // namespace ember

// GGUF (llama, qwen2, qwen3, phi3, gemma2 and gemma3 architectures) to ember: hyper-parameters from the
// ARCH.* keys, the
// vocabulary from tokenizer.ggml.*, tensors byte for byte (GGUF's blocks are
// ember's for every type ember stores; core/dtype.h). GGUF dims are innermost first; ember shapes are
// outermost first, so the dims are reversed and the bytes kept.
#include <cmath>
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

// A scalar key's value as a double (integers, bools and floats), for the
// neutral-value checks; false for strings and arrays.
bool numeric(const GgufValue& v, double* out) {
  switch (v.type) {
    case GgufType::F32:
    case GgufType::F64: *out = v.f; return true;
    case GgufType::I8:
    case GgufType::I16:
    case GgufType::I32:
    case GgufType::I64: *out = static_cast<double>(v.i); return true;
    case GgufType::U8:
    case GgufType::U16:
    case GgufType::U32:
    case GgufType::U64:
    case GgufType::Bool: *out = static_cast<double>(v.u); return true;
    default: return false;
  }
}

// Every llama.* key is either read above, checked here against the value
// that leaves the arithmetic as ember runs it, or refused by name: a key
// that changes the model's arithmetic is never dropped (a Llama 3.1 file
// converted with its scaling ignored would run with wrong logits).
Status check_arch_keys(const GgufFile& gguf, const HParams& hp, const std::string& arch, const std::string& path) {
  static constexpr const char* kRead[] = {
      "context_length",          "embedding_length",
      "block_count",             "feed_forward_length",
      "attention.head_count",    "attention.head_count_kv",
      "attention.layer_norm_rms_epsilon", "rope.freq_base", "pooling_type"};
  struct Neutral {
    const char* key;
    double value;
    const char* meaning;
  };
  const Neutral neutral[] = {
      {"rope.dimension_count", static_cast<double>(hp.head_dim()), "RoPE on part of each head"},
      {"attention.key_length", static_cast<double>(hp.head_dim()), "a key width other than the head width"},
      {"attention.value_length", static_cast<double>(hp.head_dim()), "a value width other than the key width"},
      {"vocab_size", static_cast<double>(hp.vocab_size), "a vocabulary size other than the token list's"},
      {"expert_count", 0.0, "mixture-of-experts layers"},
      {"expert_used_count", 0.0, "mixture-of-experts layers"},
      {"rope.scaling.factor", 1.0, "RoPE frequency scaling"},
      {"rope.scale_linear", 1.0, "linear RoPE scaling"},
      {"rope.scaling.attn_factor", 1.0, "YaRN attention scaling"},
  };
  // Only meaningful with a scaling type, which is checked below.
  static constexpr const char* kScalingOnly[] = {"rope.scaling.original_context_length", "rope.scaling.finetuned"};
  // Gemma's keys, read by import_gguf (gemma3 has no attention soft-cap:
  // llama.cpp ignores the key there, ember refuses it).
  static constexpr const char* kGemmaRead[] = {"final_logit_softcapping", "attention.sliding_window",
                                               "attention.sliding_window_pattern", "rope.freq_base_swa"};
  const bool gemma = model_arch_is_gemma(hp.arch);
  const std::string prefix = arch + ".";
  for (const GgufKv& kv : gguf.kvs()) {
    const std::string key(kv.key);
    if (key == "split.count") {
      double n = 0;
      if (numeric(kv.value, &n) && n > 1) {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "'%s' is one part of a GGUF split into %.0f files (split.count); merge them first "
                             "(llama-gguf-split --merge)",
                             path.c_str(), n);
      }
      continue;
    }
    if (key.rfind(prefix, 0) != 0) continue;  // general.*, tokenizer.*, quantize.*: no arithmetic
    const std::string name = key.substr(prefix.size());
    bool ok = false;
    for (const char* k : kRead) ok |= name == k;
    for (const char* k : kScalingOnly) ok |= name == k;
    for (const char* k : kGemmaRead) ok |= gemma && name == k;
    ok |= model_arch_is_encoder(hp.arch) && (name == "attention.layer_norm_epsilon" || name == "attention.causal");
    ok |= hp.arch == ModelArch::Gemma2 && name == "attn_logit_softcapping";
    // llama.cpp reads phi3's sliding window and then turns it off (n_swa = 0,
    // every layer global; its phi3 loader warns "Phi SWA is currently
    // disabled"): the file's arithmetic there is full causal attention,
    // which ember runs. Gemma's windows are read; others' are refused below.
    if (hp.arch == ModelArch::Phi3 && name == "attention.sliding_window") ok = true;
    // phi3's partial rotary and LongRoPE attention factor (read and checked
    // by import_gguf; llama.cpp's llama, qwen2 and qwen3 graphs assert full
    // rotary, so there the neutral check below refuses it).
    if (hp.arch == ModelArch::Phi3 && (name == "rope.dimension_count" || name == "rope.scaling.attn_factor")) ok = true;
    // Gemma 3's linear scaling of the global layers (read by import_gguf).
    const bool gemma3_linear = hp.arch == ModelArch::Gemma3 && kv.value.type == GgufType::String &&
                               kv.value.str == "linear";
    if (hp.arch == ModelArch::Gemma3 && (name == "rope.scaling.factor" || name == "rope.scale_linear")) {
      ok = true;
    } else if (name == "rope.scaling.type" && gemma3_linear) {
      ok = true;
    } else if (name == "rope.scaling.type") {
      if (kv.value.type != GgufType::String || kv.value.str != "none") {
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "'%s': %s = '%.*s': ember runs RoPE without scaling (and Llama 3.x's rope_freqs "
                             "factors); this scaling is not implemented",
                             path.c_str(), key.c_str(), static_cast<int>(kv.value.str.size()), kv.value.str.data());
      }
      ok = true;
    }
    for (const Neutral& n : neutral) {
      if (name != n.key || ok) continue;
      double v = 0;
      if (!numeric(kv.value, &v) || v != n.value) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': %s = %g (ember runs %g): %s is not implemented",
                             path.c_str(), key.c_str(), v, n.value, n.meaning);
      }
      ok = true;
    }
    if (!ok) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "'%s': key '%s' may change the model's arithmetic and ember does not implement it "
                           "(refused rather than ignored)",
                           path.c_str(), key.c_str());
    }
  }
  return Status::ok();
}

// One part of a GGUF tensor: its ember name and how many rows (elements of
// a vector) it takes, in order from the first.
struct Piece {
  std::string name;
  int64_t rows = 0;
};

// The separate tensors a fused GGUF tensor holds, or the tensor itself.
//   blk.N.attn_qkv.{weight,bias}: q (q_dim rows), k, v (kv_dim each), as
//     llama.cpp's build_qkv views them.
//   phi3's blk.N.ffn_up.weight: [2 * hidden, dim], gate first (llama.cpp's
//     swiglu takes silu of the first half times the second).
Result<std::vector<Piece>> split_fused(const HParams& hp, const std::string& name, const std::vector<int64_t>& shape,
                                       const std::string& path) {
  const size_t dot = name.find('.', 4);
  const bool block = name.rfind("blk.", 0) == 0 && dot != std::string::npos;
  const std::string base = block ? name.substr(0, dot + 1) : "";  // "blk.N."
  const std::string kind = block ? name.substr(dot + 1) : "";
  const int64_t q = hp.q_dim(), kv = hp.kv_dim();
  if (kind == "attn_qkv.weight" || kind == "attn_qkv.bias") {
    const bool bias = kind == "attn_qkv.bias";
    const size_t want_dims = bias ? 1 : 2;
    if (shape.size() != want_dims || shape[0] != q + 2 * kv || (!bias && shape[1] != hp.dim)) {
      return Status::error(EMBER_ERR_BAD_TENSOR,
                           "'%s': fused tensor '%s': expected %zu dims, %lld rows (q %lld + k and v %lld each) of %u",
                           path.c_str(), name.c_str(), want_dims, static_cast<long long>(q + 2 * kv),
                           static_cast<long long>(q), static_cast<long long>(kv), bias ? 1u : hp.dim);
    }
    const char* tail = bias ? ".bias" : ".weight";
    return std::vector<Piece>{{base + "attn_q" + tail, q}, {base + "attn_k" + tail, kv}, {base + "attn_v" + tail, kv}};
  }
  if (hp.arch == ModelArch::Phi3 && kind == "ffn_up.weight") {
    const int64_t hidden = hp.hidden_dim;
    if (shape.size() != 2 || shape[0] != 2 * hidden || shape[1] != hp.dim) {
      return Status::error(EMBER_ERR_BAD_TENSOR,
                           "'%s': tensor '%s': phi3 fuses gate and up, expected [%lld, %u] (2 x feed_forward_length), "
                           "got %zu dims [%lld, ...]",
                           path.c_str(), name.c_str(), static_cast<long long>(2 * hidden), hp.dim, shape.size(),
                           static_cast<long long>(shape.empty() ? 0 : shape[0]));
    }
    return std::vector<Piece>{{base + "ffn_gate.weight", hidden}, {base + "ffn_up.weight", hidden}};
  }
  if (hp.arch == ModelArch::Phi3 && kind == "ffn_gate.weight") {
    // llama.cpp's phi3 has no separate gate: it would not load this file.
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "'%s': tensor '%s': phi3 keeps the gate fused in ffn_up; a separate gate is not phi3's graph",
                         path.c_str(), name.c_str());
  }
  return std::vector<Piece>{{name, shape.empty() ? 0 : shape[0]}};
}

// Gemma's hyper-parameters as llama.cpp reads them (src/models/gemma2.cpp,
// gemma3.cpp): its defaults when a key is absent.
Status read_gemma_keys(const GgufFile& gguf, const std::string& p, const std::string& path, HParams* hp) {
  auto f32 = [&](const char* key, float* out) -> Status {
    if (!gguf.find(p + key)) return Status::ok();
    EMBER_ASSIGN_OR_RETURN(*out, gguf.get_f32(p + key));
    return Status::ok();
  };
  auto u32 = [&](const char* key, uint32_t* out) -> Status {
    const GgufKv* kv = gguf.find(p + key);
    if (!kv) return Status::ok();
    if (kv->value.type == GgufType::Array) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': %s%s as a per-layer array is not implemented", path.c_str(),
                           p.c_str(), key);
    }
    EMBER_ASSIGN_OR_RETURN(*out, gguf.get_u32(p + key));
    return Status::ok();
  };
  const bool g2 = hp->arch == ModelArch::Gemma2;
  if (g2) {
    // Always soft-capped, always sliding on every other layer, one RoPE base.
    hp->attn_softcap = 50.0f;
    hp->final_softcap = 30.0f;
    hp->sliding_window = 4096;
    hp->swa_period = 2;
    EMBER_TRY(f32("attn_logit_softcapping", &hp->attn_softcap));
    EMBER_TRY(f32("final_logit_softcapping", &hp->final_softcap));
    EMBER_TRY(u32("attention.sliding_window", &hp->sliding_window));
    EMBER_TRY(u32("attention.sliding_window_pattern", &hp->swa_period));
    EMBER_TRY(f32("rope.freq_base_swa", &hp->rope_theta_swa));
  } else {
    // Sliding only with a window key; every 6th layer global; the sliding
    // layers' base 10000 unless the file says.
    EMBER_TRY(f32("final_logit_softcapping", &hp->final_softcap));
    EMBER_TRY(u32("attention.sliding_window", &hp->sliding_window));
    if (hp->sliding_window != 0) {
      hp->swa_period = 6;
      hp->rope_theta_swa = 10000.0f;
      EMBER_TRY(u32("attention.sliding_window_pattern", &hp->swa_period));
      EMBER_TRY(f32("rope.freq_base_swa", &hp->rope_theta_swa));
    }
    // Linear RoPE scaling of the global layers (Gemma 3 4B: factor 8); a
    // scaling type other than linear or none is refused by check_arch_keys.
    float factor = 0.0f;
    if (gguf.find(p + "rope.scaling.factor")) {
      EMBER_TRY(f32("rope.scaling.factor", &factor));
    } else {
      EMBER_TRY(f32("rope.scale_linear", &factor));
    }
    if (factor != 0.0f) hp->rope_scale_global = factor;
  }
  // A window of 0 slides nothing (llama.cpp: no sliding layers).
  if (hp->sliding_window == 0) hp->swa_period = 0;
  // The pattern period 1 in llama.cpp's rule (il % 1 < 0) makes no layer slide.
  if (hp->swa_period == 1) hp->sliding_window = 0, hp->swa_period = 0;
  // Gemma's 27B models scale the queries by 1 / sqrt(dim / n_heads) (gemma2:
  // 46 layers, gemma3: 62), the others by 1 / sqrt(head_dim): llama.cpp's rule.
  if (hp->n_heads != 0 && ((g2 && hp->n_layers == 46) || (!g2 && hp->n_layers == 62))) {
    hp->attn_scale = 1.0f / std::sqrt(static_cast<float>(hp->dim / hp->n_heads));
  }
  return Status::ok();
}

// bert's keys: the layer norms' epsilon (required), attention.causal (false,
// as an encoder's: true would be another model), and the pooling (read with
// every family's).
Status read_bert_keys(const GgufFile& gguf, const std::string& p, const std::string& path, HParams* hp) {
  EMBER_ASSIGN_OR_RETURN(hp->norm_eps, gguf.get_f32(p + "attention.layer_norm_epsilon"));
  if (const GgufKv* causal = gguf.find(p + "attention.causal")) {
    double v = 0;
    if (!numeric(causal->value, &v) || v != 0) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': %sattention.causal = true: a causal bert is not implemented",
                           path.c_str(), p.c_str());
    }
  }
  return Status::ok();
}

// phi3's RoPE keys, as llama.cpp reads them: rope.dimension_count (partial
// rotary, Phi-4-mini: 96 of 128; even, in 1..head_dim),
// rope.scaling.attn_factor (LongRoPE's cos/sin scale; absent: 1, as
// llama.cpp runs it: its converter writes the factor it derives from the
// context ratio) and rope.scaling.original_context_length (absent: the
// training context).
Status read_phi3_rope_keys(const GgufFile& gguf, const std::string& p, const std::string& path, HParams* hp) {
  if (gguf.find(p + "rope.dimension_count")) {
    EMBER_ASSIGN_OR_RETURN(uint32_t n_rot, gguf.get_u32(p + "rope.dimension_count"));
    if (n_rot == 0 || n_rot % 2 != 0 || n_rot > hp->head_dim()) {
      return Status::error(EMBER_ERR_BAD_HPARAMS, "'%s': %srope.dimension_count = %u: must be even and in 2..%u (head_dim)",
                           path.c_str(), p.c_str(), n_rot, hp->head_dim());
    }
    hp->rope_dims = n_rot == hp->head_dim() ? 0 : n_rot;
  }
  if (gguf.find(p + "rope.scaling.attn_factor")) {
    EMBER_ASSIGN_OR_RETURN(float f, gguf.get_f32(p + "rope.scaling.attn_factor"));
    if (!(f > 0.0f && f < 1e3f)) {
      return Status::error(EMBER_ERR_BAD_HPARAMS, "'%s': %srope.scaling.attn_factor = %g: must be in (0, 1e3)",
                           path.c_str(), p.c_str(), f);
    }
    hp->rope_attn_factor = f;
  }
  if (gguf.find(p + "rope.scaling.original_context_length")) {
    EMBER_ASSIGN_OR_RETURN(hp->rope_orig_context, gguf.get_u32(p + "rope.scaling.original_context_length"));
    if (hp->rope_orig_context > kMaxSeqLen) {
      return Status::error(EMBER_ERR_BAD_HPARAMS, "'%s': %srope.scaling.original_context_length = %u: must be <= %u",
                           path.c_str(), p.c_str(), hp->rope_orig_context, kMaxSeqLen);
    }
  }
  return Status::ok();
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
  EMBER_ASSIGN_OR_RETURN(std::string_view arch_sv, gguf.get_string("general.architecture"));
  const std::string arch(arch_sv);
  HParams& hp = model->spec.hparams;
  if (arch == "llama") {
    hp.arch = ModelArch::Llama;
  } else if (arch == "qwen2") {
    hp.arch = ModelArch::Qwen2;
  } else if (arch == "qwen3") {
    hp.arch = ModelArch::Qwen3;
  } else if (arch == "phi3") {
    hp.arch = ModelArch::Phi3;
  } else if (arch == "gemma2" || arch == "gemma3") {
    hp.arch = arch == "gemma2" ? ModelArch::Gemma2 : ModelArch::Gemma3;
  } else if (arch == "bert" || arch == "nomic-bert") {
    hp.arch = arch == "bert" ? ModelArch::Bert : ModelArch::NomicBert;
  } else {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "'%s': general.architecture = '%s'; ember converts 'llama', 'qwen2', 'qwen3', 'phi3', 'gemma2', "
                         "'gemma3', 'bert' and 'nomic-bert'",
                         path.c_str(), arch.c_str());
  }
  // GGUF "llama" files rotate adjacent pairs (their converter permutes the
  // Hugging Face Q/K rows to make it so); llama.cpp rotates qwen2's, qwen3's
  // and phi3's halves (NEOX style), the Hugging Face order.
  hp.rope_style = model_arch_rope_style(hp.arch);
  const std::string p = arch + ".";
  EMBER_ASSIGN_OR_RETURN(hp.dim, gguf.get_u32(p + "embedding_length"));
  EMBER_ASSIGN_OR_RETURN(hp.hidden_dim, gguf.get_u32(p + "feed_forward_length"));
  EMBER_ASSIGN_OR_RETURN(hp.n_layers, gguf.get_u32(p + "block_count"));
  EMBER_ASSIGN_OR_RETURN(hp.n_heads, gguf.get_u32(p + "attention.head_count"));
  hp.n_kv_heads = hp.n_heads;
  if (gguf.find(p + "attention.head_count_kv")) {
    EMBER_ASSIGN_OR_RETURN(hp.n_kv_heads, gguf.get_u32(p + "attention.head_count_kv"));
  }
  EMBER_ASSIGN_OR_RETURN(hp.max_seq_len, gguf.get_u32(p + "context_length"));
  if (gguf.find(p + "attention.layer_norm_rms_epsilon")) {
    EMBER_ASSIGN_OR_RETURN(hp.norm_eps, gguf.get_f32(p + "attention.layer_norm_rms_epsilon"));
  }
  if (model_arch_is_encoder(hp.arch)) EMBER_TRY(read_bert_keys(gguf, p, path, &hp));
  if (gguf.find(p + "rope.freq_base")) {
    EMBER_ASSIGN_OR_RETURN(hp.rope_theta, gguf.get_f32(p + "rope.freq_base"));
  }
  // A head width other than dim / n_heads (Qwen3, Gemma): keys and values
  // the same width, as ember's attention needs (checked with the other keys).
  if (gguf.find(p + "attention.key_length")) {
    EMBER_ASSIGN_OR_RETURN(uint32_t key_length, gguf.get_u32(p + "attention.key_length"));
    if (hp.n_heads == 0 || key_length != hp.dim / hp.n_heads || hp.dim % hp.n_heads != 0) {
      hp.explicit_head_dim = key_length;
    }
  }
  if (gguf.find(p + "pooling_type")) {
    // Embedding models say how their rows pool (Qwen3-Embedding: last).
    EMBER_ASSIGN_OR_RETURN(uint32_t pooling, gguf.get_u32(p + "pooling_type"));
    if (pooling > 4) {
      return Status::error(EMBER_ERR_BAD_HPARAMS,
                           "'%s': %spooling_type = %u: must be 0 none, 1 mean, 2 cls, 3 last or 4 rank", path.c_str(),
                           p.c_str(), pooling);
    }
    hp.pooling = static_cast<int8_t>(pooling);
  }
  if (model_arch_is_gemma(hp.arch)) EMBER_TRY(read_gemma_keys(gguf, p, path, &hp));
  if (hp.arch == ModelArch::Phi3) EMBER_TRY(read_phi3_rope_keys(gguf, p, path, &hp));
  EMBER_ASSIGN_OR_RETURN(model->spec.vocab, vocab_from_gguf(gguf));
  hp.vocab_size = static_cast<uint32_t>(model->spec.vocab.pieces.size());
  hp.tied_embeddings = gguf.find_tensor("output.weight") == nullptr;
  if (hp.arch == ModelArch::Gemma2 && !hp.tied_embeddings) {
    // llama.cpp's gemma2 reads its logits from token_embd.weight.
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "'%s': tensor 'output.weight' in a gemma2 file (gemma2 ties its output to token_embd.weight)",
                         path.c_str());
  }
  EMBER_TRY(check_arch_keys(gguf, hp, arch, path));

  for (const GgufTensorInfo& t : gguf.tensors()) {
    const std::string name(t.name);
    EMBER_ASSIGN_OR_RETURN(DType dtype, dtype_from_ggml(t));
    std::vector<int64_t> shape;
    for (int d = static_cast<int>(t.n_dims) - 1; d >= 0; --d) shape.push_back(static_cast<int64_t>(t.dims[d]));
    // Fused tensors (phi3's Q/K/V and gate/up; llama.cpp accepts a fused
    // QKV for the others too) become llama's separate ones: whole rows, in
    // the order llama.cpp splits them, so the split is lossless.
    std::vector<Piece> pieces;
    EMBER_ASSIGN_OR_RETURN(pieces, split_fused(hp, name, shape, path));
    uint64_t row_bytes = 0;
    if (pieces.size() > 1 && shape.size() == 2 && !dtype_bytes(dtype, static_cast<uint64_t>(shape.back()), &row_bytes)) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "'%s': tensor '%s' rows of %lld are not whole %s blocks", path.c_str(),
                           name.c_str(), static_cast<long long>(shape.back()), dtype_name(dtype));
    }
    int64_t row0 = 0;
    for (const Piece& piece : pieces) {
      if (!is_llama_tensor(hp, piece.name)) {
        if (name.find("rope_factors_") != std::string::npos) {
          return Status::error(EMBER_ERR_UNSUPPORTED,
                               "'%s': tensor '%s': LongRoPE frequency factors are implemented for phi3 only, not "
                               "for %s (refused rather than ignored)",
                               path.c_str(), name.c_str(), arch.c_str());
        }
        return Status::error(EMBER_ERR_UNSUPPORTED,
                             "'%s': tensor '%s' is not part of the %s graph ember runs (refused rather than "
                             "ignored: it would change the model's arithmetic)",
                             path.c_str(), piece.name == name ? name.c_str() : (name + " -> " + piece.name).c_str(),
                             arch.c_str());
      }
      TensorSource s;
      s.name = piece.name;
      s.dtype = dtype;
      s.shape = shape;
      s.data = t.data;
      s.size = t.size;
      if (pieces.size() > 1) {
        // Rows of a matrix; elements of a vector (a fused bias).
        uint64_t at = 0, size = 0;
        const bool ok = shape.size() == 1
                            ? dtype_bytes(dtype, static_cast<uint64_t>(row0), &at) &&
                                  dtype_bytes(dtype, static_cast<uint64_t>(piece.rows), &size)
                            : (at = row_bytes * static_cast<uint64_t>(row0), size = row_bytes * piece.rows, true);
        if (!ok) {
          return Status::error(EMBER_ERR_BAD_TENSOR, "'%s': tensor '%s' (%s) cannot be split at element %lld",
                               path.c_str(), name.c_str(), dtype_name(dtype), static_cast<long long>(row0));
        }
        s.data = t.data + at;
        s.size = size;
        s.shape[0] = piece.rows;
        row0 += piece.rows;
      }
      // Norm vectors run in f32 (tiny; ember's kernels read them as f32).
      const bool is_vector = s.shape.size() == 1;
      if (is_vector && dtype != DType::F32) {
        std::vector<uint8_t> f32(static_cast<size_t>(s.shape[0]) * sizeof(float));
        dequantize_row(dtype, s.data, reinterpret_cast<float*>(f32.data()), s.shape[0]);
        s.dtype = DType::F32;
        s.data = f32.data();
        s.size = f32.size();
        model->owned.push_back(std::move(f32));
      }
      model->spec.tensors.push_back(std::move(s));
    }
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

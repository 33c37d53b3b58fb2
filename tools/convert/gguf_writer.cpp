#include "tools/convert/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <unistd.h>

#include "tools/convert/gguf.h"

namespace ember {
namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kGgufAlignment = 32;  // general.alignment's default; not written

// GGUF metadata value types (the specification's numbering).
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

// Little-endian serialization into a growing buffer (x86 and ARM Linux are
// little-endian; GGUF is too).
class Out {
 public:
  std::vector<uint8_t> bytes;
  void raw(const void* p, size_t n) {
    // resize + memcpy rather than insert: GCC 12 warns falsely
    // (-Wstringop-overflow) on the inlined insert of a few bytes.
    const size_t at = bytes.size();
    bytes.resize(at + n);
    if (n) std::memcpy(bytes.data() + at, p, n);
  }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  // Key-value pairs.
  void kv_u32(const char* k, uint32_t v) { key(k, kU32); u32(v); }
  void kv_f32(const char* k, float v) { key(k, kF32); f32(v); }
  void kv_bool(const char* k, bool v) { key(k, kBool); const uint8_t b = v; raw(&b, 1); }
  void kv_str(const char* k, const std::string& v) { key(k, kString); str(v); }
  void kv_strs(const char* k, const std::vector<std::string>& v) {
    key(k, kArray);
    u32(kString);
    u64(v.size());
    for (const auto& s : v) str(s);
  }
  void kv_f32s(const char* k, const std::vector<float>& v) {
    key(k, kArray);
    u32(kF32);
    u64(v.size());
    raw(v.data(), v.size() * 4);
  }
  void kv_i32s(const char* k, const std::vector<int32_t>& v) {
    key(k, kArray);
    u32(kI32);
    u64(v.size());
    raw(v.data(), v.size() * 4);
  }
  uint64_t n_kv = 0;

 private:
  void key(const char* k, uint32_t type) {
    str(k);
    u32(type);
    ++n_kv;
  }
};

// llama.cpp's llama_ftype for a file whose matrices are mostly `t` (the
// K-quant mixtures' medium preset where llama.cpp has several).
uint32_t llama_file_type(DType t) {
  switch (t) {
    case DType::F32: return 0;     // ALL_F32
    case DType::F16: return 1;     // MOSTLY_F16
    case DType::Q4_0: return 2;    // MOSTLY_Q4_0
    case DType::Q4_1: return 3;    // MOSTLY_Q4_1
    case DType::Q8_0: return 7;    // MOSTLY_Q8_0
    case DType::Q5_0: return 8;    // MOSTLY_Q5_0
    case DType::Q5_1: return 9;    // MOSTLY_Q5_1
    case DType::Q2_K: return 10;   // MOSTLY_Q2_K
    case DType::Q3_K: return 12;   // MOSTLY_Q3_K_M
    case DType::Q4_K: return 15;   // MOSTLY_Q4_K_M
    case DType::Q5_K: return 17;   // MOSTLY_Q5_K_M
    case DType::Q6_K: return 18;   // MOSTLY_Q6_K
    case DType::IQ4_NL: return 25; // MOSTLY_IQ4_NL
    case DType::IQ4_XS: return 30; // MOSTLY_IQ4_XS
    case DType::BF16: return 32;   // MOSTLY_BF16
  }
  return 0;
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

const TensorSource* find_tensor(const ModelSpec& spec, const std::string& name) {
  for (const TensorSource& t : spec.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// The model's tensors with each layer's q, k, v joined into attn_qkv and
// gate, up into ffn_up (whole rows, one after the other: a fused matrix is
// its parts' rows in order). `owned` keeps the joined bytes.
Result<std::vector<TensorSource>> fuse_phi3(const ModelSpec& spec, std::vector<std::vector<uint8_t>>* owned) {
  std::vector<TensorSource> out;
  auto join = [&](const std::string& name, std::initializer_list<std::string> parts) -> Status {
    TensorSource f;
    f.name = name;
    std::vector<uint8_t> bytes;
    int64_t rows = 0;
    for (const std::string& part : parts) {
      const TensorSource* t = find_tensor(spec, part);
      if (!t || t->shape.size() != 2 || t->layout != Layout::RowMajor ||
          (rows != 0 && (t->dtype != f.dtype || t->shape[1] != f.shape[1]))) {
        return Status::error(EMBER_ERR_BAD_TENSOR,
                             "phi3 GGUF: '%s' is missing, or not a row-major matrix of its siblings' type and width "
                             "(it is fused into '%s')",
                             part.c_str(), name.c_str());
      }
      f.dtype = t->dtype;
      f.shape = {0, t->shape[1]};
      rows += t->shape[0];
      const uint8_t* p = static_cast<const uint8_t*>(t->data);
      bytes.insert(bytes.end(), p, p + t->size);
    }
    f.shape[0] = rows;
    f.size = bytes.size();
    owned->push_back(std::move(bytes));
    f.data = owned->back().data();
    out.push_back(std::move(f));
    return Status::ok();
  };
  owned->reserve(2 * spec.hparams.n_layers);
  for (const TensorSource& t : spec.tensors) {
    const size_t dot = t.name.find('.', 4);
    const std::string kind = t.name.rfind("blk.", 0) == 0 && dot != std::string::npos ? t.name.substr(dot + 1) : "";
    const std::string base = t.name.substr(0, dot + 1);
    if (kind == "attn_q.weight") {
      EMBER_TRY(join(base + "attn_qkv.weight", {base + "attn_q.weight", base + "attn_k.weight", base + "attn_v.weight"}));
    } else if (kind == "ffn_gate.weight") {
      EMBER_TRY(join(base + "ffn_up.weight", {base + "ffn_gate.weight", base + "ffn_up.weight"}));
    } else if (kind != "attn_k.weight" && kind != "attn_v.weight" && kind != "ffn_up.weight") {
      out.push_back(t);
    }
  }
  return out;
}

// What llama.cpp cannot read as this model: refused before anything is written.
Status check_gguf_form(const ModelSpec& spec, const std::string& path) {
  const HParams& hp = spec.hparams;
  // llama.cpp's rotation is fixed per architecture: adjacent pairs for
  // llama, halves (NEOX) for the others.
  const RopeStyle arch_rope = model_arch_rope_style(hp.arch);
  if (hp.rope_style != arch_rope) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "'%s': the model rotates %s RoPE pairs; llama.cpp's %s architecture rotates %s pairs "
                         "(the Q/K rows would need permuting)",
                         path.c_str(), hp.rope_style == RopeStyle::Half ? "half-split" : "adjacent",
                         model_arch_name(hp.arch), arch_rope == RopeStyle::Half ? "half-split" : "adjacent");
  }
  if (hp.arch == ModelArch::Gemma2 && (hp.attn_softcap == 0.0f || hp.final_softcap == 0.0f || !hp.tied_embeddings)) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "'%s': llama.cpp's gemma2 always soft-caps (attn %g, final %g) and ties its output matrix",
                         path.c_str(), hp.attn_softcap, hp.final_softcap);
  }
  if (hp.arch == ModelArch::Gemma2 && hp.sliding_window == 0) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': llama.cpp's gemma2 always has sliding-window layers", path.c_str());
  }
  if (hp.attn_scale != 0.0f) {
    // GGUF gemma files carry no scale: llama.cpp derives it from the layer count.
    return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': attn_scale = %g has no GGUF key", path.c_str(), hp.attn_scale);
  }
  if (hp.arch == ModelArch::Gemma2 && hp.rope_scale_global != 1.0f) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': gemma2 with RoPE scaling has no GGUF form ember writes",
                         path.c_str());
  }
  if (spec.vocab.kind == TokenizerKind::BytePairBPE && spec.vocab.merges.empty()) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "'%s': a byte-level BPE vocabulary without merges", path.c_str());
  }
  return Status::ok();
}

// The type most matrix bytes have: llama.cpp's general.file_type. Every
// tensor must be 1-D or 2-D.
Result<DType> main_matrix_type(const std::vector<TensorSource>& tensors) {
  uint64_t bytes_by_type[kDTypeCount] = {};
  for (const auto& t : tensors) {
    if (t.shape.size() != 1 && t.shape.size() != 2) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s' has %zu dims; GGUF llama weights have 1 or 2",
                           t.name.c_str(), t.shape.size());
    }
    if (t.shape.size() == 2) bytes_by_type[static_cast<int>(t.dtype)] += t.size;
  }
  int main_type = 0;
  for (int i = 1; i < kDTypeCount; ++i) {
    if (bytes_by_type[i] > bytes_by_type[main_type]) main_type = i;
  }
  return static_cast<DType>(main_type);
}

// The architecture's keys: shape, attention, RoPE and its scalings.
void hparam_keys(const HParams& hp, Out* kv) {
  const std::string a = model_arch_name(hp.arch);
  kv->kv_u32((a + ".vocab_size").c_str(), hp.vocab_size);
  kv->kv_u32((a + ".context_length").c_str(), hp.max_seq_len);
  kv->kv_u32((a + ".embedding_length").c_str(), hp.dim);
  kv->kv_u32((a + ".block_count").c_str(), hp.n_layers);
  kv->kv_u32((a + ".feed_forward_length").c_str(), hp.hidden_dim);
  kv->kv_u32((a + ".rope.dimension_count").c_str(), hp.rotated_dims());
  kv->kv_u32((a + ".attention.head_count").c_str(), hp.n_heads);
  if (hp.explicit_head_dim) {
    kv->kv_u32((a + ".attention.key_length").c_str(), hp.explicit_head_dim);
    kv->kv_u32((a + ".attention.value_length").c_str(), hp.explicit_head_dim);
  }
  kv->kv_u32((a + ".attention.head_count_kv").c_str(), hp.n_kv_heads);
  if (model_arch_is_encoder(hp.arch)) {
    // An encoder's layer norms, and its attention both ways.
    kv->kv_f32((a + ".attention.layer_norm_epsilon").c_str(), hp.norm_eps);
    kv->kv_bool((a + ".attention.causal").c_str(), false);
  } else {
    kv->kv_f32((a + ".attention.layer_norm_rms_epsilon").c_str(), hp.norm_eps);
  }
  kv->kv_f32((a + ".rope.freq_base").c_str(), hp.rope_theta);
  if (hp.arch == ModelArch::Gemma2) kv->kv_f32((a + ".attn_logit_softcapping").c_str(), hp.attn_softcap);
  if (hp.final_softcap != 0.0f) kv->kv_f32((a + ".final_logit_softcapping").c_str(), hp.final_softcap);
  if (hp.sliding_window != 0) {
    kv->kv_u32((a + ".attention.sliding_window").c_str(), hp.sliding_window);
    // llama.cpp's rule: period 0 slides every layer (ember: swa_period 0).
    kv->kv_u32((a + ".attention.sliding_window_pattern").c_str(), hp.swa_period);
    // Written always: llama.cpp's default differs per family (gemma3: 10000).
    kv->kv_f32((a + ".rope.freq_base_swa").c_str(), hp.rope_theta_swa != 0.0f ? hp.rope_theta_swa : hp.rope_theta);
  }
  // LongRoPE (phi3), with the keys llama.cpp's converter writes.
  if (hp.rope_attn_factor != 1.0f) kv->kv_f32((a + ".rope.scaling.attn_factor").c_str(), hp.rope_attn_factor);
  if (hp.rope_orig_context != 0) {
    kv->kv_u32((a + ".rope.scaling.original_context_length").c_str(), hp.rope_orig_context);
  }
  if (hp.pooling >= 0) kv->kv_u32((a + ".pooling_type").c_str(), static_cast<uint32_t>(hp.pooling));
  if (hp.rope_scale_global != 1.0f) {
    kv->kv_str((a + ".rope.scaling.type").c_str(), "linear");
    kv->kv_f32((a + ".rope.scaling.factor").c_str(), hp.rope_scale_global);
  }
}

// A WordPiece vocabulary's special pieces and normalizer, as llama.cpp reads a
// "bert" one (tools/convert/vocab_import.cpp reads them back): [CLS] as bos
// (and cls, the converters' key), [SEP] as the separator. llama.cpp adds both
// to every text it encodes with special tokens, so no add_* flag is written:
// its eos stays unset.
void wordpiece_keys(const Vocab& v, Out* kv) {
  if (v.bos_id >= 0) {
    kv->kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
    kv->kv_u32("tokenizer.ggml.cls_token_id", static_cast<uint32_t>(v.bos_id));
  }
  if (v.eos_id >= 0) kv->kv_u32("tokenizer.ggml.seperator_token_id", static_cast<uint32_t>(v.eos_id));
  if (v.unk_id >= 0) kv->kv_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
  if (v.pad_id >= 0) kv->kv_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad_id));
  kv->kv_bool("tokenizer.ggml.normalizer.lowercase", v.lowercase);
  kv->kv_bool("tokenizer.ggml.normalizer.strip_accents", v.strip_accents);
}

const char* gguf_tokenizer_model(const Vocab& v) {
  switch (v.kind) {
    case TokenizerKind::SentencePiece: return "llama";
    case TokenizerKind::WordPiece: return "bert";
    default: return v.pre == "gemma4" ? "gemma4" : "gpt2";
  }
}

// The vocabulary's tokenizer.ggml.* keys.
void vocab_keys(const Vocab& v, Out* kv) {
  kv->kv_str("tokenizer.ggml.model", gguf_tokenizer_model(v));
  kv->kv_strs("tokenizer.ggml.tokens", v.pieces);
  if (!v.scores.empty()) kv->kv_f32s("tokenizer.ggml.scores", v.scores);
  if (!v.types.empty()) {
    std::vector<int32_t> types(v.types.begin(), v.types.end());
    kv->kv_i32s("tokenizer.ggml.token_type", types);
  }
  if (!v.merges.empty()) kv->kv_strs("tokenizer.ggml.merges", v.merges);
  // "" (a file from before the name was stored) was tokenized as GPT-2.
  if (v.kind == TokenizerKind::BytePairBPE) kv->kv_str("tokenizer.ggml.pre", v.pre.empty() ? "gpt-2" : v.pre);
  if (v.kind == TokenizerKind::WordPiece) {
    wordpiece_keys(v, kv);
    return;
  }
  if (v.eot_id >= 0) kv->kv_u32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(v.eot_id));
  if (v.eom_id >= 0) kv->kv_u32("tokenizer.ggml.eom_token_id", static_cast<uint32_t>(v.eom_id));
  if (v.bos_id >= 0) kv->kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  if (v.eos_id >= 0) kv->kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  if (v.unk_id >= 0) kv->kv_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
  if (v.pad_id >= 0) kv->kv_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad_id));
  kv->kv_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  kv->kv_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  kv->kv_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
}

// The header: magic, version, counts, the key-value pairs and the tensor
// table (each tensor's offset in the data section), padded to the alignment.
Out gguf_head(const Out& kv, const std::vector<TensorSource>& tensors, std::vector<uint64_t>* offsets,
              uint64_t* data_size) {
  Out head;
  head.raw("GGUF", 4);
  head.u32(kGgufVersion);
  head.u64(tensors.size());
  head.u64(kv.n_kv);
  head.raw(kv.bytes.data(), kv.bytes.size());
  offsets->assign(tensors.size(), 0);
  *data_size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSource& t = tensors[i];
    (*offsets)[i] = align_up(*data_size, kGgufAlignment);
    *data_size = (*offsets)[i] + t.size;
    head.str(t.name);
    head.u32(static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) head.u64(static_cast<uint64_t>(t.shape[d]));  // innermost first
    head.u32(ggml_type_of(t.dtype));
    head.u64((*offsets)[i]);
  }
  head.bytes.resize(align_up(head.bytes.size(), kGgufAlignment), 0);
  return head;
}

// Streamed to a temporary file renamed into place: a failed write never
// leaves a half-written model, and large models are not copied in memory.
Status stream_gguf(const std::string& path, const Out& head, const std::vector<TensorSource>& tensors,
                   const std::vector<uint64_t>& offsets, uint64_t data_size) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::error(EMBER_ERR_IO, "cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  bool ok = std::fwrite(head.bytes.data(), 1, head.bytes.size(), f) == head.bytes.size();
  static const uint8_t kZeros[kGgufAlignment] = {};
  uint64_t at = 0;
  for (size_t i = 0; ok && i < tensors.size(); ++i) {
    const TensorSource& t = tensors[i];
    if (offsets[i] > at) ok = std::fwrite(kZeros, 1, offsets[i] - at, f) == offsets[i] - at;
    if (ok && t.size) ok = std::fwrite(t.data, 1, t.size, f) == t.size;
    at = offsets[i] + t.size;
  }
  // The data section ends padded too: ggml's reader takes every tensor's
  // size rounded up to the alignment, the last one's included.
  if (ok && at % kGgufAlignment != 0) {
    const uint64_t pad = kGgufAlignment - at % kGgufAlignment;
    ok = std::fwrite(kZeros, 1, pad, f) == pad;
  }
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int err = errno;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(EMBER_ERR_IO, "cannot write '%s' (%llu bytes): %s", path.c_str(),
                         static_cast<unsigned long long>(head.bytes.size() + data_size), std::strerror(err));
  }
  return Status::ok();
}

}  // namespace

Status write_gguf(const ModelSpec& spec, const std::string& path, const GgufWriteOptions& options) {
  const HParams& hp = spec.hparams;
  EMBER_TRY(check_gguf_form(spec, path));
  // phi3's GGUF tensors are fused: Q/K/V in attn_qkv, gate and up in
  // ffn_up (gate first), as llama.cpp's phi3 graph reads them.
  std::vector<std::vector<uint8_t>> fused_bytes;
  std::vector<TensorSource> fused;
  if (hp.arch == ModelArch::Phi3) {
    EMBER_ASSIGN_OR_RETURN(fused, fuse_phi3(spec, &fused_bytes));
  }
  const std::vector<TensorSource>& tensors = hp.arch == ModelArch::Phi3 ? fused : spec.tensors;
  EMBER_ASSIGN_OR_RETURN(const DType main_type, main_matrix_type(tensors));

  Out kv;
  kv.kv_str("general.architecture", model_arch_name(hp.arch));
  if (!options.name.empty()) kv.kv_str("general.name", options.name);
  kv.kv_u32("general.file_type", llama_file_type(main_type));
  hparam_keys(hp, &kv);
  vocab_keys(spec.vocab, &kv);
  for (const TensorSource& t : tensors) {
    // bert: llama.cpp needs the number of token types its table holds.
    if (t.name == "token_types.weight" && t.shape.size() == 2) {
      kv.kv_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(t.shape[0]));
    }
  }
  for (const auto& [k, x] : options.extra_u32) kv.kv_u32(k.c_str(), x);
  for (const auto& [k, x] : options.extra_f32) kv.kv_f32(k.c_str(), x);
  for (const auto& [k, x] : options.extra_str) kv.kv_str(k.c_str(), x.c_str());

  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
  const Out head = gguf_head(kv, tensors, &offsets, &data_size);
  return stream_gguf(path, head, tensors, offsets, data_size);
}

Status write_gguf_plain(const std::string& path, const GgufPlainFile& file) {
  Out kv;
  for (const auto& [k, x] : file.str) kv.kv_str(k.c_str(), x);
  for (const auto& [k, x] : file.strs) kv.kv_strs(k.c_str(), x);
  for (const auto& [k, x] : file.u32) kv.kv_u32(k.c_str(), x);
  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
  const Out head = gguf_head(kv, file.tensors, &offsets, &data_size);
  return stream_gguf(path, head, file.tensors, offsets, data_size);
}

}  // namespace ember

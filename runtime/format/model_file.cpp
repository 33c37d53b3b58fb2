#include "format/model_file.h"

#include <algorithm>
#include <cstring>

#include "ember_generated.h"
#include "security/signature.h"
#include "tokenizer/pretokenizer.h"

namespace ember {
namespace {

constexpr uint64_t kMaxDimSize = uint64_t(1) << 40;
// FlatBuffers verifier limits: depth and table count far above what a real
// model needs (a 256k vocabulary is strings, not tables), low enough that a
// hostile file cannot make verification slow.
constexpr flatbuffers::uoffset_t kMaxDepth = 16;
constexpr flatbuffers::uoffset_t kMaxTables = 1u << 20;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian targets only (x86_64, aarch64, armhf)
}

uint64_t read_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Trailer field offsets (the table at the top of model_file.h).
constexpr size_t kTrVersion = 8, kTrAlgorithm = 12, kTrSigLen = 16, kTrSig = 20, kTrKeyId = 92,
                 kTrZeros = 124, kTrSize = 240, kTrEndMagic = 248;

// What follows the data segment: exactly one well-formed trailer, or the
// file is refused. `n` > 0 bytes at `p`.
Status parse_trailer(const uint8_t* p, uint64_t n, ModelContents* out) {
  const bool magic = n >= 8 && std::memcmp(p, kTrailerMagic, 8) == 0;
  if (!magic) {
    return Status::error(EMBER_ERR_FORMAT,
                         "%llu bytes of trailing data after the data segment (not a signature trailer)",
                         static_cast<unsigned long long>(n));
  }
  if (n < kTrailerSize) {
    return Status::error(EMBER_ERR_TRUNCATED, "signature trailer is %llu bytes, expected %llu",
                         static_cast<unsigned long long>(n), static_cast<unsigned long long>(kTrailerSize));
  }
  if (n > kTrailerSize) {
    return Status::error(EMBER_ERR_FORMAT,
                         "%llu bytes of trailing data after the data segment (a signature trailer is %llu)",
                         static_cast<unsigned long long>(n), static_cast<unsigned long long>(kTrailerSize));
  }
  if (std::memcmp(p + kTrEndMagic, kTrailerMagic, 8) != 0) {
    return Status::error(EMBER_ERR_FORMAT, "signature trailer: the closing magic is not \"EMBRSIG1\"");
  }
  if (read_u64(p + kTrSize) != kTrailerSize) {
    return Status::error(EMBER_ERR_FORMAT, "signature trailer: trailer size = %llu, expected %llu",
                         static_cast<unsigned long long>(read_u64(p + kTrSize)),
                         static_cast<unsigned long long>(kTrailerSize));
  }
  if (read_u32(p + kTrVersion) != kTrailerVersion) {
    return Status::error(EMBER_ERR_VERSION, "signature trailer: version = %u; this build reads version %u",
                         read_u32(p + kTrVersion), kTrailerVersion);
  }
  if (read_u32(p + kTrAlgorithm) != kTrailerAlgorithmEcdsaP256Sha256) {
    return Status::error(EMBER_ERR_FORMAT, "signature trailer: algorithm = %u is not known (1 = ECDSA P-256)",
                         read_u32(p + kTrAlgorithm));
  }
  const uint32_t sig_len = read_u32(p + kTrSigLen);
  if (sig_len == 0 || sig_len > kMaxSignatureBytes) {
    return Status::error(EMBER_ERR_FORMAT, "signature trailer: signature length = %u, must be 1..%zu", sig_len,
                         kMaxSignatureBytes);
  }
  for (size_t i = kTrSig + sig_len; i < kTrKeyId; ++i) {
    if (p[i] != 0) return Status::error(EMBER_ERR_FORMAT, "signature trailer: non-zero padding at byte %zu", i);
  }
  for (size_t i = kTrZeros; i < kTrSize; ++i) {
    if (p[i] != 0) return Status::error(EMBER_ERR_FORMAT, "signature trailer: non-zero padding at byte %zu", i);
  }
  out->has_signature = true;
  out->signature.assign(p + kTrSig, p + kTrSig + sig_len);
  std::memcpy(out->signature_key_id.data(), p + kTrKeyId, 32);
  return Status::ok();
}

Status check_hparams(const HParams& hp) {
  auto bad = [](const char* field, uint32_t v, const char* why) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.%s = %u: %s", field, v, why);
  };
  if (hp.n_layers == 0 || hp.n_layers > kMaxLayers) return bad("n_layers", hp.n_layers, "must be in 1..1024");
  if (hp.dim == 0 || hp.dim > kMaxDim) return bad("dim", hp.dim, "must be in 1..65536");
  if (hp.hidden_dim == 0 || hp.hidden_dim > kMaxHiddenDim) return bad("hidden_dim", hp.hidden_dim, "must be in 1..262144");
  if (hp.n_heads == 0 || hp.n_heads > kMaxHeads) return bad("n_heads", hp.n_heads, "must be in 1..1024");
  if (hp.n_kv_heads == 0 || hp.n_kv_heads > hp.n_heads) return bad("n_kv_heads", hp.n_kv_heads, "must be in 1..n_heads");
  if (hp.explicit_head_dim == 0 && hp.dim % hp.n_heads != 0) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.n_heads = %u does not divide dim = %u", hp.n_heads, hp.dim);
  }
  if (hp.explicit_head_dim > kMaxHeadDim) return bad("head_dim", hp.explicit_head_dim, "must be in 0..1024");
  if (hp.head_dim() % 2 != 0) {
    return hp.explicit_head_dim ? bad("head_dim", hp.explicit_head_dim, "must be even for RoPE")
                                : bad("dim", hp.dim, "head dimension (dim / n_heads) must be even for RoPE");
  }
  if (hp.n_heads % hp.n_kv_heads != 0) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.n_kv_heads = %u does not divide n_heads = %u",
                         hp.n_kv_heads, hp.n_heads);
  }
  if (hp.vocab_size == 0 || hp.vocab_size > kMaxVocab) return bad("vocab_size", hp.vocab_size, "must be in 1..1048576");
  if (hp.max_seq_len == 0 || hp.max_seq_len > kMaxSeqLen) return bad("max_seq_len", hp.max_seq_len, "must be in 1..1048576");
  if (!(hp.norm_eps > 0.0f && hp.norm_eps < 1.0f)) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.norm_eps = %g: must be in (0, 1)", hp.norm_eps);
  }
  if (!(hp.rope_theta > 1.0f && hp.rope_theta < 1e12f)) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.rope_theta = %g: must be in (1, 1e12)", hp.rope_theta);
  }
  if (static_cast<uint8_t>(hp.rope_style) > 1) return bad("rope_style", static_cast<uint8_t>(hp.rope_style), "unknown value");
  auto bad_float = [](const char* field, float v, const char* why) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.%s = %g: %s", field, v, why);
  };
  // Gemma's fields: off (0, or 1 for the RoPE factor) or in a sane range.
  if (!(hp.attn_softcap == 0.0f || (hp.attn_softcap > 0.0f && hp.attn_softcap < 1e6f))) {
    return bad_float("attn_softcap", hp.attn_softcap, "must be 0 (off) or in (0, 1e6)");
  }
  if (!(hp.final_softcap == 0.0f || (hp.final_softcap > 0.0f && hp.final_softcap < 1e6f))) {
    return bad_float("final_softcap", hp.final_softcap, "must be 0 (off) or in (0, 1e6)");
  }
  if (!(hp.attn_scale == 0.0f || (hp.attn_scale > 0.0f && hp.attn_scale < 1e6f))) {
    return bad_float("attn_scale", hp.attn_scale, "must be 0 (1 / sqrt(head_dim)) or in (0, 1e6)");
  }
  if (hp.sliding_window > kMaxSeqLen) return bad("sliding_window", hp.sliding_window, "must be in 0..1048576");
  if (hp.swa_period > kMaxLayers) return bad("swa_period", hp.swa_period, "must be in 0..1024");
  if (!(hp.rope_theta_swa == 0.0f || (hp.rope_theta_swa > 1.0f && hp.rope_theta_swa < 1e12f))) {
    return bad_float("rope_theta_swa", hp.rope_theta_swa, "must be 0 (rope_theta) or in (1, 1e12)");
  }
  if (!(hp.rope_scale_global >= 1e-3f && hp.rope_scale_global <= 1e3f)) {
    return bad_float("rope_scale_global", hp.rope_scale_global, "must be in [1e-3, 1e3]");
  }
  if (hp.rope_dims % 2 != 0 || hp.rope_dims > hp.head_dim()) {
    return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams.rope_dims = %u: must be 0 (head_dim) or even and <= head_dim %u",
                         hp.rope_dims, hp.head_dim());
  }
  if (!(hp.rope_attn_factor > 0.0f && hp.rope_attn_factor < 1e3f)) {
    return bad_float("rope_attn_factor", hp.rope_attn_factor, "must be in (0, 1e3)");
  }
  if (hp.rope_orig_context > kMaxSeqLen) return bad("rope_orig_context", hp.rope_orig_context, "must be in 0..1048576");
  if (hp.pooling < -1 || hp.pooling > 4) {
    return Status::error(EMBER_ERR_BAD_HPARAMS,
                         "hparams.pooling = %d: must be -1 (unspecified), 0 none, 1 mean, 2 cls, 3 last or 4 rank",
                         static_cast<int>(hp.pooling));
  }
  // What only Gemma's graph reads must not be set on another family (it
  // would be ignored).
  const bool gemma = model_arch_is_gemma(hp.arch);
  if (!gemma && (hp.attn_softcap != 0.0f || hp.final_softcap != 0.0f || hp.sliding_window != 0 ||
                 hp.rope_theta_swa != 0.0f || hp.rope_scale_global != 1.0f)) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "hparams: soft-capping, sliding windows and per-layer RoPE are gemma2/gemma3 fields, set on a %s model",
                         model_arch_name(hp.arch));
  }
  return Status::ok();
}

Status check_vocab(const Vocab& v, uint32_t vocab_size) {
  const size_t n = v.pieces.size();
  if (v.kind != TokenizerKind::BytePairBPE && !v.pre.empty()) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer.pre = '%.*s' on a %s tokenizer",
                         static_cast<int>(v.pre.size() < 64 ? v.pre.size() : 64), v.pre.data(),
                         v.kind == TokenizerKind::SentencePiece ? "SentencePiece" : "WordPiece");
  }
  if (v.kind == TokenizerKind::BytePairBPE && !PreTokenizer::known(v.pre)) {
    return Status::error(EMBER_ERR_UNSUPPORTED, "tokenizer.pre = '%.*s' is not a pre-tokenizer this build implements",
                         static_cast<int>(v.pre.size() < 64 ? v.pre.size() : 64), v.pre.data());
  }
  if (n != vocab_size) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER,
                         "tokenizer.pieces has %zu entries but hparams.vocab_size = %u", n, vocab_size);
  }
  if (!v.scores.empty() && v.scores.size() != n) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer.scores has %zu entries, expected %zu", v.scores.size(), n);
  }
  if (!v.types.empty() && v.types.size() != n) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer.types has %zu entries, expected %zu", v.types.size(), n);
  }
  const struct { const char* name; int32_t id; } specials[] = {
      {"bos_id", v.bos_id}, {"eos_id", v.eos_id}, {"unk_id", v.unk_id}, {"pad_id", v.pad_id},
      {"eot_id", v.eot_id}, {"eom_id", v.eom_id}};
  for (const auto& s : specials) {
    if (s.id < -1 || s.id >= static_cast<int64_t>(n)) {
      return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer.%s = %d is outside the vocabulary (0..%zu)",
                           s.name, s.id, n - 1);
    }
  }
  return Status::ok();
}

Status check_tensors(std::vector<TensorView>& tensors, uint64_t data_size) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    TensorView& t = tensors[i];
    const char* name = t.name.c_str();
    uint64_t elements = 1;
    for (int d = 0; d < t.n_dims; ++d) {
      const uint64_t dim = static_cast<uint64_t>(t.shape[d]);
      if (dim == 0 || dim > kMaxDimSize) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': shape[%d] = %llu is out of range (1..2^40)", name, d,
                             static_cast<unsigned long long>(dim));
      }
      if (elements > UINT64_MAX / dim) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': element count overflows", name);
      }
      elements *= dim;
    }
    const int64_t inner = t.shape[t.n_dims - 1];
    const int block = dtype_block_elements(t.dtype);
    if (inner % block != 0) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': %s rows need a multiple of %d elements, got %lld",
                           name, dtype_name(t.dtype), block, static_cast<long long>(inner));
    }
    if (t.layout != Layout::RowMajor &&
        (t.n_dims != 2 || !layout_fits(t.layout, t.dtype, t.shape[0], t.shape[1]))) {
      return Status::error(EMBER_ERR_BAD_TENSOR,
                           "tensor '%s': layout %s needs a q8_0/q4_0/q5_0/q2_k/q3_k/q4_k/q5_k/q6_k/iq4_xs matrix with rows a multiple of 16 "
                           "(k-quants and iq4_xs: columns of 256), got %s %d dims "
                           "[%lld, ...]",
                           name, layout_name(t.layout), dtype_name(t.dtype), t.n_dims,
                           static_cast<long long>(t.shape[0]));
    }
    uint64_t expected = 0;
    if (!dtype_bytes(t.dtype, elements, &expected) || expected != t.size) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': size = %llu bytes but %s x %llu elements need %llu",
                           name, static_cast<unsigned long long>(t.size), dtype_name(t.dtype),
                           static_cast<unsigned long long>(elements), static_cast<unsigned long long>(expected));
    }
    if (t.offset % kTensorAlignment != 0) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': offset = %llu is not 64-byte aligned", name,
                           static_cast<unsigned long long>(t.offset));
    }
    if (t.offset > data_size || t.size > data_size - t.offset) {
      return Status::error(EMBER_ERR_BAD_TENSOR,
                           "tensor '%s': offset %llu + size %llu is past the data segment (%llu bytes)", name,
                           static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.size),
                           static_cast<unsigned long long>(data_size));
    }
  }
  // Names unique, byte ranges disjoint.
  std::vector<const TensorView*> order;
  order.reserve(tensors.size());
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->name == order[i - 1]->name) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s' appears twice", order[i]->name.c_str());
    }
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i - 1]->offset + order[i - 1]->size > order[i]->offset) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensors '%s' and '%s' overlap", order[i - 1]->name.c_str(),
                           order[i]->name.c_str());
    }
  }
  return Status::ok();
}

}  // namespace

uint64_t TensorView::elements() const {
  uint64_t n = 1;
  for (int d = 0; d < n_dims; ++d) n *= static_cast<uint64_t>(shape[d]);
  return n;
}

Status verify_model(const uint8_t* data, size_t size, ModelContents* out) {
  out->has_signature = false;
  out->signature.clear();
  // 1. Framing: size prefix, identifier, metadata inside the file.
  if (size < 12) {
    return Status::error(EMBER_ERR_TRUNCATED, "file is %zu bytes, too short for the .ember header (12)", size);
  }
  const uint64_t fb_size = read_u32(data);
  if (!flatbuffers::BufferHasIdentifier(data, fb::ModelIdentifier(), /*size_prefixed=*/true)) {
    return Status::error(EMBER_ERR_FORMAT, "file identifier is not \"EMBR\": not an .ember file");
  }
  if (fb_size < 8 || 4 + fb_size > size) {
    return Status::error(EMBER_ERR_TRUNCATED, "metadata size prefix = %llu but the file has %zu bytes",
                         static_cast<unsigned long long>(fb_size), size);
  }
  // 2. FlatBuffers structure, with explicit limits.
  flatbuffers::Verifier verifier(data, 4 + fb_size, kMaxDepth, kMaxTables);
  if (!fb::VerifySizePrefixedModelBuffer(verifier)) {
    return Status::error(EMBER_ERR_FORMAT, "metadata fails the FlatBuffers verifier (%llu bytes)",
                         static_cast<unsigned long long>(fb_size));
  }
  const fb::Model* m = fb::GetSizePrefixedModel(data);
  if (m->schema_version() < kSchemaVersionMin || m->schema_version() > kSchemaVersion) {
    return Status::error(EMBER_ERR_VERSION, "schema_version = %u; this build reads versions %u..%u",
                         m->schema_version(), kSchemaVersionMin, kSchemaVersion);
  }
  out->schema_version = m->schema_version();
  if (!model_arch_known(static_cast<unsigned>(m->arch()))) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "arch = %u is not a model family this ember runs (0 llama, 1 qwen2, 2 qwen3, 3 phi3, 4 gemma2, "
                         "5 gemma3)",
                         static_cast<unsigned>(m->arch()));
  }
  // 3. Data segment bounds.
  const uint64_t data_offset = align_up(4 + fb_size, kDataAlignment);
  const uint64_t data_size = m->data_size();
  if (data_offset > size || data_size > size - data_offset) {
    return Status::error(EMBER_ERR_TRUNCATED, "data segment [%llu, +%llu) ends past the file end (%zu bytes)",
                         static_cast<unsigned long long>(data_offset), static_cast<unsigned long long>(data_size),
                         size);
  }
  const uint64_t data_end = data_offset + data_size;
  if (size != data_end) EMBER_TRY(parse_trailer(data + data_end, size - data_end, out));
  for (uint64_t i = 4 + fb_size; i < data_offset; ++i) {
    if (data[i] != 0) {
      return Status::error(EMBER_ERR_FORMAT, "non-zero byte in the padding before the data segment at %llu",
                           static_cast<unsigned long long>(i));
    }
  }
  if (!m->data_sha256() || m->data_sha256()->size() != 32) {
    return Status::error(EMBER_ERR_FORMAT, "data_sha256 must hold 32 bytes");
  }

  // 4. Hyper-parameters.
  const fb::HParams* h = m->hparams();
  if (!h) return Status::error(EMBER_ERR_BAD_HPARAMS, "hparams table is missing");
  if (static_cast<uint8_t>(h->rope_style()) > 1) {
    return Status::error(EMBER_ERR_FORMAT, "hparams.rope_style = %u is not a known value",
                         static_cast<unsigned>(h->rope_style()));
  }
  HParams hp;
  hp.dim = h->dim();
  hp.hidden_dim = h->hidden_dim();
  hp.n_layers = h->n_layers();
  hp.n_heads = h->n_heads();
  hp.n_kv_heads = h->n_kv_heads();
  hp.vocab_size = h->vocab_size();
  hp.max_seq_len = h->max_seq_len();
  hp.norm_eps = h->norm_eps();
  hp.rope_theta = h->rope_theta();
  hp.rope_style = static_cast<RopeStyle>(h->rope_style());
  hp.tied_embeddings = h->tied_embeddings();
  hp.explicit_head_dim = h->head_dim();
  hp.attn_softcap = h->attn_softcap();
  hp.final_softcap = h->final_softcap();
  hp.attn_scale = h->attn_scale();
  hp.sliding_window = h->sliding_window();
  hp.swa_period = h->swa_period();
  hp.rope_theta_swa = h->rope_theta_swa();
  hp.rope_scale_global = h->rope_scale_global();
  hp.rope_dims = h->rope_dims();
  hp.rope_attn_factor = h->rope_attn_factor();
  hp.rope_orig_context = h->rope_orig_context();
  hp.pooling = h->pooling();
  hp.arch = static_cast<ModelArch>(m->arch());  // checked above
  EMBER_TRY(check_hparams(hp));

  // 5. Tokenizer.
  const fb::Tokenizer* tk = m->tokenizer();
  if (!tk || !tk->pieces()) return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer table or its pieces are missing");
  if (static_cast<uint8_t>(tk->kind()) > static_cast<uint8_t>(TokenizerKind::WordPiece)) {
    return Status::error(EMBER_ERR_FORMAT, "tokenizer.kind = %u is not a known value", static_cast<unsigned>(tk->kind()));
  }
  Vocab vocab;
  vocab.kind = static_cast<TokenizerKind>(tk->kind());
  if (tk->pieces()->size() > kMaxVocab) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer.pieces has %u entries (max %u)", tk->pieces()->size(), kMaxVocab);
  }
  vocab.pieces.reserve(tk->pieces()->size());
  for (const auto* s : *tk->pieces()) vocab.pieces.emplace_back(s->data(), s->size());
  if (tk->scores()) vocab.scores.assign(tk->scores()->begin(), tk->scores()->end());
  if (tk->types()) vocab.types.assign(tk->types()->begin(), tk->types()->end());
  if (tk->merges()) {
    vocab.merges.reserve(tk->merges()->size());
    for (const auto* s : *tk->merges()) vocab.merges.emplace_back(s->data(), s->size());
  }
  vocab.bos_id = tk->bos_id();
  vocab.eos_id = tk->eos_id();
  vocab.unk_id = tk->unk_id();
  vocab.pad_id = tk->pad_id();
  vocab.add_bos = tk->add_bos();
  vocab.add_eos = tk->add_eos();
  vocab.add_space_prefix = tk->add_space_prefix();
  vocab.byte_fallback = tk->byte_fallback();
  if (tk->pre()) vocab.pre.assign(tk->pre()->data(), tk->pre()->size());
  vocab.eot_id = tk->eot_id();
  vocab.eom_id = tk->eom_id();
  if (tk->chat_template()) vocab.chat_template.assign(tk->chat_template()->data(), tk->chat_template()->size());
  vocab.lowercase = tk->lowercase();
  vocab.strip_accents = tk->strip_accents();
  EMBER_TRY(check_vocab(vocab, hp.vocab_size));

  // 6. Tensor table.
  std::vector<TensorView> tensors;
  if (m->tensors()) {
    tensors.reserve(m->tensors()->size());
    for (const fb::Tensor* ft : *m->tensors()) {
      TensorView t;
      if (!ft->name() || ft->name()->size() == 0) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor #%zu has no name", tensors.size());
      }
      t.name.assign(ft->name()->data(), ft->name()->size());
      if (!dtype_is_valid(static_cast<uint8_t>(ft->dtype()))) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': dtype = %u is not a known type", t.name.c_str(),
                             static_cast<unsigned>(ft->dtype()));
      }
      if (static_cast<uint8_t>(ft->layout()) >= kLayoutCount) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': layout = %u is not a known layout", t.name.c_str(),
                             static_cast<unsigned>(ft->layout()));
      }
      t.dtype = static_cast<DType>(ft->dtype());
      t.layout = static_cast<Layout>(ft->layout());
      if (schema_version_for(t.dtype, t.layout) > m->schema_version()) {
        return Status::error(EMBER_ERR_VERSION,
                             "tensor '%s': %s %s is stored in schema version %u's order, the file is version %u "
                             "(an older ember's rows16 order, or a file that names too old a version; convert the model again)",
                             t.name.c_str(), dtype_name(t.dtype), layout_name(t.layout),
                             schema_version_for(t.dtype, t.layout), m->schema_version());
      }
      const auto* shape = ft->shape();
      if (!shape || shape->size() == 0 || shape->size() > kMaxDims) {
        return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': %u dimensions (must be 1..4)", t.name.c_str(),
                             shape ? shape->size() : 0);
      }
      t.n_dims = static_cast<int>(shape->size());
      for (int d = 0; d < t.n_dims; ++d) {
        const uint64_t dim = shape->Get(d);
        if (dim == 0 || dim > kMaxDimSize) {
          return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': shape[%d] = %llu is out of range (1..2^40)",
                               t.name.c_str(), d, static_cast<unsigned long long>(dim));
        }
        t.shape[d] = static_cast<int64_t>(dim);
      }
      t.offset = ft->offset();
      t.size = ft->size();
      tensors.push_back(std::move(t));
    }
  }
  EMBER_TRY(check_tensors(tensors, data_size));
  for (auto& t : tensors) t.data = data + data_offset + t.offset;

  // 7. Provenance (informational).
  Provenance prov;
  if (const fb::Provenance* p = m->provenance()) {
    if (p->source_file()) prov.source_file = p->source_file()->str();
    if (p->source_sha256()) prov.source_sha256.assign(p->source_sha256()->begin(), p->source_sha256()->end());
    if (p->converter()) prov.converter = p->converter()->str();
    if (p->quantization()) prov.quantization = p->quantization()->str();
  }

  out->hparams = hp;
  out->vocab = std::move(vocab);
  out->tensors = std::move(tensors);
  out->provenance = std::move(prov);
  out->data_offset = data_offset;
  out->data_size = data_size;
  out->data_sha256.assign(m->data_sha256()->begin(), m->data_sha256()->end());
  out->signed_size = data_offset + data_size;
  return Status::ok();
}

std::vector<uint8_t> encode_signature_trailer(const std::vector<uint8_t>& der, const Sha256Digest& key_id) {
  std::vector<uint8_t> t(kTrailerSize, 0);
  const uint32_t version = kTrailerVersion, algorithm = kTrailerAlgorithmEcdsaP256Sha256;
  const uint32_t len = static_cast<uint32_t>(std::min(der.size(), kMaxSignatureBytes));
  const uint64_t size = kTrailerSize;
  std::memcpy(t.data(), kTrailerMagic, 8);
  std::memcpy(t.data() + kTrVersion, &version, 4);
  std::memcpy(t.data() + kTrAlgorithm, &algorithm, 4);
  std::memcpy(t.data() + kTrSigLen, &len, 4);
  if (len) std::memcpy(t.data() + kTrSig, der.data(), len);
  std::memcpy(t.data() + kTrKeyId, key_id.data(), 32);
  std::memcpy(t.data() + kTrSize, &size, 8);
  std::memcpy(t.data() + kTrEndMagic, kTrailerMagic, 8);
  return t;
}

Status check_data_digest(const uint8_t* data, const ModelContents& c) {
  const Sha256Digest d = sha256(data + c.data_offset, c.data_size);
  if (c.data_sha256.size() != 32 || std::memcmp(d.data(), c.data_sha256.data(), 32) != 0) {
    return Status::error(EMBER_ERR_INTEGRITY,
                         "data segment SHA-256 is %s but the metadata records %s: the weights were changed",
                         to_hex(d.data(), 32).c_str(), to_hex(c.data_sha256.data(), c.data_sha256.size()).c_str());
  }
  return Status::ok();
}

Status check_signature(const uint8_t* data, const ModelContents& c, std::string_view public_key_pem) {
  // The key first: a bad key is the caller's mistake, whatever the file.
  EMBER_ASSIGN_OR_RETURN(const Sha256Digest want_id, key_id_from_pem(public_key_pem));
  if (!c.has_signature) {
    return Status::error(EMBER_ERR_SIGNATURE,
                         "the file has no signature trailer but the policy requires a signature "
                         "(sign it with `ember sign M.ember --key K.pem`)");
  }
  if (c.signature_key_id != want_id) {
    return Status::error(EMBER_ERR_SIGNATURE, "signed by another key (key id %s..., expected %s...)",
                         to_hex(c.signature_key_id.data(), 8).c_str(), to_hex(want_id.data(), 8).c_str());
  }
  const Sha256Digest h = sha256(data, c.signed_size);
  const Status s = verify_hash_signature(public_key_pem, h, c.signature.data(), c.signature.size());
  if (!s.is_ok()) {
    return Status::error(EMBER_ERR_SIGNATURE,
                         "signature does not match the file's bytes (key id %s...): the file was changed after "
                         "signing, or the signature was made for another file; %s",
                         to_hex(want_id.data(), 8).c_str(), s.message().c_str());
  }
  return Status::ok();
}

Result<std::unique_ptr<ModelFile>> ModelFile::open(const std::string& path, const Options& options) {
  if (options.verify_signature) {
    // Refuse a bad key before touching the file.
    EMBER_TRY(key_id_from_pem(options.public_key_pem).status().with_context("public key"));
  }
  EMBER_ASSIGN_OR_RETURN(const FileIdentity before, file_identity(path));
  EMBER_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  auto model = std::unique_ptr<ModelFile>(new ModelFile());
  model->file_ = std::move(file);
  if (options.guard_mapping) model->guard_slot_ = register_mapping(model->file_.data(), model->file_.size());
  const std::string where = "'" + path + "'";
  const uint8_t* data = model->file_.data();
  EMBER_TRY(verify_model(data, model->file_.size(), &model->contents_).with_context(where));
  if (options.verify_signature) {
    EMBER_TRY(check_signature(data, model->contents_, options.public_key_pem).with_context(where));
  }
  if (options.verify_digest) EMBER_TRY(check_data_digest(data, model->contents_).with_context(where));
  // What was checked must be what is mapped: the same inode, size and mtime
  // before the mapping and after every check.
  EMBER_ASSIGN_OR_RETURN(model->identity_, file_identity(path));
  if (!model->identity_.same_file(before) || model->identity_.size != before.size ||
      model->identity_.mtime_ns != before.mtime_ns || before.size != model->file_.size()) {
    return Status::error(EMBER_ERR_INTEGRITY, "%s changed while it was being verified (size %llu -> %llu); refusing it",
                         where.c_str(), static_cast<unsigned long long>(before.size),
                         static_cast<unsigned long long>(model->identity_.size));
  }
  EMBER_TRY(model->check_intact().with_context(where));
  return model;
}

ModelFile::~ModelFile() { unregister_mapping(guard_slot_); }

bool ModelFile::faulted() const { return mapping_faulted(guard_slot_); }

Status ModelFile::check_intact() const {
  if (mapping_faulted(guard_slot_)) {
    return Status::error(EMBER_ERR_IO,
                         "'%s' was truncated while mapped: reads past its new end returned zeros; reopen the model",
                         file_.path().c_str());
  }
  auto now = file_identity(file_.path());
  // Gone or replaced by rename: the mapping keeps the inode it verified.
  if (!now.is_ok() || !now->same_file(identity_)) return Status::ok();
  if (now->size != identity_.size || now->mtime_ns != identity_.mtime_ns) {
    return Status::error(EMBER_ERR_INTEGRITY,
                         "'%s' was changed in place after it was verified (size %llu -> %llu bytes); reopen the model",
                         file_.path().c_str(), static_cast<unsigned long long>(identity_.size),
                         static_cast<unsigned long long>(now->size));
  }
  return Status::ok();
}

const TensorView* ModelFile::find(std::string_view name) const {
  for (const auto& t : contents_.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace ember

// Writes the .ember layout: size-prefixed metadata, zero padding to a page,
// then each tensor 64-byte aligned. The data segment is hashed first because
// its digest lives in the metadata that precedes it.
#include <algorithm>
#include <cstring>

#include "ember_generated.h"
#include "format/model_file.h"
#include "tools/convert/model_writer.h"

namespace ember {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Result<std::vector<uint8_t>> serialize_model(const ModelSpec& spec) {
  // Regroup the tensors the requested layout fits (core/layout.h): a copy
  // of the tensor list, pointing at the regrouped bytes.
  std::vector<TensorSource> written = spec.tensors;
  std::vector<std::vector<uint8_t>> packed;
  for (TensorSource& t : written) {
    if (t.layout != Layout::RowMajor || spec.quant_layout == Layout::RowMajor || t.shape.size() != 2 ||
        !layout_fits(spec.quant_layout, t.dtype, t.shape[0], t.shape[1])) {
      continue;
    }
    uint64_t need = 0;
    if (!dtype_bytes(t.dtype, static_cast<uint64_t>(t.shape[0]) * static_cast<uint64_t>(t.shape[1]), &need) ||
        need != t.size) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': size = %llu bytes does not hold its shape",
                           t.name.c_str(), static_cast<unsigned long long>(t.size));
    }
    packed.emplace_back(t.size);
    pack_rows16(t.dtype, static_cast<const uint8_t*>(t.data), packed.back().data(), t.shape[0], t.shape[1]);
    t.data = packed.back().data();
    t.layout = spec.quant_layout;
  }
  // Lay out the data segment.
  std::vector<uint64_t> offsets(written.size());
  uint64_t data_size = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    offsets[i] = align_up(data_size, kTensorAlignment);
    data_size = offsets[i] + written[i].size;
  }
  // Hash the data segment as it will be laid out (zero padding included).
  Sha256 hasher;
  {
    static const uint8_t kZeros[kTensorAlignment] = {};
    uint64_t at = 0;
    for (size_t i = 0; i < written.size(); ++i) {
      if (offsets[i] > at) hasher.update(kZeros, offsets[i] - at);
      hasher.update(written[i].data, written[i].size);
      at = offsets[i] + written[i].size;
    }
  }
  const Sha256Digest digest = hasher.finish();

  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  const HParams& hp = spec.hparams;
  auto hparams = fb::CreateHParams(fbb, hp.dim, hp.hidden_dim, hp.n_layers, hp.n_heads, hp.n_kv_heads,
                                   hp.vocab_size, hp.max_seq_len, hp.norm_eps, hp.rope_theta,
                                   static_cast<fb::RopeStyle>(hp.rope_style), hp.tied_embeddings,
                                   hp.explicit_head_dim, hp.attn_softcap, hp.final_softcap, hp.attn_scale,
                                   hp.sliding_window, hp.swa_period, hp.rope_theta_swa, hp.rope_scale_global,
                                   hp.rope_dims, hp.rope_attn_factor, hp.rope_orig_context, hp.pooling);
  const Vocab& v = spec.vocab;
  std::vector<flatbuffers::Offset<flatbuffers::String>> pieces, merges;
  pieces.reserve(v.pieces.size());
  for (const auto& p : v.pieces) pieces.push_back(fbb.CreateString(p.data(), p.size()));
  for (const auto& m : v.merges) merges.push_back(fbb.CreateString(m.data(), m.size()));
  auto tokenizer = fb::CreateTokenizer(
      fbb, static_cast<fb::TokenizerKind>(v.kind), fbb.CreateVector(pieces),
      v.scores.empty() ? 0 : fbb.CreateVector(v.scores), v.types.empty() ? 0 : fbb.CreateVector(v.types),
      merges.empty() ? 0 : fbb.CreateVector(merges), v.bos_id, v.eos_id, v.unk_id, v.pad_id, v.add_bos, v.add_eos,
      v.add_space_prefix, v.byte_fallback, v.pre.empty() ? 0 : fbb.CreateString(v.pre), v.eot_id, v.eom_id,
      v.chat_template.empty() ? 0 : fbb.CreateString(v.chat_template), v.lowercase, v.strip_accents);
  std::vector<flatbuffers::Offset<fb::Tensor>> fb_tensors;
  for (size_t i = 0; i < written.size(); ++i) {
    const TensorSource& t = written[i];
    std::vector<uint64_t> shape(t.shape.begin(), t.shape.end());
    fb_tensors.push_back(fb::CreateTensor(fbb, fbb.CreateString(t.name), static_cast<fb::DType>(t.dtype),
                                       fbb.CreateVector(shape), offsets[i], t.size,
                                       static_cast<fb::Layout>(t.layout)));
  }
  const Provenance& p = spec.provenance;
  auto provenance = fb::CreateProvenance(
      fbb, fbb.CreateString(p.source_file), p.source_sha256.empty() ? 0 : fbb.CreateVector(p.source_sha256),
      fbb.CreateString(p.converter), fbb.CreateString(p.quantization));
  uint32_t version = kSchemaVersionMin;
  for (const TensorSource& t : written) version = std::max(version, schema_version_for(t.dtype, t.layout));
  auto model = fb::CreateModel(fbb, version, static_cast<fb::Arch>(hp.arch), hparams, tokenizer,
                               fbb.CreateVector(fb_tensors), provenance, data_size,
                               fbb.CreateVector(digest.data(), digest.size()));
  fb::FinishSizePrefixedModelBuffer(fbb, model);

  const uint64_t meta = fbb.GetSize();
  const uint64_t data_offset = align_up(meta, kDataAlignment);
  std::vector<uint8_t> out;
  out.reserve(data_offset + data_size);
  out.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + meta);
  out.resize(data_offset + data_size, 0);
  for (size_t i = 0; i < written.size(); ++i) {
    if (written[i].size) {
      std::memcpy(out.data() + data_offset + offsets[i], written[i].data, written[i].size);
    }
  }
  // The writer never produces a file the loader refuses.
  ModelContents check;
  EMBER_TRY(verify_model(out.data(), out.size(), &check).with_context("refusing to write an invalid model"));
  return out;
}

Status write_model(const ModelSpec& spec, const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serialize_model(spec));
  return write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace ember

// Builds .ember files that the real writer would refuse to produce. The model
// is held in plain, freely editable structs (every enum as its raw byte, every
// count as whatever the test wants), serialized with the generated
// fb::Create* functions and laid out like serialize_model() does: size-prefixed
// metadata, zero padding to 4096, the data segment. A test takes a valid
// baseline (from_file), changes one field, and calls bytes().
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ember_generated.h"
#include "format/model_file.h"

namespace ember::test {

struct RawHParams {
  bool present = true;
  uint32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  uint32_t vocab_size = 0, max_seq_len = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  uint8_t rope_style = 0;
  bool tied_embeddings = false;
};

struct RawTokenizer {
  bool present = true;
  bool has_pieces = true;
  uint8_t kind = 0;
  std::vector<std::string> pieces;
  std::vector<float> scores;   // written only when non-empty
  std::vector<uint8_t> types;  // written only when non-empty
  std::vector<std::string> merges;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  bool add_bos = true, add_eos = false, add_space_prefix = true, byte_fallback = true;
  bool has_pre = false;  // the pre field is written only when set
  std::string pre;
  int32_t eot_id = -1, eom_id = -1;
};

struct RawTensor {
  bool has_name = true;
  std::string name;
  uint8_t dtype = 0;
  bool has_shape = true;
  std::vector<uint64_t> shape;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint8_t layout = 0;
};

struct RawModel {
  uint32_t schema_version = kSchemaVersion;
  uint8_t arch = 0;
  RawHParams hparams;
  RawTokenizer tokenizer;
  bool has_tensors = true;
  std::vector<RawTensor> tensors;
  bool has_digest = true;
  std::vector<uint8_t> digest;  // data_sha256 as written (any length)
  uint64_t data_size = 0;       // the field; `data` is what follows the padding
  std::vector<uint8_t> data;

  // A RawModel equal to a verified file (bytes as produced by the writer).
  static RawModel from_file(const std::vector<uint8_t>& file) {
    ModelContents c;
    const Status s = verify_model(file.data(), file.size(), &c);
    RawModel m;
    if (!s.is_ok()) return m;  // the caller's baseline check fails loudly
    m.schema_version = c.schema_version;
    const HParams& hp = c.hparams;
    m.hparams.dim = hp.dim;
    m.hparams.hidden_dim = hp.hidden_dim;
    m.hparams.n_layers = hp.n_layers;
    m.hparams.n_heads = hp.n_heads;
    m.hparams.n_kv_heads = hp.n_kv_heads;
    m.hparams.vocab_size = hp.vocab_size;
    m.hparams.max_seq_len = hp.max_seq_len;
    m.hparams.norm_eps = hp.norm_eps;
    m.hparams.rope_theta = hp.rope_theta;
    m.hparams.rope_style = static_cast<uint8_t>(hp.rope_style);
    m.hparams.tied_embeddings = hp.tied_embeddings;
    const Vocab& v = c.vocab;
    m.tokenizer.kind = static_cast<uint8_t>(v.kind);
    m.tokenizer.pieces = v.pieces;
    m.tokenizer.scores = v.scores;
    m.tokenizer.types = v.types;
    m.tokenizer.merges = v.merges;
    m.tokenizer.bos_id = v.bos_id;
    m.tokenizer.eos_id = v.eos_id;
    m.tokenizer.unk_id = v.unk_id;
    m.tokenizer.pad_id = v.pad_id;
    m.tokenizer.add_bos = v.add_bos;
    m.tokenizer.add_eos = v.add_eos;
    m.tokenizer.add_space_prefix = v.add_space_prefix;
    m.tokenizer.byte_fallback = v.byte_fallback;
    m.tokenizer.has_pre = !v.pre.empty();
    m.tokenizer.pre = v.pre;
    m.tokenizer.eot_id = v.eot_id;
    m.tokenizer.eom_id = v.eom_id;
    for (const TensorView& t : c.tensors) {
      RawTensor r;
      r.name = t.name;
      r.dtype = static_cast<uint8_t>(t.dtype);
      r.shape.assign(t.shape, t.shape + t.n_dims);
      r.offset = t.offset;
      r.size = t.size;
      r.layout = static_cast<uint8_t>(t.layout);
      m.tensors.push_back(r);
    }
    m.digest = c.data_sha256;
    m.data_size = c.data_size;
    m.data.assign(file.begin() + static_cast<std::ptrdiff_t>(c.data_offset), file.end());
    return m;
  }

  RawTensor* find(const std::string& name) {
    for (auto& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

  bool erase(const std::string& name) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].name == name) {
        tensors.erase(tensors.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
    }
    return false;
  }

  // The metadata FlatBuffer with its u32 size prefix.
  std::vector<uint8_t> metadata() const {
    flatbuffers::FlatBufferBuilder fbb(1 << 16);
    flatbuffers::Offset<fb::HParams> hp_off = 0;
    if (hparams.present) {
      const RawHParams& h = hparams;
      hp_off = fb::CreateHParams(fbb, h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size,
                                  h.max_seq_len, h.norm_eps, h.rope_theta, static_cast<fb::RopeStyle>(h.rope_style),
                                  h.tied_embeddings);
    }
    flatbuffers::Offset<fb::Tokenizer> tk_off = 0;
    if (tokenizer.present) {
      const RawTokenizer& t = tokenizer;
      std::vector<flatbuffers::Offset<flatbuffers::String>> pieces, merges;
      for (const auto& p : t.pieces) pieces.push_back(fbb.CreateString(p.data(), p.size()));
      for (const auto& mg : t.merges) merges.push_back(fbb.CreateString(mg.data(), mg.size()));
      tk_off = fb::CreateTokenizer(
          fbb, static_cast<fb::TokenizerKind>(t.kind), t.has_pieces ? fbb.CreateVector(pieces) : 0,
          t.scores.empty() ? 0 : fbb.CreateVector(t.scores), t.types.empty() ? 0 : fbb.CreateVector(t.types),
          merges.empty() ? 0 : fbb.CreateVector(merges), t.bos_id, t.eos_id, t.unk_id, t.pad_id, t.add_bos,
          t.add_eos, t.add_space_prefix, t.byte_fallback, t.has_pre ? fbb.CreateString(t.pre) : 0, t.eot_id,
          t.eom_id);
    }
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>> table = 0;
    if (has_tensors) {
      std::vector<flatbuffers::Offset<fb::Tensor>> ts;
      for (const RawTensor& t : tensors) {
        ts.push_back(fb::CreateTensor(fbb, t.has_name ? fbb.CreateString(t.name) : 0, static_cast<fb::DType>(t.dtype),
                                      t.has_shape ? fbb.CreateVector(t.shape) : 0, t.offset, t.size,
                                      static_cast<fb::Layout>(t.layout)));
      }
      table = fbb.CreateVector(ts);
    }
    auto digest_vec = has_digest ? fbb.CreateVector(digest) : 0;
    auto model = fb::CreateModel(fbb, schema_version, static_cast<fb::Arch>(arch), hp_off, tk_off, table, 0,
                                 data_size, digest_vec);
    fb::FinishSizePrefixedModelBuffer(fbb, model);
    return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  }

  // The whole file: metadata, zero padding to kDataAlignment, `data`.
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out = metadata();
    const uint64_t data_offset = (out.size() + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
    out.resize(data_offset, 0);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
};

}  // namespace ember::test

// llama2.c checkpoints: a header of 7 int32 (dim, hidden_dim, n_layers,
// n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size means the
// classifier is stored separately), then f32 tensors in a fixed order. The
// layout is [out, in] row-major, which is ember's, so tensors are used in
// place from the mapping.
#include <cstring>

#include "tools/convert/vocab_import.h"
#include "tools/convert/importers.h"
#include "model/llama_graph.h"

namespace ember {

Result<std::unique_ptr<ImportedModel>> import_llama2c(const std::string& checkpoint, const std::string& tokenizer) {
  auto model = std::make_unique<ImportedModel>();
  EMBER_ASSIGN_OR_RETURN(model->source, MappedFile::open(checkpoint));
  const uint8_t* data = model->source.data();
  const size_t size = model->source.size();
  if (size < 28) {
    return Status::error(EMBER_ERR_TRUNCATED, "'%s': %zu bytes, too short for a llama2.c header (28)",
                         checkpoint.c_str(), size);
  }
  int32_t h[7];
  std::memcpy(h, data, sizeof h);
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i) {
    if (h[i] == 0 || (h[i] < 0 && i != 5)) {
      return Status::error(EMBER_ERR_BAD_HPARAMS, "'%s': llama2.c header %s = %d", checkpoint.c_str(), names[i], h[i]);
    }
  }
  HParams& hp = model->spec.hparams;
  hp.dim = h[0];
  hp.hidden_dim = h[1];
  hp.n_layers = h[2];
  hp.n_heads = h[3];
  hp.n_kv_heads = h[4];
  hp.tied_embeddings = h[5] > 0;
  hp.vocab_size = h[5] > 0 ? h[5] : -static_cast<int64_t>(h[5]);
  hp.max_seq_len = h[6];
  hp.norm_eps = 1e-5f;
  hp.rope_theta = 10000.0f;
  hp.rope_style = RopeStyle::Adjacent;
  if (hp.n_heads > kMaxHeads || hp.dim > kMaxDim || hp.hidden_dim > kMaxHiddenDim || hp.n_layers > kMaxLayers ||
      hp.vocab_size > kMaxVocab || hp.dim % hp.n_heads != 0 || hp.n_kv_heads > hp.n_heads ||
      hp.n_heads % hp.n_kv_heads != 0) {
    return Status::error(EMBER_ERR_BAD_HPARAMS,
                         "'%s': inconsistent llama2.c header (dim %u, hidden %u, layers %u, heads %u, kv heads %u, "
                         "vocab %u)",
                         checkpoint.c_str(), hp.dim, hp.hidden_dim, hp.n_layers, hp.n_heads, hp.n_kv_heads,
                         hp.vocab_size);
  }
  const uint64_t dim = hp.dim, hidden = hp.hidden_dim, L = hp.n_layers, head = hp.head_dim();
  const uint64_t q_dim = head * hp.n_heads, kv = hp.kv_dim();

  uint64_t at = 28;
  Status failure;
  // Takes `count` rows of [rows, cols] f32 from the checkpoint, one tensor
  // per layer when per_layer.
  auto take = [&](const char* base, uint64_t layers, uint64_t rows, uint64_t cols) {
    const uint64_t bytes = rows * cols * 4;
    for (uint64_t l = 0; l < layers; ++l) {
      if (!failure.is_ok()) return;
      if (at + bytes > size) {
        failure = Status::error(EMBER_ERR_TRUNCATED, "'%s': file ends inside tensor %s (needs %llu bytes at %llu, has %zu)",
                                checkpoint.c_str(), base, static_cast<unsigned long long>(bytes),
                                static_cast<unsigned long long>(at), size);
        return;
      }
      TensorSource t;
      t.name = layers > 1 || std::strchr(base, '.') == nullptr ? llama_tensor_name(base, static_cast<int>(l)) : base;
      t.dtype = DType::F32;
      if (rows == 1) {
        t.shape = {static_cast<int64_t>(cols)};
      } else {
        t.shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
      }
      t.data = data + at;
      t.size = bytes;
      model->spec.tensors.push_back(t);
      at += bytes;
    }
  };
  take("token_embd.weight", 1, hp.vocab_size, dim);
  take("attn_norm", L, 1, dim);
  take("attn_q", L, q_dim, dim);
  take("attn_k", L, kv, dim);
  take("attn_v", L, kv, dim);
  take("attn_output", L, dim, q_dim);
  take("ffn_norm", L, 1, dim);
  take("ffn_gate", L, hidden, dim);  // w1
  take("ffn_down", L, dim, hidden);  // w2
  take("ffn_up", L, hidden, dim);    // w3
  take("output_norm.weight", 1, 1, dim);
  EMBER_TRY(failure);
  at += hp.max_seq_len * head / 2 * 4 * 2;  // legacy freq_cis_real/imag, unused
  if (!hp.tied_embeddings) take("output.weight", 1, hp.vocab_size, dim);
  EMBER_TRY(failure);
  if (at > size) {
    return Status::error(EMBER_ERR_TRUNCATED, "'%s': file ends inside the RoPE tables", checkpoint.c_str());
  }

  EMBER_ASSIGN_OR_RETURN(std::string tok_bytes, read_file(tokenizer));
  EMBER_ASSIGN_OR_RETURN(model->spec.vocab,
                         vocab_from_llama2c(reinterpret_cast<const uint8_t*>(tok_bytes.data()), tok_bytes.size(),
                                            static_cast<int32_t>(hp.vocab_size)));
  set_provenance(model.get(), checkpoint);
  return model;
}

}  // namespace ember

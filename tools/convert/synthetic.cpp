#include "tools/convert/synthetic.h"

#include <cmath>
#include <cstring>
#include <cstdio>

#include "model/llama_graph.h"
#include "tools/convert/gguf.h"
#include "tools/convert/vocab_import.h"

namespace ember {
namespace {

// xorshift64*: tiny, deterministic on every platform.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  float uniform() { return static_cast<float>(next() >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f; }
};

}  // namespace

bool synth_shape(const std::string& name, SynthShape* out) {
  // name, dim, hidden, layers, heads, kv heads, vocab (0 = the vocabulary's), context
  static const SynthShape kShapes[] = {
      {"tiny", 64, 192, 2, 4, 2, 0, 256},
      {"110m", 768, 2048, 12, 12, 12, 32000, 1024},
      {"0.5b", 896, 4864, 24, 14, 2, 32000, 2048},
      {"1.1b", 2048, 5632, 22, 32, 4, 32000, 2048},
  };
  for (const auto& s : kShapes) {
    if (s.name == name) {
      *out = s;
      return true;
    }
  }
  return false;
}

Vocab builtin_vocab() {
  Vocab v;
  v.kind = TokenizerKind::SentencePiece;
  auto add = [&v](const std::string& piece, float score, TokenType type) {
    v.pieces.push_back(piece);
    v.scores.push_back(score);
    v.types.push_back(static_cast<uint8_t>(type));
  };
  add("<unk>", 0, TokenType::Unknown);
  add("<s>", 0, TokenType::Control);
  add("</s>", 0, TokenType::Control);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 0, TokenType::Byte);
  }
  add("\xe2\x96\x81", -1, TokenType::Normal);  // "▁"
  for (int c = 33; c < 127; ++c) add(std::string(1, static_cast<char>(c)), -1 - c / 100.0f, TokenType::Normal);
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

bool synth_arch_known(const std::string& arch) {
  return arch == "llama" || arch == "llama3" || arch == "qwen2" || arch == "qwen3" || arch == "phi3" ||
         arch == "gemma2" || arch == "gemma3" || arch == "bert" || arch == "nomic-bert" || arch == "bert-reranker";
}

std::vector<float> llama3_rope_factors(uint32_t head_dim, float theta, float factor, float low_freq_factor,
                                       float high_freq_factor, float original_context) {
  // Pairs whose wavelength is short against the original context keep their
  // frequency; long ones are slowed by `factor`; in between, a smooth blend.
  const double kPi = 3.14159265358979323846;
  const double low_wavelen = original_context / low_freq_factor, high_wavelen = original_context / high_freq_factor;
  std::vector<float> f(head_dim / 2);
  for (uint32_t j = 0; j < head_dim / 2; ++j) {
    const double freq = std::pow(static_cast<double>(theta), -2.0 * j / head_dim);
    const double wavelen = 2 * kPi / freq;
    if (wavelen < high_wavelen) {
      f[j] = 1.0f;
    } else if (wavelen > low_wavelen) {
      f[j] = factor;
    } else {
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f[j] = static_cast<float>(1.0 / ((1 - smooth) / factor + smooth));
    }
  }
  return f;
}

std::vector<float> synth_long_rope_factors(uint32_t pairs, bool long_factors) {
  std::vector<float> f(pairs);
  for (uint32_t j = 0; j < pairs; ++j) {
    const float t = pairs > 1 ? static_cast<float>(j) / static_cast<float>(pairs - 1) : 0.0f;
    f[j] = long_factors ? 1.0f + 15.0f * t * t : 1.0f + 0.25f * t;
  }
  return f;
}

namespace {

// The vocabulary: a GGUF file's, a llama2.c tokenizer.bin, or the built-in one padded to
// the shape's size; phi3 gets its added control piece.
Result<Vocab> synth_vocab(const SynthShape& shape, const std::string& vocab_path, bool phi3) {
  Vocab vocab;
  if (vocab_path.empty()) {
    vocab = builtin_vocab();
    // A shape with a realistic vocabulary (32000) keeps its embedding and
    // output sizes: the built-in pieces are padded with unused ones, which
    // the tokenizer never produces.
    for (uint32_t id = static_cast<uint32_t>(vocab.pieces.size()); id < shape.vocab_size; ++id) {
      vocab.pieces.push_back("<unused" + std::to_string(id) + ">");
      vocab.scores.push_back(-1000.0f);
      vocab.types.push_back(static_cast<uint8_t>(TokenType::Unused));
    }
  } else if (vocab_path.size() > 5 && vocab_path.compare(vocab_path.size() - 5, 5, ".gguf") == 0) {
    // A GGUF file's tokenizer.ggml.* (a model, or one of llama.cpp's
    // ggml-vocab-*.gguf): its whole vocabulary, merges and pre-tokenizer,
    // so a synthetic model can carry a 150k-piece BPE vocabulary.
    EMBER_ASSIGN_OR_RETURN(std::string bytes, read_file(vocab_path));
    EMBER_ASSIGN_OR_RETURN(GgufFile gguf,
                           GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    EMBER_ASSIGN_OR_RETURN(vocab, vocab_from_gguf(gguf));
  } else {
    EMBER_ASSIGN_OR_RETURN(std::string bytes, read_file(vocab_path));
    const int32_t n = shape.vocab_size ? static_cast<int32_t>(shape.vocab_size) : 32000;
    EMBER_ASSIGN_OR_RETURN(vocab, vocab_from_llama2c(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), n));
  }
  if (phi3) {
    // Phi-3's added control piece: llama.cpp marks it on loading a model
    // whose name says phi3, and fails when the vocabulary lacks it.
    vocab.pieces.push_back("<|endoftext|>");
    vocab.scores.push_back(0.0f);
    vocab.types.push_back(static_cast<uint8_t>(TokenType::Control));
  }
  return vocab;
}

// Gemma's: heads twice dim / n_heads wide (Gemma's are 256 on dims of
// 1152..), unless --head-dim says; a window of 8 so a test prompt outruns
// it; caps small enough to bend random weights' scores and logits.
void gemma_hparams(const SynthShape& shape, bool gemma2, HParams* hp) {
  hp->arch = gemma2 ? ModelArch::Gemma2 : ModelArch::Gemma3;
  hp->rope_style = RopeStyle::Half;
  hp->norm_eps = 1e-6f;
  if (hp->explicit_head_dim == 0) hp->explicit_head_dim = 2 * (shape.dim / shape.n_heads);
  hp->sliding_window = 8;
  // Layer 0 slides, layer 1 is global (Gemma 3's period of 6 on a two-layer
  // model would make every layer slide).
  hp->swa_period = 2;
  if (gemma2) {
    hp->attn_softcap = 1.5f;
    hp->final_softcap = 2.0f;
  } else {
    hp->rope_theta = 1000000.0f;
    hp->rope_theta_swa = 10000.0f;
    hp->rope_scale_global = 8.0f;
  }
}

// The family's hyper-parameters for the shape, partial rotary and LongRoPE.
Status synth_hparams(const SynthShape& shape, uint32_t vocab_size, HParams* out) {
  const std::string& a = shape.arch;
  const bool llama3 = a == "llama3", qwen2 = a == "qwen2", qwen3 = a == "qwen3", phi3 = a == "phi3";
  const bool gemma2 = a == "gemma2", gemma = gemma2 || a == "gemma3";
  HParams& hp = *out;
  hp.dim = shape.dim;
  hp.hidden_dim = shape.hidden_dim;
  hp.n_layers = shape.n_layers;
  hp.n_heads = shape.n_heads;
  hp.n_kv_heads = shape.n_kv_heads;
  hp.explicit_head_dim = shape.head_dim;
  hp.vocab_size = vocab_size;
  hp.max_seq_len = shape.context;
  hp.tied_embeddings = llama3 || qwen2 || qwen3 || gemma;
  if (llama3) hp.rope_theta = 500000.0f;
  if (qwen2 || qwen3) {
    hp.arch = qwen2 ? ModelArch::Qwen2 : ModelArch::Qwen3;
    hp.rope_theta = 1000000.0f;
  }
  if (gemma) gemma_hparams(shape, gemma2, &hp);
  if (phi3) hp.arch = ModelArch::Phi3;
  if (a == "bert" || a == "nomic-bert" || a == "bert-reranker") {
    // An encoder: BERT's layer-norm epsilon, mean pooling, no output head;
    // nomic-bert rotates with base 1000, as nomic-embed-text does; a
    // bert-reranker pools by rank through its classifier head.
    hp.arch = a == "nomic-bert" ? ModelArch::NomicBert : ModelArch::Bert;
    hp.rope_style = model_arch_rope_style(hp.arch);
    if (a == "nomic-bert") hp.rope_theta = 1000.0f;
    hp.norm_eps = 1e-12f;
    hp.pooling = a == "bert-reranker" ? 4 : 1;
    hp.n_kv_heads = hp.n_heads;
    hp.tied_embeddings = true;
  }
  hp.rope_style = model_arch_rope_style(hp.arch);
  if (shape.rope_dims % 2 != 0 || shape.rope_dims > hp.head_dim()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "rope dims %u: must be even and <= the head width %u",
                         shape.rope_dims, hp.head_dim());
  }
  hp.rope_dims = shape.rope_dims == hp.head_dim() ? 0 : shape.rope_dims;
  if (shape.long_rope_orig != 0) {
    if (!phi3) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "LongRoPE is a phi3 option, not %s's", shape.arch.c_str());
    }
    hp.rope_orig_context = shape.long_rope_orig;
    const double scale = static_cast<double>(hp.max_seq_len) / shape.long_rope_orig;
    hp.rope_attn_factor =
        scale > 1.0 ? static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(shape.long_rope_orig))))
                    : 1.0f;
  }
  return Status::ok();
}

// Appends tensors of pseudo-random values to a model, in the order they
// are made (one generator: the same seed, the same bytes).
struct SynthTensors {
  ImportedModel* model;
  DType dtype;
  Rng rng;
  std::vector<float> row;

  void add(const std::string& name, DType type, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
    model->spec.tensors.push_back({name, type, std::move(shape), bytes.data(), bytes.size()});
    model->owned.push_back(std::move(bytes));
  }
  void matrix(const std::string& name, int64_t rows, int64_t cols) {
    uint64_t row_bytes = 0;
    dtype_bytes(dtype, static_cast<uint64_t>(cols), &row_bytes);
    std::vector<uint8_t> bytes(row_bytes * rows);
    row.resize(cols);
    const float scale = 1.0f / std::sqrt(static_cast<float>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) row[c] = rng.uniform() * scale * 1.7f;
      quantize_row(dtype, row.data(), bytes.data() + r * row_bytes, cols);
    }
    add(name, dtype, {rows, cols}, std::move(bytes));
  }
  // Norms: 1 + 0.1 u.
  void norm(const std::string& name, int64_t n) {
    std::vector<uint8_t> bytes(n * sizeof(float));
    float* f = reinterpret_cast<float*>(bytes.data());
    for (int64_t i = 0; i < n; ++i) f[i] = 1.0f + 0.1f * rng.uniform();
    add(name, DType::F32, {n}, std::move(bytes));
  }
  // Biases of a size that moves the scores: qwen2's are large on k.
  void bias(const std::string& name, int64_t n) {
    std::vector<uint8_t> bytes(n * sizeof(float));
    float* f = reinterpret_cast<float*>(bytes.data());
    for (int64_t i = 0; i < n; ++i) f[i] = 0.5f * rng.uniform();
    add(name, DType::F32, {n}, std::move(bytes));
  }
  // Given values (RoPE factors).
  void values(const std::string& name, const std::vector<float>& f) {
    std::vector<uint8_t> bytes(f.size() * sizeof(float));
    std::memcpy(bytes.data(), f.data(), bytes.size());
    add(name, DType::F32, {static_cast<int64_t>(f.size())}, std::move(bytes));
  }
};

void synth_layer(const SynthShape& shape, const HParams& hp, int li, SynthTensors* t) {
  const std::string& a = shape.arch;
  const bool gemma = a == "gemma2" || a == "gemma3";
  const int64_t dim = hp.dim, q = hp.q_dim(), kv = hp.kv_dim(), hidden = hp.hidden_dim;
  t->norm(llama_tensor_name("attn_norm", li), dim);
  t->matrix(llama_tensor_name("attn_q", li), q, dim);
  t->matrix(llama_tensor_name("attn_k", li), kv, dim);
  t->matrix(llama_tensor_name("attn_v", li), kv, dim);
  if (a == "qwen2") {
    t->bias(llama_bias_name("attn_q", li), q);
    t->bias(llama_bias_name("attn_k", li), kv);
    t->bias(llama_bias_name("attn_v", li), kv);
  }
  if (a == "qwen3" || a == "gemma3") {
    t->norm(llama_tensor_name("attn_q_norm", li), hp.head_dim());
    t->norm(llama_tensor_name("attn_k_norm", li), hp.head_dim());
  }
  t->matrix(llama_tensor_name("attn_output", li), dim, q);
  if (gemma) {
    t->norm(llama_tensor_name("post_attention_norm", li), dim);
    t->norm(llama_tensor_name("post_ffw_norm", li), dim);
  }
  t->norm(llama_tensor_name("ffn_norm", li), dim);
  t->matrix(llama_tensor_name("ffn_gate", li), hidden, dim);
  t->matrix(llama_tensor_name("ffn_up", li), hidden, dim);
  t->matrix(llama_tensor_name("ffn_down", li), dim, hidden);
}

// BERT's tensors (model/bert_graph.cpp), biases and norms f32.
void synth_bert_tensors(const HParams& hp, SynthTensors* t) {
  const int64_t dim = hp.dim, hidden = hp.hidden_dim;
  const bool nomic = hp.arch == ModelArch::NomicBert;
  t->matrix("token_embd.weight", hp.vocab_size, dim);
  if (!nomic) t->matrix("position_embd.weight", hp.max_seq_len, dim);
  const DType saved = t->dtype;
  t->dtype = DType::F32;  // as converters keep it
  t->matrix("token_types.weight", 2, dim);
  t->dtype = saved;
  t->norm("token_embd_norm.weight", dim);
  t->bias("token_embd_norm.bias", dim);
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const struct {
      const char* name;
      int64_t rows, cols;
    } mats[] = {{"attn_q", dim, dim}, {"attn_k", dim, dim}, {"attn_v", dim, dim},
                {"attn_output", dim, dim}, {"ffn_up", hidden, dim}, {"ffn_down", dim, hidden}};
    for (const auto& m : mats) {
      t->matrix(b + m.name + ".weight", m.rows, m.cols);
      if (!nomic) t->bias(b + m.name + ".bias", m.rows);  // nomic-bert's matrices have none
    }
    if (nomic) t->matrix(b + "ffn_gate.weight", hidden, dim);
    for (const char* norm : {"attn_output_norm", "layer_output_norm"}) {
      t->norm(b + norm + ".weight", dim);
      t->bias(b + norm + ".bias", dim);
    }
  }
}

void synth_tensors(const SynthShape& shape, const HParams& hp, SynthTensors* t) {
  if (shape.arch == "bert" || shape.arch == "nomic-bert" || shape.arch == "bert-reranker") {
    synth_bert_tensors(hp, t);
    if (shape.arch == "bert-reranker") {  // the classifier head (engine/embed.h, RankHead): one label
      t->matrix("cls.weight", hp.dim, hp.dim);
      t->bias("cls.bias", hp.dim);
      t->matrix("cls.output.weight", 1, hp.dim);
      t->bias("cls.output.bias", 1);
    }
    return;
  }
  // First, long then short, as llama.cpp's converter writes them (its rope
  // reads freq_factors for all head_dim / 2 pairs, past n_rot / 2: a factor
  // tensor at the end of a file can fault there).
  if (shape.long_rope_orig != 0) {
    for (const bool lng : {true, false}) {
      t->values(lng ? "rope_factors_long.weight" : "rope_factors_short.weight",
                synth_long_rope_factors(hp.rotated_dims() / 2, lng));
    }
  }
  t->matrix("token_embd.weight", hp.vocab_size, hp.dim);
  for (uint32_t l = 0; l < hp.n_layers; ++l) synth_layer(shape, hp, static_cast<int>(l), t);
  t->norm("output_norm.weight", hp.dim);
  if (!hp.tied_embeddings) t->matrix("output.weight", hp.vocab_size, hp.dim);
  if (shape.arch == "llama3") {
    t->values("rope_freqs.weight", llama3_rope_factors(hp.head_dim(), hp.rope_theta, 8.0f, 1.0f, 4.0f, 8192.0f));
  }
}

}  // namespace

Result<std::unique_ptr<ImportedModel>> make_synthetic(const SynthShape& shape, DType dtype, uint64_t seed,
                                                      const std::string& vocab_path) {
  if (!synth_arch_known(shape.arch)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "synthetic arch '%s' is not one of llama, llama3, qwen2, qwen3, phi3, gemma2, gemma3, bert, nomic-bert, "
                         "bert-reranker",
                         shape.arch.c_str());
  }
  auto model = std::make_unique<ImportedModel>();
  ModelSpec& spec = model->spec;
  EMBER_ASSIGN_OR_RETURN(Vocab vocab, synth_vocab(shape, vocab_path, shape.arch == "phi3"));
  HParams& hp = spec.hparams;
  EMBER_TRY(synth_hparams(shape, static_cast<uint32_t>(vocab.pieces.size()), &hp));
  spec.vocab = std::move(vocab);
  const uint32_t block = static_cast<uint32_t>(dtype_block_elements(dtype));
  if (hp.dim % block || hp.hidden_dim % block) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "shape '%s': dim %u / hidden %u are not multiples of %u for %s",
                         shape.name.c_str(), hp.dim, hp.hidden_dim, block, dtype_name(dtype));
  }
  SynthTensors tensors{model.get(), dtype, Rng(seed), {}};
  synth_tensors(shape, hp, &tensors);

  Provenance& p = spec.provenance;
  p.source_file = "synthetic:" + shape.name + ":seed=" + std::to_string(seed);
  p.converter = std::string("ember synth ") + EMBER_VERSION_STRING;
  p.quantization = std::string(dtype_name(dtype)) + " (norms f32)";
  return model;
}

}  // namespace ember

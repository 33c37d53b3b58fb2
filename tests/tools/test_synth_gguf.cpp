// ember synth: the same seed gives the same bytes; --gguf writes a GGUF that
// ember's importer reads back to the same model (and that carries the keys
// llama.cpp needs).
#include <doctest/doctest.h>

#include "tools/convert/gguf.h"
#include "tools/convert/gguf_writer.h"
#include "tools_helpers.h"

namespace ember {

TEST_SUITE("tools") {

TEST_CASE("synth: the same seed gives the same data sha256, another seed another") {
  const std::string dir = test::temp_dir("synth");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  for (const char* dtype : {"f32", "q8_0", "q4_0", "f16"}) {
    const std::string dtype_str = dtype;
    CAPTURE(dtype_str);
    const std::string a = dir + "/a-" + dtype + ".ember", b = dir + "/b-" + dtype + ".ember",
                      c = dir + "/c-" + dtype + ".ember";
    const std::string common = std::string(" synth --shape tiny --vocab builtin --dtype ") + dtype;
    REQUIRE(test::run_cli(common + " --seed 5 -o " + a + " 2>/dev/null").rc == 0);
    REQUIRE(test::run_cli(common + " --seed 5 -o " + b + " 2>/dev/null").rc == 0);
    REQUIRE(test::run_cli(common + " --seed 6 -o " + c + " 2>/dev/null").rc == 0);
    CHECK(test::data_digest(a) == test::data_digest(b));
    CHECK(test::data_digest(a) != test::data_digest(c));
  }
  auto r = test::run_cli("synth --shape 7b -o " + dir + "/x.ember 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.rfind("EMBER_ERR_INVALID_ARGUMENT: --shape '7b'", 0) == 0);
}

TEST_CASE("synth: a realistic vocabulary size is kept with the built-in vocabulary") {
  SynthShape s;
  REQUIRE(synth_shape("tiny", &s));
  s.vocab_size = 1000;
  auto m = make_synthetic(s, DType::F32, 1, "");
  REQUIRE(m.is_ok());
  CHECK(m.value()->spec.vocab.pieces.size() == 1000);
  CHECK(m.value()->spec.hparams.vocab_size == 1000);
  CHECK(m.value()->spec.tensors.front().shape[0] == 1000);
}

TEST_CASE("gguf writer: import_gguf reads back the same hyper-parameters, vocabulary and tensor bytes") {
  const std::string dir = test::temp_dir("gguf-writer");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  for (DType dtype : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
    const std::string dtype_str = dtype_name(dtype);
    CAPTURE(dtype_str);
    auto src = make_synthetic(tiny, dtype, 11, "");
    REQUIRE(src.is_ok());
    const ModelSpec& a = src.value()->spec;
    const std::string path = dir + "/tiny-" + dtype_name(dtype) + ".gguf";
    REQUIRE(write_gguf(a, path).is_ok());
    auto back = import_gguf(path);
    REQUIRE_MESSAGE(back.is_ok(), back.status().message());
    const ModelSpec& b = back.value()->spec;
    CHECK(b.hparams.dim == a.hparams.dim);
    CHECK(b.hparams.hidden_dim == a.hparams.hidden_dim);
    CHECK(b.hparams.n_layers == a.hparams.n_layers);
    CHECK(b.hparams.n_heads == a.hparams.n_heads);
    CHECK(b.hparams.n_kv_heads == a.hparams.n_kv_heads);
    CHECK(b.hparams.vocab_size == a.hparams.vocab_size);
    CHECK(b.hparams.max_seq_len == a.hparams.max_seq_len);
    CHECK(b.hparams.norm_eps == a.hparams.norm_eps);
    CHECK(b.hparams.rope_theta == a.hparams.rope_theta);
    CHECK(b.hparams.rope_style == a.hparams.rope_style);
    CHECK(b.hparams.tied_embeddings == a.hparams.tied_embeddings);
    CHECK(b.vocab.pieces == a.vocab.pieces);
    CHECK(b.vocab.scores == a.vocab.scores);
    CHECK(b.vocab.types == a.vocab.types);
    CHECK(b.vocab.bos_id == a.vocab.bos_id);
    CHECK(b.vocab.eos_id == a.vocab.eos_id);
    CHECK(b.vocab.unk_id == a.vocab.unk_id);
    REQUIRE(b.tensors.size() == a.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      CAPTURE(a.tensors[i].name);
      CHECK(b.tensors[i].name == a.tensors[i].name);
      CHECK(b.tensors[i].dtype == a.tensors[i].dtype);
      CHECK(b.tensors[i].shape == a.tensors[i].shape);
      REQUIRE(b.tensors[i].size == a.tensors[i].size);
      CHECK(std::memcmp(b.tensors[i].data, a.tensors[i].data, a.tensors[i].size) == 0);
    }
    // Keys llama.cpp reads for the llama architecture, and GGUF dim order.
    auto bytes = read_file(path);
    REQUIRE(bytes.is_ok());
    auto g = GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
    REQUIRE(g.is_ok());
    CHECK(g->version() == 3);
    for (const char* key : {"general.architecture", "general.file_type", "llama.context_length",
                            "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
                            "llama.rope.dimension_count", "llama.attention.head_count",
                            "llama.attention.head_count_kv", "llama.attention.layer_norm_rms_epsilon",
                            "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                            "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
                            "tokenizer.ggml.eos_token_id"}) {
      CHECK_MESSAGE(g->find(key) != nullptr, key);
    }
    const GgufTensorInfo* q = g->find_tensor("blk.0.ffn_gate.weight");
    REQUIRE(q != nullptr);
    CHECK(q->dims[0] == tiny.dim);         // ne[0]: the row length
    CHECK(q->dims[1] == tiny.hidden_dim);  // ne[1]: rows
  }
}

TEST_CASE("head width other than dim / heads (Qwen3, Gemma): survives GGUF and conversion, and runs") {
  const std::string dir = test::temp_dir("head-dim");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  tiny.head_dim = 32;  // dim 64 / 4 heads would be 16: queries are 128 wide
  auto src = make_synthetic(tiny, DType::F32, 3, "");
  REQUIRE(src.is_ok());
  const std::string gguf = dir + "/hd.gguf", ember = dir + "/hd.ember";
  REQUIRE(write_gguf(src.value()->spec, gguf).is_ok());
  auto back = import_gguf(gguf);
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  CHECK(back.value()->spec.hparams.explicit_head_dim == 32);
  CHECK(back.value()->spec.hparams.q_dim() == 128);
  REQUIRE(test::run_cli("convert " + gguf + " -o " + ember + " 2>/dev/null").rc == 0);
  auto f = ModelFile::open(ember, ModelFile::Options{});
  REQUIRE(f.is_ok());
  CHECK(f.value()->contents().hparams.head_dim() == 32);
  auto r = test::run_cli("run -m " + ember + " --tokens 1,5,9 -n 3 --ids 2>/dev/null");
  CHECK(r.rc == 0);
  CHECK(!r.out.empty());
  // An odd head width cannot be rotated: refused by name.
  auto bad = test::run_cli("synth --shape tiny --head-dim 31 -o " + dir + "/odd.ember 2>&1");
  CHECK(bad.rc != 0);
  CHECK(bad.out.find("--head-dim 31") != std::string::npos);
}

TEST_CASE("synth --gguf, then ember convert: the same tensors and data sha256 as synth .ember") {
  const std::string dir = test::temp_dir("synth-gguf");
  for (const char* dtype : {"q8_0", "q4_0"}) {
    const std::string dtype_str = dtype;
    CAPTURE(dtype_str);
    const std::string common = std::string(" synth --shape tiny --vocab builtin --seed 9 --dtype ") + dtype;
    const std::string direct = dir + "/direct-" + dtype + ".ember", gguf = dir + "/tiny-" + dtype + ".gguf",
                      converted = dir + "/converted-" + dtype + ".ember";
    REQUIRE(test::run_cli(common + " -o " + direct + " 2>/dev/null").rc == 0);
    REQUIRE(test::run_cli(common + " --gguf -o " + gguf + " 2>/dev/null").rc == 0);
    REQUIRE(test::run_cli("convert " + gguf + " -o " + converted + " 2>/dev/null").rc == 0);
    CHECK(test::data_digest(direct) == test::data_digest(converted));
    auto a = ModelFile::open(direct, ModelFile::Options{});
    auto b = ModelFile::open(converted, ModelFile::Options{});
    REQUIRE(a.is_ok());
    REQUIRE(b.is_ok());
    REQUIRE(a.value()->tensors().size() == b.value()->tensors().size());
    for (size_t i = 0; i < a.value()->tensors().size(); ++i) {
      const TensorView& x = a.value()->tensors()[i];
      const TensorView& y = b.value()->tensors()[i];
      CHECK(x.name == y.name);
      CHECK(x.dtype == y.dtype);
      CHECK(x.rows() == y.rows());
      CHECK(x.cols() == y.cols());
    }
  }
}

}  // TEST_SUITE
}  // namespace ember

// Hostile .ember files: every check in verify_model(), check_llama_tensors()
// and Tokenizer::create() is reached by a file built here, and each must fail
// with its own status and a message that names the field. The files are made
// by mutating the bytes of a valid file or by writing the FlatBuffer directly
// (malformed_builder.h), since the real writer refuses to produce them.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "ember.h"
#include "format/malformed_builder.h"
#include "format/model_file.h"
#include "model/llama_graph.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

using test::RawModel;

// A very small llama: one layer, dim 8, the built-in 354-piece vocabulary.
// Small metadata keeps the every-byte mutation test fast.
SynthShape micro_shape() {
  SynthShape s;
  s.name = "micro";
  s.dim = 8;
  s.hidden_dim = 16;
  s.n_layers = 1;
  s.n_heads = 2;
  s.n_kv_heads = 1;
  s.context = 16;
  return s;
}

// The valid file every case starts from (empty if the writer failed; the
// baseline test then fails loudly).
const std::vector<uint8_t>& baseline() {
  static const std::vector<uint8_t> bytes = [] {
    auto model = make_synthetic(micro_shape(), DType::F32, 7, "");
    if (!model.is_ok()) return std::vector<uint8_t>();
    // Row-major: the cases below set a tensor's layout themselves.
    model.value()->spec.quant_layout = Layout::RowMajor;
    auto file = serialize_model(model.value()->spec);
    return file.is_ok() ? std::move(file).value() : std::vector<uint8_t>();
  }();
  return bytes;
}

RawModel raw() { return RawModel::from_file(baseline()); }

uint32_t get_u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

void put_u32(std::vector<uint8_t>* b, size_t at, uint32_t v) { std::memcpy(b->data() + at, &v, 4); }

// Where the sections of the baseline lie.
struct FileLayout {
  size_t meta_end;     // 4 + metadata size: the first padding byte
  size_t data_offset;  // the first data byte
  size_t size;         // the file size
};

FileLayout layout_of(const std::vector<uint8_t>& b) {
  FileLayout l;
  l.meta_end = 4 + get_u32(b, 0);
  l.data_offset = (l.meta_end + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  l.size = b.size();
  return l;
}

struct Outcome {
  ember_status code = EMBER_OK;
  std::string message;
};

Outcome verify(const std::vector<uint8_t>& b) {
  ModelContents c;
  const Status s = verify_model(b.data(), b.size(), &c);
  return {s.code(), s.message()};
}

// verify_model, then the architecture's tensor checks (what Model::open adds
// before the tokenizer).
Outcome verify_llama(const std::vector<uint8_t>& b) {
  ModelContents c;
  Status s = verify_model(b.data(), b.size(), &c);
  if (s.is_ok()) s = check_llama_tensors(c);
  return {s.code(), s.message()};
}

// This process's scratch directory, removed at exit.
const std::string& scratch_dir() {
  static const struct Dir {
    std::string path = test::temp_dir("malformed");
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

// The whole public path: the bytes written to a file, ember_model_open.
Outcome open_public(const std::vector<uint8_t>& b, const std::string& name, bool verify_digest = false) {
  const std::string path = scratch_dir() + "/" + name + ".ember";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  ember_model_options opt;
  ember_model_options_default(&opt);
  opt.integrity_policy = verify_digest ? EMBER_INTEGRITY_DIGEST : EMBER_INTEGRITY_NONE;
  ember_model* model = nullptr;
  Outcome o;
  o.code = ember_model_open(path.c_str(), &opt, &model);
  o.message = ember_last_error();
  if (o.code != EMBER_OK) {
    CHECK_MESSAGE(model == nullptr, name << ": a failed open must leave *out_model NULL");
    CHECK_MESSAGE(!o.message.empty(), name << ": ember_last_error() is empty after " << ember_status_string(o.code));
  }
  ember_model_free(model);
  std::filesystem::remove(path);
  return o;
}

// ember_model_open on a path as given.
Outcome open_path(const std::string& path) {
  ember_model* model = nullptr;
  Outcome o;
  o.code = ember_model_open(path.c_str(), nullptr, &model);
  o.message = ember_last_error();
  ember_model_free(model);
  return o;
}

std::string name_of(ember_status s) { return ember_status_string(s); }

}  // namespace
}  // namespace ember

// Checks the status (by name, so failures read well) and that the message
// contains `needle`.
#define EXPECT_FAILS(outcome_expr, want, needle)                                              \
  do {                                                                                        \
    const ::ember::Outcome o_ = (outcome_expr);                                               \
    INFO("message: " << o_.message);                                                          \
    CHECK(::ember::name_of(o_.code) == ::ember::name_of(want));                               \
    CHECK_MESSAGE(o_.message.find(needle) != std::string::npos, "message lacks '" << (needle) \
                                                                                  << "'");   \
  } while (0)

namespace ember {

TEST_SUITE("malformed") {

TEST_CASE("the baseline and its rebuilt twin are valid") {
  const auto& base = baseline();
  REQUIRE(!base.empty());
  CHECK(verify(base).code == EMBER_OK);
  const FileLayout l = layout_of(base);
  CHECK(l.meta_end < l.data_offset);  // the padding cases below need padding
  CHECK(l.data_offset < l.size);
  RawModel m = raw();
  REQUIRE(m.tensors.size() == 12);
  const std::vector<uint8_t> twin = m.bytes();
  const Outcome v = verify(twin);
  INFO(v.message);
  CHECK(v.code == EMBER_OK);
  CHECK(verify_llama(twin).code == EMBER_OK);
  CHECK(open_public(twin, "twin", /*verify_digest=*/true).code == EMBER_OK);
}

// ---- (a) byte mutations of a valid file ------------------------------------

TEST_CASE("truncation at every section is EMBER_ERR_TRUNCATED") {
  const auto& base = baseline();
  REQUIRE(!base.empty());
  const FileLayout l = layout_of(base);
  auto cut = [&](size_t n) { return std::vector<uint8_t>(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(n)); };

  EXPECT_FAILS(verify(cut(0)), EMBER_ERR_TRUNCATED, "too short");
  EXPECT_FAILS(verify(cut(2)), EMBER_ERR_TRUNCATED, "too short");   // inside the size prefix
  EXPECT_FAILS(verify(cut(11)), EMBER_ERR_TRUNCATED, "too short");  // inside the identifier
  EXPECT_FAILS(verify(cut(12)), EMBER_ERR_TRUNCATED, "size prefix");
  EXPECT_FAILS(verify(cut(l.meta_end / 2)), EMBER_ERR_TRUNCATED, "size prefix");  // inside the metadata
  EXPECT_FAILS(verify(cut(l.meta_end - 1)), EMBER_ERR_TRUNCATED, "size prefix");
  EXPECT_FAILS(verify(cut(l.meta_end)), EMBER_ERR_TRUNCATED, "data segment");  // no padding at all
  EXPECT_FAILS(verify(cut((l.meta_end + l.data_offset) / 2)), EMBER_ERR_TRUNCATED, "data segment");  // in padding
  EXPECT_FAILS(verify(cut(l.data_offset)), EMBER_ERR_TRUNCATED, "data segment");  // no data
  EXPECT_FAILS(verify(cut(l.data_offset + (l.size - l.data_offset) / 2)), EMBER_ERR_TRUNCATED, "data segment");
  EXPECT_FAILS(verify(cut(l.size - 1)), EMBER_ERR_TRUNCATED, "data segment");

  // The same through the public API, mapped from disk.
  EXPECT_FAILS(open_public(cut(0), "empty"), EMBER_ERR_TRUNCATED, "too short");
  EXPECT_FAILS(open_public(cut(l.meta_end / 2), "cut_meta"), EMBER_ERR_TRUNCATED, "size prefix");
  EXPECT_FAILS(open_public(cut(l.size - 1), "cut_data"), EMBER_ERR_TRUNCATED, "data segment");
}

TEST_CASE("framing: identifier, trailing bytes, padding, size prefix") {
  const auto& base = baseline();
  REQUIRE(!base.empty());
  const FileLayout l = layout_of(base);

  {  // bad file identifier
    auto b = base;
    b[11] = 'X';
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "EMBR");
    EXPECT_FAILS(open_public(b, "bad_identifier"), EMBER_ERR_FORMAT, "EMBR");
  }
  {  // a GGUF header is not an .ember file
    std::vector<uint8_t> b(4096, 0);
    std::memcpy(b.data(), "GGUF\x03\0\0\0", 8);
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "EMBR");
  }
  {  // all zeros
    EXPECT_FAILS(verify(std::vector<uint8_t>(8192, 0)), EMBER_ERR_FORMAT, "EMBR");
  }
  {  // trailing garbage: one byte, then a page
    auto b = base;
    b.push_back(0);
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "trailing");
    b.insert(b.end(), 4095, 0xAB);
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "trailing");
    EXPECT_FAILS(open_public(b, "trailing"), EMBER_ERR_FORMAT, "trailing");
  }
  {  // non-zero padding, first and last padding byte
    auto b = base;
    b[l.meta_end] = 1;
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "padding");
    b = base;
    b[l.data_offset - 1] = 0x80;
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "padding");
    EXPECT_FAILS(open_public(b, "padding"), EMBER_ERR_FORMAT, "padding");
  }
  {  // size prefix huge
    auto b = base;
    put_u32(&b, 0, 0xFFFFFFFFu);
    EXPECT_FAILS(verify(b), EMBER_ERR_TRUNCATED, "size prefix");
    EXPECT_FAILS(open_public(b, "huge_prefix"), EMBER_ERR_TRUNCATED, "size prefix");
  }
  {  // size prefix below the FlatBuffer minimum
    auto b = base;
    put_u32(&b, 0, 4);
    EXPECT_FAILS(verify(b), EMBER_ERR_TRUNCATED, "size prefix");
    put_u32(&b, 0, 0);
    EXPECT_FAILS(verify(b), EMBER_ERR_TRUNCATED, "size prefix");
  }
  {  // size prefix shorter than the FlatBuffer: the verifier refuses it
    auto b = base;
    put_u32(&b, 0, get_u32(base, 0) - 256);
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "verifier");
  }
  {  // size prefix reaching into the data segment: the segment then ends late
    auto b = base;
    put_u32(&b, 0, get_u32(base, 0) + static_cast<uint32_t>(kDataAlignment));
    EXPECT_FAILS(verify(b), EMBER_ERR_TRUNCATED, "data segment");
  }
  {  // root offset pointing outside the buffer
    auto b = base;
    put_u32(&b, 4, 0xFFFFFFF0u);
    EXPECT_FAILS(verify(b), EMBER_ERR_FORMAT, "verifier");
  }
}

TEST_CASE("a flipped data byte passes verification but fails the digest check") {
  auto b = baseline();
  REQUIRE(!b.empty());
  b[b.size() - 3] ^= 0x5A;
  CHECK(verify(b).code == EMBER_OK);
  CHECK(open_public(b, "digest_off", /*verify_digest=*/false).code == EMBER_OK);
  EXPECT_FAILS(open_public(b, "digest_on", /*verify_digest=*/true), EMBER_ERR_INTEGRITY, "SHA-256");
}

TEST_CASE("ember_model_open of a path that is not a file is EMBER_ERR_IO") {
  const std::string dir = scratch_dir();
  EXPECT_FAILS(open_path(dir + "/does-not-exist.ember"), EMBER_ERR_IO, "does-not-exist");
  EXPECT_FAILS(open_path(dir), EMBER_ERR_IO, "regular file");
}

// ---- (b) FlatBuffers written directly ----------------------------------------

TEST_CASE("schema version and architecture") {
  // The writer writes the lowest version that holds the file: 1 for
  // row-major f32, 3 once a float matrix is rows16.
  REQUIRE(raw().schema_version == 1);
  {
    auto model = make_synthetic(micro_shape(), DType::F32, 7, "");
    REQUIRE(model.is_ok());
    auto file = serialize_model(model.value()->spec);
    REQUIRE(file.is_ok());
    CHECK(RawModel::from_file(file.value()).schema_version == 3);
  }
  for (uint32_t v : {0u, kSchemaVersion + 1, 999u, 0xFFFFFFFFu}) {
    RawModel m = raw();
    m.schema_version = v;
    INFO("schema_version " << v);
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_VERSION, "schema_version = " + std::to_string(v));
  }
  EXPECT_FAILS(open_public([] { RawModel m = raw(); m.schema_version = kSchemaVersion + 1; return m.bytes(); }(), "version-next"),
               EMBER_ERR_VERSION, "schema_version");
  for (uint32_t v = kSchemaVersionMin; v <= kSchemaVersion; ++v) {
    RawModel m = raw();
    m.schema_version = v;
    INFO("schema_version " << v);
    ModelContents c;
    const std::vector<uint8_t> b = m.bytes();
    CHECK(verify_model(b.data(), b.size(), &c).is_ok());
    CHECK(c.schema_version == v);
  }
  // Q5_K/Q6_K rows16 tiles changed order in version 2: a version-1 file
  // holding one is refused, naming the tensor; other rows16 types are not
  // (their check further on fails instead, on this too-small shape).
  for (DType t : {DType::Q5_K, DType::Q6_K}) {
    RawModel m = raw();
    m.schema_version = 1;
    m.tensors[2].dtype = static_cast<uint8_t>(t);
    m.tensors[2].layout = 1;
    const std::string name = m.tensors[2].name;
    INFO(dtype_name(t));
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_VERSION, "tensor '" + name + "': " + dtype_name(t) + " rows16");
    m.schema_version = 2;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_BAD_TENSOR, name);
  }
  // Float rows16 came in version 3: a version-2 file holding one is refused.
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    RawModel m = raw();
    m.schema_version = 2;
    m.tensors[2].dtype = static_cast<uint8_t>(t);
    m.tensors[2].layout = 1;
    const std::string name = m.tensors[2].name;
    INFO(dtype_name(t));
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_VERSION, "tensor '" + name + "': " + dtype_name(t) + " rows16");
  }
  {
    RawModel m = raw();
    m.tensors[2].dtype = static_cast<uint8_t>(DType::Q4_K);
    m.tensors[2].layout = 1;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_BAD_TENSOR, "rows need a multiple of 256");
  }
  // A family this build does not know (0 .. kModelArchCount - 1 are known).
  for (uint8_t a : {static_cast<uint8_t>(kModelArchCount), uint8_t{255}}) {
    RawModel m = raw();
    m.arch = a;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_UNSUPPORTED, "arch = " + std::to_string(a));
  }
}

TEST_CASE("enums out of range: rope_style, tokenizer kind") {
  {
    RawModel m = raw();
    m.hparams.rope_style = 2;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "rope_style = 2");
  }
  {
    RawModel m = raw();
    m.hparams.rope_style = 255;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "rope_style");
  }
  {
    RawModel m = raw();
    m.tokenizer.kind = 3;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "tokenizer.kind = 3");
  }
}

TEST_CASE("data segment fields: digest length, data_size") {
  {
    RawModel m = raw();
    m.has_digest = false;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "data_sha256");
  }
  {
    RawModel m = raw();
    m.digest.resize(31);
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "data_sha256");
    m.digest.resize(33);
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "data_sha256");
  }
  {  // data_size says more than the file holds
    RawModel m = raw();
    m.data_size += 64;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_TRUNCATED, "data segment");
    m.data_size = UINT64_MAX;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_TRUNCATED, "data segment");
  }
  {  // data_size says less: the rest is trailing data
    RawModel m = raw();
    m.data_size -= 64;
    EXPECT_FAILS(verify(m.bytes()), EMBER_ERR_FORMAT, "trailing");
  }
}

TEST_CASE("hyper-parameters are EMBER_ERR_BAD_HPARAMS naming the field") {
  auto with = [](auto edit) {
    RawModel m = raw();
    edit(m.hparams);
    return verify(m.bytes());
  };
  using H = test::RawHParams;
  EXPECT_FAILS(with([](H& h) { h.present = false; }), EMBER_ERR_BAD_HPARAMS, "hparams");
  EXPECT_FAILS(with([](H& h) { h.n_heads = 0; }), EMBER_ERR_BAD_HPARAMS, "n_heads = 0");
  EXPECT_FAILS(with([](H& h) { h.n_heads = 5000; }), EMBER_ERR_BAD_HPARAMS, "n_heads = 5000");
  EXPECT_FAILS(with([](H& h) { h.n_layers = 0; }), EMBER_ERR_BAD_HPARAMS, "n_layers = 0");
  EXPECT_FAILS(with([](H& h) { h.n_layers = 100000; }), EMBER_ERR_BAD_HPARAMS, "n_layers = 100000");
  EXPECT_FAILS(with([](H& h) { h.n_kv_heads = 0; }), EMBER_ERR_BAD_HPARAMS, "n_kv_heads = 0");
  EXPECT_FAILS(with([](H& h) { h.n_kv_heads = 3; }), EMBER_ERR_BAD_HPARAMS, "n_kv_heads = 3");  // > n_heads 2
  // 3 kv heads do not divide 4 heads (dim 8 / 4 = head_dim 2, even).
  EXPECT_FAILS(with([](H& h) { h.n_heads = 4; h.n_kv_heads = 3; }), EMBER_ERR_BAD_HPARAMS,
               "n_kv_heads = 3 does not divide n_heads = 4");
  // 3 heads do not divide dim 8.
  EXPECT_FAILS(with([](H& h) { h.n_heads = 3; h.n_kv_heads = 1; }), EMBER_ERR_BAD_HPARAMS,
               "n_heads = 3 does not divide dim = 8");
  // 8 heads of dimension 1: odd head dimension, no RoPE pairs.
  EXPECT_FAILS(with([](H& h) { h.n_heads = 8; h.n_kv_heads = 1; }), EMBER_ERR_BAD_HPARAMS, "even");
  EXPECT_FAILS(with([](H& h) { h.dim = 0; }), EMBER_ERR_BAD_HPARAMS, "dim = 0");
  EXPECT_FAILS(with([](H& h) { h.dim = 100000; }), EMBER_ERR_BAD_HPARAMS, "dim = 100000");
  EXPECT_FAILS(with([](H& h) { h.hidden_dim = 0; }), EMBER_ERR_BAD_HPARAMS, "hidden_dim = 0");
  EXPECT_FAILS(with([](H& h) { h.vocab_size = 0; }), EMBER_ERR_BAD_HPARAMS, "vocab_size = 0");
  EXPECT_FAILS(with([](H& h) { h.vocab_size = (1u << 20) + 1; }), EMBER_ERR_BAD_HPARAMS, "vocab_size");
  EXPECT_FAILS(with([](H& h) { h.max_seq_len = 0; }), EMBER_ERR_BAD_HPARAMS, "max_seq_len = 0");
  EXPECT_FAILS(with([](H& h) { h.norm_eps = 0.0f; }), EMBER_ERR_BAD_HPARAMS, "norm_eps");
  EXPECT_FAILS(with([](H& h) { h.norm_eps = std::numeric_limits<float>::quiet_NaN(); }), EMBER_ERR_BAD_HPARAMS,
               "norm_eps");
  EXPECT_FAILS(with([](H& h) { h.rope_theta = std::numeric_limits<float>::infinity(); }), EMBER_ERR_BAD_HPARAMS,
               "rope_theta");
  EXPECT_FAILS(with([](H& h) { h.rope_theta = -1.0f; }), EMBER_ERR_BAD_HPARAMS, "rope_theta");
  EXPECT_FAILS(open_public([] { RawModel m = raw(); m.hparams.n_heads = 0; return m.bytes(); }(), "n_heads0"),
               EMBER_ERR_BAD_HPARAMS, "n_heads");
}

TEST_CASE("tokenizer metadata is EMBER_ERR_BAD_TOKENIZER naming the field") {
  auto with = [](auto edit) {
    RawModel m = raw();
    edit(m);
    return verify(m.bytes());
  };
  const uint32_t n = raw().hparams.vocab_size;
  REQUIRE(n == 354);
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.present = false; }), EMBER_ERR_BAD_TOKENIZER, "tokenizer");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.has_pieces = false; }), EMBER_ERR_BAD_TOKENIZER, "pieces");
  // vocabulary size != vocab_size, both ways
  EXPECT_FAILS(with([](RawModel& m) { m.hparams.vocab_size -= 1; }), EMBER_ERR_BAD_TOKENIZER, "vocab_size = 353");
  EXPECT_FAILS(with([](RawModel& m) {
                 m.tokenizer.pieces.push_back("extra");
                 m.tokenizer.scores.push_back(0);
                 m.tokenizer.types.push_back(1);
               }),
               EMBER_ERR_BAD_TOKENIZER, "355 entries");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.scores.pop_back(); }), EMBER_ERR_BAD_TOKENIZER, "scores");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.types.push_back(1); }), EMBER_ERR_BAD_TOKENIZER, "types");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.bos_id = 600; }), EMBER_ERR_BAD_TOKENIZER, "bos_id = 600");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.eos_id = -5; }), EMBER_ERR_BAD_TOKENIZER, "eos_id = -5");
  EXPECT_FAILS(with([n](RawModel& m) { m.tokenizer.unk_id = static_cast<int32_t>(n); }), EMBER_ERR_BAD_TOKENIZER,
               "unk_id = 354");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.pad_id = INT32_MIN; }), EMBER_ERR_BAD_TOKENIZER, "pad_id");
  EXPECT_FAILS(open_public([] { RawModel m = raw(); m.tokenizer.bos_id = 600; return m.bytes(); }(), "bos600"),
               EMBER_ERR_BAD_TOKENIZER, "bos_id");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.eot_id = 354; }), EMBER_ERR_BAD_TOKENIZER, "eot_id = 354");
  EXPECT_FAILS(with([](RawModel& m) { m.tokenizer.eom_id = -3; }), EMBER_ERR_BAD_TOKENIZER, "eom_id = -3");
  // The pre-tokenizer: a name this build does not implement is refused by
  // name, never read as GPT-2; SentencePiece has none.
  auto bpe = [](RawModel& m, const char* pre) {
    m.tokenizer.kind = 1;
    m.tokenizer.has_pre = true;
    m.tokenizer.pre = pre;
  };
  EXPECT_FAILS(with([&](RawModel& m) { bpe(m, "tekken-9000"); }), EMBER_ERR_UNSUPPORTED, "tekken-9000");
  EXPECT_FAILS(with([](RawModel& m) {
                 m.tokenizer.has_pre = true;
                 m.tokenizer.pre = "qwen2";
               }),
               EMBER_ERR_BAD_TOKENIZER, "pre = 'qwen2'");
  EXPECT_FAILS(with([](RawModel& m) {
                 m.tokenizer.kind = 2;
                 m.tokenizer.has_pre = true;
                 m.tokenizer.pre = "bert-bge";
               }),
               EMBER_ERR_BAD_TOKENIZER, "pre = 'bert-bge' on a WordPiece tokenizer");
  EXPECT_FAILS(open_public([&] { RawModel m = raw(); bpe(m, "nope"); return m.bytes(); }(), "pre-nope"),
               EMBER_ERR_UNSUPPORTED, "nope");
  for (const char* ok : {"llama-bpe", "qwen2", "gpt-2", ""}) {
    INFO("pre '" << ok << "'");
    CHECK(with([&](RawModel& m) { bpe(m, ok); }).code == EMBER_OK);
  }
  // A file from before the field (no pre, no eot/eom) still verifies, as GPT-2.
  {
    RawModel m = raw();
    m.tokenizer.kind = 1;
    ModelContents c;
    const std::vector<uint8_t> b = m.bytes();
    REQUIRE(verify_model(b.data(), b.size(), &c).is_ok());
    CHECK(c.vocab.pre.empty());
    CHECK(c.vocab.eot_id == -1);
  }
}

TEST_CASE("tensor table entries are EMBER_ERR_BAD_TENSOR naming the tensor") {
  auto with = [](auto edit) {
    RawModel m = raw();
    edit(m);
    return verify(m.bytes());
  };
  using M = RawModel;
  // tensors[0] token_embd [354, 8], [1] blk.0.attn_norm [8], [2] blk.0.attn_q [8, 8], ... [11] output [354, 8]
  EXPECT_FAILS(with([](M& m) { m.tensors[1].offset = (m.data_size + 128) / 64 * 64; }), EMBER_ERR_BAD_TENSOR,
               "past the data segment");
  EXPECT_FAILS(with([](M& m) { m.tensors.back().offset += 64; }), EMBER_ERR_BAD_TENSOR, "output.weight");
  // offset + size wraps around u64
  EXPECT_FAILS(with([](M& m) { m.tensors[2].offset = UINT64_MAX - 63; }), EMBER_ERR_BAD_TENSOR,
               "past the data segment");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].offset += 4; }), EMBER_ERR_BAD_TENSOR, "not 64-byte aligned");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].size += 4; }), EMBER_ERR_BAD_TENSOR, "size = 260");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].size = 0; }), EMBER_ERR_BAD_TENSOR, "size = 0");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].shape = {8, 0}; }), EMBER_ERR_BAD_TENSOR, "shape[1] = 0");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].shape = {uint64_t(1) << 41, 8}; }), EMBER_ERR_BAD_TENSOR,
               "shape[0] = 2199023255552");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].shape = {8, 8, 1, 1, 1}; }), EMBER_ERR_BAD_TENSOR, "5 dimensions");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].shape = {}; }), EMBER_ERR_BAD_TENSOR, "0 dimensions");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].has_shape = false; }), EMBER_ERR_BAD_TENSOR, "0 dimensions");
  // element count overflows u64: 2^40 x 2^40
  EXPECT_FAILS(with([](M& m) { m.tensors[2].shape = {uint64_t(1) << 40, uint64_t(1) << 40, 1, 1}; }),
               EMBER_ERR_BAD_TENSOR, "overflows");
  // element count fits (2^63) but the byte count of f32 does not
  EXPECT_FAILS(with([](M& m) { m.tensors[2].shape = {uint64_t(1) << 40, uint64_t(1) << 23}; }),
               EMBER_ERR_BAD_TENSOR, "blk.0.attn_q.weight");
  // quantized rows must be whole blocks
  EXPECT_FAILS(with([](M& m) { m.tensors[2].dtype = static_cast<uint8_t>(DType::Q8_0); }), EMBER_ERR_BAD_TENSOR,
               "multiple of 32");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].dtype = static_cast<uint8_t>(DType::Q5_0); }), EMBER_ERR_BAD_TENSOR,
               "q5_0 rows need a multiple of 32");
  // K-quants and IQ4_XS: rows of whole 256-element super-blocks, bytes from dtype_bytes
  EXPECT_FAILS(with([](M& m) { m.tensors[2].dtype = static_cast<uint8_t>(DType::Q4_K); }), EMBER_ERR_BAD_TENSOR,
               "q4_k rows need a multiple of 256");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].dtype = static_cast<uint8_t>(DType::IQ4_XS); }), EMBER_ERR_BAD_TENSOR,
               "iq4_xs rows need a multiple of 256");
  EXPECT_FAILS(with([](M& m) {
                 m.tensors[2].dtype = static_cast<uint8_t>(DType::Q6_K);
                 m.tensors[2].shape = {1, 256};
               }),
               EMBER_ERR_BAD_TENSOR, "size = 256 bytes but q6_k x 256 elements need 210");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].dtype = 15; }), EMBER_ERR_BAD_TENSOR, "dtype = 15");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].dtype = 255; }), EMBER_ERR_BAD_TENSOR, "dtype = 255");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].layout = 2; }), EMBER_ERR_BAD_TENSOR, "layout = 2");
  EXPECT_FAILS(with([](M& m) { m.tensors[2].layout = 255; }), EMBER_ERR_BAD_TENSOR, "layout = 255");
  // rows16 only for matrices with rows a multiple of 16 (f32 ones from
  // schema version 3 on, so the file says 3 here)
  EXPECT_FAILS(with([](M& m) { m.schema_version = kSchemaVersion; m.tensors[2].layout = 1; }), EMBER_ERR_BAD_TENSOR,
               "layout rows16 needs");
  EXPECT_FAILS(with([](M& m) { m.schema_version = kSchemaVersion; m.tensors[1].layout = 1; }), EMBER_ERR_BAD_TENSOR,
               "layout rows16 needs");
  // iq4_xs has the layout, but only for rows a multiple of 16
  EXPECT_FAILS(with([](M& m) {
                 m.tensors[2].dtype = static_cast<uint8_t>(DType::IQ4_XS);
                 m.tensors[2].shape = {24, 256};
                 m.tensors[2].layout = 1;
               }),
               EMBER_ERR_BAD_TENSOR, "layout rows16 needs a q8_0/q4_0/q5_0/q2_k/q3_k/q4_k/q5_k/q6_k/iq4_xs matrix");
  // attn_q starts where attn_norm starts; attn_k starts inside attn_q
  EXPECT_FAILS(with([](M& m) { m.tensors[2].offset = m.tensors[1].offset; }), EMBER_ERR_BAD_TENSOR, "overlap");
  EXPECT_FAILS(with([](M& m) { m.tensors[3].offset = m.tensors[2].offset + 64; }), EMBER_ERR_BAD_TENSOR, "overlap");
  EXPECT_FAILS(with([](M& m) { m.tensors[3].name = m.tensors[2].name; }), EMBER_ERR_BAD_TENSOR, "appears twice");
  EXPECT_FAILS(with([](M& m) { m.tensors[3].name = ""; }), EMBER_ERR_BAD_TENSOR, "tensor #3 has no name");
  EXPECT_FAILS(with([](M& m) { m.tensors[3].has_name = false; }), EMBER_ERR_BAD_TENSOR, "no name");
  EXPECT_FAILS(open_public([] { RawModel m = raw(); m.tensors[2].offset += 4; return m.bytes(); }(), "unaligned"),
               EMBER_ERR_BAD_TENSOR, "aligned");
}

TEST_CASE("the architecture's tensors: missing, misshapen, f16 norms") {
  auto with = [](auto edit) {
    RawModel m = raw();
    edit(m);
    return m.bytes();
  };
  using M = RawModel;
  // Each file passes verify_model; check_llama_tensors refuses it.
  const auto no_output = with([](M& m) { m.erase("output.weight"); });
  CHECK(verify(no_output).code == EMBER_OK);
  EXPECT_FAILS(verify_llama(no_output), EMBER_ERR_MISSING_TENSOR, "output.weight");
  EXPECT_FAILS(open_public(no_output, "no_output"), EMBER_ERR_MISSING_TENSOR, "output.weight");
  EXPECT_FAILS(verify_llama(with([](M& m) { m.erase("blk.0.ffn_down.weight"); })), EMBER_ERR_MISSING_TENSOR,
               "blk.0.ffn_down.weight");
  EXPECT_FAILS(verify_llama(with([](M& m) { m.tensors.clear(); })), EMBER_ERR_MISSING_TENSOR, "token_embd.weight");
  EXPECT_FAILS(verify_llama(with([](M& m) { m.has_tensors = false; })), EMBER_ERR_MISSING_TENSOR,
               "token_embd.weight");
  // hparams say two layers; the file has one
  EXPECT_FAILS(open_public(with([](M& m) { m.hparams.n_layers = 2; }), "two_layers"), EMBER_ERR_MISSING_TENSOR,
               "blk.1.attn_norm.weight");
  // same bytes, wrong shape
  EXPECT_FAILS(verify_llama(with([](M& m) { m.find("blk.0.attn_q.weight")->shape = {4, 16}; })),
               EMBER_ERR_BAD_TENSOR, "blk.0.attn_q.weight");
  EXPECT_FAILS(verify_llama(with([](M& m) { m.find("blk.0.attn_norm.weight")->shape = {2, 4}; })),
               EMBER_ERR_BAD_TENSOR, "blk.0.attn_norm.weight");
  EXPECT_FAILS(open_public(with([](M& m) { m.find("token_embd.weight")->shape = {708, 4}; }), "embd_shape"),
               EMBER_ERR_BAD_TENSOR, "token_embd.weight");
  // an f16 norm (size halved to match)
  const auto f16_norm = with([](M& m) {
    test::RawTensor* t = m.find("output_norm.weight");
    t->dtype = static_cast<uint8_t>(DType::F16);
    t->size /= 2;
  });
  CHECK(verify(f16_norm).code == EMBER_OK);
  EXPECT_FAILS(verify_llama(f16_norm), EMBER_ERR_BAD_TENSOR, "must be f32");
  EXPECT_FAILS(open_public(f16_norm, "f16_norm"), EMBER_ERR_BAD_TENSOR, "output_norm.weight");
}

TEST_CASE("vocabulary pieces the tokenizer refuses (Model::open)") {
  // Pieces: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF> (type Byte), 259 "▁", 260.. printable ASCII.
  auto with = [](auto edit) {
    RawModel m = raw();
    edit(m.tokenizer);
    return m.bytes();
  };
  using T = test::RawTokenizer;
  auto expect_open = [](const std::vector<uint8_t>& b, const std::string& name, const std::string& needle) {
    CHECK_MESSAGE(verify(b).code == EMBER_OK, name << " should pass verify_model");
    EXPECT_FAILS(open_public(b, name), EMBER_ERR_BAD_TOKENIZER, needle);
  };
  expect_open(with([](T& t) { t.pieces[3 + 0x41] = "<0x-1>"; }), "byte_minus", "<0x-1>");
  expect_open(with([](T& t) { t.pieces[3 + 0x41] = "<0xZZ>"; }), "byte_zz", "<0xZZ>");
  expect_open(with([](T& t) { t.pieces[3 + 0x41] = "<0x414>"; }), "byte_long", "<0x414>");
  // without token types, an SPM piece shaped like a byte piece must be one
  expect_open(with([](T& t) {
                t.types.clear();
                t.pieces[3 + 0x41] = "<0xG1>";
              }),
              "byte_untyped", "<0xG1>");
  expect_open(with([](T& t) { t.pieces[261] = t.pieces[262]; }), "duplicate", "duplicates");
  expect_open(with([](T& t) { t.pieces[270] = ""; }), "empty_piece", "token 270 has an empty piece");
  expect_open(with([](T& t) { t.pieces[270] = std::string("a\0b", 3); }), "nul_piece", "NUL");
  expect_open(with([](T& t) { t.types[270] = 7; }), "type7", "type 7");
  // a BPE vocabulary with a merge that is not "left right"
  expect_open(with([](T& t) {
                t.kind = 1;
                t.merges = {"a b", "nospace"};
              }),
              "bpe_merge", "nospace");
}

TEST_CASE("every metadata byte flipped: verify_model never crashes") {
  auto b = baseline();
  REQUIRE(!b.empty());
  const FileLayout l = layout_of(b);
  const auto t0 = std::chrono::steady_clock::now();
  size_t ok = 0, failed = 0, bad_status = 0;
  for (size_t i = 0; i < l.meta_end; ++i) {
    b[i] ^= 0xFF;
    ModelContents c;
    const Status s = verify_model(b.data(), b.size(), &c);
    const ember_status code = s.code();
    if (code == EMBER_OK) {
      ++ok;
      // What verify_model lets through must not crash the next stages either.
      (void)check_llama_tensors(c);
      (void)Tokenizer::create(c.vocab);
    } else {
      ++failed;
      const bool known = code == EMBER_ERR_FORMAT || code == EMBER_ERR_VERSION || code == EMBER_ERR_TRUNCATED ||
                         code == EMBER_ERR_BAD_TENSOR || code == EMBER_ERR_BAD_HPARAMS ||
                         code == EMBER_ERR_BAD_TOKENIZER;
      if (!known || s.message().empty()) {
        ++bad_status;
        FAIL_CHECK("byte " << i << ": status " << ember_status_string(code) << " '" << s.message() << "'");
      }
    }
    b[i] ^= 0xFF;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(l.meta_end << " bytes flipped: " << ok << " still valid, " << failed << " refused, " << ms << " ms");
  CHECK(bad_status == 0);
  CHECK(failed > 0);
}

}  // TEST_SUITE

}  // namespace ember

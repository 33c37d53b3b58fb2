// GGUF reader: real files from ../shared, synthetic files covering every
// value type and tensor type, and malformed buffers that must fail with
// their specific status (never crash, never allocate what the file claims).
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/vocab_import.h"

namespace ember {
namespace {

// Writes GGUF by hand, little-endian, so tests can also write it wrong.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) {
    raw("GGUF", 4);
    u32(version);
    u64(0);  // n_tensors, patched by finish()
    u64(0);  // n_kv
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void u8(uint8_t v) { raw(&v, 1); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void key(const std::string& k, GgufType t) {
    str(k);
    u32(static_cast<uint32_t>(t));
    ++n_kv_;
  }
  void kv_u32(const std::string& k, uint32_t v) { key(k, GgufType::U32), u32(v); }
  void kv_i32(const std::string& k, int32_t v) { key(k, GgufType::I32), raw(&v, 4); }
  void kv_i8(const std::string& k, int8_t v) { key(k, GgufType::I8), raw(&v, 1); }
  void kv_u64(const std::string& k, uint64_t v) { key(k, GgufType::U64), u64(v); }
  void kv_i64(const std::string& k, int64_t v) { key(k, GgufType::I64), raw(&v, 8); }
  void kv_f32(const std::string& k, float v) { key(k, GgufType::F32), raw(&v, 4); }
  void kv_f64(const std::string& k, double v) { key(k, GgufType::F64), raw(&v, 8); }
  void kv_bool(const std::string& k, bool v) { key(k, GgufType::Bool), u8(v ? 1 : 0); }
  void kv_str(const std::string& k, const std::string& v) { key(k, GgufType::String), str(v); }
  void kv_strs(const std::string& k, const std::vector<std::string>& v) {
    key(k, GgufType::Array);
    u32(static_cast<uint32_t>(GgufType::String));
    u64(v.size());
    for (const auto& s : v) str(s);
  }
  void kv_f32s(const std::string& k, const std::vector<float>& v) {
    key(k, GgufType::Array);
    u32(static_cast<uint32_t>(GgufType::F32));
    u64(v.size());
    for (float f : v) raw(&f, 4);
  }
  void kv_i32s(const std::string& k, const std::vector<int32_t>& v) {
    key(k, GgufType::Array);
    u32(static_cast<uint32_t>(GgufType::I32));
    u64(v.size());
    for (int32_t x : v) raw(&x, 4);
  }
  void tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
              uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    u32(type);
    u64(offset);
    ++n_tensors_;
  }
  // Pads to `alignment` and appends `data_bytes` bytes of tensor data.
  std::string finish(size_t data_bytes = 0, uint32_t alignment = 32) {
    std::string out = buf_;
    std::memcpy(&out[8], &n_tensors_, 8);
    std::memcpy(&out[16], &n_kv_, 8);
    if (data_bytes > 0) {
      while (out.size() % alignment != 0) out.push_back('\0');
      for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<char>(i));
    }
    return out;
  }
  size_t size() const { return buf_.size(); }

 private:
  std::string buf_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

Result<GgufFile> parse(const std::string& b) {
  return GgufFile::parse(reinterpret_cast<const uint8_t*>(b.data()), b.size());
}

ember_status parse_code(const std::string& b) { return parse(b).status().code(); }

bool mentions(const Status& s, const std::string& needle) {
  return s.message().find(needle) != std::string::npos;
}

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("real vocabulary GGUF files parse") {
  const std::string path = test::test_data("vocab/ggml-vocab-llama-spm.gguf");
  if (path.empty()) return;
  const std::string bytes = test::read_text_file(path);
  auto g = parse(bytes);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  CHECK(g->version() == 3);
  CHECK(g->alignment() == 32);
  CHECK(g->tensors().empty());
  CHECK(g->get_string("tokenizer.ggml.model").value() == "llama");
  CHECK(g->get_string_array("tokenizer.ggml.tokens").value().size() == 32000);
  CHECK(g->get_f32_array("tokenizer.ggml.scores").value().size() == 32000);
  CHECK(g->get_i32_array("tokenizer.ggml.token_type").value().size() == 32000);
  CHECK(g->get_u32("tokenizer.ggml.bos_token_id").value() == 1);
  CHECK(g->get_bool("tokenizer.ggml.add_bos_token").value() == true);
  // Every strict prefix of a real file fails cleanly.
  for (size_t cut : {size_t{0}, size_t{3}, size_t{7}, size_t{23}, size_t{100}, bytes.size() / 2,
                     bytes.size() - 1}) {
    CHECK_FALSE(parse(bytes.substr(0, cut)).is_ok());
  }
}

TEST_CASE("stories260K GGUF: tensor table in GGUF dimension order") {
  const std::string path = test::test_data("models/stories260K-f32.gguf");
  if (path.empty()) return;
  const std::string bytes = test::read_text_file(path);
  auto g = parse(bytes);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  CHECK(g->tensors().size() == 48);
  const GgufTensorInfo* emb = g->find_tensor("token_embd.weight");
  REQUIRE(emb != nullptr);
  CHECK(emb->n_dims == 2);
  CHECK(emb->dims[0] == 64);   // ne[0]: the embedding dimension (contiguous)
  CHECK(emb->dims[1] == 512);  // ne[1]: vocabulary
  CHECK(emb->type == static_cast<uint32_t>(GgmlType::F32));
  CHECK(emb->size_known);
  CHECK(emb->size == 64 * 512 * 4);
  const uint8_t* base = reinterpret_cast<const uint8_t*>(bytes.data());
  for (const GgufTensorInfo& t : g->tensors()) {
    CHECK(t.size_known);
    CHECK(t.size == t.n_elements * 4);
    CHECK(t.data >= base + g->data_offset());
    CHECK(t.data + t.size <= base + bytes.size());
  }
  CHECK(g->find_tensor("nope") == nullptr);
  CHECK(g->get_u32("llama.embedding_length").value() == 64);
}

TEST_CASE("every value type, nested arrays, getters and coercion") {
  GgufWriter w;
  w.kv_u32("a.u32", 7);
  w.kv_i32("a.i32", -3);
  w.kv_i8("a.i8", 5);
  w.kv_u64("a.u64_big", uint64_t{1} << 40);
  w.kv_i64("a.i64", 42);
  w.kv_f32("a.f32", 1.5f);
  w.kv_f64("a.f64", 0.25);
  w.kv_bool("a.bool", true);
  w.kv_str("a.str", "hello");
  w.kv_strs("a.strs", {"x", "", "yz"});
  w.kv_f32s("a.f32s", {1, 2, 3});
  w.kv_i32s("a.i32s", {-1, 0, 1});
  w.key("a.u8", GgufType::U8), w.u8(200);
  w.key("a.u16", GgufType::U16), w.raw("\x34\x12", 2);
  w.key("a.i16", GgufType::I16), w.raw("\xFE\xFF", 2);
  // array of arrays of u16, and an array of u8 as i32 array
  w.key("a.nested", GgufType::Array);
  w.u32(static_cast<uint32_t>(GgufType::Array));
  w.u64(2);
  for (int i = 0; i < 2; ++i) {
    w.u32(static_cast<uint32_t>(GgufType::U16));
    w.u64(3);
    w.raw("\x01\x00\x02\x00\x03\x00", 6);
  }
  w.key("a.u8s", GgufType::Array);
  w.u32(static_cast<uint32_t>(GgufType::U8));
  w.u64(2);
  w.raw("\x05\xFF", 2);
  const std::string b = w.finish();
  auto g = parse(b);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  const GgufFile& f = g.value();
  CHECK(f.kvs().size() == 17);

  CHECK(f.get_u32("a.u32").value() == 7);
  CHECK(f.get_i32("a.u32").value() == 7);
  CHECK(f.get_u64("a.u32").value() == 7);
  CHECK(f.get_i32("a.i32").value() == -3);
  CHECK(f.get_u32("a.i8").value() == 5);
  CHECK(f.get_u64("a.u64_big").value() == (uint64_t{1} << 40));
  CHECK(f.get_i32("a.i64").value() == 42);
  CHECK(f.get_u32("a.u8").value() == 200);
  CHECK(f.get_u32("a.u16").value() == 0x1234);
  CHECK(f.get_i32("a.i16").value() == -2);
  CHECK(f.get_f32("a.f32").value() == 1.5f);
  CHECK(f.get_f32("a.f64").value() == 0.25f);
  CHECK(f.get_bool("a.bool").value() == true);
  CHECK(f.get_string("a.str").value() == "hello");
  CHECK(f.get_string_array("a.strs").value() == std::vector<std::string>{"x", "", "yz"});
  CHECK(f.get_f32_array("a.f32s").value() == std::vector<float>{1, 2, 3});
  CHECK(f.get_i32_array("a.i32s").value() == std::vector<int32_t>{-1, 0, 1});
  CHECK(f.get_i32_array("a.u8s").value() == std::vector<int32_t>{5, 255});
  const GgufKv* nested = f.find("a.nested");
  REQUIRE(nested != nullptr);
  CHECK(nested->value.elem_type == GgufType::Array);
  CHECK(nested->value.count == 2);

  // Lossy or mismatched conversions: FORMAT naming the key and actual type.
  Status s = f.get_u32("a.i32").status();
  CHECK(s.code() == EMBER_ERR_FORMAT);
  CHECK(mentions(s, "a.i32"));
  s = f.get_u32("a.u64_big").status();
  CHECK(s.code() == EMBER_ERR_FORMAT);
  CHECK(mentions(s, "u64"));
  s = f.get_u32("a.str").status();
  CHECK(s.code() == EMBER_ERR_FORMAT);
  CHECK(mentions(s, "a.str"));
  CHECK(mentions(s, "string"));
  s = f.get_string("a.u32").status();
  CHECK(s.code() == EMBER_ERR_FORMAT);
  CHECK(mentions(s, "u32"));
  CHECK(f.get_bool("a.u32").status().code() == EMBER_ERR_FORMAT);
  CHECK(f.get_f32("a.u32").status().code() == EMBER_ERR_FORMAT);
  s = f.get_string_array("a.f32s").status();
  CHECK(s.code() == EMBER_ERR_FORMAT);
  CHECK(mentions(s, "array of f32"));
  CHECK(f.get_f32_array("a.i32s").status().code() == EMBER_ERR_FORMAT);
  CHECK(f.get_i32_array("a.strs").status().code() == EMBER_ERR_FORMAT);
  CHECK(f.get_i32_array("a.nested").status().code() == EMBER_ERR_FORMAT);
  s = f.get_u32("missing.key").status();
  CHECK(s.code() == EMBER_ERR_FORMAT);
  CHECK(mentions(s, "missing.key"));
  CHECK(f.find("missing.key") == nullptr);
}

TEST_CASE("tensor types, sizes, alignment and data section") {
  GgufWriter w;
  w.kv_u32("general.alignment", 64);
  w.tensor("f32", {4, 2}, 0, 0);        // 32 bytes
  w.tensor("f16", {8}, 1, 64);          // 16 bytes
  w.tensor("q4", {64, 2}, 2, 128);      // 4 blocks * 18 = 72
  w.tensor("q8", {32}, 8, 256);         // 34
  w.tensor("bf16", {3, 1, 1, 2}, 30, 320);  // 12
  w.tensor("iq2_xxs", {256}, 16, 384);  // not stored by ember: size unknown
  const size_t header = w.size();
  const std::string b = w.finish(448, 64);
  auto g = parse(b);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  CHECK(g->alignment() == 64);
  CHECK(g->data_offset() == (header + 63) / 64 * 64);
  const auto& t = g->tensors();
  REQUIRE(t.size() == 6);
  CHECK(t[0].size == 32);
  CHECK(t[1].size == 16);
  CHECK(t[2].size == 72);
  CHECK(t[3].size == 34);
  CHECK(t[4].size == 12);
  CHECK(t[4].n_dims == 4);
  CHECK(t[4].dims[3] == 2);
  CHECK(t[0].dims[2] == 1);  // unused dims are 1
  CHECK(t[5].size_known == false);
  CHECK(t[5].type == 16);
  CHECK(std::string(ggml_type_name(16)) == "iq2_xxs");
  CHECK(ggml_type_name(77) == nullptr);
  CHECK(std::string(ggml_type_name(8)) == "q8_0");
  const uint8_t* base = reinterpret_cast<const uint8_t*>(b.data());
  CHECK(t[2].data == base + g->data_offset() + 128);
  CHECK(t[2].data[0] == 128);  // the writer fills data with its index

  // A quantized row that is not a whole number of blocks.
  GgufWriter q;
  q.tensor("bad_q8", {48, 2}, 8, 0);
  Status s = parse(q.finish(200)).status();
  CHECK(s.code() == EMBER_ERR_BAD_TENSOR);
  CHECK(mentions(s, "bad_q8"));
}

TEST_CASE("malformed headers") {
  // Truncated header: every prefix of the fixed header.
  const std::string good = GgufWriter().finish();
  REQUIRE(parse(good).is_ok());
  for (size_t cut = 0; cut < good.size(); ++cut) {
    INFO("cut " << cut);
    CHECK(parse_code(good.substr(0, cut)) == EMBER_ERR_TRUNCATED);
  }
  CHECK(GgufFile::parse(nullptr, 0).status().code() == EMBER_ERR_TRUNCATED);

  std::string bad_magic = good;
  bad_magic[0] = 'X';
  CHECK(parse_code(bad_magic) == EMBER_ERR_FORMAT);
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
    const Status s = parse(GgufWriter(v).finish()).status();
    CHECK(s.code() == EMBER_ERR_VERSION);
  }
  CHECK(parse(GgufWriter(2).finish()).is_ok());
}

TEST_CASE("hostile counts and lengths fail without huge allocations") {
  {
    std::string b = GgufWriter().finish();
    const uint64_t huge = ~uint64_t{0};
    std::memcpy(&b[16], &huge, 8);  // n_kv
    const Status s = parse(b).status();
    CHECK(s.code() == EMBER_ERR_TRUNCATED);
    CHECK(mentions(s, "metadata count"));
  }
  {
    std::string b = GgufWriter().finish();
    const uint64_t huge = uint64_t{1} << 62;
    std::memcpy(&b[8], &huge, 8);  // n_tensors
    CHECK(parse_code(b) == EMBER_ERR_TRUNCATED);
  }
  {
    GgufWriter w;
    w.key("big.array", GgufType::Array);
    w.u32(static_cast<uint32_t>(GgufType::String));
    w.u64(uint64_t{1} << 60);
    const Status s = parse(w.finish()).status();
    CHECK(s.code() == EMBER_ERR_TRUNCATED);
    CHECK(mentions(s, "big.array"));
  }
  {
    GgufWriter w;
    w.key("big.u64s", GgufType::Array);
    w.u32(static_cast<uint32_t>(GgufType::U64));
    w.u64(uint64_t{1} << 61);  // * 8 would overflow a naive size check
    CHECK(parse_code(w.finish()) == EMBER_ERR_TRUNCATED);
  }
  {
    // String length past the end (key, then value).
    GgufWriter w;
    w.u64(1000);
    w.raw("abc", 3);
    std::string b = w.finish();
    const uint64_t one = 1;
    std::memcpy(&b[16], &one, 8);
    CHECK(parse_code(b) == EMBER_ERR_TRUNCATED);
    GgufWriter v;
    v.key("k", GgufType::String);
    v.u64(~uint64_t{0});
    CHECK(parse_code(v.finish()) == EMBER_ERR_TRUNCATED);
  }
  {
    GgufWriter w;
    w.key("deep", GgufType::Array);
    for (int i = 0; i < 100; ++i) {
      w.u32(static_cast<uint32_t>(GgufType::Array));
      w.u64(1);
    }
    w.u32(static_cast<uint32_t>(GgufType::U8));
    w.u64(0);
    const Status s = parse(w.finish()).status();
    CHECK(s.code() == EMBER_ERR_FORMAT);
    CHECK(mentions(s, "deep"));
  }
}

TEST_CASE("malformed metadata and tensor infos") {
  {
    GgufWriter w;
    w.key("bad.type", static_cast<GgufType>(13));
    w.u32(0);
    CHECK(parse_code(w.finish()) == EMBER_ERR_FORMAT);
  }
  {
    GgufWriter w;
    w.kv_u32("dup", 1);
    w.kv_u32("dup", 2);
    CHECK(parse_code(w.finish()) == EMBER_ERR_FORMAT);
  }
  for (uint32_t a : {0u, 3u, 48u}) {
    GgufWriter w;
    w.kv_u32("general.alignment", a);
    CHECK(parse_code(w.finish()) == EMBER_ERR_FORMAT);
  }
  {
    GgufWriter w;
    w.kv_str("general.alignment", "32");
    CHECK(parse_code(w.finish()) == EMBER_ERR_FORMAT);
  }
  {
    // Tensor offset past the end of the file.
    GgufWriter w;
    w.tensor("w", {8}, 0, 1 << 20);
    const Status s = parse(w.finish(64)).status();
    CHECK(s.code() == EMBER_ERR_BAD_TENSOR);
    CHECK(mentions(s, "'w'"));
  }
  {
    // Offset inside, data running past the end; and offset near 2^64.
    GgufWriter w;
    w.tensor("w", {32}, 0, 0);
    CHECK(parse_code(w.finish(127)) == EMBER_ERR_BAD_TENSOR);
    GgufWriter x;
    x.tensor("w", {8}, 0, ~uint64_t{0} - 31);
    CHECK(parse_code(x.finish(64)) == EMBER_ERR_BAD_TENSOR);
  }
  {
    GgufWriter w;
    w.tensor("w", {8}, 0, 4);  // not a multiple of the alignment
    CHECK(parse_code(w.finish(64)) == EMBER_ERR_BAD_TENSOR);
  }
  {
    GgufWriter w;
    w.tensor("w", {1, 1, 1, 1, 1}, 0, 0);
    const Status s = parse(w.finish(64)).status();
    CHECK(s.code() == EMBER_ERR_BAD_TENSOR);
    CHECK(mentions(s, "n_dims=5"));
  }
  {
    GgufWriter w;
    w.tensor("w", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0);
    CHECK(parse_code(w.finish(64)) == EMBER_ERR_BAD_TENSOR);
  }
  {
    GgufWriter w;
    w.tensor("w", {8}, 0, 0);
    w.tensor("w", {8}, 0, 32);
    CHECK(parse_code(w.finish(64)) == EMBER_ERR_FORMAT);
  }
  {
    // A tensor table but no data section at all.
    GgufWriter w;
    w.tensor("w", {8}, 0, 0);
    std::string b = w.finish();
    if (b.size() % 32 == 0) b.push_back('\0');  // make the padding incomplete
    CHECK(parse_code(b) == EMBER_ERR_TRUNCATED);
  }
}

TEST_CASE("mutated files never crash the reader") {
  GgufWriter w;
  w.kv_str("tokenizer.ggml.model", "llama");
  w.kv_strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  w.kv_f32s("tokenizer.ggml.scores", {0, 0, 0, -1});
  w.kv_i32s("tokenizer.ggml.token_type", {2, 3, 3, 1});
  w.tensor("t", {32, 2}, 8, 0);
  const std::string good = w.finish(68);
  REQUIRE(parse(good).is_ok());
  std::mt19937 rng(1234);
  int ok = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % b.size();
      b[at] = static_cast<char>(rng() % 3 == 0 ? 0xFF : rng());
    }
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    auto g = parse(b);
    if (!g.is_ok()) continue;
    ++ok;
    auto v = vocab_from_gguf(g.value());
    if (v.is_ok()) (void)Tokenizer::create(v.value());
  }
  MESSAGE(ok << " of 3000 mutated files still parsed");
}

TEST_CASE("vocab_from_gguf: a bert vocabulary is WordPiece with llama.cpp's special pieces") {
  auto vocab = [](GgufWriter& w) {
    const std::string b = w.finish();
    auto g = parse(b);
    REQUIRE_MESSAGE(g.is_ok(), g.status().message());
    return vocab_from_gguf(g.value());
  };
  std::vector<std::string> pieces(110);
  for (size_t i = 0; i < pieces.size(); ++i) pieces[i] = "\xE2\x96\x81w" + std::to_string(i);
  {
    // No keys: [CLS] 101 as bos, [SEP] 102 as eos, unk 100, pad 0, both added.
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "bert");
    w.kv_str("tokenizer.ggml.pre", "bert-bge");
    w.kv_strs("tokenizer.ggml.tokens", pieces);
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK(v->kind == TokenizerKind::WordPiece);
    CHECK(v->pre.empty());  // the name means nothing to WordPiece
    CHECK((v->bos_id == 101 && v->eos_id == 102 && v->unk_id == 100 && v->pad_id == 0));
    CHECK((v->add_bos && v->add_eos && v->lowercase && v->strip_accents));
    CHECK_FALSE(v->add_space_prefix);
    CHECK(Tokenizer::create(v.value()).is_ok());
  }
  {
    // The keys win; bos_token_id over cls_token_id; add_* flags are ignored
    // (llama.cpp adds both); strip_accents follows lowercase unless given.
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "bert");
    w.kv_strs("tokenizer.ggml.tokens", pieces);
    w.kv_u32("tokenizer.ggml.cls_token_id", 5);
    w.kv_u32("tokenizer.ggml.seperator_token_id", 6);
    w.kv_u32("tokenizer.ggml.unknown_token_id", 7);
    w.kv_u32("tokenizer.ggml.padding_token_id", 8);
    w.kv_bool("tokenizer.ggml.add_eos_token", false);
    w.kv_bool("tokenizer.ggml.normalizer.lowercase", false);
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK((v->bos_id == 5 && v->eos_id == 6 && v->unk_id == 7 && v->pad_id == 8 && v->add_eos));
    CHECK_FALSE(v->lowercase);
    CHECK_FALSE(v->strip_accents);
    GgufWriter w2;
    w2.kv_str("tokenizer.ggml.model", "bert");
    w2.kv_strs("tokenizer.ggml.tokens", pieces);
    w2.kv_u32("tokenizer.ggml.cls_token_id", 5);
    w2.kv_u32("tokenizer.ggml.bos_token_id", 9);
    w2.kv_bool("tokenizer.ggml.normalizer.lowercase", false);
    w2.kv_bool("tokenizer.ggml.normalizer.strip_accents", true);
    auto v2 = vocab(w2);
    REQUIRE(v2.is_ok());
    CHECK(v2->bos_id == 9);
    CHECK_FALSE(v2->lowercase);
    CHECK(v2->strip_accents);
  }
  {
    // Too few pieces for the defaults: none, and no unk is refused by create.
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "bert");
    w.kv_strs("tokenizer.ggml.tokens", {"a", "b"});
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK((v->bos_id == -1 && v->eos_id == -1 && v->unk_id == -1 && v->pad_id == 0));
    CHECK(Tokenizer::create(v.value()).status().code() == EMBER_ERR_BAD_TOKENIZER);
  }
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "bert");
    w.kv_strs("tokenizer.ggml.tokens", pieces);
    w.kv_str("tokenizer.ggml.normalizer.lowercase", "yes");
    const Status s = vocab(w).status();
    CHECK(s.code() == EMBER_ERR_FORMAT);
    CHECK(mentions(s, "tokenizer.ggml.normalizer.lowercase"));
  }
}

TEST_CASE("vocab_from_gguf: model kinds, defaults and errors") {
  auto vocab = [](GgufWriter& w) {
    const std::string b = w.finish();
    auto g = parse(b);
    REQUIRE_MESSAGE(g.is_ok(), g.status().message());
    return vocab_from_gguf(g.value());
  };
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "llama");
    w.kv_strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a"});
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK(v->kind == TokenizerKind::SentencePiece);
    CHECK(v->add_bos);
    CHECK(v->add_space_prefix);
    CHECK(v->unk_id == 0);
    CHECK(v->bos_id == 1);
    CHECK(v->eos_id == 2);
  }
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "gpt2");
    w.kv_strs("tokenizer.ggml.tokens", {"a", "b", "ab"});
    w.kv_strs("tokenizer.ggml.merges", {"a b"});
    w.kv_u32("tokenizer.ggml.eos_token_id", 2);
    w.kv_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
    w.kv_bool("tokenizer.ggml.add_space_prefix", true);
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK(v->kind == TokenizerKind::BytePairBPE);
    CHECK_FALSE(v->add_bos);
    CHECK(v->add_space_prefix);  // explicit flag wins over the default
    CHECK(v->bos_id == -1);
    CHECK(v->eos_id == 2);
    CHECK(v->pad_id == -1);
    CHECK(v->merges.size() == 1);
    CHECK(v->pre == "default");  // no tokenizer.ggml.pre: llama.cpp's choice
  }
  {
    // The pre-tokenizer is read; Llama 3's defaults to adding BOS; eot/eom.
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "gpt2");
    w.kv_str("tokenizer.ggml.pre", "llama-bpe");
    w.kv_strs("tokenizer.ggml.tokens", {"a", "b", "<|eot_id|>", "<|eom_id|>"});
    w.kv_u32("tokenizer.ggml.bos_token_id", 0);
    w.kv_u32("tokenizer.ggml.eot_token_id", 2);
    w.kv_u32("tokenizer.ggml.eom_token_id", 3);
    auto v = vocab(w);
    REQUIRE_MESSAGE(v.is_ok(), v.status().message());
    CHECK(v->pre == "llama-bpe");
    CHECK(v->add_bos);
    CHECK(v->eot_id == 2);
    CHECK(v->eom_id == 3);
  }
  {
    // An empty name is llama.cpp's "missing": "default", not the .ember legacy "".
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "gpt2");
    w.kv_str("tokenizer.ggml.pre", "");
    w.kv_strs("tokenizer.ggml.tokens", {"a"});
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK(v->pre == "default");
  }
  for (const char* pre : {"tekken", "gpt-5", "GPT-2"}) {
    // A name ember does not implement is refused, naming it (never GPT-2).
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "gpt2");
    w.kv_str("tokenizer.ggml.pre", pre);
    w.kv_strs("tokenizer.ggml.tokens", {"a"});
    const Status s = vocab(w).status();
    INFO("pre '" << pre << "': " << s.message());
    CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(mentions(s, std::string("tokenizer.ggml.pre '") + pre + "'"));
  }
  {
    GgufWriter w;
    w.kv_strs("tokenizer.ggml.tokens", {"a"});
    CHECK(vocab(w).status().code() == EMBER_ERR_BAD_TOKENIZER);
  }
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "t5");
    w.kv_strs("tokenizer.ggml.tokens", {"a"});
    const Status s = vocab(w).status();
    CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(mentions(s, "tokenizer.ggml.model 't5'"));
  }
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "llama");
    CHECK(vocab(w).status().code() == EMBER_ERR_BAD_TOKENIZER);
  }
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "llama");
    w.kv_strs("tokenizer.ggml.tokens", {"a"});
    w.kv_f32s("tokenizer.ggml.token_type", {1});
    const Status s = vocab(w).status();
    CHECK(s.code() == EMBER_ERR_FORMAT);
    CHECK(mentions(s, "tokenizer.ggml.token_type"));
  }
  {
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "llama");
    w.kv_strs("tokenizer.ggml.tokens", {"a"});
    w.kv_i32s("tokenizer.ggml.token_type", {9});
    CHECK(vocab(w).status().code() == EMBER_ERR_BAD_TOKENIZER);
  }
  {
    // Importer output still goes through Tokenizer::create's checks.
    GgufWriter w;
    w.kv_str("tokenizer.ggml.model", "llama");
    w.kv_strs("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "x"});
    w.kv_u32("tokenizer.ggml.bos_token_id", 7);
    auto v = vocab(w);
    REQUIRE(v.is_ok());
    CHECK(Tokenizer::create(v.value()).status().code() == EMBER_ERR_BAD_TOKENIZER);
  }
}

}  // TEST_SUITE
}  // namespace ember

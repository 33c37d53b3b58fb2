// Tokenizer conformance: llama.cpp's vocabulary test vectors (SPM and GPT-2
// BPE), the llama2.c tokenizer against the golden run, round trips, and
// malformed vocabularies.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <sstream>
#include <unordered_map>
#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/vocab_import.h"

namespace ember {
namespace {

struct VocabCase {
  std::string input;
  std::vector<int32_t> expected;
};

// NAME.gguf.inp: every input is followed by "\n__ggml_vocab_test__\n" (the
// newline before the marker belongs to the separator, not the input).
// NAME.gguf.out: one line of space-separated ids per input.
std::vector<VocabCase> load_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = test::read_text_file(inp_path);
  const std::string out = test::read_text_file(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  size_t pos = 0;
  while (true) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line) && i < cases.size()) {
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) cases[i].expected.push_back(id);
    ++i;
  }
  REQUIRE(i == cases.size());
  return cases;
}

Result<Tokenizer> tokenizer_from_gguf_file(const std::string& path) {
  const std::string bytes = test::read_text_file(path);
  EMBER_ASSIGN_OR_RETURN(GgufFile g, GgufFile::parse(
                                         reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  EMBER_ASSIGN_OR_RETURN(Vocab v, vocab_from_gguf(g));
  return Tokenizer::create(std::move(v));
}

Result<Tokenizer> tokenizer_from_llama2c_file(const std::string& path, int32_t vocab_size) {
  const std::string bytes = test::read_text_file(path);
  EMBER_ASSIGN_OR_RETURN(Vocab v, vocab_from_llama2c(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                     bytes.size(), vocab_size));
  return Tokenizer::create(std::move(v));
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

// Runs every vector of `name` through `tok`; returns how many passed.
size_t run_vectors(const Tokenizer& tok, const std::string& name) {
  const std::string inp = test::test_data("vocab/" + name + ".gguf.inp");
  const std::string out = test::test_data("vocab/" + name + ".gguf.out");
  if (inp.empty() || out.empty()) return 0;
  const std::vector<VocabCase> cases = load_cases(inp, out);
  CHECK(cases.size() == 46);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(name << " case " << i << " input '" << cases[i].input << "'");
    std::vector<int32_t> ids;
    REQUIRE(tok.encode(cases[i].input, false, &ids).is_ok());
    CHECK(ids_str(ids) == ids_str(cases[i].expected));
    std::string text;
    REQUIRE(tok.decode(ids.data(), ids.size(), &text).is_ok());
    CHECK(text == cases[i].input);
    if (ids == cases[i].expected && text == cases[i].input) ++passed;
  }
  MESSAGE(name << ": " << passed << "/" << cases.size() << " vectors pass");
  return passed;
}

Vocab small_spm_vocab() {
  Vocab v;
  v.kind = TokenizerKind::SentencePiece;
  v.pieces = {"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81", "a", "b", "ab"};
  v.scores = {0, 0, 0, 0, -1, -2, -3, -0.5f};
  v.types = {2, 3, 3, 6, 1, 1, 1, 1};
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

// The pieces a merge may produce (normal and user-defined), by text.
std::unordered_map<std::string, int32_t> mergeable_ids(const Vocab& v) {
  std::unordered_map<std::string, int32_t> id;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    const uint8_t t = v.types[i];
    if (t == 1 || t == 4) id.emplace(v.pieces[i], static_cast<int32_t>(i));
  }
  return id;
}

// llama2.c's encode, O(n^2): rescan every adjacent pair after each merge,
// best score first, leftmost on ties. The reference the heap version must
// agree with. Input here is printable ASCII, so every character is a piece.
// `id`: mergeable_ids(v), made once per vocabulary (300 texts share it).
std::vector<int32_t> naive_spm(const Vocab& v, const std::unordered_map<std::string, int32_t>& id,
                               const std::string& text) {
  std::vector<std::string> syms;
  if (!text.empty()) syms.push_back("\xE2\x96\x81");
  for (char c : text) syms.push_back(c == ' ' ? "\xE2\x96\x81" : std::string(1, c));
  while (true) {
    float best = -1e30f;
    int best_i = -1;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = id.find(syms[i] + syms[i + 1]);
      if (it != id.end() && v.scores[it->second] > best) {
        best = v.scores[it->second];
        best_i = static_cast<int>(i);
      }
    }
    if (best_i < 0) break;
    syms[best_i] += syms[best_i + 1];
    syms.erase(syms.begin() + best_i + 1);
  }
  std::vector<int32_t> out;
  for (const auto& s : syms) out.push_back(id.count(s) ? id.at(s) : -1);
  return out;
}

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("llama SPM vocabulary passes every llama.cpp vector") {
  const std::string path = test::test_data("vocab/ggml-vocab-llama-spm.gguf");
  if (path.empty()) return;
  auto tok = tokenizer_from_gguf_file(path);
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  CHECK(tok->size() == 32000);
  CHECK(tok->vocab().kind == TokenizerKind::SentencePiece);
  CHECK(run_vectors(tok.value(), "ggml-vocab-llama-spm") == 46);
}

TEST_CASE("GPT-2 BPE vocabulary passes every llama.cpp vector") {
  const std::string path = test::test_data("vocab/ggml-vocab-gpt-2.gguf");
  if (path.empty()) return;
  auto tok = tokenizer_from_gguf_file(path);
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  CHECK(tok->size() == 50257);
  CHECK(tok->vocab().kind == TokenizerKind::BytePairBPE);
  CHECK_FALSE(tok->vocab().add_bos);
  CHECK(run_vectors(tok.value(), "ggml-vocab-gpt-2") == 46);
}

TEST_CASE("llama2.c Llama 2 tokenizer.bin encodes like the GGUF llama vocabulary") {
  // Same 32000 pieces and scores in the other container: the SPM vectors
  // must pass through the llama2.c importer too.
  const std::string path = test::test_data("models/llama2-tokenizer.bin");
  if (path.empty()) return;
  auto tok = tokenizer_from_llama2c_file(path, 32000);
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  CHECK(tok->vocab().pieces[29871] == "\xE2\x96\x81");
  CHECK(run_vectors(tok.value(), "ggml-vocab-llama-spm") == 46);
}

TEST_CASE("stories260K: tok512.bin reproduces the golden prompt and output") {
  const std::string tok_path = test::test_data("models/tok512.bin");
  const std::string ids_path = test::test_data("golden/once-upon-a-time.ids.txt");
  const std::string txt_path = test::test_data("golden/once-upon-a-time.txt");
  const std::string prompt_path = test::test_data("golden/once-upon-a-time.prompt.txt");
  if (tok_path.empty() || ids_path.empty() || txt_path.empty() || prompt_path.empty()) return;
  auto tok = tokenizer_from_llama2c_file(tok_path, 512);
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  CHECK(tok->vocab().bos_id == 1);
  CHECK(tok->vocab().eos_id == 2);
  CHECK(tok->vocab().unk_id == 0);
  CHECK(tok->vocab().types[3] == static_cast<uint8_t>(TokenType::Byte));
  CHECK(tok->vocab().pieces[259] == "\xE2\x96\x81t");

  std::vector<int32_t> golden;
  {
    std::istringstream in(test::read_text_file(ids_path));
    int32_t id;
    while (in >> id) golden.push_back(id);
  }
  REQUIRE(golden.size() == 200);

  std::string prompt = test::read_text_file(prompt_path);
  while (!prompt.empty() && prompt.back() == '\n') prompt.pop_back();
  CHECK(prompt == "Once upon a time");
  std::vector<int32_t> ids;
  REQUIRE(tok->encode(prompt, true, &ids).is_ok());
  CHECK(ids_str(ids) == " 1 403 407 261 378");
  CHECK(std::equal(ids.begin(), ids.end(), golden.begin()));

  // llama2.c prints decode(prev, next) for every position after BOS (its
  // safe_printf drops lone unprintable bytes; none occur here). The ids
  // file lists the 200 tokens fed; stdout also holds the token sampled at
  // the last position, so the decoded ids are a prefix of it.
  std::string printed;
  for (size_t i = 1; i < golden.size(); ++i) {
    REQUIRE(tok->decode_token(golden[i - 1], golden[i], &printed).is_ok());
  }
  const std::string txt = test::read_text_file(txt_path);
  CHECK(printed.size() + 10 > txt.size());
  CHECK(txt.compare(0, printed.size(), printed) == 0);
}

TEST_CASE("stories260K GGUF vocabulary matches tok512.bin") {
  const std::string gguf_path = test::test_data("models/stories260K-f32.gguf");
  const std::string tok_path = test::test_data("models/tok512.bin");
  if (gguf_path.empty() || tok_path.empty()) return;
  auto a = tokenizer_from_gguf_file(gguf_path);
  auto b = tokenizer_from_llama2c_file(tok_path, 512);
  REQUIRE_MESSAGE(a.is_ok(), a.status().message());
  REQUIRE(b.is_ok());
  CHECK(a->vocab().pad_id == -1);  // stored as u32 0xFFFFFFFF
  for (int32_t id = 3; id < 512; ++id) {
    INFO("id " << id);
    CHECK(a->vocab().pieces[id] == b->vocab().pieces[id]);
    CHECK(a->vocab().scores[id] == b->vocab().scores[id]);
  }
  for (const char* text : {"Once upon a time", "Lily's mom said, \"Lily, let's go!\"", "\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80"}) {
    std::vector<int32_t> x, y;
    REQUIRE(a->encode(text, true, &x).is_ok());
    REQUIRE(b->encode(text, true, &y).is_ok());
    CHECK(x == y);
    std::string back;
    REQUIRE(a->decode(x.data(), x.size(), &back).is_ok());
    CHECK(back == text);
  }
}

TEST_CASE("SPM heap merge agrees with llama2.c's quadratic scan on random text") {
  const std::string path = test::test_data("models/llama2-tokenizer.bin");
  const std::string path512 = test::test_data("models/tok512.bin");
  if (path.empty() || path512.empty()) return;
  for (auto [file, n] : {std::pair{path, 32000}, std::pair{path512, 512}}) {
    const std::string bytes = test::read_text_file(file);
    auto v = vocab_from_llama2c(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), n);
    REQUIRE(v.is_ok());
    auto tok = Tokenizer::create(v.value());
    REQUIRE(tok.is_ok());
    const auto ids_of = mergeable_ids(v.value());
    std::mt19937 rng(42);
    const std::string alphabet = "aeiou tnsrlhdm.,'!ABTOW  eee";
    for (int iter = 0; iter < 300; ++iter) {
      std::string text;
      const size_t len = rng() % 120;
      for (size_t i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
      std::vector<int32_t> ids;
      REQUIRE(tok->encode(text, false, &ids).is_ok());
      const int vocab_n = n;  // INFO's lambda cannot capture a structured binding (clang 14)
      INFO("vocab " << vocab_n << " text '" << text << "'");
      CHECK(ids_str(ids) == ids_str(naive_spm(v.value(), ids_of, text)));
    }
  }
}

TEST_CASE("invalid UTF-8 and control bytes encode and round-trip") {
  const std::string spm_path = test::test_data("vocab/ggml-vocab-llama-spm.gguf");
  const std::string bpe_path = test::test_data("vocab/ggml-vocab-gpt-2.gguf");
  if (spm_path.empty() || bpe_path.empty()) return;
  for (const std::string& path : {spm_path, bpe_path}) {
    auto tok = tokenizer_from_gguf_file(path);
    REQUIRE(tok.is_ok());
    const std::string inputs[] = {
        std::string("\xFF\xFE abc \xC3", 8),     std::string("a\0b", 3),
        std::string("\xE2\x96", 2),               std::string("\xED\xA0\x80 surrogate"),
        std::string("\xC0\xAF overlong"),        std::string("\xF4\x90\x80\x80 too big"),
        std::string("   \t\n\r\x0b\x0c\x85 x"),
    };
    for (const std::string& in : inputs) {
      INFO(path << " input bytes " << in.size());
      std::vector<int32_t> ids;
      REQUIRE(tok->encode(in, false, &ids).is_ok());
      for (int32_t id : ids) CHECK((id >= 0 && id < tok->size()));
      std::string back;
      REQUIRE(tok->decode(ids.data(), ids.size(), &back).is_ok());
      CHECK(back == in);
    }
  }
}

TEST_CASE("a long prompt encodes quickly (no quadratic merge loop)") {
  const std::string spm_path = test::test_data("vocab/ggml-vocab-llama-spm.gguf");
  const std::string bpe_path = test::test_data("vocab/ggml-vocab-gpt-2.gguf");
  if (spm_path.empty() || bpe_path.empty()) return;
  std::string text;
  while (text.size() < 400000) text += "The quick brown fox jumps over the lazy dog. 1234 ";
  const std::string one_word(200000, 'a');  // a single BPE word / SPM run
  for (const std::string& path : {spm_path, bpe_path}) {
    auto tok = tokenizer_from_gguf_file(path);
    REQUIRE(tok.is_ok());
    for (const std::string* in : std::initializer_list<const std::string*>{&text, &one_word}) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<int32_t> ids;
      REQUIRE(tok->encode(*in, false, &ids).is_ok());
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // O(n^2) takes minutes here; generous bound for sanitizer builds.
      CHECK(s < 20.0);
      std::string back;
      REQUIRE(tok->decode(ids.data(), ids.size(), &back).is_ok());
      CHECK(back == *in);
    }
  }
}

TEST_CASE("SPM merges by score, leftmost on ties, with byte fallback") {
  auto tok = Tokenizer::create(small_spm_vocab());
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  std::vector<int32_t> ids;
  // "▁abab": "ab" (-0.5) merges first at both places, leftmost first.
  REQUIRE(tok->encode("abab", false, &ids).is_ok());
  CHECK(ids_str(ids) == " 4 7 7");
  ids.clear();
  // 'A' has no piece but has <0x41>; 'B' has neither: unk.
  REQUIRE(tok->encode("AB", true, &ids).is_ok());
  CHECK(ids_str(ids) == " 1 4 3 0");
  ids.clear();
  REQUIRE(tok->encode("", true, &ids).is_ok());
  CHECK(ids_str(ids) == " 1");

  std::string s;
  REQUIRE(tok->decode_token(-1, 7, &s).is_ok());
  REQUIRE(tok->decode_token(1, 4, &s).is_ok());  // leading space dropped after BOS
  REQUIRE(tok->decode_token(4, 3, &s).is_ok());  // byte piece
  REQUIRE(tok->decode_token(3, 2, &s).is_ok());  // eos prints nothing
  REQUIRE(tok->decode_token(3, 1, &s).is_ok());  // bos prints nothing
  CHECK(s == "abA");
}

TEST_CASE("decode rejects out-of-range ids") {
  auto tok = Tokenizer::create(small_spm_vocab());
  REQUIRE(tok.is_ok());
  std::string s;
  CHECK(tok->decode_token(-1, -1, &s).code() == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(tok->decode_token(-1, tok->size(), &s).code() == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(tok->decode_token(123456, 5, &s).is_ok());  // prev is never indexed
  const int32_t ids[] = {5, 8};
  const Status st = tok->decode(ids, 2, &s);
  CHECK(st.code() == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(st.message().find("8") != std::string::npos);
  CHECK(tok->decode(nullptr, 1, &s).code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(tok->decode(nullptr, 0, &s).is_ok());
}

TEST_CASE("malformed vocabularies are rejected with BAD_TOKENIZER") {
  auto expect_bad = [](Vocab v, const char* needle) {
    auto r = Tokenizer::create(std::move(v));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == EMBER_ERR_BAD_TOKENIZER);
    INFO(r.status().message());
    CHECK(r.status().message().find(needle) != std::string::npos);
  };
  {
    Vocab v = small_spm_vocab();
    v.pieces[3] = "<0x-1>";
    expect_bad(v, "token 3");
  }
  {
    Vocab v = small_spm_vocab();
    v.pieces[3] = "<0xZZ>";
    expect_bad(v, "<0xZZ>");
  }
  {
    Vocab v = small_spm_vocab();
    v.pieces[3] = "<0x411>";
    expect_bad(v, "token 3");
  }
  {
    // Without types, SPM pieces shaped "<0x..>" are byte pieces too.
    Vocab v = small_spm_vocab();
    v.types.clear();
    v.pieces[3] = "<0xG1>";
    expect_bad(v, "token 3");
  }
  {
    Vocab v = small_spm_vocab();
    v.pieces[6] = "a";
    expect_bad(v, "duplicates token 5");
  }
  {
    Vocab v = small_spm_vocab();
    v.pieces[5] = "";
    expect_bad(v, "token 5");
  }
  {
    Vocab v = small_spm_vocab();
    v.pieces[5] = std::string("a\0b", 3);
    expect_bad(v, "NUL");
  }
  {
    Vocab v = small_spm_vocab();
    v.bos_id = 8;
    expect_bad(v, "bos_id=8");
  }
  {
    Vocab v = small_spm_vocab();
    v.eos_id = -2;
    expect_bad(v, "eos_id=-2");
  }
  {
    Vocab v = small_spm_vocab();
    v.unk_id = 100;
    expect_bad(v, "unk_id=100");
  }
  {
    Vocab v = small_spm_vocab();
    v.pad_id = 8;
    expect_bad(v, "pad_id=8");
  }
  {
    Vocab v = small_spm_vocab();
    v.scores.pop_back();
    expect_bad(v, "scores");
  }
  {
    Vocab v = small_spm_vocab();
    v.types[4] = 7;
    expect_bad(v, "type 7");
  }
  {
    Vocab v;
    expect_bad(v, "no pieces");
  }
  {
    Vocab v;
    v.kind = TokenizerKind::BytePairBPE;
    v.pieces = {"a", "b", "ab"};
    v.merges = {"a b", "ab"};
    expect_bad(v, "merge 1");
  }
}

TEST_CASE("BPE applies merges by rank and decodes byte-level") {
  Vocab v;
  v.kind = TokenizerKind::BytePairBPE;
  v.add_bos = false;
  v.add_space_prefix = false;
  // "\xC4\xA0" is U+0120 'Ġ', the character byte 0x20 is written as.
  v.pieces = {"a", "b", "c", "\xC4\xA0", "ab", "bc", "\xC4\xA0" "a", "<|endoftext|>"};
  v.types = {1, 1, 1, 1, 1, 1, 1, 3};
  v.merges = {"b c", "a b", "\xC4\xA0 a"};
  v.bos_id = v.eos_id = 7;
  auto tok = Tokenizer::create(v);
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  std::vector<int32_t> ids;
  REQUIRE(tok->encode("abc abc", false, &ids).is_ok());
  // "bc" ranks before "ab"; " abc" -> "Ġ" "a" "bc" -> "Ġa" "bc".
  CHECK(ids_str(ids) == " 0 5 6 5");
  std::string s;
  REQUIRE(tok->decode(ids.data(), ids.size(), &s).is_ok());
  CHECK(s == "abc abc");
  ids.clear();
  // 'd' has no piece and the vocabulary no unk: a clean error.
  CHECK(tok->encode("d", false, &ids).code() == EMBER_ERR_BAD_TOKENIZER);
  s.clear();
  REQUIRE(tok->decode_token(-1, 7, &s).is_ok());
  CHECK(s.empty());
}

TEST_CASE("GPT-2 pre-tokenizer splits like the regex") {
  auto split = [](std::string_view text) {
    std::vector<std::pair<size_t, size_t>> words;
    gpt2_pretokenize(text, &words);
    std::vector<std::string> out;
    for (auto [b, e] : words) out.emplace_back(text.substr(b, e - b));
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(split("Hello world") == V{"Hello", " world"});
  CHECK(split("I've 'RE") == V{"I", "'ve", " '", "RE"});
  CHECK(split("a  b") == V{"a", " ", " b"});
  CHECK(split("x   ") == V{"x", "   "});
  CHECK(split("3.14!!") == V{"3", ".", "14", "!!"});
  CHECK(split("\n\n\tfoo") == V{"\n\n", "\t", "foo"});
  CHECK(split("").empty());
}

TEST_CASE("llama2.c tokenizer.bin: truncated and hostile files") {
  auto record = [](std::string* b, float score, const std::string& piece) {
    b->append(reinterpret_cast<const char*>(&score), 4);
    const int32_t len = static_cast<int32_t>(piece.size());
    b->append(reinterpret_cast<const char*>(&len), 4);
    b->append(piece);
  };
  std::string b;
  const int32_t max_len = 8;
  b.append(reinterpret_cast<const char*>(&max_len), 4);
  record(&b, 0, "<unk>");
  record(&b, 0, "\n<s>\n");
  record(&b, 0, "\n</s>\n");
  record(&b, 0, "<0x41>");
  record(&b, -1, " a");
  const uint8_t* d = reinterpret_cast<const uint8_t*>(b.data());

  auto v = vocab_from_llama2c(d, b.size(), 5);
  REQUIRE(v.is_ok());
  CHECK(v->pieces[4] == "\xE2\x96\x81" "a");
  CHECK(v->types[0] == static_cast<uint8_t>(TokenType::Unknown));
  CHECK(v->types[1] == static_cast<uint8_t>(TokenType::Control));
  CHECK(v->types[3] == static_cast<uint8_t>(TokenType::Byte));
  CHECK(v->types[4] == static_cast<uint8_t>(TokenType::Normal));
  CHECK(Tokenizer::create(v.value()).is_ok());

  for (size_t cut = 0; cut < b.size(); ++cut) {
    auto r = vocab_from_llama2c(d, cut, 5);
    CHECK(r.status().code() == EMBER_ERR_TRUNCATED);
  }
  CHECK(vocab_from_llama2c(d, b.size(), 0x7fffffff).status().code() == EMBER_ERR_TRUNCATED);
  CHECK(vocab_from_llama2c(d, b.size(), 0).status().code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(vocab_from_llama2c(nullptr, 0, 5).status().code() == EMBER_ERR_INVALID_ARGUMENT);

  std::string neg = b;
  const int32_t bad_len = -5;
  std::memcpy(&neg[4 + 4], &bad_len, 4);
  CHECK(vocab_from_llama2c(reinterpret_cast<const uint8_t*>(neg.data()), neg.size(), 5)
            .status()
            .code() == EMBER_ERR_BAD_TOKENIZER);

  std::string bad_byte = b;
  bad_byte.replace(bad_byte.find("<0x41>"), 6, "<0xZZ>");
  auto vb = vocab_from_llama2c(reinterpret_cast<const uint8_t*>(bad_byte.data()),
                               bad_byte.size(), 5);
  REQUIRE(vb.is_ok());
  CHECK(Tokenizer::create(vb.value()).status().code() == EMBER_ERR_BAD_TOKENIZER);
}

}  // TEST_SUITE
}  // namespace ember

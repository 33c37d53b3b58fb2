// llama.cpp's whole tokenizer test set (models/ggml-vocab-*.gguf with their
// .inp/.out vectors): every vocabulary of a type ember runs (SPM, byte-level
// BPE, WordPiece) must give llama.cpp's ids for every input, with special tokens
// matched as its test-tokenizer-0 does (user-defined pieces always, control
// pieces not: parse_special=false, add_special=false).
//
// Where the files are: tokenizer/llama_vocab_set.h.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/llama_vocab_set.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/synthetic.h"
#include "tools/convert/vocab_import.h"

namespace ember {
namespace {

using test::Case;
using test::load_cases;
using test::require_llama_vocab_dir;

Result<Tokenizer> load(const std::string& path) {
  const std::string bytes = test::read_text_file(path);
  EMBER_ASSIGN_OR_RETURN(GgufFile g, GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                     bytes.size()));
  EMBER_ASSIGN_OR_RETURN(Vocab v, vocab_from_gguf(g));
  return Tokenizer::create(std::move(v));
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

// Decoding what llama.cpp expects gives the input back (byte-level BPE
// always; SPM up to the dummy prefix, which decode removes). WordPiece
// lowercases and drops accents, so its decoding is text that encodes to the
// same ids (where no word became unk, whose text is lost).
void check_decode(const Tokenizer& tok, const Case& c) {
  std::string text;
  REQUIRE(tok.decode(c.expected.data(), c.expected.size(), &text).is_ok());
  if (tok.vocab().kind != TokenizerKind::WordPiece) {
    CHECK(text == c.input);
    return;
  }
  if (std::find(c.expected.begin(), c.expected.end(), tok.vocab().unk_id) != c.expected.end()) return;
  INFO("decoded '" << text << "'");
  std::vector<int32_t> again;
  REQUIRE(tok.encode(text, EncodeOptions{}, &again).is_ok());
  CHECK(ids_str(again) == ids_str(c.expected));
}

// The vocabularies of the set with vectors, and what ember does with them.
struct Expect {
  const char* name;
  const char* skip;  // nullptr: must pass every vector; else why not
};
const Expect kWithVectors[] = {
    {"llama-spm", nullptr},      {"phi-3", nullptr},       {"gpt-2", nullptr},
    {"llama-bpe", nullptr},      {"qwen2", nullptr},       {"qwen35", nullptr},
    {"deepseek-llm", nullptr},   {"deepseek-coder", nullptr}, {"falcon", nullptr},
    {"mpt", nullptr},            {"starcoder", nullptr},   {"refact", nullptr},
    {"command-r", nullptr},
    {"bert-bge", nullptr},
    {"gemma-4", nullptr},
};
// Without vectors: they must load (or be refused for the stated reason).
const Expect kWithoutVectors[] = {
    {"aquila", nullptr}, {"baichuan", nullptr}, {"gpt-neox", nullptr},
    {"nomic-bert-moe", "Unigram (tokenizer.ggml.model 't5'): not implemented"},
};

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("llama.cpp vocabularies: every supported one passes its vectors") {
  const std::string dir = require_llama_vocab_dir();
  if (dir.empty()) return;
  size_t total = 0;
  size_t vocabs = 0;
  for (const Expect& e : kWithVectors) {
    const std::string base = dir + "/ggml-vocab-" + e.name + ".gguf";
    INFO("vocabulary " << e.name);
    REQUIRE(std::filesystem::exists(base));
    auto tok = load(base);
    if (e.skip != nullptr) {
      CHECK_FALSE(tok.is_ok());
      CHECK(tok.status().code() == EMBER_ERR_UNSUPPORTED);
      MESSAGE("skipped " << std::string(e.name) << ": " << std::string(e.skip));
      continue;
    }
    REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
    const std::vector<Case> cases = load_cases(base + ".inp", base + ".out");
    CHECK(cases.size() >= 40);
    size_t passed = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      INFO(e.name << " case " << i << " input '" << cases[i].input << "'");
      std::vector<int32_t> ids;
      REQUIRE(tok->encode(cases[i].input, EncodeOptions{}, &ids).is_ok());
      CHECK(ids_str(ids) == ids_str(cases[i].expected));
      check_decode(*tok, cases[i]);
      if (ids == cases[i].expected) ++passed;
    }
    MESSAGE(std::string(e.name) << ": " << passed << "/" << cases.size() << " vectors pass");
    CHECK(passed == cases.size());
    total += passed;
    ++vocabs;
  }
  MESSAGE(vocabs << " vocabularies, " << total << " vectors pass");
}

TEST_CASE("llama.cpp vocabularies without vectors load and the set has no unlisted member") {
  const std::string dir = require_llama_vocab_dir();
  if (dir.empty()) return;
  std::set<std::string> listed;
  for (const Expect& e : kWithVectors) listed.insert(e.name);
  for (const Expect& e : kWithoutVectors) {
    listed.insert(e.name);
    INFO("vocabulary " << e.name);
    auto tok = load(dir + "/ggml-vocab-" + e.name + ".gguf");
    if (e.skip != nullptr) {
      CHECK(tok.status().code() == EMBER_ERR_UNSUPPORTED);
    } else {
      REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
      std::vector<int32_t> ids;
      CHECK(tok->encode("Hello world 123", EncodeOptions{}, &ids).is_ok());
      CHECK_FALSE(ids.empty());
    }
  }
  // A vocabulary added to llama.cpp's set must be added to the tables above.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string f = entry.path().filename().string();
    const std::string prefix = "ggml-vocab-";
    const std::string suffix = ".gguf";
    if (f.size() <= prefix.size() + suffix.size() || f.compare(0, prefix.size(), prefix) != 0 ||
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string name = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
    CHECK_MESSAGE(listed.count(name) == 1, "vocabulary not in the test's tables: " << name);
  }
}

TEST_CASE("synth --vocab FILE.gguf: the model carries that file's whole vocabulary (a 150k BPE one)") {
  const std::string dir = require_llama_vocab_dir();
  if (dir.empty()) return;
  const std::string path = dir + "/ggml-vocab-qwen2.gguf";
  const std::string bytes = test::read_text_file(path);
  auto g = GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  REQUIRE(g.is_ok());
  auto want = vocab_from_gguf(g.value());
  REQUIRE(want.is_ok());
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  shape.arch = "qwen2";
  auto m = make_synthetic(shape, DType::F32, 3, path);
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const ModelSpec& spec = m.value()->spec;
  CHECK(spec.vocab.pieces.size() == 151936);
  CHECK(spec.vocab.pieces == want.value().pieces);
  CHECK(spec.vocab.merges == want.value().merges);
  CHECK(spec.vocab.pre == want.value().pre);
  CHECK(spec.vocab.kind == TokenizerKind::BytePairBPE);
  CHECK(spec.hparams.vocab_size == 151936);
  CHECK(spec.tensors.front().shape[0] == 151936);  // the embedding has a row per piece
  // A file that is not GGUF is refused with the reader's status.
  const std::string bad = test::temp_dir("synth-vocab") + "/bad.gguf";
  { std::ofstream(bad) << "not a gguf file"; }
  auto r = make_synthetic(shape, DType::F32, 3, bad);
  CHECK(!r.is_ok());
}

}  // TEST_SUITE
}  // namespace ember

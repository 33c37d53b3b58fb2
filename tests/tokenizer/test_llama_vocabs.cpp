// llama.cpp's whole tokenizer test set (models/ggml-vocab-*.gguf with their
// .inp/.out vectors): every vocabulary of a type ember runs (SPM, byte-level
// BPE) must give llama.cpp's ids for every input, with special tokens
// matched as its test-tokenizer-0 does (user-defined pieces always, control
// pieces not: parse_special=false, add_special=false).
//
// The files are not in ../shared (75 MB): tools/scripts/fetch_llama_vocabs.sh
// puts them in build/_deps/llama-vocab (EMBER_LLAMA_VOCAB_DIR overrides,
// at build time or in the environment). Missing: skipped with a message, or
// a failure when EMBER_REQUIRE_TEST_DATA=1.
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
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/synthetic.h"
#include "tools/convert/vocab_import.h"

#ifndef EMBER_LLAMA_VOCAB_DIR
#define EMBER_LLAMA_VOCAB_DIR ""
#endif

namespace ember {
namespace {

std::string vocab_dir() {
  if (const char* d = std::getenv("EMBER_LLAMA_VOCAB_DIR"); d && *d) return d;
  return EMBER_LLAMA_VOCAB_DIR;
}

// The directory when it holds the set; "" (with a skip message or a CI
// failure) when it does not.
std::string require_vocab_dir() {
  const std::string dir = vocab_dir();
  if (!dir.empty() && std::filesystem::exists(dir + "/ggml-vocab-gpt-2.gguf")) return dir;
  if (test::test_data_required()) {
    FAIL("llama.cpp vocabularies missing in '" << dir
         << "' (EMBER_REQUIRE_TEST_DATA=1): run tools/scripts/fetch_llama_vocabs.sh");
  } else {
    MESSAGE("skipped: llama.cpp vocabularies not found in '"
            << dir << "'; run tools/scripts/fetch_llama_vocabs.sh");
  }
  return "";
}

struct Case {
  std::string input;
  std::vector<int32_t> expected;
};

// NAME.gguf.inp: inputs each followed by "\n__ggml_vocab_test__\n";
// NAME.gguf.out: one line of ids per input.
std::vector<Case> load_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = test::read_text_file(inp_path);
  const std::string out = test::read_text_file(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t pos = 0;;) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (i < cases.size() && std::getline(lines, line)) {
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) cases[i].expected.push_back(id);
    ++i;
  }
  CHECK(i == cases.size());
  return cases;
}

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
    {"bert-bge", "WordPiece (tokenizer.ggml.model 'bert'): an encoder vocabulary ember does not run"},
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
  const std::string dir = require_vocab_dir();
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
      // Decoding what llama.cpp expects gives the input back (byte-level
      // BPE always; SPM up to the dummy prefix, which decode removes).
      std::string text;
      REQUIRE(tok->decode(cases[i].expected.data(), cases[i].expected.size(), &text).is_ok());
      CHECK(text == cases[i].input);
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
  const std::string dir = require_vocab_dir();
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
  const std::string dir = require_vocab_dir();
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

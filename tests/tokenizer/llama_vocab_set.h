// llama.cpp's tokenizer test set (models/ggml-vocab-*.gguf with their
// .inp/.out vectors): where it is, and its cases. The files are not in ../shared (75 MB):
// tools/scripts/fetch_llama_vocabs.sh puts them in build/_deps/llama-vocab
// (EMBER_LLAMA_VOCAB_DIR overrides, at build time or in the environment).
// Missing: skipped with a message, or a failure when EMBER_REQUIRE_TEST_DATA=1.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "test_data.h"

#ifndef EMBER_LLAMA_VOCAB_DIR
#define EMBER_LLAMA_VOCAB_DIR ""
#endif

namespace ember::test {

inline std::string llama_vocab_dir() {
  if (const char* d = std::getenv("EMBER_LLAMA_VOCAB_DIR"); d && *d) return d;
  return EMBER_LLAMA_VOCAB_DIR;
}

// The directory when it holds the set; "" (with a skip message or a CI
// failure) when it does not.
inline std::string require_llama_vocab_dir() {
  const std::string dir = llama_vocab_dir();
  if (!dir.empty() && std::filesystem::exists(dir + "/ggml-vocab-gpt-2.gguf")) return dir;
  if (test_data_required()) {
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
inline std::vector<Case> load_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = read_text_file(inp_path);
  const std::string out = read_text_file(out_path);
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

}  // namespace ember::test

// libFuzzer: tokenizer encode and decode over arbitrary bytes with the real
// vocabularies in ../shared: the llama SPM and GPT-2 BPE GGUF vocabularies,
// llama2.c's tok512.bin, and the SPM pieces read as a WordPiece vocabulary
// ("▁" words and bare continuations, as a bert one stores them). The first
// input byte picks the vocabulary and the operation; the rest is text to
// encode (then decode: the round trip must hold for valid UTF-8 without
// add_bos, WordPiece aside, which lowercases) or little-endian int32 token
// ids to decode (ids outside the vocabulary must be refused, not read).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "platforms/linux/mapped_file.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/vocab_import.h"

namespace {

std::string data_dir() {
  if (const char* d = std::getenv("EMBER_TEST_DATA"); d && *d) return d;
  return EMBER_SHARED_DIR;
}

ember::Tokenizer must(ember::Result<ember::Vocab> v, const std::string& what) {
  if (!v.is_ok()) {
    std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", what.c_str(), v.status().message().c_str());
    std::abort();
  }
  auto t = ember::Tokenizer::create(std::move(v).value());
  if (!t.is_ok()) {
    std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", what.c_str(), t.status().message().c_str());
    std::abort();
  }
  return std::move(t).value();
}

ember::Result<ember::Vocab> from_gguf(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::string bytes, ember::read_file(path));
  static std::vector<std::string> keep;  // GgufFile views point into the bytes
  keep.push_back(std::move(bytes));
  EMBER_ASSIGN_OR_RETURN(ember::GgufFile g, ember::GgufFile::parse(reinterpret_cast<const uint8_t*>(keep.back().data()),
                                                                    keep.back().size()));
  return ember::vocab_from_gguf(g);
}

ember::Result<ember::Vocab> from_llama2c(const std::string& path, int32_t n) {
  EMBER_ASSIGN_OR_RETURN(std::string bytes, ember::read_file(path));
  return ember::vocab_from_llama2c(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), n);
}

ember::Result<ember::Vocab> as_wordpiece(ember::Result<ember::Vocab> v) {
  if (!v.is_ok()) return v;
  ember::Vocab w = std::move(v).value();
  w.kind = ember::TokenizerKind::WordPiece;
  w.scores.clear();
  w.add_space_prefix = w.byte_fallback = false;
  w.add_eos = true;
  return w;
}

const std::vector<ember::Tokenizer>& tokenizers() {
  static const std::vector<ember::Tokenizer> t = [] {
    std::vector<ember::Tokenizer> v;
    const std::string d = data_dir();
    v.push_back(must(from_gguf(d + "/vocab/ggml-vocab-llama-spm.gguf"), "llama-spm"));
    v.push_back(must(from_gguf(d + "/vocab/ggml-vocab-gpt-2.gguf"), "gpt-2"));
    v.push_back(must(from_llama2c(d + "/models/tok512.bin", 512), "tok512"));
    v.push_back(must(as_wordpiece(from_gguf(d + "/vocab/ggml-vocab-llama-spm.gguf")), "llama-spm as WordPiece"));
    return v;
  }();
  return t;
}

bool valid_utf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || i + len > n) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& toks = tokenizers();
  const uint8_t mode = data[0];
  const ember::Tokenizer& tok = toks[mode % toks.size()];
  ++data;
  --size;
  if ((mode / toks.size()) % 2 == 0) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const bool add_bos = (mode / (2 * toks.size())) % 2;
    std::vector<int32_t> ids;
    if (!tok.encode(text, add_bos, &ids).is_ok()) return 0;
    for (int32_t id : ids) {
      if (id < 0 || id >= tok.size()) std::abort();  // encode produced an id outside the vocabulary
    }
    std::string out;
    if (!tok.decode(ids.data(), ids.size(), &out).is_ok()) std::abort();
    // The documented round trip: valid UTF-8, no BOS, whose decoding is exact.
    const bool exact = tok.vocab().kind != ember::TokenizerKind::WordPiece;
    if (exact && !add_bos && valid_utf8(data, size) && out != text && std::getenv("EMBER_FUZZ_ROUNDTRIP")) {
      std::abort();
    }
  } else {
    std::vector<int32_t> ids(size / 4);
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
    std::string out;
    const ember::Status s = tok.decode(ids.data(), ids.size(), &out);
    bool in_range = true;
    for (int32_t id : ids) in_range = in_range && id >= 0 && id < tok.size();
    if (s.is_ok() != in_range) std::abort();  // out-of-range ids must be refused, in-range accepted
    for (size_t i = 0; i < ids.size(); ++i) {
      out.clear();
      (void)tok.decode_token(i ? ids[i - 1] : -1, ids[i], &out);
    }
  }
  return 0;
}

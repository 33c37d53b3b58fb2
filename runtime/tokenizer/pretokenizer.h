// Pre-tokenizers of byte-level BPE vocabularies: how a model family cuts
// text into words before merges run inside each word. A family is the list
// of regexes its Hugging Face tokenizer.json applies in sequence (each one
// splits every piece the previous one left, keeping both the matches and
// the text between them, as `Split(behavior=Isolated)` does). GGUF files
// name the family in `tokenizer.ggml.pre`.
//
// The regexes are kept as the strings the families publish and run on a
// small backtracking matcher that knows exactly the subset they use (see
// docs/decisions.md, "Pre-tokenizers"): alternation, (?:...), (?!...),
// (?=...), classes with ranges and \p{L} \p{N} \p{P} \p{M} \s \S, the
// quantifiers ? * + {n} {n,m} on one character, and $ (end of the piece).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ember {

// One compiled regex of the supported subset.
class PreTokenizerRegex {
 public:
  // Parses `pattern` (UTF-8). Errors: EMBER_ERR_INVALID_ARGUMENT naming the
  // pattern and the offset of what the subset does not support.
  static Result<PreTokenizerRegex> compile(std::string_view pattern);

  // Text as the matcher sees it: codepoints with their class bits and byte
  // offsets (offsets has one more entry: the end).
  struct Subject {
    std::vector<uint32_t> cps;
    std::vector<uint8_t> classes;
    std::vector<size_t> offsets;
  };
  static void prepare(std::string_view text, Subject* s);

  // Splits each [begin, end) codepoint range of `in` into matches and the
  // gaps between them, appending to *out.
  void split(const Subject& s, const std::vector<std::pair<size_t, size_t>>& in,
             std::vector<std::pair<size_t, size_t>>* out) const;

  // Length in codepoints of the leftmost-first match at `pos` inside
  // [pos, end), or -1.
  long match_at(const Subject& s, size_t pos, size_t end) const;

  // A set of codepoints: ranges and class bits (kClass* in the .cpp),
  // `not_classes` for \S inside brackets; `negate` for [^...].
  struct CharSet {
    bool negate = false;
    uint8_t classes = 0;
    uint8_t not_classes = 0;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
  };
  struct Node {
    enum Kind : uint8_t { Set, Alt, NegAhead, PosAhead, End } kind = Set;
    int set = -1;               // Set: index into sets_
    uint32_t min = 1, max = 1;  // Set: repetition, greedy
    std::vector<std::vector<int>> branches;  // Alt, lookaheads: node sequences
  };

 private:
  struct Cont;
  struct Parser;
  bool match_rest(const Subject& s, size_t end, const Cont* k, size_t pos, size_t* out) const;

  std::vector<Node> nodes_;
  std::vector<CharSet> sets_;
  std::vector<int> root_;  // one Alt node
};

// A family's compiled pre-tokenizer.
class PreTokenizer {
 public:
  PreTokenizer() = default;

  // The family `name` (a tokenizer.ggml.pre value; "" is the legacy GPT-2
  // splitting of .ember files written before the name was stored). Errors:
  // EMBER_ERR_UNSUPPORTED naming the value.
  static Result<PreTokenizer> create(std::string_view name);
  // Whether create(name) would succeed.
  static bool known(std::string_view name);

  // Appends the [begin, end) byte ranges of the words of `text` to *words.
  void split(std::string_view text, std::vector<std::pair<size_t, size_t>>* words) const;

  // A word that is itself a piece is taken whole, before any merge (the
  // tokenizer.json `ignore_merges` of Llama 3).
  bool ignore_merges() const { return ignore_merges_; }
  // The family's add_bos default when the GGUF has no add_bos_token key.
  bool default_add_bos() const { return default_add_bos_; }
  // Byte-level (GPT-2 bytes_to_unicode) pieces; false: pieces are raw UTF-8
  // with "▁" for spaces and <0xHH> byte pieces, merged by rank (Gemma 4).
  bool byte_encode() const { return byte_encode_; }
  // Spaces become "▁" before splitting (the families with byte_encode off).
  bool escape_spaces() const { return !byte_encode_; }
  // A word made only of newlines that is itself a piece is taken whole.
  bool newline_words_whole() const { return newline_words_whole_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<PreTokenizerRegex> regexes_;
  bool ignore_merges_ = false;
  bool default_add_bos_ = false;
  bool byte_encode_ = true;
  bool newline_words_whole_ = false;
};

}  // namespace ember

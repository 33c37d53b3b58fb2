// Text <-> token ids for the three vocabulary kinds ember runs:
//  - SentencePiece (Llama, llama2.c): score-driven pair merges over UTF-8
//    characters with "▁" for spaces and <0xAB> byte fallback, as llama.cpp's
//    SPM tokenizer and llama2.c's encode() (but O(n log n), not O(n^2)).
//  - Byte-level BPE (GPT-2, Llama 3, Qwen2, ...): the family's
//    pre-tokenizer (tokenizer/pretokenizer.h) cuts words, bytes are mapped
//    through bytes_to_unicode, merges applied by rank inside each word.
//  - WordPiece (BERT, BGE, MiniLM, E5): BERT's normalizer and word split,
//    then the longest piece from the left of each word, as llama.cpp's WPM
//    tokenizer (wpm_tokenizer.cpp has the rules).
// Before any of them, special pieces are cut out of the text as llama.cpp does:
// user-defined pieces always, control and unknown pieces when the caller
// asks to parse special tokens; the longest piece first.
//
// A Tokenizer owns its Vocab and lookup tables; it is immutable after
// create(), so one instance may be shared by threads that only encode/decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace ember {

// Hash that lets unordered_map<std::string, ...> be probed with a
// string_view without building a std::string.
struct TokenizerStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenizerStringMap =
    std::unordered_map<std::string, int32_t, TokenizerStringHash, std::equal_to<>>;

struct MergeSymbol;  // tokenizer/symbol_merge.h

struct EncodeOptions {
  bool add_bos = false;  // prepend vocab().bos_id
  bool add_eos = false;  // append vocab().eos_id
  // Text that spells a control or unknown piece ("<|im_start|>") becomes
  // that token instead of being encoded as text (llama.cpp parse_special).
  // User-defined pieces are matched either way.
  bool parse_special = false;
};

class Tokenizer {
 public:
  // An empty tokenizer (size() == 0) so Result<Tokenizer> can hold one;
  // every real instance comes from create().
  Tokenizer() = default;

  // Validates `vocab` and builds the lookup tables. Errors
  // (EMBER_ERR_BAD_TOKENIZER, naming the id and the piece): no pieces; more
  // than INT32_MAX pieces; scores/types neither empty nor one per piece; a
  // type value above 6; an empty piece; a NUL byte inside a piece; a
  // duplicate piece; a byte piece (type Byte, or any SPM piece shaped
  // "<0x..>" when types are absent) that is not exactly "<0xHH>" with two
  // hex digits; a bos/eos/unk/pad/eot/eom id that is neither -1 nor in
  // range; a `pre` on a SentencePiece vocabulary; a BPE merge that is not
  // "left right" with both sides non-empty. Merges are not
  // required to name existing pieces (real vocabularies contain a few that
  // do not; such merges can simply never fire). EMBER_ERR_UNSUPPORTED: a
  // BPE vocabulary whose `pre` names no pre-tokenizer ember implements.
  // WordPiece: a `pre` or merges (EMBER_ERR_BAD_TOKENIZER), no unk_id
  // (EMBER_ERR_BAD_TOKENIZER: a word without pieces becomes unk).
  static Result<Tokenizer> create(Vocab vocab);

  // Appends the ids of `text` to *out (BOS first when add_bos), with
  // user-defined pieces matched in the text and control pieces not (the
  // overload below says otherwise). No EOS is added. Any byte
  // string is accepted: bytes that are not valid UTF-8 are encoded one by one
  // (SPM byte fallback; BPE is byte-level anyway) or, for WordPiece, dropped
  // (llama.cpp reads each as U+FFFD, which BERT's normalizer removes). Errors:
  // EMBER_ERR_INVALID_ARGUMENT (out is NULL; add_bos with no bos id),
  // EMBER_ERR_BAD_TOKENIZER (a character needs a byte piece or unk piece the
  // vocabulary lacks). On error *out may hold a partial encoding.
  Status encode(std::string_view text, bool add_bos, std::vector<int32_t>* out) const;
  // The same with EOS and special-token parsing as `options` say; errors as
  // above (add_eos with no eos id: EMBER_ERR_INVALID_ARGUMENT).
  Status encode(std::string_view text, const EncodeOptions& options,
                std::vector<int32_t>* out) const;

  // Appends the bytes `id` prints as when it follows `prev` (-1 at the start
  // of a stream). SPM: "▁" prints as a space, <0xAB> as that byte, and the
  // leading space of a piece right after BOS is dropped (as llama2.c
  // prints). BPE: byte-level decoding (inverse of GPT-2 bytes_to_unicode).
  // WordPiece: "▁" prints as a space, dropped at the start of a stream
  // (prev -1 or bos); a continuation piece prints bare. Control and unused pieces (bos, eos, ...) print nothing; the unknown
  // piece prints its text; user-defined pieces print verbatim. A single
  // token may be part of a multi-byte character: stream consumers must
  // buffer incomplete UTF-8 themselves. Errors: EMBER_ERR_TOKEN_OUT_OF_RANGE
  // for an id outside [0, size()) (`prev` is only compared, never indexed);
  // EMBER_ERR_INVALID_ARGUMENT when out is NULL.
  Status decode_token(int32_t prev, int32_t id, std::string* out) const;

  // Appends the text of a whole sequence: for valid UTF-8 text, the exact
  // inverse of encode(text, add_bos=false) (and of encode with BOS, since
  // control tokens print nothing). For SPM with add_space_prefix, the dummy
  // prefix space of the first printing token is dropped. WordPiece, which
  // lowercases and drops accents, has no inverse: the text is llama.cpp's
  // detokenization (its clean-up of the spaces before . , ! ? and around
  // apostrophes included) less the first word's space. Errors: as
  // decode_token; `ids` may be NULL only when n == 0.
  Status decode(const int32_t* ids, size_t n, std::string* out) const;

  int32_t size() const { return static_cast<int32_t>(vocab_.pieces.size()); }
  const Vocab& vocab() const { return vocab_; }

  // Whether generating `id` ends the turn: eos, eot, eom, and the pieces
  // chat templates end a turn with (<|eot_id|>, <|im_end|>, <|end|>,
  // <end_of_turn>, <|endoftext|>, ...), found by their text.
  bool is_eog(int32_t id) const;
  // Those ids, ascending.
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

 private:
  TokenType type_of(int32_t id) const;

  Status encode_spm(std::string_view text, bool space_prefix, std::vector<int32_t>* out) const;
  Status encode_bpe(std::string_view text, std::vector<int32_t>* out) const;
  Status bpe_word(std::string_view mapped, std::vector<MergeSymbol>* symbols,
                  std::string* scratch, std::vector<int32_t>* out) const;
  Status spm_fallback(std::string_view symbol, std::vector<int32_t>* out) const;
  void encode_wpm(std::string_view text, std::vector<int32_t>* out) const;
  void wpm_word(std::string_view word, std::vector<int32_t>* out) const;
  Status init_wordpiece();
  void decode_piece(int32_t id, std::string* out) const;

  Vocab vocab_;
  // One TokenType per piece: vocab_.types, or derived from the special ids
  // and the piece shapes when the vocabulary carries no types.
  std::vector<uint8_t> types_;
  // Pieces text may turn into (Normal, UserDefined, Undefined types): control,
  // unknown, byte and unused pieces are never matched from input text.
  TokenizerStringMap text_to_id_;
  // SPM: id of "<0xHH>" per byte, or -1. BPE: id of the one-character piece
  // bytes_to_unicode maps the byte to, or -1.
  int32_t byte_to_id_[256] = {};
  // BPE: "left right" -> rank (0 merges first).
  TokenizerStringMap merge_rank_;
  // BPE: the family's word splitter.
  PreTokenizer pre_;
  // WordPiece: the byte lengths of the pieces text may turn into, longest
  // first (the only lengths worth looking up).
  std::vector<uint32_t> wpm_lengths_;
  // Pieces cut out of the text before encoding (control, user-defined,
  // unknown), longest first.
  std::vector<int32_t> special_ids_;
  std::vector<int32_t> eog_ids_;
};

// The GPT-2 pre-tokenizer: splits `text` into the byte ranges the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matches, appending [begin, end) byte offsets to *words. Bytes that are not
// valid UTF-8 count as one character each, of the "other" class. Written by
// hand, it is the reference the regex matcher's "gpt-2" family is tested
// against (tests/tokenizer/test_pretokenizer.cpp); encoding uses the family.
void gpt2_pretokenize(std::string_view text, std::vector<std::pair<size_t, size_t>>* words);

// The clean-up llama.cpp gives detokenized WordPiece text (Hugging Face's
// clean_up_tokenization_spaces, as llama.cpp has it), on (*text)[from..]:
// the space before each . , ! ? goes; " ' " becomes "'" (not twice in a
// row); the space before 's 'm 're 've goes ('t 'd 'll keep theirs). ASCII
// only, so UTF-8 passes through untouched.
void wordpiece_clean_up_spaces(std::string* text, size_t from);

}  // namespace ember

// A tokenizer vocabulary as the runtime holds it, independent of where it came
// from (.ember metadata, a GGUF file, a llama2.c tokenizer.bin).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

// WordPiece: BERT's greedy longest-match over whole words, in GGUF's form
// (tokenizer.ggml.model "bert"): a word's first piece carries the "▁" prefix,
// continuations (Hugging Face's "##ing") are stored bare.
enum class TokenizerKind : uint8_t { SentencePiece = 0, BytePairBPE = 1, WordPiece = 2 };

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : uint8_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6
};

struct Vocab {
  TokenizerKind kind = TokenizerKind::SentencePiece;
  // SPM: spaces stored as U+2581 "▁"; WordPiece: "▁" starts a word.
  std::vector<std::string> pieces;
  std::vector<float> scores;        // empty or one per piece
  std::vector<uint8_t> types;       // empty or one per piece (TokenType)
  std::vector<std::string> merges;  // BPE only: "left right" by priority
  // BPE only: the pre-tokenizer family, a GGUF tokenizer.ggml.pre name
  // (tokenizer/pretokenizer.h); "" is GPT-2's regex (files from before the
  // name was stored). Empty for SentencePiece and WordPiece.
  std::string pre;
  // WordPiece: bos is the classifier piece ([CLS]) and eos the separator
  // ([SEP]) that llama.cpp puts around every encoded text.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  // End of turn / end of message (Llama 3 <|eot_id|>, <|eom_id|>): more
  // ids that end generation, besides eos (Tokenizer::eog_ids()).
  int32_t eot_id = -1;
  int32_t eom_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;
  bool byte_fallback = true;
  // The model's chat template (Jinja text, GGUF tokenizer.chat_template;
  // runtime/chat renders it); "" when the file has none.
  std::string chat_template;
  // WordPiece only, BERT's normalizer (GGUF tokenizer.ggml.normalizer.*):
  // lowercase the text; drop accents (each character becomes the base of
  // its canonical decomposition, combining marks are removed).
  bool lowercase = true;
  bool strip_accents = true;
};

}  // namespace ember

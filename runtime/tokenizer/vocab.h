// A tokenizer vocabulary as the runtime holds it, independent of where it came
// from (.ember metadata, a GGUF file, a llama2.c tokenizer.bin).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

enum class TokenizerKind : uint8_t { SentencePiece = 0, BytePairBPE = 1 };

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : uint8_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6
};

struct Vocab {
  TokenizerKind kind = TokenizerKind::SentencePiece;
  std::vector<std::string> pieces;  // SPM: spaces stored as U+2581 "▁"
  std::vector<float> scores;        // empty or one per piece
  std::vector<uint8_t> types;       // empty or one per piece (TokenType)
  std::vector<std::string> merges;  // BPE only: "left right" by priority
  // BPE only: the pre-tokenizer family, a GGUF tokenizer.ggml.pre name
  // (tokenizer/pretokenizer.h); "" is GPT-2's regex (files from before the
  // name was stored). Empty for SentencePiece.
  std::string pre;
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
};

}  // namespace ember

#include "tools/convert/vocab_import.h"

#include <climits>

#include "tokenizer/pretokenizer.h"
#include <cstring>
#include <string>

namespace ember {
namespace {

constexpr const char* kSpmSpace = "\xE2\x96\x81";  // U+2581 "▁"

// Optional special id: absent keeps *id; present must fit in int32 or mean
// "none" (the range check against the vocabulary is Tokenizer::create's).
Status read_special(const GgufFile& g, const char* key, int32_t* id) {
  if (g.find(key) == nullptr) return Status::ok();
  auto v = g.get_u32(key);
  if (!v.is_ok()) {
    // Some converters write -1 for "none" as an i32.
    auto s = g.get_i32(key);
    if (s.is_ok() && s.value() == -1) {
      *id = -1;
      return Status::ok();
    }
    return v.status();
  }
  // llama.cpp's llama2.c converter writes u32 0xFFFFFFFF (-1) for "none"
  // (stories260K-f32.gguf's padding_token_id).
  if (v.value() == UINT32_MAX) {
    *id = -1;
    return Status::ok();
  }
  if (v.value() > static_cast<uint32_t>(INT32_MAX)) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "gguf: %s=%u does not fit in int32", key,
                         v.value());
  }
  *id = static_cast<int32_t>(v.value());
  return Status::ok();
}

Status read_flag(const GgufFile& g, const char* key, bool* flag) {
  if (g.find(key) == nullptr) return Status::ok();
  EMBER_ASSIGN_OR_RETURN(*flag, g.get_bool(key));
  return Status::ok();
}

// A SentencePiece or BPE vocabulary's special pieces and flags (absent keys
// keep the defaults already in *v).
Status special_keys(const GgufFile& g, Vocab* v) {
  EMBER_TRY(read_special(g, "tokenizer.ggml.bos_token_id", &v->bos_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.eos_token_id", &v->eos_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.unknown_token_id", &v->unk_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.padding_token_id", &v->pad_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.eot_token_id", &v->eot_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.eom_token_id", &v->eom_id));
  EMBER_TRY(read_flag(g, "tokenizer.ggml.add_bos_token", &v->add_bos));
  EMBER_TRY(read_flag(g, "tokenizer.ggml.add_eos_token", &v->add_eos));
  EMBER_TRY(read_flag(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix));
  return Status::ok();
}

// A WordPiece vocabulary's special pieces and normalizer, as llama.cpp reads
// a "bert" one: [CLS] is bos (bos_token_id, else cls_token_id, else 101),
// [SEP] is eos (seperator_token_id, GGUF's spelling, else 102), unk 100 and
// pad 0 unless the file says otherwise; each default only when in range.
// llama.cpp puts [CLS] and [SEP] around every text it encodes with special
// tokens, whatever add_bos_token / add_eos_token say, so both are on. The
// normalizer lowercases unless tokenizer.ggml.normalizer.lowercase is false;
// accents are stripped as .strip_accents says, else as lowercase.
Status wordpiece_keys(const GgufFile& g, Vocab* v) {
  const int64_t n = static_cast<int64_t>(v->pieces.size());
  auto fallback = [n](int32_t id) { return id < n ? id : -1; };
  v->bos_id = fallback(101);
  v->eos_id = fallback(102);
  v->unk_id = fallback(100);
  v->pad_id = fallback(0);
  EMBER_TRY(read_special(g, "tokenizer.ggml.cls_token_id", &v->bos_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.bos_token_id", &v->bos_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.seperator_token_id", &v->eos_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.unknown_token_id", &v->unk_id));
  EMBER_TRY(read_special(g, "tokenizer.ggml.padding_token_id", &v->pad_id));
  v->add_bos = true;
  v->add_eos = true;
  EMBER_TRY(read_flag(g, "tokenizer.ggml.normalizer.lowercase", &v->lowercase));
  v->strip_accents = v->lowercase;
  EMBER_TRY(read_flag(g, "tokenizer.ggml.normalizer.strip_accents", &v->strip_accents));
  return Status::ok();
}

uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

Result<Vocab> vocab_from_gguf(const GgufFile& g) {
  if (g.find("tokenizer.ggml.model") == nullptr) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "gguf: tokenizer.ggml.model is missing");
  }
  EMBER_ASSIGN_OR_RETURN(std::string_view model, g.get_string("tokenizer.ggml.model"));
  Vocab v;
  if (model == "llama") {
    v.kind = TokenizerKind::SentencePiece;
    v.add_bos = true;
    v.add_space_prefix = true;
    v.byte_fallback = true;
  } else if (model == "gpt2" || model == "gemma4") {
    // "gemma4": BPE merges over raw UTF-8 with "▁" for spaces, the
    // pre-tokenizer family of the same name (whatever .pre says, as
    // llama.cpp reads it).
    v.kind = TokenizerKind::BytePairBPE;
    v.add_bos = false;
    v.add_space_prefix = false;
    v.byte_fallback = false;
  } else if (model == "bert") {
    v.kind = TokenizerKind::WordPiece;
    v.add_space_prefix = false;
    v.byte_fallback = false;
  } else {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "gguf: tokenizer.ggml.model '%.*s' is not supported (llama, gpt2, gemma4, bert are)",
                         static_cast<int>(model.size() < 64 ? model.size() : 64), model.data());
  }
  if (g.find("tokenizer.ggml.tokens") == nullptr) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "gguf: tokenizer.ggml.tokens is missing");
  }
  EMBER_ASSIGN_OR_RETURN(v.pieces, g.get_string_array("tokenizer.ggml.tokens"));
  if (g.find("tokenizer.ggml.scores") != nullptr) {
    EMBER_ASSIGN_OR_RETURN(v.scores, g.get_f32_array("tokenizer.ggml.scores"));
  }
  if (g.find("tokenizer.ggml.token_type") != nullptr) {
    EMBER_ASSIGN_OR_RETURN(std::vector<int32_t> types,
                           g.get_i32_array("tokenizer.ggml.token_type"));
    v.types.resize(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] < 0 || types[i] > static_cast<int32_t>(TokenType::Byte)) {
        return Status::error(EMBER_ERR_BAD_TOKENIZER,
                             "gguf: tokenizer.ggml.token_type[%zu]=%d is not a token type (0..6)",
                             i, types[i]);
      }
      v.types[i] = static_cast<uint8_t>(types[i]);
    }
  }
  if (g.find("tokenizer.ggml.merges") != nullptr) {
    EMBER_ASSIGN_OR_RETURN(v.merges, g.get_string_array("tokenizer.ggml.merges"));
  }

  if (v.kind == TokenizerKind::BytePairBPE) {
    // The pre-tokenizer decides how words are cut: a name ember does not
    // implement is refused, never replaced by GPT-2's. A file without the
    // key (or with an empty one) gets llama.cpp's choice, "default".
    v.pre = "default";
    if (model == "gemma4") {
      v.pre = "gemma4";
    } else if (g.find("tokenizer.ggml.pre") != nullptr) {
      EMBER_ASSIGN_OR_RETURN(std::string_view pre, g.get_string("tokenizer.ggml.pre"));
      if (!pre.empty()) v.pre = std::string(pre);
    }
    auto pre = PreTokenizer::create(v.pre);
    if (!pre.is_ok()) {
      return Status::error(EMBER_ERR_UNSUPPORTED,
                           "gguf: tokenizer.ggml.pre '%.*s' is not a pre-tokenizer ember implements",
                           static_cast<int>(v.pre.size() < 64 ? v.pre.size() : 64), v.pre.data());
    }
    v.add_bos = pre->default_add_bos();
  }
  if (v.kind == TokenizerKind::SentencePiece) {
    // llama.cpp's defaults for SPM vocabularies without explicit ids.
    const int32_t n = static_cast<int32_t>(v.pieces.size() > INT32_MAX ? INT32_MAX
                                                                         : v.pieces.size());
    if (n > 0) v.unk_id = 0;
    if (n > 1) v.bos_id = 1;
    if (n > 2) v.eos_id = 2;
  }
  EMBER_TRY(v.kind == TokenizerKind::WordPiece ? wordpiece_keys(g, &v) : special_keys(g, &v));
  if (g.find("tokenizer.chat_template") != nullptr) {
    EMBER_ASSIGN_OR_RETURN(std::string_view tmpl, g.get_string("tokenizer.chat_template"));
    v.chat_template = std::string(tmpl);
  }
  // llama.cpp adds BOS for Gemma 4 even where the file says not to (its
  // converter wrote add_bos_token=false for models that need it).
  if (v.pre == "gemma4") v.add_bos = true;
  return v;
}

Result<Vocab> vocab_from_llama2c(const uint8_t* data, size_t size, int32_t vocab_size) {
  if (vocab_size <= 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "llama2.c tokenizer: vocab_size=%d",
                         vocab_size);
  }
  if (data == nullptr) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "llama2.c tokenizer: data is NULL");
  }
  if (size < 4) {
    return Status::error(EMBER_ERR_TRUNCATED,
                         "llama2.c tokenizer: %zu bytes, no max_token_length", size);
  }
  size_t pos = 4;  // max_token_length: llama2.c sizes a buffer with it; unused here
  // Each record is at least 8 bytes: bound the allocation before making it.
  if (static_cast<size_t>(vocab_size) > (size - pos) / 8) {
    return Status::error(EMBER_ERR_TRUNCATED,
                         "llama2.c tokenizer: vocab_size=%d needs at least %zu bytes, %zu remain",
                         vocab_size, static_cast<size_t>(vocab_size) * 8, size - pos);
  }
  Vocab v;
  v.kind = TokenizerKind::SentencePiece;
  v.add_bos = true;
  v.add_space_prefix = true;
  v.byte_fallback = true;
  v.pieces.resize(vocab_size);
  v.scores.resize(vocab_size);
  v.types.resize(vocab_size);
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (size - pos < 8) {
      return Status::error(EMBER_ERR_TRUNCATED,
                           "llama2.c tokenizer: token %d header at offset %zu is past the end",
                           id, pos);
    }
    const uint32_t score_bits = load_u32(data + pos);
    std::memcpy(&v.scores[id], &score_bits, 4);
    const int32_t len = static_cast<int32_t>(load_u32(data + pos + 4));
    pos += 8;
    if (len < 0) {
      return Status::error(EMBER_ERR_BAD_TOKENIZER, "llama2.c tokenizer: token %d has len=%d",
                           id, len);
    }
    if (static_cast<size_t>(len) > size - pos) {
      return Status::error(EMBER_ERR_TRUNCATED,
                           "llama2.c tokenizer: token %d len=%d at offset %zu, %zu bytes remain",
                           id, len, pos, size - pos);
    }
    std::string& piece = v.pieces[id];
    for (int32_t i = 0; i < len; ++i) {
      const char c = static_cast<char>(data[pos + i]);
      if (c == ' ') {
        piece.append(kSpmSpace);
      } else {
        piece.push_back(c);
      }
    }
    pos += static_cast<size_t>(len);
    TokenType type = TokenType::Normal;
    if (id == 0) {
      type = TokenType::Unknown;
    } else if (id == 1 || id == 2) {
      type = TokenType::Control;
    } else if (piece.size() >= 4 && piece.compare(0, 3, "<0x") == 0 && piece.back() == '>') {
      // Shape only: Tokenizer::create rejects a malformed "<0x..>".
      type = TokenType::Byte;
    }
    v.types[id] = static_cast<uint8_t>(type);
  }
  v.unk_id = 0;
  v.bos_id = vocab_size > 1 ? 1 : -1;
  v.eos_id = vocab_size > 2 ? 2 : -1;
  return v;
}

}  // namespace ember

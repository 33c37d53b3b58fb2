// Tokenizer construction (validation, lookup tables) and decoding. The
// encoders live in spm_tokenizer.cpp, bpe_tokenizer.cpp and wpm_tokenizer.cpp.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "tokenizer/bpe_bytes.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/unicode_classes.h"

namespace ember {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 "▁"

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool looks_like_byte_piece(std::string_view p) {
  return p.size() >= 4 && p.substr(0, 3) == "<0x" && p.back() == '>';
}

// "<0xAB>" -> 0xAB; -1 when not exactly that shape.
int parse_byte_piece(std::string_view p) {
  if (p.size() != 6 || !looks_like_byte_piece(p)) return -1;
  const int hi = hex_digit(p[3]);
  const int lo = hex_digit(p[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

// Texts of the pieces chat templates end a turn with (from the list
// llama.cpp keeps in llama-vocab.cpp, less the ones whose meaning depends on
// the rest of the vocabulary; plus Command-R's end of turn).
bool is_end_of_turn_text(std::string_view p) {
  static constexpr std::string_view kTexts[] = {
      "<|eot_id|>",    "<|eom_id|>", "<|im_end|>",    "<|end|>",
      "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
      "_<EOT>",        "<end_of_utterance>", "<|END_OF_TURN_TOKEN|>"};
  for (std::string_view t : kTexts) {
    if (p == t) return true;
  }
  return false;
}

// Pieces are printed in messages bounded: a hostile piece can be huge.
int shown(const std::string& s) { return static_cast<int>(s.size() < 64 ? s.size() : 64); }

}  // namespace

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
  const size_t n = vocab.pieces.size();
  if (n == 0) return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: vocabulary has no pieces");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: %zu pieces exceed INT32_MAX", n);
  }
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: %zu scores for %zu pieces",
                         vocab.scores.size(), n);
  }
  if (!vocab.types.empty() && vocab.types.size() != n) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: %zu token types for %zu pieces",
                         vocab.types.size(), n);
  }
  const int32_t count = static_cast<int32_t>(n);
  const struct { const char* name; int32_t id; } specials[] = {
      {"bos_id", vocab.bos_id}, {"eos_id", vocab.eos_id}, {"unk_id", vocab.unk_id},
      {"pad_id", vocab.pad_id}, {"eot_id", vocab.eot_id}, {"eom_id", vocab.eom_id}};
  for (const auto& s : specials) {
    if (s.id != -1 && (s.id < 0 || s.id >= count)) {
      return Status::error(EMBER_ERR_BAD_TOKENIZER,
                           "tokenizer: %s=%d is outside the vocabulary [0, %d)", s.name, s.id,
                           count);
    }
  }

  Tokenizer t;
  const bool spm = vocab.kind == TokenizerKind::SentencePiece;
  const bool bpe = vocab.kind == TokenizerKind::BytePairBPE;
  if (!spm && !bpe && vocab.kind != TokenizerKind::WordPiece) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: kind = %u is not a tokenizer kind",
                         static_cast<unsigned>(vocab.kind));
  }
  if (bpe) {
    EMBER_ASSIGN_OR_RETURN(t.pre_, PreTokenizer::create(vocab.pre));
  } else if (!vocab.pre.empty()) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER,
                         "tokenizer: pre-tokenizer '%.*s' on a %s vocabulary", shown(vocab.pre),
                         vocab.pre.c_str(), spm ? "SentencePiece" : "WordPiece");
  }
  t.types_.resize(n);
  for (int i = 0; i < 256; ++i) t.byte_to_id_[i] = -1;
  TokenizerStringMap all;  // every piece, for the duplicate check
  all.reserve(n);
  t.text_to_id_.reserve(n);
  for (int32_t id = 0; id < count; ++id) {
    const std::string& p = vocab.pieces[id];
    if (p.empty()) {
      return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: token %d has an empty piece", id);
    }
    if (std::memchr(p.data(), '\0', p.size()) != nullptr) {
      return Status::error(EMBER_ERR_BAD_TOKENIZER,
                           "tokenizer: token %d piece '%.*s' contains a NUL byte", id, shown(p),
                           p.c_str());
    }
    TokenType type;
    if (!vocab.types.empty()) {
      if (vocab.types[id] > static_cast<uint8_t>(TokenType::Byte)) {
        return Status::error(EMBER_ERR_BAD_TOKENIZER,
                             "tokenizer: token %d piece '%.*s' has type %u (max 6)", id,
                             shown(p), p.c_str(), vocab.types[id]);
      }
      type = static_cast<TokenType>(vocab.types[id]);
    } else if (id == vocab.unk_id) {
      type = TokenType::Unknown;
    } else if (id == vocab.bos_id || id == vocab.eos_id || id == vocab.pad_id) {
      type = TokenType::Control;
    } else if (spm && looks_like_byte_piece(p)) {
      type = TokenType::Byte;
    } else {
      type = TokenType::Normal;
    }
    t.types_[id] = static_cast<uint8_t>(type);
    if (type == TokenType::Byte) {
      const int b = parse_byte_piece(p);
      if (b < 0) {
        return Status::error(EMBER_ERR_BAD_TOKENIZER,
                             "tokenizer: token %d byte piece '%.*s' is not of the form <0xHH>",
                             id, shown(p), p.c_str());
      }
      // SPM byte fallback (and BPE over raw UTF-8); byte-level BPE
      // vocabularies use bytes_to_unicode instead.
      if (!bpe || !t.pre_.byte_encode()) t.byte_to_id_[b] = id;
    }
    auto [it, inserted] = all.emplace(p, id);
    if (!inserted) {
      return Status::error(EMBER_ERR_BAD_TOKENIZER,
                           "tokenizer: token %d piece '%.*s' duplicates token %d", id, shown(p),
                           p.c_str(), it->second);
    }
    if (type == TokenType::Normal || type == TokenType::UserDefined ||
        type == TokenType::Undefined) {
      t.text_to_id_.emplace(p, id);
    }
    if (type == TokenType::Control || type == TokenType::UserDefined ||
        type == TokenType::Unknown) {
      t.special_ids_.push_back(id);
    }
    if (id == vocab.eos_id || id == vocab.eot_id || id == vocab.eom_id || is_end_of_turn_text(p)) {
      t.eog_ids_.push_back(id);
    }
  }
  // Longest first, so "<|im_end|>" is cut before a piece it contains; equal
  // lengths by id, so the cut does not depend on the sort.
  std::stable_sort(t.special_ids_.begin(), t.special_ids_.end(), [&](int32_t a, int32_t b) {
    return vocab.pieces[a].size() > vocab.pieces[b].size();
  });

  if (bpe) {
    t.merge_rank_.reserve(vocab.merges.size());
    for (size_t r = 0; r < vocab.merges.size(); ++r) {
      const std::string& m = vocab.merges[r];
      // Search from 1: a left side may itself begin with a space.
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos || sp + 1 >= m.size()) {
        return Status::error(EMBER_ERR_BAD_TOKENIZER,
                             "tokenizer: merge %zu '%.*s' is not \"left right\"", r, shown(m),
                             m.c_str());
      }
      if (r > static_cast<size_t>(INT32_MAX)) {
        return Status::error(EMBER_ERR_BAD_TOKENIZER, "tokenizer: more than INT32_MAX merges");
      }
      // A repeated merge keeps its first (best) rank.
      t.merge_rank_.emplace(m, static_cast<int32_t>(r));
    }
    for (int b = 0; b < 256 && t.pre_.byte_encode(); ++b) {
      std::string s;
      utf8_append(gpt2_byte_to_unicode(static_cast<uint8_t>(b)), &s);
      auto it = all.find(std::string_view(s));
      t.byte_to_id_[b] = it == all.end() ? -1 : it->second;
    }
  }
  t.vocab_ = std::move(vocab);
  if (!spm && !bpe) EMBER_TRY(t.init_wordpiece());
  return t;
}

TokenType Tokenizer::type_of(int32_t id) const { return static_cast<TokenType>(types_[id]); }

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

Status Tokenizer::encode(std::string_view text, bool add_bos, std::vector<int32_t>* out) const {
  EncodeOptions options;
  options.add_bos = add_bos;
  return encode(text, options, out);
}

Status Tokenizer::encode(std::string_view text, const EncodeOptions& options,
                         std::vector<int32_t>* out) const {
  const bool add_bos = options.add_bos;
  if (out == nullptr) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "encode: out is NULL");
  if (vocab_.pieces.empty()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "encode: tokenizer was not created");
  }
  // Symbol offsets are 32-bit; the SPM escape can triple the text.
  if (text.size() > UINT32_MAX / 4) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "encode: text of %zu bytes is too long",
                         text.size());
  }
  if (add_bos) {
    if (vocab_.bos_id < 0) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "encode: add_bos requested but the vocabulary has no bos_id");
    }
    out->push_back(vocab_.bos_id);
  }
  if (options.add_eos && vocab_.eos_id < 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "encode: add_eos requested but the vocabulary has no eos_id");
  }

  // Cut the special pieces out (llama.cpp's tokenizer_st_partition): each
  // piece, longest first, splits every text fragment at its occurrences.
  struct Fragment {
    size_t begin, end;
    int32_t id;  // -1: text [begin, end)
  };
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({0, text.size(), -1});
  std::vector<Fragment> next;
  for (int32_t sid : special_ids_) {
    if (!options.parse_special && type_of(sid) != TokenType::UserDefined) continue;
    const std::string& piece = vocab_.pieces[sid];
    bool found = false;
    for (const Fragment& f : frags) {
      if (f.id < 0 && f.end - f.begin >= piece.size() &&
          text.substr(f.begin, f.end - f.begin).find(piece) != std::string_view::npos) {
        found = true;
        break;
      }
    }
    if (!found) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.begin;
      while (pos < f.end) {
        const size_t hit = text.substr(0, f.end).find(piece, pos);
        if (hit == std::string_view::npos) break;
        if (hit > pos) next.push_back({pos, hit, -1});
        next.push_back({hit, hit + piece.size(), sid});
        pos = hit + piece.size();
      }
      if (pos < f.end) next.push_back({pos, f.end, -1});
    }
    frags.swap(next);
  }

  const bool spm = vocab_.kind == TokenizerKind::SentencePiece;
  const bool wpm = vocab_.kind == TokenizerKind::WordPiece;
  bool prev_special = true;  // SPM: the dummy prefix goes after BOS or a special piece
  for (const Fragment& f : frags) {
    if (f.id >= 0) {
      out->push_back(f.id);
      prev_special = true;
      continue;
    }
    const std::string_view part = text.substr(f.begin, f.end - f.begin);
    if (spm) {
      EMBER_TRY(encode_spm(part, vocab_.add_space_prefix && prev_special, out));
    } else if (wpm) {
      encode_wpm(part, out);
    } else {
      EMBER_TRY(encode_bpe(part, out));
    }
    prev_special = false;
  }
  if (options.add_eos) out->push_back(vocab_.eos_id);
  return Status::ok();
}

void Tokenizer::decode_piece(int32_t id, std::string* out) const {
  const std::string& p = vocab_.pieces[id];
  // SentencePiece text: "▁" for spaces, <0xHH> byte pieces (WordPiece too).
  const bool spm_text = vocab_.kind != TokenizerKind::BytePairBPE || !pre_.byte_encode();
  if (id == vocab_.bos_id || id == vocab_.eos_id || id == vocab_.pad_id) return;
  switch (type_of(id)) {
    case TokenType::Control:
    case TokenType::Unused:
      return;
    case TokenType::Byte:
      if (spm_text) {
        out->push_back(static_cast<char>(parse_byte_piece(p)));
        return;
      }
      break;
    case TokenType::Unknown:
    case TokenType::UserDefined:
      out->append(p);
      return;
    default:
      break;
  }
  if (spm_text) {
    size_t i = 0;
    while (i < p.size()) {
      if (p.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
        out->push_back(' ');
        i += kSpmSpace.size();
      } else {
        out->push_back(p[i++]);
      }
    }
    return;
  }
  // Byte-level BPE: every character of a normal piece stands for one byte;
  // anything else (a hand-added piece) is copied as it is.
  const uint8_t* d = reinterpret_cast<const uint8_t*>(p.data());
  size_t i = 0;
  while (i < p.size()) {
    const Utf8Step s = utf8_decode(d + i, p.size() - i);
    const int b = s.codepoint == kInvalidCodepoint ? -1 : gpt2_unicode_to_byte(s.codepoint);
    if (b >= 0) {
      out->push_back(static_cast<char>(b));
    } else {
      out->append(p, i, s.length);
    }
    i += s.length;
  }
}

Status Tokenizer::decode_token(int32_t prev, int32_t id, std::string* out) const {
  if (out == nullptr) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "decode: out is NULL");
  if (id < 0 || id >= size()) {
    return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE,
                         "decode: token id %d is outside the vocabulary [0, %d)", id, size());
  }
  const size_t start = out->size();
  decode_piece(id, out);
  // llama2.c: "following BOS token, sentencepiece decoder strips any
  // leading whitespace" — only for normal pieces, not byte pieces.
  if (vocab_.kind == TokenizerKind::SentencePiece && prev >= 0 && prev == vocab_.bos_id &&
      type_of(id) != TokenType::Byte && out->size() > start && (*out)[start] == ' ') {
    out->erase(start, 1);
  }
  // WordPiece: the space of a stream's first word.
  if (vocab_.kind == TokenizerKind::WordPiece && (prev < 0 || prev == vocab_.bos_id) &&
      out->size() > start && (*out)[start] == ' ') {
    out->erase(start, 1);
  }
  return Status::ok();
}

Status Tokenizer::decode(const int32_t* ids, size_t n, std::string* out) const {
  if (out == nullptr) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "decode: out is NULL");
  if (ids == nullptr && n != 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "decode: ids is NULL with n=%zu", n);
  }
  const bool spm = vocab_.kind == TokenizerKind::SentencePiece;
  const size_t begin = out->size();
  bool first = true;  // no token has printed yet
  int32_t prev = -1;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= size()) {
      return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE,
                           "decode: token %zu has id %d, outside the vocabulary [0, %d)", i, id,
                           size());
    }
    const size_t start = out->size();
    decode_piece(id, out);
    if (out->size() > start) {
      // The dummy prefix encode() added (or the space SPM puts after BOS).
      const bool after_bos = prev >= 0 && prev == vocab_.bos_id;
      if (spm && first && (vocab_.add_space_prefix || after_bos) && (*out)[start] == ' ') {
        out->erase(start, 1);
      }
      first = false;
    }
    prev = id;
  }
  if (vocab_.kind == TokenizerKind::WordPiece) {
    wordpiece_clean_up_spaces(out, begin);
    // The first word's space (llama.cpp keeps it; Hugging Face does not).
    if (out->size() > begin && (*out)[begin] == ' ') out->erase(begin, 1);
  }
  return Status::ok();
}

}  // namespace ember

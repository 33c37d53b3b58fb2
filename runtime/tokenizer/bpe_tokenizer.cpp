// Byte-level BPE encoding: split the text with the family's pre-tokenizer,
// write each word's bytes as bytes_to_unicode characters, then apply merges
// lowest rank first within the word and look the results up.
#include <array>
#include <string>

#include "tokenizer/bpe_bytes.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace ember {
namespace {

struct ByteTables {
  std::array<uint32_t, 256> to_unicode{};
  std::array<int16_t, 324> to_byte{};  // mapped characters are all < U+0144
};

const ByteTables& byte_tables() {
  static const ByteTables tables = [] {
    ByteTables t;
    t.to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t.to_unicode[b] = printable ? b : next++;
      t.to_byte[t.to_unicode[b]] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return tables;
}

enum class CharClass : uint8_t { None, Letter, Number, Space, Other };

struct Char {
  uint32_t cp;  // kInvalidCodepoint for a stray byte
  uint32_t offset;
  CharClass cls;
};

CharClass classify(uint32_t cp) {
  if (cp == kInvalidCodepoint) return CharClass::Other;
  if (is_unicode_whitespace(cp)) return CharClass::Space;
  if (is_unicode_letter(cp)) return CharClass::Letter;
  if (is_unicode_number(cp)) return CharClass::Number;
  return CharClass::Other;
}

}  // namespace

uint32_t gpt2_byte_to_unicode(uint8_t b) { return byte_tables().to_unicode[b]; }

int gpt2_unicode_to_byte(uint32_t cp) {
  return cp < byte_tables().to_byte.size() ? byte_tables().to_byte[cp] : -1;
}

void gpt2_pretokenize(std::string_view text, std::vector<std::pair<size_t, size_t>>* words) {
  std::vector<Char> chars;
  chars.reserve(text.size());
  const uint8_t* d = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const Utf8Step s = utf8_decode(d + i, text.size() - i);
    chars.push_back({s.codepoint, static_cast<uint32_t>(i), classify(s.codepoint)});
    i += s.length;
  }
  const size_t n = chars.size();
  auto cls = [&](size_t i) { return i < n ? chars[i].cls : CharClass::None; };
  auto cp = [&](size_t i) { return i < n ? chars[i].cp : 0u; };
  auto offset = [&](size_t i) { return i < n ? static_cast<size_t>(chars[i].offset) : text.size(); };

  // Follows the alternatives of the regex in order, as llama.cpp's
  // unicode_regex_split_custom_gpt2 does; each branch consumes >= 1 char.
  size_t pos = 0;
  while (pos < n) {
    const size_t start = pos;
    auto emit = [&](size_t end) {
      words->emplace_back(offset(start), offset(end));
      pos = end;
    };
    const uint32_t c = cp(pos);
    // 's|'t|'re|'ve|'m|'ll|'d  (case-sensitive, as in GPT-2)
    if (c == '\'' && pos + 1 < n) {
      const uint32_t c1 = cp(pos + 1);
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        emit(pos + 2);
        continue;
      }
      if (pos + 2 < n) {
        const uint32_t c2 = cp(pos + 2);
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
          emit(pos + 3);
          continue;
        }
      }
    }
    const size_t body = pos + (c == ' ' ? 1 : 0);
    const CharClass k = cls(body);
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
    if (k == CharClass::Letter || k == CharClass::Number || k == CharClass::Other) {
      size_t end = body;
      while (cls(end) == k) ++end;
      emit(end);
      continue;
    }
    size_t spaces = 0;
    while (cls(pos + spaces) == CharClass::Space) ++spaces;
    // \s+(?!\S): a run followed by a non-space gives up its last character,
    // which then leads the next word (" Hello").
    if (spaces > 1 && pos + spaces < n) {
      emit(pos + spaces - 1);
      continue;
    }
    if (spaces > 0) {
      emit(pos + spaces);
      continue;
    }
    emit(pos + 1);  // unreachable with the classes above; keeps progress
  }
}

Status Tokenizer::bpe_word(std::string_view mapped, std::vector<MergeSymbol>* symbols,
                           std::string* scratch, std::vector<int32_t>* out) const {
  symbols->clear();
  const uint8_t* d = reinterpret_cast<const uint8_t*>(mapped.data());
  for (size_t i = 0; i < mapped.size();) {
    const Utf8Step s = utf8_decode(d + i, mapped.size() - i);
    const int32_t idx = static_cast<int32_t>(symbols->size());
    symbols->push_back({idx - 1, idx + 1, static_cast<uint32_t>(i), s.length});
    i += s.length;
  }
  if (symbols->empty()) return Status::ok();
  symbols->back().next = -1;

  merge_symbols(mapped, *symbols, [&](std::string_view l, std::string_view r, double* p) {
    scratch->assign(l);
    scratch->push_back(' ');
    scratch->append(r);
    auto it = merge_rank_.find(std::string_view(*scratch));
    if (it == merge_rank_.end()) return false;
    *p = -static_cast<double>(it->second);
    return true;
  });

  for (int32_t i = 0; i >= 0; i = (*symbols)[i].next) {
    const std::string_view sym = mapped.substr((*symbols)[i].start, (*symbols)[i].len);
    auto it = text_to_id_.find(sym);
    if (it != text_to_id_.end()) {
      out->push_back(it->second);
      continue;
    }
    // Not a piece: emit its characters, each one byte's piece.
    const uint8_t* sd = reinterpret_cast<const uint8_t*>(sym.data());
    if (!pre_.byte_encode()) {  // raw UTF-8: the <0xHH> piece of each byte
      for (char c : sym) {
        const int32_t id = byte_to_id_[static_cast<uint8_t>(c)];
        if (id >= 0) {
          out->push_back(id);
        } else if (vocab_.unk_id >= 0) {
          out->push_back(vocab_.unk_id);
        } else {
          return Status::error(EMBER_ERR_BAD_TOKENIZER,
                               "encode: byte 0x%02x has no <0x..> piece and there is no unk_id",
                               static_cast<uint8_t>(c));
        }
      }
      continue;
    }
    for (size_t j = 0; j < sym.size();) {
      const Utf8Step s = utf8_decode(sd + j, sym.size() - j);
      const int b = gpt2_unicode_to_byte(s.codepoint);
      const int32_t id = b >= 0 ? byte_to_id_[b] : -1;
      if (id >= 0) {
        out->push_back(id);
      } else if (vocab_.unk_id >= 0) {
        out->push_back(vocab_.unk_id);
      } else {
        return Status::error(EMBER_ERR_BAD_TOKENIZER,
                             "encode: byte 0x%02x has no piece and there is no unk_id",
                             b >= 0 ? b : 0);
      }
      j += s.length;
    }
  }
  return Status::ok();
}

Status Tokenizer::encode_bpe(std::string_view raw, std::vector<int32_t>* out) const {
  const ByteTables& tables = byte_tables();
  std::string escaped;
  std::string_view text = raw;
  if (pre_.escape_spaces()) {
    escaped.reserve(raw.size() + raw.size() / 2);
    for (char c : raw) {
      if (c == ' ') {
        escaped.append("\xE2\x96\x81");
      } else {
        escaped.push_back(c);
      }
    }
    text = escaped;
  }
  std::vector<std::pair<size_t, size_t>> words;
  pre_.split(text, &words);
  std::string mapped;
  std::string scratch;
  std::vector<MergeSymbol> symbols;
  for (const auto& [begin, end] : words) {
    mapped.clear();
    if (pre_.byte_encode()) {
      for (size_t i = begin; i < end; ++i) {
        utf8_append(tables.to_unicode[static_cast<uint8_t>(text[i])], &mapped);
      }
    } else {
      mapped.assign(text.substr(begin, end - begin));
    }
    const bool newlines = pre_.newline_words_whole() &&
                          mapped.find_first_not_of('\n') == std::string::npos;
    if (pre_.ignore_merges() || newlines) {
      auto it = text_to_id_.find(std::string_view(mapped));
      if (it != text_to_id_.end()) {
        out->push_back(it->second);
        continue;
      }
    }
    EMBER_TRY(bpe_word(mapped, &symbols, &scratch, out));
  }
  return Status::ok();
}

}  // namespace ember

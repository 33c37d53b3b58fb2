// WordPiece encoding, the rules of llama.cpp's WPM tokenizer (BERT's basic
// tokenizer and greedy WordPiece, in GGUF's "▁" form):
//  1. Normalize and split, one code point at a time. With strip_accents a
//     character becomes the base of its canonical decomposition
//     (tokenizer/unicode_normalization.h) and combining marks go. White space
//     ends a word; NUL, U+FFFD (what invalid UTF-8 reads as) and control or
//     format characters go; punctuation, the ASCII symbols and CJK
//     ideographs are words of their own; with lowercase every character is
//     lowercased.
//  2. Each word, "▁" first, is cut into the longest piece from the left,
//     again and again; a word that cannot be cut to its end becomes unk.
// No limit on a word's length (llama.cpp has none; Hugging Face turns words
// over 100 characters into unk).
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_classes.h"
#include "tokenizer/unicode_normalization.h"

namespace ember {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581 "▁"

// What the normalizer does with a (base) code point.
enum class CharRole { Space, Drop, Alone, Part };

// The CJK ideograph blocks BERT splits into single characters: the unified
// ideographs and extensions A-E (with Hugging Face's start of E at
// U+2B920, which llama.cpp keeps), the compatibility ideographs and their
// supplement.
bool is_cjk_ideograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// General category S* below U+007F: BERT's punctuation test counts the
// ASCII symbols too.
bool is_ascii_symbol(uint32_t cp) {
  switch (cp) {
    case '$': case '+': case '<': case '=': case '>': case '^': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

CharRole char_role(uint32_t cp, bool strip_accents) {
  if (is_unicode_whitespace(cp)) return CharRole::Space;
  if (cp == 0 || cp == 0xFFFD || is_unicode_control(cp)) return CharRole::Drop;
  if (strip_accents && is_unicode_mark(cp)) return CharRole::Drop;
  if (is_unicode_punctuation(cp) || is_ascii_symbol(cp) || is_cjk_ideograph(cp)) {
    return CharRole::Alone;
  }
  return CharRole::Part;
}

// Drops the space at each index `drop` marks; the rest keeps its order.
void erase_marked(std::string* s, size_t from, const std::vector<bool>& drop) {
  size_t w = from;
  for (size_t r = from; r < s->size(); ++r) {
    if (!drop[r - from]) (*s)[w++] = (*s)[r];
  }
  s->resize(w);
}

bool ends_sentence(char c) { return c == '.' || c == ',' || c == '!' || c == '?'; }

// The contractions whose apostrophe takes the space before it away.
bool joins_before(std::string_view s, size_t apostrophe) {
  if (apostrophe + 1 >= s.size()) return false;
  const char a = s[apostrophe + 1];
  if (a == 's' || a == 'm') return true;
  if (a == 't' || a == 'd' || apostrophe + 2 >= s.size()) return false;
  const char b = s[apostrophe + 2];
  return (a == 'r' || a == 'v') && b == 'e';
}

}  // namespace

void wordpiece_clean_up_spaces(std::string* text, size_t from) {
  if (text == nullptr || from >= text->size()) return;
  // Each pass reads the text the previous one left, as llama.cpp's do.
  std::vector<bool> drop(text->size() - from);
  for (size_t i = from; i + 1 < text->size(); ++i) {
    drop[i - from] = (*text)[i] == ' ' && ends_sentence((*text)[i + 1]);
  }
  erase_marked(text, from, drop);

  const std::string_view s2(text->data() + from, text->size() - from);
  drop.assign(s2.size(), false);
  for (size_t i = 1; i + 1 < s2.size(); ++i) {
    // A space already taken by the previous " ' " is not one again.
    if (s2[i] == '\'' && s2[i - 1] == ' ' && !drop[i - 1] && s2[i + 1] == ' ') {
      drop[i - 1] = drop[i + 1] = true;
      ++i;
    }
  }
  erase_marked(text, from, drop);

  const std::string_view s3(text->data() + from, text->size() - from);
  drop.assign(s3.size(), false);
  for (size_t i = 1; i < s3.size(); ++i) {
    if (s3[i] == '\'' && s3[i - 1] == ' ' && joins_before(s3, i)) drop[i - 1] = true;
  }
  erase_marked(text, from, drop);
}

Status Tokenizer::init_wordpiece() {
  if (!vocab_.merges.empty()) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER,
                         "tokenizer: %zu merges on a WordPiece vocabulary (it has none)",
                         vocab_.merges.size());
  }
  if (vocab_.unk_id < 0) {
    return Status::error(EMBER_ERR_BAD_TOKENIZER,
                         "tokenizer: unk_id = -1 on a WordPiece vocabulary (a word without "
                         "pieces becomes unk)");
  }
  std::set<uint32_t> lengths;
  for (const auto& [piece, id] : text_to_id_) lengths.insert(static_cast<uint32_t>(piece.size()));
  wpm_lengths_.assign(lengths.rbegin(), lengths.rend());
  return Status::ok();
}

void Tokenizer::wpm_word(std::string_view word, std::vector<int32_t>* out) const {
  const size_t first = out->size();
  size_t at = 0;
  while (at < word.size()) {
    // Bounded by the distinct piece lengths (21 for BERT's 30k pieces),
    // one hash lookup each.
    int32_t id = -1;
    size_t len = 0;
    for (uint32_t l : wpm_lengths_) {
      if (l > word.size() - at) continue;
      auto it = text_to_id_.find(word.substr(at, l));
      if (it != text_to_id_.end()) {
        id = it->second;
        len = l;
        break;
      }
    }
    if (id < 0) {
      out->resize(first);
      out->push_back(vocab_.unk_id);
      return;
    }
    out->push_back(id);
    at += len;
  }
}

void Tokenizer::encode_wpm(std::string_view text, std::vector<int32_t>* out) const {
  std::string word(kWordStart);
  auto end_word = [&] {
    if (word.size() > kWordStart.size()) wpm_word(word, out);
    word.resize(kWordStart.size());
  };
  const uint8_t* d = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const Utf8Step step = utf8_decode(d + i, text.size() - i);
    i += step.length;
    uint32_t cp = step.codepoint == kInvalidCodepoint ? 0xFFFD : step.codepoint;
    if (vocab_.strip_accents) cp = unicode_canonical_base(cp);
    const CharRole role = char_role(cp, vocab_.strip_accents);
    if (role == CharRole::Space || role == CharRole::Drop) {
      if (role == CharRole::Space) end_word();
      continue;
    }
    if (role == CharRole::Alone) end_word();
    utf8_append(vocab_.lowercase ? unicode_simple_lowercase(cp) : cp, &word);
    if (role == CharRole::Alone) end_word();
  }
  end_word();
}

}  // namespace ember

// Unicode helpers the tokenizers need: UTF-8 decoding that never reads past
// the end or rejects input, and the character classes the pre-tokenizer
// regexes are written in (\p{L}, \p{N}, \p{P}, \p{M}, \s).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember {

// One decoded step of a UTF-8 string.
struct Utf8Step {
  uint32_t codepoint;  // kInvalidCodepoint when the bytes are not valid UTF-8
  uint32_t length;     // bytes consumed: 1..4; always 1 for an invalid byte
};

// Marks a byte that does not start a valid UTF-8 sequence (overlong forms,
// surrogates, values past U+10FFFF, truncated or bad continuation bytes).
// Callers treat it as that single raw byte.
inline constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFFu;

// Decodes the sequence starting at data[0]; `size` (> 0) bounds the read.
Utf8Step utf8_decode(const uint8_t* data, size_t size);

// Appends the UTF-8 encoding of `cp` (must be <= U+10FFFF).
void utf8_append(uint32_t cp, std::string* out);

// General category L* (Lu, Ll, Lt, Lm, Lo), from a range table generated
// from Unicode 14 (Python's unicodedata); see unicode_classes.cpp.
bool is_unicode_letter(uint32_t cp);
// General category N* (Nd, Nl, No).
bool is_unicode_number(uint32_t cp);
// General category P* (Pc, Pd, Ps, Pe, Pi, Pf, Po).
bool is_unicode_punctuation(uint32_t cp);
// General category M* (Mn, Mc, Me).
bool is_unicode_mark(uint32_t cp);
// The Unicode White_Space property (what \s matches in the GPT-2 regex).
bool is_unicode_whitespace(uint32_t cp);

}  // namespace ember

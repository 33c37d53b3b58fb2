// GPT-2's bytes_to_unicode: the reversible byte <-> character mapping
// byte-level BPE vocabularies are written in (printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100..U+0143), so that no piece holds a
// raw space, control byte or partial UTF-8 sequence.
#pragma once

#include <cstdint>

namespace ember {

// The character byte `b` is written as.
uint32_t gpt2_byte_to_unicode(uint8_t b);
// The byte character `cp` stands for, or -1 when it is not in the mapping.
int gpt2_unicode_to_byte(uint32_t cp);

}  // namespace ember

// Builds a Vocab from the formats ember imports: a GGUF file's tokenizer.ggml.*
// metadata and llama2.c's tokenizer.bin. The result is not yet validated as a
// whole: pass it to Tokenizer::create(), which rejects inconsistent pieces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "tokenizer/vocab.h"
#include "tools/convert/gguf.h"

namespace ember {

// Reads tokenizer.ggml.model ("llama" -> SentencePiece, "gpt2" -> byte-level
// BPE, "bert" -> WordPiece), .pre (BPE: the pre-tokenizer family; absent
// means "default", as in llama.cpp; other kinds ignore it), .tokens,
// .scores, .token_type, .merges, .bos/.eos/.unknown/.padding/.eot/
// .eom_token_id, .add_bos_token, .add_eos_token, .add_space_prefix; for
// "bert" instead .cls/.bos (bos), .seperator (eos), .unknown, .padding
// _token_id and .normalizer.lowercase / .strip_accents, with add_bos and
// add_eos on (vocab_import.cpp wordpiece_keys has the defaults). Absent
// flags take llama.cpp's defaults: llama
// add_bos=true, add_space_prefix=true; gpt2 add_space_prefix=false and
// add_bos=false except for the Llama 3 pre-tokenizers (true); absent
// llama special ids default to unk=0, bos=1, eos=2 when in range; an id of
// u32 0xFFFFFFFF (or i32 -1) means "none" (-1). Errors:
// EMBER_ERR_BAD_TOKENIZER (no model or tokens; a token type outside 0..6; a
// special id that does not fit in int32), EMBER_ERR_UNSUPPORTED (another
// tokenizer model; a tokenizer.ggml.pre ember does not implement, naming
// it), EMBER_ERR_FORMAT (a key of the wrong type, from the
// GGUF getters, naming the key).
Result<Vocab> vocab_from_gguf(const GgufFile& gguf);

// Parses llama2.c's tokenizer.bin: int32 max_token_length, then `vocab_size`
// records of (f32 score, int32 len, len bytes). llama2.c stores spaces as
// ' ' — they are turned back into "▁" so the Vocab matches GGUF llama ones.
// Types: id 0 Unknown (unk), 1 and 2 Control (bos, eos), "<0x..>" pieces
// Byte, others Normal. Trailing bytes after the last record are ignored.
// Errors: EMBER_ERR_INVALID_ARGUMENT (vocab_size <= 0, data NULL),
// EMBER_ERR_TRUNCATED (a record past the end, including a vocab_size the
// data cannot hold), EMBER_ERR_BAD_TOKENIZER (a negative length).
Result<Vocab> vocab_from_llama2c(const uint8_t* data, size_t size, int32_t vocab_size);

}  // namespace ember

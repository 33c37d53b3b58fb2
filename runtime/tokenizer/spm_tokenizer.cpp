// SentencePiece-style encoding (llama.cpp's SPM tokenizer, llama2.c's
// encode): escape spaces as "▁", start from UTF-8 characters, merge the pair
// whose concatenation is the highest-scoring piece until none is left, then
// byte-fallback whatever is not a piece.
#include <string>

#include "tokenizer/symbol_merge.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace ember {

Status Tokenizer::spm_fallback(std::string_view symbol, std::vector<int32_t>* out) const {
  bool bytes_ok = vocab_.byte_fallback;
  for (size_t i = 0; bytes_ok && i < symbol.size(); ++i) {
    bytes_ok = byte_to_id_[static_cast<uint8_t>(symbol[i])] >= 0;
  }
  if (bytes_ok) {
    for (char c : symbol) out->push_back(byte_to_id_[static_cast<uint8_t>(c)]);
    return Status::ok();
  }
  if (vocab_.unk_id >= 0) {
    out->push_back(vocab_.unk_id);
    return Status::ok();
  }
  return Status::error(EMBER_ERR_BAD_TOKENIZER,
                       "encode: character 0x%02x... has no piece, no byte piece and there is "
                       "no unk_id",
                       static_cast<uint8_t>(symbol[0]));
}

Status Tokenizer::encode_spm(std::string_view text, bool space_prefix,
                             std::vector<int32_t>* out) const {
  // The dummy prefix makes "Hello" at the start encode like " Hello" inside
  // a sentence, as SentencePiece's add_dummy_prefix does.
  std::string work;
  work.reserve(text.size() + 3);
  if (space_prefix) work.append("\xE2\x96\x81");
  for (char c : text) {
    if (c == ' ') {
      work.append("\xE2\x96\x81");
    } else {
      work.push_back(c);
    }
  }

  std::vector<MergeSymbol> symbols;
  symbols.reserve(work.size());
  const uint8_t* d = reinterpret_cast<const uint8_t*>(work.data());
  for (size_t i = 0; i < work.size();) {
    // Invalid UTF-8 advances one byte: that byte becomes its own symbol and
    // later falls back to its <0xHH> piece.
    const Utf8Step s = utf8_decode(d + i, work.size() - i);
    const int32_t idx = static_cast<int32_t>(symbols.size());
    symbols.push_back({idx - 1, idx + 1, static_cast<uint32_t>(i), s.length});
    i += s.length;
  }
  symbols.back().next = -1;

  const std::string_view w(work);
  const bool have_scores = !vocab_.scores.empty();
  merge_symbols(w, symbols, [&](std::string_view l, std::string_view r, double* p) {
    // Adjacent symbols are contiguous in `work`: their concatenation is a
    // view, so the lookup allocates nothing.
    const std::string_view both(l.data(), l.size() + r.size());
    auto it = text_to_id_.find(both);
    if (it == text_to_id_.end()) return false;
    *p = have_scores ? vocab_.scores[it->second] : 0.0;
    return true;
  });

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view sym = w.substr(symbols[i].start, symbols[i].len);
    auto it = text_to_id_.find(sym);
    if (it != text_to_id_.end()) {
      out->push_back(it->second);
    } else {
      EMBER_TRY(spm_fallback(sym, out));
    }
  }
  return Status::ok();
}

}  // namespace ember

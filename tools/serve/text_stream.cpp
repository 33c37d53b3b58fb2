// TextStream: see text_stream.h.
#include "tools/serve/text_stream.h"

namespace ember::serve {

TextStream::TextStream(std::vector<std::string> stop) { stops_.set(std::move(stop)); }

bool TextStream::sink(void* user, int32_t, const std::string& piece) {
  static_cast<TextStream*>(user)->released_ += piece;
  return false;
}

std::string token_piece(const ember_model* model, int32_t prev, int32_t token) {
  char buf[256];
  size_t len = 0;
  const ember_status st = ember_token_to_piece(model, prev, token, buf, sizeof buf, &len);
  if (st == EMBER_OK) return std::string(buf, len);
  if (st != EMBER_ERR_BUFFER_TOO_SMALL) return {};
  std::string piece(len, '\0');
  if (ember_token_to_piece(model, prev, token, piece.data(), piece.size(), &len) != EMBER_OK) return {};
  piece.resize(len);
  return piece;
}

size_t complete_utf8_prefix(const std::string& text) {
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    if (c >= 0xC0) {
      const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      if (back < need) return n - back;
    }
    break;
  }
  return n;
}

void TextStream::emit(std::string* out, bool all) {
  const size_t n = all ? released_.size() : complete_utf8_prefix(released_);
  out->append(released_, 0, n);
  released_.erase(0, n);
}

bool TextStream::push(int32_t token, const std::string& piece, std::string* out) {
  const StopStrings::Step step = stops_.push(token, piece, &TextStream::sink, this);
  const bool matched = step == StopStrings::Step::Matched;
  emit(out, matched);
  return matched;
}

void TextStream::flush(std::string* out) {
  stops_.flush(&TextStream::sink, this);
  emit(out, true);
}

}  // namespace ember::serve

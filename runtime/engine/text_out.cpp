#include "engine/text_out.h"

namespace ember {

size_t complete_utf8_prefix(std::string_view text) {
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

void TextOut::start(std::vector<std::string> stops, bool whole_characters) {
  stops_.set(std::move(stops));
  whole_ = whole_characters;
  partial_.clear();
  rest_.clear();
  out_.reserve(256);
}

bool TextOut::relay(void* self, int32_t token, const std::string& piece) {
  TextOut* t = static_cast<TextOut*>(self);
  t->partial_ += piece;
  const size_t n = t->whole_ ? complete_utf8_prefix(t->partial_) : t->partial_.size();
  t->out_.assign(t->partial_, 0, n);
  t->partial_.erase(0, n);
  return t->sink_ && t->sink_(t->user_, token, t->out_);
}

TextOut::Step TextOut::push(int32_t token, const std::string& piece, Sink sink, void* user) {
  sink_ = sink;
  user_ = user;
  return stops_.push(token, piece, &TextOut::relay, this);
}

TextOut::Step TextOut::flush(Sink sink, void* user) {
  sink_ = sink;
  user_ = user;
  return stops_.flush(&TextOut::relay, this);
}

std::string_view TextOut::take_rest() {
  rest_.swap(partial_);
  partial_.clear();
  return rest_;
}

}  // namespace ember

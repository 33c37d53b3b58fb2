#include "engine/stop_strings.h"

#include <algorithm>

namespace ember {

void StopStrings::set(std::vector<std::string> stops) {
  stops_ = std::move(stops);
  longest_ = 0;
  for (const std::string& s : stops_) longest_ = std::max(longest_, s.size());
  clear();
  // Held text never exceeds the longest stop string plus one token's piece,
  // and held tokens are rarely more than that many bytes: reserved once so
  // that generation does not grow them.
  text_.reserve(longest_ + 256);
  held_.reserve(longest_ + 16);
  piece_.reserve(longest_ + 256);
}

void StopStrings::clear() {
  text_.clear();
  held_.clear();
}

StopStrings::Step StopStrings::release(size_t cut, bool partial, Sink sink, void* user) {
  size_t begin = 0, n = 0;
  Step step = Step::Go;
  for (; n < held_.size(); ++n) {
    const Held& h = held_[n];
    if (h.end > cut) break;
    piece_.assign(text_, begin, h.end - begin);
    begin = h.end;
    if (sink && sink(user, h.token, piece_)) {
      ++n;
      step = Step::SinkStopped;
      break;
    }
  }
  if (step == Step::Go && partial && n < held_.size() && begin < cut) {
    piece_.assign(text_, begin, cut - begin);
    if (sink && sink(user, held_[n].token, piece_)) step = Step::SinkStopped;
  }
  // Drop what was released; the rest moves to the front.
  text_.erase(0, begin);
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(n));
  for (Held& h : held_) h.end -= begin;
  return step;
}

StopStrings::Step StopStrings::push(int32_t token, const std::string& piece, Sink sink, void* user) {
  if (stops_.empty()) {
    return sink && sink(user, token, piece) ? Step::SinkStopped : Step::Go;
  }
  text_ += piece;
  held_.push_back({token, text_.size()});
  // A stop string anywhere in the held text: the earliest one wins. (A match
  // cannot begin in text already released: that text was released because
  // no stop string could begin there.)
  size_t match = std::string::npos;
  for (const std::string& s : stops_) match = std::min(match, text_.find(s));
  if (match != std::string::npos) {
    const Step step = release(match, true, sink, user);
    clear();
    return step == Step::SinkStopped ? Step::SinkStopped : Step::Matched;
  }
  // Hold back from the first position whose rest of the text is the start
  // of some stop string (only the last longest_ - 1 bytes can be).
  size_t hold = text_.size();
  const size_t from = text_.size() > longest_ ? text_.size() - longest_ + 1 : 0;
  for (size_t k = from; k < text_.size() && hold == text_.size(); ++k) {
    const size_t rest = text_.size() - k;
    for (const std::string& s : stops_) {
      if (s.size() > rest && s.compare(0, rest, text_, k, rest) == 0) {
        hold = k;
        break;
      }
    }
  }
  return release(hold, false, sink, user);
}

StopStrings::Step StopStrings::flush(Sink sink, void* user) {
  const Step step = release(text_.size(), false, sink, user);
  clear();
  return step;
}

}  // namespace ember

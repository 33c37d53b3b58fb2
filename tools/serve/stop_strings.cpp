// Stop strings and UTF-8 boundaries in streamed text (scheduler.h).
#include <algorithm>

#include "tools/serve/scheduler.h"

namespace ember::serve {

size_t releasable_prefix(std::string_view pending, const std::vector<std::string>& stop, size_t* stop_at) {
  *stop_at = std::string_view::npos;
  for (const auto& s : stop) {
    const size_t at = pending.find(s);
    if (at != std::string_view::npos && at < *stop_at) *stop_at = at;
  }
  if (*stop_at != std::string_view::npos) return *stop_at;
  size_t keep = pending.size();
  // Hold back a tail that could begin a stop string.
  for (const auto& s : stop) {
    const size_t longest = std::min(s.size() - 1, pending.size());
    for (size_t n = longest; n > 0; --n) {
      if (pending.substr(pending.size() - n) == std::string_view(s).substr(0, n)) {
        keep = std::min(keep, pending.size() - n);
        break;
      }
    }
  }
  // And an unfinished UTF-8 sequence (a byte token's first bytes).
  size_t lead = keep;
  for (size_t back = 1; back <= 3 && back <= keep; ++back) {
    const unsigned char c = static_cast<unsigned char>(pending[keep - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    if (c >= 0xC0) {
      const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      if (back < need) lead = keep - back;
    }
    break;
  }
  return lead;
}

}  // namespace ember::serve

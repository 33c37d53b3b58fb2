// The text a request streams to its client: stop strings by the runtime's
// own rule (engine/stop_strings.h, what ember_generate does: held back while
// it could begin a stop string, cut where one begins), then whole UTF-8
// characters only (a byte-level token may end half-way through one; the
// client's JSON would otherwise carry a replacement character).
//
// Why the runtime's internal class and not a copy: the tools sit above every
// layer and see the whole tree (docs/decisions.md "Layers"), and one
// implementation means the server and ember_generate cut text identically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember.h"
#include "engine/stop_strings.h"

namespace ember::serve {

class TextStream {
 public:
  // `stop`: non-empty strings (the request parser refuses empty ones).
  explicit TextStream(std::vector<std::string> stop);

  // Adds a generated token's piece and appends to *out the text that is now
  // final. Returns true when a stop string completed: *out then ends just
  // before it, and generation must end.
  bool push(int32_t token, const std::string& piece, std::string* out);
  // Generation ended another way: appends everything held, as it is.
  void flush(std::string* out);

 private:
  static bool sink(void* user, int32_t token, const std::string& piece);
  // Moves the complete UTF-8 characters of released_ to *out.
  void emit(std::string* out, bool all);

  StopStrings stops_;
  std::string released_;  // passed the stop strings; may end in a partial character
};

// The bytes `token` prints as after `prev` (ember_token_to_piece, any length).
std::string token_piece(const ember_model* model, int32_t prev, int32_t token);

// Bytes of `text` up to the end of its last complete UTF-8 character
// (a trailing lead byte with too few continuation bytes is held back).
size_t complete_utf8_prefix(const std::string& text);

}  // namespace ember::serve

// The text a generated sequence releases, token by token: first the stop
// strings (stop_strings.h: text that could still begin one is held back, a
// match ends the text where it begins), then whole UTF-8 characters only (a
// byte-level token may end half-way through one; a host's JSON or terminal
// would otherwise get a broken character). Each released token reaches the
// sink with the bytes that became final with it: its piece, less what is
// held, plus what earlier tokens held back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/stop_strings.h"

namespace ember {

class TextOut {
 public:
  // Called for each released token with the bytes now final (may be empty).
  // Returns true to stop (the host's callback asked to).
  using Sink = bool (*)(void* user, int32_t token, std::string_view text);
  using Step = StopStrings::Step;

  // A new generation with these stop strings (none empty: the caller
  // checks). whole_characters false: each token's piece is released as it
  // is, even part of a character (ember_generate's callback contract).
  void start(std::vector<std::string> stops, bool whole_characters = true);

  // Adds the next token's piece; releases what is decided. Matched: a stop
  // string is complete (the text from its start on is dropped).
  Step push(int32_t token, const std::string& piece, Sink sink, void* user);
  // Generation ended for another reason: every held token is released.
  Step flush(Sink sink, void* user);
  // Bytes released by the stop strings but held for a character that never
  // completed (the text ended inside it): they are the text's last bytes.
  // Called once the generation has ended; empties the buffer.
  std::string_view take_rest();

  // Bytes held now, by the stop strings and for a character (for tests).
  size_t held_bytes() const { return stops_.held_bytes() + partial_.size(); }

 private:
  static bool relay(void* self, int32_t token, const std::string& piece);

  StopStrings stops_;
  std::string partial_;  // released by the stop strings, not yet a whole character
  std::string out_;      // what the sink receives (reused)
  std::string rest_;     // take_rest()'s bytes
  bool whole_ = true;
  Sink sink_ = nullptr;  // the current push/flush's
  void* user_ = nullptr;
};

// Bytes of `text` up to the end of its last complete UTF-8 character (a
// trailing lead byte with too few continuation bytes is held back).
size_t complete_utf8_prefix(std::string_view text);

}  // namespace ember

// Stop strings for generation: the generated text is held back while it
// could still be the start of a stop string, so that a stop string split
// across tokens is caught and neither it nor anything after it is ever
// printed (docs/decisions.md "Sessions: multi-turn, stop strings, saved
// state"). Works a token at a time: a token is released to the sink, with
// its whole piece, once none of its bytes can belong to a stop string; the
// token in which a stop string begins is released with the bytes before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember {

class StopStrings {
 public:
  // Called with each released token and the bytes it prints. Returns true to
  // stop (the caller's callback asked to).
  using Sink = bool (*)(void* user, int32_t token, const std::string& piece);
  enum class Step { Go, Matched, SinkStopped };

  // `stops`: the strings (none empty; the caller checks). No stops: every
  // token is released at once, as if there were no filter.
  void set(std::vector<std::string> stops);
  bool empty() const { return stops_.empty(); }
  // Forgets any held text (a new generation starts).
  void clear();

  // Adds the next token and its piece; releases what is now decided.
  // Matched: a stop string is complete (the text from its start on is
  // dropped, the tokens before it released). SinkStopped: the sink asked to
  // stop.
  Step push(int32_t token, const std::string& piece, Sink sink, void* user);
  // Generation ended for another reason: releases every held token as it is.
  Step flush(Sink sink, void* user);

  // Bytes held back now (for tests).
  size_t held_bytes() const { return text_.size(); }

 private:
  struct Held {
    int32_t token;
    size_t end;  // end of its piece in text_
  };
  // Releases held tokens whose pieces end at or before `cut` (and, when
  // `partial`, the one that straddles it, with its bytes before `cut`).
  Step release(size_t cut, bool partial, Sink sink, void* user);

  std::vector<std::string> stops_;
  size_t longest_ = 0;
  std::string text_;          // the held tokens' pieces, in order
  std::vector<Held> held_;
  std::string piece_;         // the piece passed to the sink (reused)
};

}  // namespace ember

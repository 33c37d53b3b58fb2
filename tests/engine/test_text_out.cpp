// The generator's text cutter (engine/text_out.h): stop strings, then whole
// UTF-8 characters; what is held back and what each token releases.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "engine/text_out.h"

namespace ember {
namespace {

// Pushes pieces through a TextOut; the text released after each, and
// whether a stop string ended it.
struct Streamed {
  std::vector<std::string> after;
  std::string all;
  bool stopped = false;
};

Streamed stream_pieces(const std::vector<std::string>& stop, const std::vector<std::string>& pieces, bool finish,
                       bool whole = true) {
  TextOut t;
  t.start(stop, whole);
  Streamed r;
  auto sink = [](void* user, int32_t, std::string_view text) {
    static_cast<Streamed*>(user)->all.append(text);
    return false;
  };
  for (const auto& p : pieces) {
    r.stopped = t.push(0, p, sink, &r) == TextOut::Step::Matched;
    if (r.stopped) {
      r.all.append(t.take_rest());
      r.after.push_back(r.all);
      return r;
    }
    r.after.push_back(r.all);
  }
  if (finish) {
    t.flush(sink, &r);
    r.all.append(t.take_rest());
  }
  return r;
}

}  // namespace

TEST_CASE("text out: stop strings and UTF-8 hold back only what they must") {
  const std::vector<std::string> stop = {"END", "\n\n"};
  Streamed r = stream_pieces(stop, {"hello", " E", "N", "d"}, false);
  CHECK(r.after == std::vector<std::string>{"hello", "hello", "hello", "hello ENd"});  // "E", "EN" may begin "END"
  CHECK_FALSE(r.stopped);
  // Released by whole tokens: "a\n" waits, as "\n" may begin "\n\n"; the
  // token where the stop string begins goes with the bytes before it.
  r = stream_pieces(stop, {"a\n", "\nb"}, false);
  CHECK(r.after[0] == "");
  CHECK(r.stopped);
  CHECK(r.all == "a");
  r = stream_pieces(stop, {"hi E", "ND there"}, false);
  CHECK(r.stopped);
  CHECK(r.all == "hi ");
  // Held text is passed on when generation ends another way.
  r = stream_pieces(stop, {"so E"}, true);
  CHECK(r.all == "so E");
  // Half a UTF-8 character waits for the rest; at the end it goes as it is.
  r = stream_pieces({}, {"caf\xC3", "\xA9!"}, false);
  CHECK(r.after == std::vector<std::string>{"caf", "caf\xC3\xA9!"});
  r = stream_pieces({}, {"\xE2\x82"}, false);
  CHECK(r.all.empty());
  r = stream_pieces({}, {"\xE2\x82"}, true);
  CHECK(r.all == "\xE2\x82");
  // A stop string after half a character: the bytes before it still go.
  r = stream_pieces(stop, {"x\xC3", "END"}, false);
  CHECK(r.stopped);
  CHECK(r.all == "x\xC3");
  // Without whole characters each piece goes as it is (ember_generate).
  r = stream_pieces({}, {"caf\xC3", "\xA9!"}, false, /*whole=*/false);
  CHECK(r.after == std::vector<std::string>{"caf\xC3", "caf\xC3\xA9!"});
  CHECK(complete_utf8_prefix("ab\xF0\x9F\x98") == 2);
  CHECK(complete_utf8_prefix("ab\xF0\x9F\x98\x80") == 6);
  CHECK(complete_utf8_prefix("") == 0);
}

}  // namespace ember

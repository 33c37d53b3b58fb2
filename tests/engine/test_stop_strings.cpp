// The stop-string filter alone (engine/stop_strings.h): what is held back,
// what is released with which token, and where a match cuts the text.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/stop_strings.h"

namespace ember {
namespace {

struct Out {
  std::vector<std::pair<int32_t, std::string>> got;
  int stop_after = -1;  // the sink asks to stop after this many tokens
  static bool sink(void* user, int32_t token, const std::string& piece) {
    Out* o = static_cast<Out*>(user);
    o->got.emplace_back(token, piece);
    return o->stop_after >= 0 && static_cast<int>(o->got.size()) >= o->stop_after;
  }
  std::string text() const {
    std::string t;
    for (const auto& g : got) t += g.second;
    return t;
  }
};

// Pushes pieces (token ids 0, 1, ...) until the filter stops; flushes when
// it did not. Returns the last step.
StopStrings::Step run(StopStrings& f, const std::vector<std::string>& pieces, Out* out, bool flush = true) {
  StopStrings::Step step = StopStrings::Step::Go;
  for (size_t i = 0; i < pieces.size() && step == StopStrings::Step::Go; ++i) {
    step = f.push(static_cast<int32_t>(i), pieces[i], &Out::sink, out);
  }
  if (step == StopStrings::Step::Go && flush) step = f.flush(&Out::sink, out);
  return step;
}

}  // namespace

TEST_SUITE("generate") {

TEST_CASE("stop strings: a match across tokens cuts the text where it begins") {
  StopStrings f;
  f.set({"STOP"});
  Out out;
  CHECK(f.push(0, "Hel", &Out::sink, &out) == StopStrings::Step::Go);
  CHECK(out.text() == "Hel");
  // "lo S": the S could begin STOP, so the whole token is held.
  CHECK(f.push(1, "lo S", &Out::sink, &out) == StopStrings::Step::Go);
  CHECK(out.got.size() == 1);
  CHECK(f.held_bytes() == 4);
  CHECK(f.push(2, "TO", &Out::sink, &out) == StopStrings::Step::Go);
  CHECK(out.got.size() == 1);
  CHECK(f.push(3, "P and more", &Out::sink, &out) == StopStrings::Step::Matched);
  // Token 1 is passed with its bytes before the stop string; 2 and 3 never.
  REQUIRE(out.got.size() == 2);
  CHECK(out.got[1] == std::make_pair(int32_t{1}, std::string("lo ")));
  CHECK(out.text() == "Hello ");
  CHECK(f.held_bytes() == 0);
}

TEST_CASE("stop strings: a false start is released whole, token by token") {
  StopStrings f;
  f.set({"STOP"});
  Out out;
  CHECK(run(f, {"a ST", "AR", "T!"}, &out) == StopStrings::Step::Go);
  REQUIRE(out.got.size() == 3);
  CHECK(out.got[0].second == "a ST");
  CHECK(out.got[1].second == "AR");
  CHECK(out.got[2].second == "T!");
}

TEST_CASE("stop strings: held text is flushed at the end when no match came") {
  StopStrings f;
  f.set({"</s>"});
  Out out;
  CHECK(f.push(0, "end <", &Out::sink, &out) == StopStrings::Step::Go);
  CHECK(f.push(1, "/", &Out::sink, &out) == StopStrings::Step::Go);
  CHECK(out.got.empty());
  CHECK(f.flush(&Out::sink, &out) == StopStrings::Step::Go);
  REQUIRE(out.got.size() == 2);
  CHECK(out.text() == "end </");
}

TEST_CASE("stop strings: the earliest of several wins, overlaps are found") {
  StopStrings f;
  f.set({"cd", "bc"});
  Out out;
  CHECK(run(f, {"ab", "cde"}, &out) == StopStrings::Step::Matched);
  CHECK(out.text() == "a");

  f.set({"aab"});
  Out out2;
  CHECK(run(f, {"a", "a", "a", "b", "x"}, &out2) == StopStrings::Step::Matched);
  // "aaab": the match starts at byte 1, the end of token 0.
  REQUIRE(out2.got.size() == 1);
  CHECK(out2.text() == "a");

  // A stop string inside one token.
  f.set({"\n\n"});
  Out out3;
  CHECK(run(f, {"one", ".\n\nTwo"}, &out3) == StopStrings::Step::Matched);
  CHECK(out3.text() == "one.");
}

TEST_CASE("stop strings: empty pieces keep their place, no stops pass everything") {
  StopStrings f;
  f.set({"xyz"});
  Out out;
  CHECK(run(f, {"a", "x", "", "y", "q"}, &out) == StopStrings::Step::Go);
  REQUIRE(out.got.size() == 5);
  CHECK(out.got[2] == std::make_pair(int32_t{2}, std::string()));
  CHECK(out.text() == "axyq");

  StopStrings none;
  Out out2;
  CHECK(run(none, {"S", "T"}, &out2) == StopStrings::Step::Go);
  CHECK(out2.got.size() == 2);
}

TEST_CASE("stop strings: the sink stopping wins") {
  StopStrings f;
  f.set({"STOP"});
  Out out;
  out.stop_after = 1;
  CHECK(run(f, {"S", "x", "y"}, &out) == StopStrings::Step::SinkStopped);
  CHECK(out.got.size() == 1);
  CHECK(out.text() == "S");
}

}  // TEST_SUITE
}  // namespace ember

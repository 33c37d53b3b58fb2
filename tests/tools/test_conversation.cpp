// The chat loop's helper (tools/ember/conversation.h) on stories260K: each
// turn reuses what the session holds, prefills only the rest, and replies
// exactly as a fresh session given the same rendering would.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"
#include "tools/ember/conversation.h"

namespace {

using ember::cli::Conversation;
using ember::cli::TurnOptions;
using ember::cli::TurnStats;

struct Chat {
  ember_session* s = nullptr;
  Conversation* c = nullptr;
  std::vector<float> logits;
  Chat(ember_model* m, int32_t context) {
    ember_session_options so;
    ember_session_options_default(&so);
    so.context_length = context;
    so.n_threads = 1;
    REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
    c = new Conversation(m, s);
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
    logits.assign(static_cast<size_t>(info.vocab_size), 0.0f);
  }
  ~Chat() {
    delete c;
    ember_session_free(s);
  }
  TurnStats turn(const std::string& rendered, std::vector<std::string> stops = {}, int32_t max_new = 12) {
    TurnOptions o;
    ember_generate_options_default(&o.generate);
    o.generate.max_new_tokens = max_new;
    o.generate.prompt_logits = logits.data();
    o.stop_strings = std::move(stops);
    TurnStats st;
    std::string streamed;
    auto cb = [](void* u, int32_t, const char* p, size_t n) {
      static_cast<std::string*>(u)->append(p, n);
      return 0;
    };
    REQUIRE_MESSAGE(c->turn(rendered, o, cb, &streamed, &st) == EMBER_OK, ember_last_error());
    CHECK(streamed == st.reply);
    return st;
  }
};

size_t count_tokens(ember_model* m, const std::string& text) {
  size_t n = 0;
  ember_tokenize(m, text.data(), text.size(), 1, nullptr, 0, &n);
  return n;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("conversation: each turn prefills only what the session lacks and replies as a fresh session would") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  {
    Chat chat(m, 256);
    const std::string r1 = "Once upon a time";
    const TurnStats t1 = chat.turn(r1);
    CHECK(t1.reused_tokens == 0);
    CHECK(t1.prefilled_tokens == static_cast<int32_t>(count_tokens(m, r1)));
    CHECK(!t1.reply.empty());
    CHECK(t1.first_token_ms > 0);
    if (t1.generated_tokens > 1) CHECK(t1.tokens_per_s > 0);

    // Turn 2: the whole conversation rendered again, plus the new text.
    const std::string r2 = r1 + t1.reply + " Then the dog said";
    const TurnStats t2 = chat.turn(r2);
    const int32_t total2 = static_cast<int32_t>(count_tokens(m, r2));
    CHECK(t2.reused_tokens + t2.prefilled_tokens == total2);
    CHECK(t2.reused_tokens >= static_cast<int32_t>(count_tokens(m, r1)));
    CHECK(t2.prefilled_tokens < total2 / 2);
    Chat fresh(m, 256);
    const TurnStats f2 = fresh.turn(r2);
    CHECK(f2.reused_tokens == 0);
    CHECK(f2.reply == t2.reply);
    CHECK(same_bits(fresh.logits, chat.logits));

    // An edited history: the session is cut where the renderings differ.
    const std::string r3 = "Once upon a hill, a cat";
    const TurnStats t3 = chat.turn(r3);
    CHECK(t3.reused_tokens < static_cast<int32_t>(count_tokens(m, "Once upon a")) + 1);
    Chat fresh3(m, 256);
    const TurnStats f3 = fresh3.turn(r3);
    CHECK(f3.reply == t3.reply);
    CHECK(same_bits(fresh3.logits, chat.logits));
    CHECK(t3.position == f3.position);

    // The same rendering again: one token re-runs, for the logits.
    const TurnStats again = chat.turn(r3, {}, 0);
    CHECK(again.prefilled_tokens >= 1);

    // Stop strings pass through; the reply stops before one.
    if (t2.reply.size() > 6) {
      Chat s(m, 256);
      const std::string stop = t2.reply.substr(3, 3);
      (void)s.turn(r1);
      const TurnStats st = s.turn(r2, {stop});
      CHECK(st.reply == t2.reply.substr(0, t2.reply.find(stop)));
      CHECK(st.stop_reason == EMBER_STOP_STRING);
    }
  }
  {
    // A conversation longer than the context is refused, saying so.
    Chat small(m, 16);
    TurnOptions o;
    ember_generate_options_default(&o.generate);
    TurnStats st;
    const std::string longer = "Once upon a time there was a little girl named Lily who liked to play outside";
    CHECK(small.c->turn(longer, o, nullptr, nullptr, &st) == EMBER_ERR_CONTEXT_FULL);
    CHECK(std::string(ember_last_error()).find("context of 16") != std::string::npos);
  }
  ember_model_free(m);
}

}  // TEST_SUITE

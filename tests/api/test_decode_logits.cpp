// ember_session_decode_logits: the logits of each of a call's last tokens
// (what `ember perplexity` scores text with), bitwise those of decoding the
// tokens one at a time, on the real stories260K; its bounds refused by name.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"

TEST_CASE("decode_logits: every row bitwise as decoding alone, in steps and with a prefix, bounds refused") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
  const size_t vocab = static_cast<size_t>(info.vocab_size);
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 64;
  so.n_threads = 2;
  so.max_batch = 8;
  so.max_draft = 6;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model, &so, &s) == EMBER_OK);
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 290, 314, 280, 266, 400, 285, 300, 259, 350, 270, 330, 265};

  // One at a time: every position's logits.
  std::vector<float> alone(tokens.size() * vocab);
  for (size_t i = 0; i < tokens.size(); ++i) {
    REQUIRE(ember_session_decode(s, tokens[i], alone.data() + i * vocab) == EMBER_OK);
  }
  // A prefix as prefill, then calls of up to 7 rows (1 + max_draft), each
  // returning all of its rows; and a call returning only its last 3.
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  REQUIRE(ember_session_prefill(s, tokens.data(), 3, nullptr) == EMBER_OK);
  std::vector<float> rows(7 * vocab);
  size_t at = 3;
  for (int32_t g : {7, 2}) {
    REQUIRE(ember_session_decode_logits(s, tokens.data() + at, static_cast<size_t>(g), rows.data(), g) == EMBER_OK);
    for (int32_t r = 0; r < g; ++r) {
      CAPTURE(at + r);
      CHECK(std::memcmp(rows.data() + r * vocab, alone.data() + (at + r) * vocab, vocab * sizeof(float)) == 0);
    }
    at += static_cast<size_t>(g);
  }
  REQUIRE(ember_session_decode_logits(s, tokens.data() + at, 5, rows.data(), 3) == EMBER_OK);
  for (int32_t r = 0; r < 3; ++r) {
    CHECK(std::memcmp(rows.data() + r * vocab, alone.data() + (at + 2 + r) * vocab, vocab * sizeof(float)) == 0);
  }
  CHECK(ember_session_position(s) == static_cast<int32_t>(tokens.size()));  // 3 + 7 + 2 + 5

  // Bounds: more rows than 1 + max_draft or than the tokens, none, NULLs.
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  CHECK(ember_session_decode_logits(s, tokens.data(), 8, rows.data(), 8) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("n_logits = 8") != std::string::npos);
  CHECK(ember_session_decode_logits(s, tokens.data(), 2, rows.data(), 3) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_logits(s, tokens.data(), 2, rows.data(), 0) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_logits(s, tokens.data(), 0, rows.data(), 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_logits(s, nullptr, 2, rows.data(), 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_logits(s, tokens.data(), 2, nullptr, 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_logits(nullptr, tokens.data(), 2, rows.data(), 1) == EMBER_ERR_INVALID_ARGUMENT);
  const int32_t bad = info.vocab_size;
  CHECK(ember_session_decode_logits(s, &bad, 1, rows.data(), 1) == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  CHECK(ember_session_position(s) == 0);  // nothing ran
  ember_session_free(s);
  ember_model_free(model);
}

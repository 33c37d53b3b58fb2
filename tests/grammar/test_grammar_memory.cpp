// A compiled grammar's memory (ember_grammar_memory) and its cap
// (ember_grammar_set_max_bytes), which `ember serve`'s grammar cache and
// plan rely on: what it holds grows as generations use it and never passes
// the cap; a cap below what it already holds is refused; a cap too small for
// the states a text needs ends that generation with an error, not a crash.
#include <doctest/doctest.h>

#include <string>

#include "ember.h"
#include "model/stories_fixture.h"

namespace {

const char kSchema[] =
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer"},)"
    R"("tags":{"type":"array","items":{"enum":["a","bb","ccc"]}},"ok":{"type":"boolean"}},)"
    R"("required":["name","age"]})";

// One generation at temperature 1 under `g`; its status (the call's, or
// the stop's when a step failed).
ember_status run(ember_model* m, const ember_grammar* g, uint64_t seed) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 256;
  so.n_threads = 1;
  so.backend = EMBER_BACKEND_CPU;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  ember_generate_options o;
  ember_generate_options_default(&o);
  o.max_new_tokens = 120;
  o.temperature = 1.0f;
  o.seed = seed;
  o.grammar = g;
  ember_status st = ember_generate(s, "Once", &o, nullptr, nullptr);
  if (st == EMBER_OK) {
    ember_generate_stats gs;
    gs.struct_size = sizeof gs;
    REQUIRE(ember_generate_last_stats(s, &gs) == EMBER_OK);
    if (gs.stop_reason == EMBER_STOP_ERROR) st = EMBER_ERR_TOO_COMPLEX;
  }
  ember_session_free(s);
  return st;
}

}  // namespace

TEST_CASE("grammar memory: counted as it grows, capped, and a cap below what it holds refused") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  CHECK(ember_grammar_memory(nullptr) == 0);
  CHECK(ember_grammar_set_max_bytes(nullptr, 1) == EMBER_ERR_INVALID_ARGUMENT);

  // Uncapped: what it holds grows with the states the generations reach.
  ember_grammar* free_g = nullptr;
  REQUIRE(ember_grammar_create_json_schema(m, kSchema, &free_g) == EMBER_OK);
  const uint64_t compiled = ember_grammar_memory(free_g);
  CHECK(compiled > 512 * sizeof(std::string));  // at least its copy of the vocabulary
  for (uint64_t seed = 1; seed <= 4; ++seed) CHECK(run(m, free_g, seed) == EMBER_OK);
  const uint64_t used = ember_grammar_memory(free_g);
  CHECK(used > compiled);
  // A cap below what it holds without masks: refused, the grammar as it was.
  CHECK(ember_grammar_set_max_bytes(free_g, compiled / 2) == EMBER_ERR_NO_MEMORY);
  CHECK(std::string(ember_last_error()).find("max_bytes") != std::string::npos);
  CHECK(run(m, free_g, 5) == EMBER_OK);

  // Capped with room (twice what the same runs took): the same runs pass,
  // within the cap.
  ember_grammar* roomy = nullptr;
  REQUIRE(ember_grammar_create_json_schema(m, kSchema, &roomy) == EMBER_OK);
  REQUIRE(ember_grammar_set_max_bytes(roomy, 2 * used) == EMBER_OK);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    CHECK(run(m, roomy, seed) == EMBER_OK);
    CHECK(ember_grammar_memory(roomy) <= 2 * used);
  }

  // A cap a little over what it holds compiled: the states a text needs do
  // not fit; generations end with an error naming the cap, and what it
  // holds stays within it.
  ember_grammar* tight = nullptr;
  REQUIRE(ember_grammar_create_json_schema(m, kSchema, &tight) == EMBER_OK);
  const uint64_t cap = ember_grammar_memory(tight) + 2048;
  REQUIRE(ember_grammar_set_max_bytes(tight, cap) == EMBER_OK);
  int failed = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const ember_status st = run(m, tight, seed);
    CHECK((st == EMBER_OK || st == EMBER_ERR_TOO_COMPLEX));
    failed += st != EMBER_OK;
    CHECK(ember_grammar_memory(tight) <= cap);
  }
  CHECK(failed > 0);
  // Lifting the cap (0) lets the same runs through.
  REQUIRE(ember_grammar_set_max_bytes(tight, 0) == EMBER_OK);
  CHECK(run(m, tight, 1) == EMBER_OK);

  ember_grammar_free(tight);
  ember_grammar_free(roomy);
  ember_grammar_free(free_g);
  ember_model_free(m);
}

// What the serve tool-call tests share: a tiny random-weight model and a
// constrained generation on it (tests/serve/test_serve_tools*.cpp).
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "ember.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace ember::serve::test {

// Generates from a few tokens with `g` as the constraint, at temperature 1.
inline std::string constrained(ember_model* m, const ember_grammar* g, uint64_t seed) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 512;
  so.n_threads = 1;
  so.backend = EMBER_BACKEND_CPU;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  const int32_t prompt[] = {1, 40, 41, 42};
  ember_generate_options o;
  ember_generate_options_default(&o);
  o.max_new_tokens = 400;
  o.prompt_tokens = prompt;
  o.n_prompt_tokens = 4;
  o.temperature = 1.0f;
  o.seed = seed;
  o.grammar = g;
  std::string text;
  REQUIRE_MESSAGE(ember_generate(s, nullptr, &o,
                                 [](void* u, int32_t, const char* piece, size_t len) {
                                   static_cast<std::string*>(u)->append(piece, len);
                                   return 0;
                                 },
                                 &text) == EMBER_OK,
                  ember_last_error());
  ember_session_free(s);
  return text;
}

// A tiny llama3-family model with random weights (its built-in template: llama3).
inline ember_model* random_model() {
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  shape.arch = "llama3";
  auto made = ember::make_synthetic(shape, ember::DType::F32, 9, "");
  REQUIRE(made.is_ok());
  const std::string path = ember::test::temp_dir("serve-tools") + "/llama3.ember";
  REQUIRE(ember::write_model(made.value()->spec, path).is_ok());
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  return m;
}

}  // namespace ember::serve::test

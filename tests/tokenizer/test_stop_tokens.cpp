// Generation stops on any end-of-generation token, not only eos: a tiny
// synthetic model is run greedily, then written again with its second
// generated token declared the end of turn (tokenizer.eot_id): the same run
// must now stop right there.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "ember.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

struct Run {
  std::vector<int32_t> tokens;
  int32_t stop = EMBER_STOP_NONE;
};

Run greedy(const std::string& path) {
  Run r;
  ember_model* model = nullptr;
  REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK, ember_last_error());
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 32;
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(model, &so, &s) == EMBER_OK, ember_last_error());
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = 8;
  struct Sink {
    static int add(void* user, int32_t token, const char*, size_t) {
      static_cast<std::vector<int32_t>*>(user)->push_back(token);
      return 0;
    }
  };
  REQUIRE_MESSAGE(ember_generate(s, "hello", &g, &Sink::add, &r.tokens) == EMBER_OK, ember_last_error());
  ember_generate_stats stats;
  stats.struct_size = sizeof stats;
  REQUIRE(ember_generate_last_stats(s, &stats) == EMBER_OK);
  r.stop = stats.stop_reason;
  ember_session_free(s);
  ember_model_free(model);
  return r;
}

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("generation stops on an end-of-turn token from the metadata") {
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  auto model = make_synthetic(shape, DType::F32, 11, "");
  REQUIRE(model.is_ok());
  const std::string dir = test::temp_dir("stop_tokens");
  const std::string a = dir + "/a.ember";
  const std::string b = dir + "/b.ember";
  REQUIRE(write_model(model.value()->spec, a).is_ok());
  const Run first = greedy(a);
  REQUIRE(first.tokens.size() >= 2);
  CHECK(first.stop == EMBER_STOP_MAX_TOKENS);

  model.value()->spec.vocab.eot_id = first.tokens[1];
  REQUIRE(write_model(model.value()->spec, b).is_ok());
  const Run second = greedy(b);
  CHECK(second.tokens == std::vector<int32_t>{first.tokens[0]});
  CHECK(second.stop == EMBER_STOP_END);

  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // TEST_SUITE
}  // namespace ember

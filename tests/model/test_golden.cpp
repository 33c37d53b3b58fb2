// stories260K through the whole path — convert, map, verify, run — against
// the reference llama2.c outputs in ../shared/golden, and against the
// independent reference forward pass for prompts that have no golden file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"
#include "reference/llama2c_reference.h"

namespace {

using ember::test::read_text_file;
using ember::test::stories_model;
using ember::test::test_data;

std::vector<double> read_numbers(const std::string& path) {
  std::istringstream in(read_text_file(path));
  std::vector<double> v;
  double x;
  while (in >> x) v.push_back(x);
  return v;
}

// Runs a shell command and returns its stdout.
std::string run_capture(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

struct ApiModel {
  ember_model* model = nullptr;
  ember_session* session = nullptr;
  explicit ApiModel(const std::string& path, int32_t ctx = 512) {
    REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
    ember_session_options so;
    ember_session_options_default(&so);
    so.context_length = ctx;
    REQUIRE(ember_session_create(model, &so, &session) == EMBER_OK);
  }
  ~ApiModel() {
    ember_session_free(session);
    ember_model_free(model);
  }
  std::vector<int32_t> tokenize(const std::string& text) {
    std::vector<int32_t> ids(text.size() + 8);
    size_t n = 0;
    REQUIRE(ember_tokenize(model, text.data(), text.size(), 1, ids.data(), ids.size(), &n) == EMBER_OK);
    ids.resize(n);
    return ids;
  }
};

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace

TEST_SUITE("golden") {

TEST_CASE("stories260K reproduces the reference text and logits through the CLI") {
  const std::string golden = test_data("golden/once-upon-a-time.txt");
  const std::string logits_path = test_data("golden/once-upon-a-time.logits.txt");
  const std::string ids_path = test_data("golden/once-upon-a-time.ids.txt");
  if (golden.empty() || logits_path.empty() || ids_path.empty()) return;
  const std::vector<double> ids = read_numbers(ids_path);
  const std::vector<double> expected_logits = read_numbers(logits_path);
  REQUIRE(ids.size() == 200);
  REQUIRE(expected_logits.size() == 512);
  for (const char* source : {"llama2c", "gguf"}) {
    CAPTURE(source);
    const std::string model = stories_model(source);
    if (model.empty()) return;
    const std::string dump = model + ".logits.txt";
    // 200 positions: BOS + 4 prompt tokens + 196 generated (the last one is
    // printed but never fed).
    int rc = 0;
    const std::string out = run_capture(std::string(EMBER_CLI_PATH) + " run -m " + model +
                                            " -p 'Once upon a time' -n 196 --ctx 256 --dump-logits " + dump +
                                            " 2>/dev/null",
                                        &rc);
    CHECK(rc == 0);
    CHECK(out == read_text_file(golden));
    const std::vector<double> got = read_numbers(dump);
    REQUIRE(got.size() == expected_logits.size());
    double max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::fabs(got[i] - expected_logits[i]));
    CHECK(max_diff < 1e-4);
  }
}

TEST_CASE("stories260K greedy ids match the reference ids through the C API") {
  const std::string ids_path = test_data("golden/once-upon-a-time.ids.txt");
  if (ids_path.empty()) return;
  const std::vector<double> golden = read_numbers(ids_path);
  for (const char* source : {"llama2c", "gguf"}) {
    CAPTURE(source);
    const std::string path = stories_model(source);
    if (path.empty()) return;
    ApiModel m(path, 256);
    std::vector<int32_t> ids = m.tokenize("Once upon a time");
    REQUIRE(ids.size() == 5);
    for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == static_cast<int32_t>(golden[i]));
    std::vector<float> logits(512);
    REQUIRE(ember_session_prefill(m.session, ids.data(), ids.size(), logits.data()) == EMBER_OK);
    for (size_t pos = ids.size(); pos < golden.size(); ++pos) {
      const int32_t next = argmax(logits);
      REQUIRE(next == static_cast<int32_t>(golden[pos]));
      REQUIRE(ember_session_decode(m.session, next, logits.data()) == EMBER_OK);
    }
    CHECK(ember_session_position(m.session) == 200);
  }
}

TEST_CASE("any prompt: ember agrees with the independent reference forward pass") {
  const std::string bin = test_data("models/stories260K.bin");
  if (bin.empty()) return;
  const char* prompts[] = {"Lily and Tom went to the", "The dog", "A big red ball rolled", "Hello", "Zyx 123 ü!"};
  for (const char* source : {"llama2c", "gguf"}) {
    const std::string path = stories_model(source);
    if (path.empty()) return;
    for (const char* prompt : prompts) {
      CAPTURE(source);
      CAPTURE(prompt);
      ember::test::ReferenceLlama ref;
      REQUIRE(ref.load(bin));
      ApiModel m(path, 256);
      const std::vector<int32_t> ids = m.tokenize(prompt);
      std::vector<float> logits(512), ref_logits;
      // Prompt as one batch in ember, token by token in the reference.
      REQUIRE(ember_session_prefill(m.session, ids.data(), ids.size(), logits.data()) == EMBER_OK);
      for (size_t i = 0; i < ids.size(); ++i) ref_logits = ref.forward(ids[i], static_cast<int32_t>(i));
      int32_t pos = static_cast<int32_t>(ids.size());
      double max_diff = 0;
      for (int step = 0; step < 80; ++step) {
        for (size_t i = 0; i < logits.size(); ++i) {
          max_diff = std::max(max_diff, static_cast<double>(std::fabs(logits[i] - ref_logits[i])));
        }
        const int32_t next = argmax(ref_logits);
        REQUIRE(argmax(logits) == next);
        ref_logits = ref.forward(next, pos++);
        REQUIRE(ember_session_decode(m.session, next, logits.data()) == EMBER_OK);
      }
      CHECK(max_diff < 1e-4);
    }
  }
}

TEST_CASE("prefill as a batch equals prefill token by token") {
  const std::string path = stories_model("llama2c");
  if (path.empty()) return;
  ApiModel batch(path, 128), single(path, 128);
  const std::vector<int32_t> ids = batch.tokenize("Once upon a time, there was a little dog named Max who liked to run");
  std::vector<float> a(512), b(512);
  REQUIRE(ember_session_prefill(batch.session, ids.data(), ids.size(), a.data()) == EMBER_OK);
  for (int32_t id : ids) REQUIRE(ember_session_decode(single.session, id, b.data()) == EMBER_OK);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
}

}  // TEST_SUITE

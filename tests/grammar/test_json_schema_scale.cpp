// JSON Schemas of a size that used to reach the matcher's limits: an enum of
// hundreds of strings, objects of tens of optional properties, thousands of
// properties. Checked through the runtime's path (json_schema_to_gbnf,
// parse_gbnf, CompiledGrammar on the stories vocabulary): valid instances
// accepted, invalid ones rejected, the live parse stacks small (the tests
// run under a low MatcherLimits::max_stacks), compile times reported; and a
// hostile schema refused quickly as "too complex".
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "model/model.h"
#include "model/stories_fixture.h"

namespace {

using json = nlohmann::ordered_json;
using ember::CompiledGrammar;

struct Stories {
  std::unique_ptr<ember::Model> model;
  Stories() {
    const std::string path = ember::test::stories_model("llama2c");
    REQUIRE(!path.empty());
    auto m = ember::Model::open(path, ember::Model::Options{});
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    model = std::move(m).value();
  }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Schema text to compiled grammar, as ember_grammar_create_json_schema does.
ember::Result<std::shared_ptr<CompiledGrammar>> compile(const std::string& schema, const ember::Tokenizer& tok,
                                                        const ember::MatcherLimits& limits = {}) {
  EMBER_ASSIGN_OR_RETURN(std::string gbnf, ember::json_schema_to_gbnf(schema));
  EMBER_ASSIGN_OR_RETURN(ember::Grammar g, ember::parse_gbnf(gbnf));
  return CompiledGrammar::create(std::move(g), tok, limits);
}

// Whether the grammar takes `text` whole; a matcher error fails the test.
bool matches(CompiledGrammar& g, const std::string& text) {
  auto s = g.advance_text(g.initial_state(), text);
  REQUIRE_MESSAGE(s.is_ok(), s.status().message());
  return g.complete(s.value());
}

// Every state's token mask along `text`, so every transition the
// vocabulary can take from there is built under the limits.
void masks_along(CompiledGrammar& g, const std::string& text, int32_t n_vocab) {
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  uint32_t state = g.initial_state();
  for (size_t i = 0; i <= text.size() && state != CompiledGrammar::kDead; ++i) {
    auto allowed = g.apply_mask(state, logits.data(), n_vocab);
    REQUIRE_MESSAGE(allowed.is_ok(), allowed.status().message());
    CHECK(allowed.value() > 0);
    if (i == text.size()) break;
    auto next = g.advance_text(state, text.substr(i, 1));
    REQUIRE(next.is_ok());
    state = next.value();
  }
}

}  // namespace

TEST_CASE("json schema scale: an enum of 500 strings compiles, with one stack per continuation") {
  Stories st;
  const ember::Tokenizer& tok = st.model->tokenizer();
  // Values with long shared prefixes and values that are prefixes of others.
  json values = json::array();
  for (int i = 0; i < 500; ++i) {
    const char* kinds[] = {"country-", "currency-", "c", "language_code_"};
    values.push_back(std::string(kinds[i % 4]) + std::to_string(i / 4));
  }
  const std::string schema = json{{"enum", values}}.dump();
  ember::MatcherLimits tight;
  tight.max_stacks = 16;  // a flat enum needs 500 at the first character; the trie at most 12
  const auto t0 = std::chrono::steady_clock::now();
  auto made = compile(schema, tok, tight);
  const double compile_ms = ms_since(t0);
  REQUIRE_MESSAGE(made.is_ok(), made.status().message());
  CompiledGrammar& g = *made.value();
  for (const json& v : values) CHECK_MESSAGE(matches(g, v.dump()), v.dump());
  for (const char* bad : {R"("country-125")", R"("country-")", R"("c")", R"("c1000")", R"("currency-1 ")",
                          "country-1", R"("Country-1")", R"("language_code_")", R"("")", "12", "null"}) {
    CHECK_MESSAGE(!matches(g, bad), bad);
  }
  masks_along(g, R"("language_code_124")", tok.size());
  // The same values as flat alternatives: 500 stacks at the first character.
  std::string flat_gbnf = "root ::= ";
  for (const json& v : values) flat_gbnf += (flat_gbnf.size() > 9 ? " | \"\\\"" : "\"\\\"") + v.get<std::string>() + "\\\"\"";
  auto flat_grammar = ember::parse_gbnf(flat_gbnf);
  REQUIRE_MESSAGE(flat_grammar.is_ok(), flat_grammar.status().message());
  auto flat_made = CompiledGrammar::create(std::move(flat_grammar).value(), tok, tight);
  REQUIRE_FALSE(flat_made.is_ok());
  CHECK(flat_made.status().code() == EMBER_ERR_TOO_COMPLEX);
  const auto t1 = std::chrono::steady_clock::now();
  auto roomy = compile(schema, tok);
  REQUIRE(roomy.is_ok());
  for (const json& v : values) CHECK(matches(*roomy.value(), v.dump()));
  MESSAGE("500-value enum: compiled in " << compile_ms << " ms (max_stacks 16), checked with default limits in "
                                         << ms_since(t1) << " ms; " << g.stats().states << " states");
}

namespace {

// An object of n properties p0..p(n-1), alternately integer and string;
// every `required_every`-th one required (0: none).
json object_schema(int n, int required_every) {
  json props = json::object(), required = json::array();
  for (int i = 0; i < n; ++i) {
    const std::string name = "p" + std::to_string(i);
    props[name] = json{{"type", i % 2 ? "string" : "integer"}};
    if (required_every && i % required_every == 0) required.push_back(name);
  }
  json s = {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = required;
  return s;
}

// The instance with the properties `keep` says, in declaration order.
json instance(int n, const std::vector<bool>& keep) {
  json v = json::object();
  for (int i = 0; i < n; ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    const std::string name = "p" + std::to_string(i);
    if (i % 2) {
      v[name] = "s" + std::to_string(i);
    } else {
      v[name] = i;
    }
  }
  return v;
}

}  // namespace

TEST_CASE("json schema scale: 40 optional properties compile, with live stacks linear in them") {
  Stories st;
  const ember::Tokenizer& tok = st.model->tokenizer();
  const int n = 40;
  ember::MatcherLimits tight;
  tight.max_stacks = 48;  // one per property that may come next, and a few
  for (int required_every : {0, 7}) {
    CAPTURE(required_every);
    const std::string schema = object_schema(n, required_every).dump();
    const auto t0 = std::chrono::steady_clock::now();
    auto made = compile(schema, tok, tight);
    const double compile_ms = ms_since(t0);
    REQUIRE_MESSAGE(made.is_ok(), made.status().message());
    CompiledGrammar& g = *made.value();
    auto is_required = [&](int i) { return required_every && i % required_every == 0; };
    std::vector<bool> all(n, true), req(n, false), every3(n, false), last(n, false);
    for (int i = 0; i < n; ++i) {
      req[static_cast<size_t>(i)] = is_required(i);
      every3[static_cast<size_t>(i)] = is_required(i) || i % 3 == 1;
      last[static_cast<size_t>(i)] = is_required(i) || i == n - 1;
    }
    for (const auto& keep : {all, req, every3, last}) {
      const json v = instance(n, keep);
      CHECK_MESSAGE(matches(g, v.dump()), v.dump());
      CHECK_MESSAGE(matches(g, v.dump(2)), v.dump(2));
    }
    masks_along(g, instance(n, every3).dump(1), tok.size());
    // Invalid: out of order, a repeated key, an undeclared key, a wrong
    // type, a trailing comma, a missing value.
    const std::string ok = instance(n, last).dump();
    CHECK_FALSE(matches(g, R"({"p3":"s3","p1":"s1")" + (required_every ? std::string(",\"p0\":0}") : "}")));
    CHECK_FALSE(matches(g, ok.substr(0, ok.size() - 1) + R"(,"p39":"s39"})"));
    CHECK_FALSE(matches(g, ok.substr(0, ok.size() - 1) + R"(,"p40":1})"));
    CHECK_FALSE(matches(g, ok.substr(0, ok.size() - 1) + ",}"));
    CHECK_FALSE(matches(g, R"({"p1":2})"));
    CHECK_FALSE(matches(g, R"({"p0":"zero"})"));
    CHECK_FALSE(matches(g, R"({"p39":})"));
    // Without a required property, or with all of them.
    CHECK(matches(g, "{}") == (required_every == 0));
    CHECK(matches(g, R"({"p39":"x"})") == (required_every == 0));
    MESSAGE(n << " properties, one in " << required_every << " required: compiled in " << compile_ms
              << " ms (max_stacks " << tight.max_stacks << ")");
  }
}

TEST_CASE("json schema scale: compile work is bounded, and a hostile schema is refused quickly as too complex") {
  Stories st;
  const ember::Tokenizer& tok = st.model->tokenizer();
  // 1,000 optional properties: within the default budget.
  {
    const auto t0 = std::chrono::steady_clock::now();
    auto made = compile(object_schema(1000, 0).dump(), tok);
    const double ms = ms_since(t0);
    REQUIRE_MESSAGE(made.is_ok(), made.status().message());
    CHECK(matches(*made.value(), R"({"p0":1,"p999":"x"})"));
    MESSAGE("1,000 optional properties: compiled in " << ms << " ms, " << made.value()->stats().compile_work
                                                       << " units of compile work");
  }
  // 4,000: every comma opens a parse per property left, so a text through
  // them costs the matcher ~n^2/2 closure steps; refused at compile time
  // by max_compile_work, not later mid-text.
  {
    const auto t0 = std::chrono::steady_clock::now();
    auto made = compile(object_schema(4000, 0).dump(), tok);
    const double ms = ms_since(t0);
    REQUIRE_FALSE(made.is_ok());
    CHECK(made.status().code() == EMBER_ERR_TOO_COMPLEX);
    CHECK_MESSAGE(made.status().message().rfind("grammar: too complex: ", 0) == 0, made.status().message());
    CHECK_MESSAGE(made.status().message().find("max_compile_work") != std::string::npos, made.status().message());
    MESSAGE("4,000 optional properties: refused in " << ms << " ms: " << made.status().message());
  }
  // The cost is in runs of optional members: 4,000 properties with every
  // 500th required are eight runs of 500, and compile.
  {
    const auto t0 = std::chrono::steady_clock::now();
    auto made = compile(object_schema(4000, 500).dump(), tok);
    const double ms = ms_since(t0);
    REQUIRE_MESSAGE(made.is_ok(), made.status().message());
    CHECK(matches(*made.value(), R"({"p0":0,"p500":500,"p1000":1000,"p1500":1500,"p2000":2000,"p2001":"x",)"
                                 R"("p2500":2500,"p3000":3000,"p3500":3500})"));
    CHECK_FALSE(matches(*made.value(), R"({"p0":0,"p500":500,"p1000":1000,"p1500":1500,"p3000":3000})"));
    MESSAGE("4,000 properties, every 500th required: compiled in " << ms << " ms, "
            << made.value()->stats().compile_work << " units of compile work");
  }
  // A budget of 10 units refuses even a small grammar; one position wider
  // than max_stacks is refused at compile time, naming its rule.
  ember::MatcherLimits tiny;
  tiny.max_compile_work = 10;
  auto small = compile(object_schema(8, 0).dump(), tok, tiny);
  REQUIRE_FALSE(small.is_ok());
  CHECK(small.status().code() == EMBER_ERR_TOO_COMPLEX);
  ember::MatcherLimits narrow;
  narrow.max_stacks = 16;
  auto wide = compile(object_schema(40, 0).dump(), tok, narrow);
  REQUIRE_FALSE(wide.is_ok());
  CHECK(wide.status().code() == EMBER_ERR_TOO_COMPLEX);
  CHECK_MESSAGE(wide.status().message().find("max_stacks") != std::string::npos, wide.status().message());
  CHECK_MESSAGE(wide.status().message().find("after a character of rule '") != std::string::npos,
                wide.status().message());
}

// The JSON Schema corpus (tests/grammar/schemas/, README there): schemas of
// real-world shape, each with instances a validator (python jsonschema)
// accepts and rejects. Checked here: the share of schemas honoured and
// refused; for each honoured one, the grammar's size and translation time,
// and — through the runtime's GBNF reader and matcher (the path a request
// takes), on the stories vocabulary — every valid instance accepted
// (compact and indented) and every invalid one rejected.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "model/model.h"
#include "model/stories_fixture.h"

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Entry {
  std::string name;
  fs::path dir;
};

std::vector<Entry> corpus() {
  const fs::path dir = fs::path(EMBER_SOURCE_DIR) / "tests" / "grammar" / "schemas";
  std::vector<Entry> out;
  const std::string suffix = ".schema.json";
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back({f.substr(0, f.size() - suffix.size()), dir});
    }
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

ordered_json instances(const Entry& e, const char* kind) {
  return ordered_json::parse(read_file(e.dir / (e.name + "." + kind + ".json")), nullptr, false);
}

// The schemas the corpus expects refused, each for a keyword the grammar
// cannot honour.
const char* const kExpectedRefused[] = {
    "blog_post_unique_tags",       // uniqueItems
    "payment_dependent_required",  // dependentRequired
    "price_multiple_of",           // multipleOf
    "settings_patch_min_properties",  // minProperties
    "shipping_address_if_then",    // if/then/else
    "username_not_reserved",       // not
};

}  // namespace

TEST_CASE("json schema corpus: at least 80% honoured, at most 10% refused, each refusal by name") {
  const std::vector<Entry> all = corpus();
  REQUIRE(all.size() >= 60);
  size_t honoured = 0, refused = 0;
  for (const Entry& e : all) {
    auto r = ember::json_schema_to_gbnf(read_file(e.dir / (e.name + ".schema.json")));
    const bool expect_refused = std::find_if(std::begin(kExpectedRefused), std::end(kExpectedRefused),
                                             [&](const char* n) { return e.name == n; }) != std::end(kExpectedRefused);
    INFO(e.name << ": " << r.status().message());
    if (r.is_ok()) {
      ++honoured;
      CHECK_FALSE(expect_refused);
    } else {
      CHECK(r.status().code() == EMBER_ERR_UNSUPPORTED);
      CHECK(r.status().message().find("schema keyword '") == 0);
      CHECK(expect_refused);
      ++refused;
    }
  }
  MESSAGE("corpus: " << all.size() << " schemas, " << honoured << " honoured, " << refused << " refused");
  CHECK(honoured * 100 >= all.size() * 80);
  CHECK(refused * 100 <= all.size() * 10);
}

// Whether the matcher takes `text` whole: a complete sentence.
bool matches(ember::CompiledGrammar& g, const std::string& text) {
  auto s = g.advance_text(g.initial_state(), text);
  return s.is_ok() && g.complete(s.value());
}

TEST_CASE("json schema corpus: grammars within a size bound, valid instances accepted, invalid ones rejected") {
  const std::string stories = ember::test::stories_model("llama2c");
  REQUIRE(!stories.empty());
  auto model = ember::Model::open(stories, ember::Model::Options{});
  REQUIRE(model.is_ok());
  const std::vector<Entry> all = corpus();
  double total_ms = 0, worst_ms = 0, worst_compile_ms = 0;
  size_t biggest = 0, instances_checked = 0;
  uint64_t most_work = 0;
  std::string worst_name, biggest_name, worst_compile_name, most_work_name;
  for (const Entry& e : all) {
    const std::string schema = read_file(e.dir / (e.name + ".schema.json"));
    const auto t0 = std::chrono::steady_clock::now();
    auto r = ember::json_schema_to_gbnf(schema);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r.is_ok()) continue;
    total_ms += ms;
    if (ms > worst_ms) worst_ms = ms, worst_name = e.name;
    const std::string& gbnf = r.value();
    if (gbnf.size() > biggest) biggest = gbnf.size(), biggest_name = e.name;
    INFO(e.name << "\n" << gbnf);
    // A bound with room: the largest corpus grammar is a few KiB.
    CHECK(gbnf.size() < 32 * 1024);
    const auto t1 = std::chrono::steady_clock::now();
    auto parsed = ember::parse_gbnf(gbnf);
    REQUIRE_MESSAGE(parsed.is_ok(), parsed.status().message());
    auto compiled = ember::CompiledGrammar::create(std::move(parsed).value(), model.value()->tokenizer());
    REQUIRE_MESSAGE(compiled.is_ok(), compiled.status().message());
    const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    if (compile_ms > worst_compile_ms) worst_compile_ms = compile_ms, worst_compile_name = e.name;
    // Far within the compile budget (a schema of real-world shape is not
    // what max_compile_work is for).
    const uint64_t work = compiled.value()->stats().compile_work;
    CHECK(work * 64 < ember::MatcherLimits{}.max_compile_work);
    if (work > most_work) most_work = work, most_work_name = e.name;
    ember::CompiledGrammar& g = *compiled.value();
    const ordered_json valid = instances(e, "valid"), invalid = instances(e, "invalid");
    REQUIRE(valid.is_array());
    REQUIRE(invalid.is_array());
    CHECK(valid.size() >= 2);
    CHECK(invalid.size() >= 2);
    for (const ordered_json& v : valid) {
      CHECK_MESSAGE(matches(g, v.dump()), "valid, compact: " << v.dump());
      CHECK_MESSAGE(matches(g, v.dump(2)), "valid, indented: " << v.dump(2));
      ++instances_checked;
    }
    for (const ordered_json& v : invalid) {
      CHECK_MESSAGE(!matches(g, v.dump()), "invalid: " << v.dump());
      ++instances_checked;
    }
  }
  MESSAGE("translation: " << total_ms << " ms in all, slowest " << worst_ms << " ms (" << worst_name
                          << "); largest grammar " << biggest << " bytes (" << biggest_name << "); slowest compile "
                          << worst_compile_ms << " ms (" << worst_compile_name << "), most compile work " << most_work
                          << " units (" << most_work_name << "); " << instances_checked << " instances checked");
}

TEST_CASE("json schema corpus: mutated schemas never crash, each failure is a status with a message") {
  // Every value in each corpus schema replaced in turn by values of other
  // types: whatever comes back is a grammar the GBNF reader reads (or
  // refuses by a status: a self-reference can be left-recursive), or a
  // status naming what was wrong.
  const ordered_json replacements[] = {ordered_json(nullptr), ordered_json(-3), ordered_json(2.5), ordered_json("x"),
                                       ordered_json::array({1, "a"}), ordered_json::object({{"type", 7}}), ordered_json(true)};
  size_t runs = 0, ok = 0;
  for (const Entry& e : corpus()) {
    const ordered_json schema = ordered_json::parse(read_file(e.dir / (e.name + ".schema.json")), nullptr, false);
    REQUIRE_FALSE(schema.is_discarded());
    const ordered_json flat = schema.flatten();
    std::vector<std::string> pointers;
    for (auto it = flat.begin(); it != flat.end(); ++it) {
      // Each leaf and each of its parents.
      std::string p = it.key();
      while (!p.empty()) {
        pointers.push_back(p);
        p = p.substr(0, p.rfind('/'));
      }
    }
    std::sort(pointers.begin(), pointers.end());
    pointers.erase(std::unique(pointers.begin(), pointers.end()), pointers.end());
    for (const std::string& p : pointers) {
      for (const ordered_json& rep : replacements) {
        ordered_json m = schema;
        m[ordered_json::json_pointer(p)] = rep;
        auto r = ember::json_schema_to_gbnf(m.dump());
        ++runs;
        if (r.is_ok()) {
          ++ok;
          auto g = ember::parse_gbnf(r.value());
          if (!g.is_ok()) {
            CHECK_MESSAGE(g.status().message().find("left-recursive") != std::string::npos,
                          e.name << " " << p << ": " << g.status().message());
          }
        } else {
          CHECK_MESSAGE(!r.status().message().empty(), e.name << " " << p);
          CHECK((r.status().code() == EMBER_ERR_INVALID_ARGUMENT || r.status().code() == EMBER_ERR_UNSUPPORTED));
        }
      }
    }
  }
  MESSAGE(runs << " mutated schemas, " << ok << " translated");
  CHECK(runs > 1000);
}

// The matcher (runtime/grammar/matcher.h) against independent oracles: its
// token masks equal "the text so far plus this token's text can still
// become a sentence" decided by std::regex, on the real stories260K
// vocabulary; sampled output at temperature 1 through the generator always
// stays in the language (a sentence when it ends, a viable prefix when the
// token limit cuts it); UTF-8 built from byte tokens; hostile grammars end
// in errors, not crashes.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "model/model.h"
#include "model/session.h"
#include "model/stories_fixture.h"

namespace ember {
namespace {

// A grammar written by hand (the GBNF reader is tested on its own).
struct Builder {
  Grammar g;
  uint32_t rule(const std::string& name) {
    g.alts.emplace_back();
    g.names.push_back(name);
    return static_cast<uint32_t>(g.alts.size() - 1);
  }
  GrammarElem chars(uint32_t lo, uint32_t hi, bool negated = false) {
    g.char_sets.push_back(CharSet{negated, {{lo, hi}}});
    return {GrammarElem::Chars, static_cast<uint32_t>(g.char_sets.size() - 1)};
  }
  static GrammarElem ref(uint32_t r) { return {GrammarElem::Ref, r}; }
  void alt(uint32_t r, const std::vector<GrammarElem>& elems) {
    g.alts[r].push_back(static_cast<uint32_t>(g.elems.size()));
    for (const GrammarElem& e : elems) g.elems.push_back(e);
    g.elems.push_back({GrammarElem::End, 0});
  }
};

// root ::= word ("," " "? word)* "."   word ::= [a-z]+
Grammar word_list() {
  Builder b;
  const uint32_t root = b.rule("root"), word = b.rule("word"), tail = b.rule("tail"), sp = b.rule("sp");
  b.alt(root, {Builder::ref(word), Builder::ref(tail), b.chars('.', '.')});
  const GrammarElem az = b.chars('a', 'z');
  b.alt(word, {az, Builder::ref(word)});
  b.alt(word, {az});
  b.alt(tail, {b.chars(',', ','), Builder::ref(sp), Builder::ref(word), Builder::ref(tail)});
  b.alt(tail, {});
  b.alt(sp, {b.chars(' ', ' ')});
  b.alt(sp, {});
  b.g.root = root;
  return b.g;
}

const std::regex kWordList("[a-z]+(, ?[a-z]+)*\\.");
bool sentence(const std::string& s) { return std::regex_match(s, kWordList); }
bool viable(const std::string& s) {
  for (const char* tail : {"", ".", "a.", " a."}) {
    if (sentence(s + tail)) return true;
  }
  return false;
}

struct Stories {
  std::unique_ptr<Model> model;
  Stories() {
    const std::string path = test::stories_model("llama2c");
    REQUIRE(!path.empty());
    auto m = Model::open(path, Model::Options{});
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    model = std::move(m).value();
  }
};

std::string piece(const Tokenizer& t, int32_t id) {
  std::string s;
  REQUIRE(t.decode_token(-1, id, &s).is_ok());
  return s;
}

}  // namespace

TEST_CASE("grammar matcher: masks equal a regex oracle over the stories vocabulary") {
  Stories st;
  const Tokenizer& tok = st.model->tokenizer();
  auto made = CompiledGrammar::create(word_list(), tok);
  REQUIRE_MESSAGE(made.is_ok(), made.status().message());
  CompiledGrammar& g = *made.value();
  const int32_t n = tok.size();
  std::vector<std::string> texts(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) texts[static_cast<size_t>(id)] = piece(tok, id);
  // Texts the matcher is asked about: grown token by token from the empty
  // text, each time by the first allowed token after a rotating offset.
  std::string text;
  uint32_t state = g.initial_state();
  std::vector<float> logits(static_cast<size_t>(n));
  int checked = 0;
  for (int step = 0; step < 40; ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    auto allowed = g.apply_mask(state, logits.data(), n);
    REQUIRE(allowed.is_ok());
    int32_t count = 0, pick = -1, first = -1;
    for (int32_t id = 0; id < n; ++id) {
      const std::string& t = texts[static_cast<size_t>(id)];
      const bool eog = tok.is_eog(id);
      const bool expect = eog ? sentence(text) : (!t.empty() && viable(text + t));
      const bool got = logits[static_cast<size_t>(id)] == 0.0f;
      if (got != expect) FAIL_CHECK("text '" << text << "' token " << id << " '" << t << "': mask " << got);
      count += got;
      if (got && !eog && pick < 0 && id >= (step * 37) % n) pick = id;
      if (got && !eog && first < 0) first = id;
      ++checked;
    }
    CHECK(count == allowed.value());
    if (pick < 0) pick = first;
    if (pick < 0) break;
    auto next = g.advance(state, pick);
    REQUIRE(next.is_ok());
    REQUIRE(next.value() != CompiledGrammar::kDead);
    state = next.value();
    text += texts[static_cast<size_t>(pick)];
    CHECK(g.complete(state) == sentence(text));
  }
  CHECK(checked > 20 * n);
  CHECK(g.stats().masks_computed > 0);
}

TEST_CASE("grammar matcher: sampled output at temperature 1 stays in the language") {
  Stories st;
  auto made = CompiledGrammar::create(word_list(), st.model->tokenizer());
  REQUIRE(made.is_ok());
  SessionOptions so;
  so.context_length = 256;
  so.n_seqs = 4;
  auto session = Session::create(*st.model, so);
  REQUIRE_MESSAGE(session.is_ok(), session.status().message());
  auto gen = Generator::create(*session.value(), GeneratorOptions{});
  REQUIRE(gen.is_ok());
  struct Out {
    std::string text[4];
    StopReason stop[4] = {};
  } out;
  int ended = 0, cut = 0;
  for (int round = 0; round < 6; ++round) {
    for (int s = 0; s < 4; ++s) {
      SequenceParams p;
      p.sampling.temperature = 1.0f;
      p.sampling.seed = static_cast<uint64_t>(round * 4 + s + 1);
      p.max_new_tokens = 24;
      p.grammar = made.value();
      PromptSpec spec;
      spec.text = "Once upon a time";
      spec.reuse_prefix = true;
      out.text[s].clear();
      REQUIRE(gen.value()->start(s, spec, p).is_ok());
    }
    while (gen.value()->n_active() > 0) {
      REQUIRE(gen.value()->step(
                  [](void* u, const GenEvent& e) {
                    Out& o = *static_cast<Out*>(u);
                    o.text[e.seq] += std::string(e.text);
                    if (e.finish != StopReason::None) o.stop[e.seq] = e.finish;
                    return false;
                  },
                  &out)
                  .is_ok());
    }
    for (int s = 0; s < 4; ++s) {
      INFO("output '" << out.text[s] << "' stop " << static_cast<int>(out.stop[s]));
      if (out.stop[s] == StopReason::End) {
        CHECK(sentence(out.text[s]));
        ++ended;
      } else {
        CHECK(out.stop[s] == StopReason::MaxTokens);
        CHECK(viable(out.text[s]));
        ++cut;
      }
    }
  }
  CHECK(ended + cut == 24);
}

TEST_CASE("grammar matcher: characters beyond ASCII from byte tokens, and bounds") {
  Stories st;
  const Tokenizer& tok = st.model->tokenizer();
  {
    // root ::= [à-ÿ] [α-ω] "!"
    Builder b;
    const uint32_t root = b.rule("root");
    b.alt(root, {b.chars(0xe0, 0xff), b.chars(0x3b1, 0x3c9), b.chars('!', '!')});
    b.g.root = root;
    auto made = CompiledGrammar::create(b.g, tok);
    REQUIRE(made.is_ok());
    CompiledGrammar& g = *made.value();
    auto s = g.advance_text(g.initial_state(), "\xc3\xa9\xce\xb2!");  // é β !
    REQUIRE(s.is_ok());
    CHECK(g.finished(s.value()));
    CHECK(g.advance_text(g.initial_state(), "\xc3\x80").value() == CompiledGrammar::kDead);  // À: below the range
    CHECK(g.advance_text(g.initial_state(), "\xc3").value() != CompiledGrammar::kDead);      // may become é
    CHECK(g.advance_text(g.initial_state(), "\xc2").value() == CompiledGrammar::kDead);      // U+0080..BF: none
    CHECK(g.advance_text(g.initial_state(), "\xff").value() == CompiledGrammar::kDead);      // never UTF-8
    // The mask after "é" allows exactly the byte tokens that start a Greek
    // letter (0xCE, 0xCF) among single-byte pieces.
    std::vector<float> logits(static_cast<size_t>(tok.size()), 0.0f);
    auto after = g.advance_text(g.initial_state(), "\xc3\xa9");
    REQUIRE(g.apply_mask(after.value(), logits.data(), tok.size()).is_ok());
    for (int32_t id = 0; id < tok.size(); ++id) {
      const std::string t = piece(tok, id);
      if (t.size() != 1) continue;
      const uint8_t c = static_cast<uint8_t>(t[0]);
      CHECK_MESSAGE((logits[static_cast<size_t>(id)] == 0.0f) == (c == 0xce || c == 0xcf), "byte " << int(c));
    }
  }
  {
    // Ambiguity past the stack limit: root ::= x x x x x x x x, x ::= "a" | "a" "a" ... (all
    // ways of splitting a run of a's) — a "too complex" error, not a crash.
    Builder b;
    const uint32_t root = b.rule("root"), x = b.rule("x");
    const GrammarElem a = b.chars('a', 'a');
    std::vector<GrammarElem> body(12, Builder::ref(x));
    b.alt(root, body);
    b.alt(x, {a});
    b.alt(x, {a, a});
    b.alt(x, {a, a, a});
    b.alt(x, {});
    b.g.root = root;
    MatcherLimits small;
    small.max_stacks = 64;
    auto made = CompiledGrammar::create(b.g, tok, small);
    Status failed;
    if (made.is_ok()) {
      auto s = made.value()->advance_text(made.value()->initial_state(), "aaaaaaaa");
      REQUIRE(!s.is_ok());
      failed = s.status();
    } else {
      failed = made.status();
    }
    CHECK(failed.code() == EMBER_ERR_TOO_COMPLEX);
    CHECK_MESSAGE(failed.message().rfind("grammar: too complex: ", 0) == 0, failed.message());
  }
  {
    // Left recursion is refused before anything runs.
    Builder b;
    const uint32_t root = b.rule("root");
    b.alt(root, {Builder::ref(root), b.chars('a', 'a')});
    b.alt(root, {b.chars('b', 'b')});
    auto made = CompiledGrammar::create(b.g, tok);
    REQUIRE(!made.is_ok());
    CHECK(made.status().code() == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(made.status().message().find("left-recursive") != std::string::npos);
  }
}

TEST_CASE("grammar matcher: repetitions of what can match nothing equal a regex oracle") {
  Stories st;
  const Tokenizer& tok = st.model->tokenizer();
  // llama.cpp's meaning: the repetition of the non-empty matches.
  struct Case {
    const char* gbnf;
    const char* regex;
  };
  const Case cases[] = {
      {R"(root ::= ("a"?)* "c")", "a*c"},
      {R"(root ::= ("ab"*)+ "c"?)", "(ab)*c?"},
      {R"(root ::= ("" | "b")* "a")", "b*a"},
      {R"(root ::= ("a"? "b"?)* "c")", "[ab]*c"},
      {R"(root ::= (("a" | "b"?)+ "c")*)", "([ab]*c)*"},
      {"root ::= x{2,3} \"c\"\nx ::= \"a\"?", "a{0,3}c"},
      {"root ::= (ws item)* ws\nws ::= \" \"*\nitem ::= [ab]", "( *[ab])* *"},
      {"root ::= (x | y)+\nx ::= \"a\"*\ny ::= (\"b\" \"c\"?)*", "(a|bc?)*"},
  };
  for (const Case& c : cases) {
    INFO("grammar: " << c.gbnf);
    auto g = parse_gbnf(c.gbnf);
    REQUIRE_MESSAGE(g.is_ok(), g.status().message());
    auto made = CompiledGrammar::create(std::move(g).value(), tok);
    REQUIRE_MESSAGE(made.is_ok(), made.status().message());
    CompiledGrammar& m = *made.value();
    const std::regex re(c.regex);
    // Every string of "abc " up to 6 characters.
    std::vector<std::string> texts{""};
    for (size_t i = 0; i < texts.size() && texts[i].size() < 6; ++i) {
      for (char ch : std::string("abc ")) texts.push_back(texts[i] + ch);
    }
    int accepted = 0;
    for (const std::string& t : texts) {
      auto s = m.advance_text(m.initial_state(), t);
      REQUIRE_MESSAGE(s.is_ok(), s.status().message());
      const bool expect = std::regex_match(t, re);
      CHECK_MESSAGE(m.complete(s.value()) == expect, "'" << t << "'");
      accepted += expect;
    }
    CHECK(accepted > 0);
    MESSAGE(std::string(c.gbnf) << ": " << texts.size() << " strings, " << accepted << " accepted, " << m.stats().states
                   << " states");
  }
}

}  // namespace ember

// ---- cost per token on real vocabularies (reported, not asserted) ----

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "tools/convert/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "tools/convert/vocab_import.h"

#ifndef EMBER_LLAMA_VOCAB_DIR
#define EMBER_LLAMA_VOCAB_DIR ""
#endif

namespace ember {
namespace {

Result<Tokenizer> vocab_tokenizer(const std::string& name) {
  std::string dir = EMBER_LLAMA_VOCAB_DIR;
  if (const char* d = std::getenv("EMBER_LLAMA_VOCAB_DIR"); d && *d) dir = d;
  const std::string bytes = test::read_text_file(dir + "/" + name);
  EMBER_ASSIGN_OR_RETURN(GgufFile g, GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  EMBER_ASSIGN_OR_RETURN(Vocab v, vocab_from_gguf(g));
  return Tokenizer::create(std::move(v));
}

// An order: nested objects, arrays, enums, bounded integers, strings.
const char* kOrderSchema = R"({"type":"object","properties":{
  "id":{"type":"integer","minimum":1,"maximum":100000},
  "customer":{"type":"object","properties":{"name":{"type":"string","maxLength":40},
    "tier":{"enum":["free","pro","enterprise"]}},"required":["name","tier"]},
  "items":{"type":"array","maxItems":4,"items":{"type":"object","properties":{
    "sku":{"type":"string","maxLength":12},"qty":{"type":"integer","minimum":1,"maximum":99}},
    "required":["sku","qty"]}},
  "status":{"enum":["open","paid","shipped"]}},
  "required":["id","customer","items","status"]})";

}  // namespace

TEST_CASE("grammar matcher: cost per token of a nested schema on 32k and 150k vocabularies") {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-qwen2.gguf"}) {
    auto tok = vocab_tokenizer(name);
    if (!tok.is_ok()) {
      if (test::test_data_required()) FAIL(name << ": " << tok.status().message());
      MESSAGE("skipped: " << name << ": " << tok.status().message());
      continue;
    }
    auto gbnf = json_schema_to_gbnf(kOrderSchema);
    REQUIRE_MESSAGE(gbnf.is_ok(), gbnf.status().message());
    auto parsed = parse_gbnf(gbnf.value());
    REQUIRE(parsed.is_ok());
    const auto t0 = std::chrono::steady_clock::now();
    auto made = CompiledGrammar::create(std::move(parsed).value(), tok.value());
    REQUIRE(made.is_ok());
    const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    CompiledGrammar& g = *made.value();
    const int32_t n = tok.value().size();
    std::vector<float> logits(static_cast<size_t>(n));
    std::mt19937 rng(7);
    // Uniform in [-4, 4) from the generator's top 24 bits: a vocabulary's
    // worth per token, and uniform_real_distribution calls logl twice per
    // draw where the compiler does not fold its constants (clang), which
    // made this test 10x slower under clang's ASan than gcc's.
    const auto u = [&rng] { return static_cast<float>(rng() >> 8) * (8.0f / 16777216.0f) - 4.0f; };
    // Three documents, each token the most likely allowed one of fresh random
    // logits (a random model); the first document meets every mask first.
    for (int doc = 0; doc < 3; ++doc) {
      uint32_t state = g.initial_state();
      std::string text;
      int tokens = 0;
      double ms = 0;
      while (!g.finished(state) && tokens < 400) {
        for (float& x : logits) x = u();
        const auto a = std::chrono::steady_clock::now();
        auto allowed = g.apply_mask(state, logits.data(), n);
        REQUIRE(allowed.is_ok());
        REQUIRE(allowed.value() > 0);
        int32_t best = 0;
        for (int32_t t = 1; t < n; ++t) {
          if (logits[static_cast<size_t>(t)] > logits[static_cast<size_t>(best)]) best = t;
        }
        auto next = g.advance(state, best);
        ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
        REQUIRE(next.is_ok());
        REQUIRE(next.value() != CompiledGrammar::kDead);
        if (tok.value().is_eog(best)) break;
        std::string piece;
        REQUIRE(tok.value().decode_token(-1, best, &piece).is_ok());
        text += piece;
        state = next.value();
        ++tokens;
      }
      INFO(name << " document " << doc << ": " << text);
      if (g.finished(state)) {
        const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        REQUIRE(!j.is_discarded());
        CHECK(j.contains("id"));
        CHECK(j.contains("customer"));
        CHECK(j.contains("items"));
      }
      const CompiledGrammar::Stats st = g.stats();
      MESSAGE(std::string(name) << " (" << n << " tokens): compile " << compile_ms << " ms; document " << doc << ": " << tokens
                   << " tokens, constraint " << (tokens ? ms / tokens : 0) << " ms/token; masks computed "
                   << st.masks_computed << " (" << st.mask_ms << " ms in all), reused " << st.masks_reused
                   << ", states " << st.states);
    }
  }
}

}  // namespace ember

namespace ember {

TEST_CASE("grammar matcher: one state per unfinished character changes no mask (151,936-piece vocabulary)") {
  auto tok = vocab_tokenizer("ggml-vocab-qwen2.gguf");
  if (!tok.is_ok()) {
    if (test::test_data_required()) FAIL(tok.status().message());
    MESSAGE("skipped: " << tok.status().message());
    return;
  }
  // Strings of any character, CJK-only words, accented Latin, and ASCII
  // structure between them: characters every stack takes, and characters
  // only some do.
  auto parsed = parse_gbnf(
      "root ::= (item \"\\n\")+\n"
      "item ::= \"s:\" [^\"\\\\]{0,12} | \"c:\" [\\u4e00-\\u9fa5]{1,6} | \"l:\" [a-zA-Z\\u00e0-\\u00ff]+ | \"e:\" [\\U0001F600-\\U0001F64F]\n");
  REQUIRE_MESSAGE(parsed.is_ok(), parsed.status().message());
  MatcherLimits exact;
  exact.collapse_characters = false;
  auto a = CompiledGrammar::create(parsed.value(), tok.value());
  auto b = CompiledGrammar::create(parsed.value(), tok.value(), exact);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  const int32_t n = tok.value().size();
  std::vector<float> la(static_cast<size_t>(n)), lb(static_cast<size_t>(n));
  std::mt19937 rng(11);
  uint32_t sa = a.value()->initial_state(), sb = b.value()->initial_state();
  int compared = 0;
  for (int step = 0; step < 60; ++step) {
    std::fill(la.begin(), la.end(), 0.0f);
    std::fill(lb.begin(), lb.end(), 0.0f);
    auto ca = a.value()->apply_mask(sa, la.data(), n);
    auto cb = b.value()->apply_mask(sb, lb.data(), n);
    REQUIRE(ca.is_ok());
    REQUIRE(cb.is_ok());
    REQUIRE(ca.value() == cb.value());
    CHECK(la == lb);
    ++compared;
    // A random allowed, non-end token.
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < n; ++t) {
      if (la[static_cast<size_t>(t)] == 0.0f && !tok.value().is_eog(t)) allowed.push_back(t);
    }
    if (allowed.empty()) break;
    const int32_t pick = allowed[rng() % allowed.size()];
    sa = a.value()->advance(sa, pick).value();
    sb = b.value()->advance(sb, pick).value();
    REQUIRE(sa != CompiledGrammar::kDead);
    REQUIRE(sb != CompiledGrammar::kDead);
  }
  CHECK(compared >= 30);
  MESSAGE("states: " << a.value()->stats().states << " collapsed, " << b.value()->stats().states << " exact");
}

}  // namespace ember

// Pre-tokenizers: the regex subset (what it refuses, how it matches), the
// family table, the regex GPT-2 family against the hand-written GPT-2
// splitter, special pieces cut out of the text, and the end-of-generation
// set. Synthetic vocabularies: these run without test data.
#include <doctest/doctest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/bpe_bytes.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace ember {
namespace {

long match(const char* pattern, const std::string& text) {
  auto rx = PreTokenizerRegex::compile(pattern);
  REQUIRE_MESSAGE(rx.is_ok(), rx.status().message());
  PreTokenizerRegex::Subject s;
  PreTokenizerRegex::prepare(text, &s);
  return rx->match_at(s, 0, s.cps.size());
}

std::vector<std::string> words(const char* pre, const std::string& text) {
  auto p = PreTokenizer::create(pre);
  REQUIRE_MESSAGE(p.is_ok(), p.status().message());
  std::vector<std::pair<size_t, size_t>> ranges;
  p->split(text, &ranges);
  std::vector<std::string> out;
  for (auto [b, e] : ranges) out.push_back(text.substr(b, e - b));
  return out;
}

using Words = std::vector<std::string>;

std::string mapped(const std::string& bytes) {
  std::string s;
  for (unsigned char c : bytes) utf8_append(gpt2_byte_to_unicode(c), &s);
  return s;
}

// A byte-level BPE vocabulary of the 256 byte pieces (no merges) plus
// special pieces; ids 256.. in the order given.
Vocab byte_vocab(const std::vector<std::pair<std::string, TokenType>>& specials) {
  Vocab v;
  v.kind = TokenizerKind::BytePairBPE;
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) {
    v.pieces.push_back(mapped(std::string(1, static_cast<char>(b))));
    v.types.push_back(static_cast<uint8_t>(TokenType::Normal));
  }
  for (const auto& [text, type] : specials) {
    v.pieces.push_back(text);
    v.types.push_back(static_cast<uint8_t>(type));
  }
  v.add_bos = false;
  v.add_space_prefix = false;
  v.byte_fallback = false;
  return v;
}

std::vector<int32_t> bytes_of(const std::string& s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("pre-tokenizer regex: the subset refuses what it does not implement") {
  for (const char* bad : {"(a)", "\\p{Han}+", "(?:ab)+", "a+?", "[z-a]", "\\q", "a{3,1}", "[abc",
                          "(?:a", "a)", ".", "", "\\p{L"}) {
    INFO("pattern '" << bad << "'");
    auto rx = PreTokenizerRegex::compile(bad);
    CHECK(rx.status().code() == EMBER_ERR_INVALID_ARGUMENT);
    if (*bad) CHECK(rx.status().message().find(bad) != std::string::npos);
  }
}

TEST_CASE("pre-tokenizer regex: leftmost-first, greedy, lookahead and end bounded by the piece") {
  CHECK(match("a|ab", "ab") == 1);                       // first alternative wins
  CHECK(match("ab|a", "ab") == 2);
  CHECK(match(R"(\s+(?!\S))", "   x") == 2);            // gives one space back
  CHECK(match(R"(\s+(?!\S))", "   ") == 3);             // the piece end is not \S
  CHECK(match(R"(\s+(?=x))", "  x") == 2);
  CHECK(match(R"(\s+$)", "  ") == 2);
  CHECK(match(R"(\s+$)", "  x") == -1);
  CHECK(match(R"(\p{N}{1,3})", "12345") == 3);
  CHECK(match(R"(\p{N}{2})", "1") == -1);
  CHECK(match(R"([^\r\n\p{L}\p{N}]?\p{L}+)", " Hello!") == 6);
  CHECK(match(R"([^\r\n\p{L}\p{N}]?\p{L}+)", "\nHello") == -1);
  CHECK(match(R"(\s*[\r\n]+)", " \t\r\n x") == 4);
  CHECK(match("[\u4E00-\u9FA5]+", "\u4E2D\u6587abc") == 2);  // ranges by codepoint
  CHECK(match(R"(\p{P}+)", "\u00BF!?a") == 3);            // inverted question mark is P
  CHECK(match(R"([\p{L}\p{M}]+)", "e\u0301t\u00E9") == 4);  // combining acute is M
  CHECK(match(R"([^\s\p{L}\p{N}]+)", "\xFF\xFEx") == 2);    // stray bytes are in no class
  CHECK(match(R"((?:'[sS]|'[tT]))", "'S") == 2);
}

TEST_CASE("pre-tokenizer families: names, refusals, family splits") {
  for (const char* name : {"gpt-2", "llama-bpe", "llama3", "qwen2", "qwen35", "smollm", "starcoder",
                           "refact", "command-r", "falcon", "mpt", "deepseek-llm", "deepseek-coder",
                           "default", "dbrx", "olmo", "stablelm2", "bloom", "viking", "chatglm-bpe"}) {
    INFO(name);
    CHECK(PreTokenizer::known(name));
    auto p = PreTokenizer::create(name);
    REQUIRE_MESSAGE(p.is_ok(), p.status().message());
    CHECK(p->name() == name);
  }
  for (const char* name : {"tekken", "gpt-4o", "kimi-k2", "deepseek-v3", "LLAMA-BPE"}) {
    INFO(name);
    CHECK_FALSE(PreTokenizer::known(name));
    const Status s = PreTokenizer::create(name).status();
    CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
    CHECK(s.message().find(std::string("'") + name + "'") != std::string::npos);
  }
  CHECK(PreTokenizer::create("llama-bpe")->ignore_merges());
  CHECK(PreTokenizer::create("llama-bpe")->default_add_bos());
  CHECK_FALSE(PreTokenizer::create("qwen2")->ignore_merges());

  // Digits: Llama 3 in threes, Qwen2 and StarCoder one by one, GPT-2 in runs.
  CHECK(words("llama-bpe", "3333") == Words{"333", "3"});
  CHECK(words("qwen2", "3333") == Words{"3", "3", "3", "3"});
  CHECK(words("starcoder", " 3333") == Words{" ", "3", "3", "3", "3"});
  CHECK(words("gpt-2", " 3333") == Words{" 3333"});
  CHECK(words("falcon", "3333") == Words{"333", "3"});
  // Spaces: a run gives its last space to the next word.
  CHECK(words("llama-bpe", "Hello  world") == Words{"Hello", " ", " world"});
  CHECK(words("gpt-2", "Hello  world") == Words{"Hello", " ", " world"});
  // Llama 3: a newline run is one word with the spaces before it.
  CHECK(words("llama-bpe", "a \n\nb") == Words{"a", " \n\n", "b"});
  // DeepSeek LLM: each newline alone, trailing spaces of a piece together.
  CHECK(words("deepseek-llm", "a\n\nb  ") == Words{"a", "\n", "\n", "b", "  "});
  // Falcon: punctuation runs are cut before the GPT-2 regex sees them.
  CHECK(words("falcon", "Hi!? there") == Words{"Hi", "!?", " there"});
  // Qwen3.5: a combining mark stays with its letter.
  CHECK(words("qwen35", "e\u0301e") == Words{"e\u0301e"});
  CHECK(words("qwen2", "e\u0301e") == Words{"e", "\u0301e"});  // the mark leads the next word
}

TEST_CASE("the regex GPT-2 family splits like the hand-written GPT-2 splitter") {
  auto p = PreTokenizer::create("gpt-2");
  REQUIRE(p.is_ok());
  const std::vector<std::string> alphabet = {
      "a", "Z", "q", "7", "0", " ", " ", "  ", "\t", "\n", "\r", "'", "'s", "'ll", "'Re", "!",
      ".", "-", "\u00E9", "\u4E2D", "\u0661", "\u00BD", "\u00A0", "\u3000", "\xF0\x9F\x98\x80",
      "\xFF", "\xC3", "\u0301"};
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text;
    const size_t n = rng() % 24;
    for (size_t i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    std::vector<std::pair<size_t, size_t>> a, b;
    p->split(text, &a);
    gpt2_pretokenize(text, &b);
    INFO("text '" << text << "'");
    CHECK(a == b);
  }
}

TEST_CASE("special pieces: user-defined always, control with parse_special, longest first") {
  auto tok = Tokenizer::create(byte_vocab({{"<|im_start|>", TokenType::Control},  // 256
                                           {"<|im_end|>", TokenType::Control},    // 257
                                           {"<u>", TokenType::UserDefined},       // 258
                                           {"<u>v", TokenType::UserDefined},      // 259
                                           {"<|endoftext|>", TokenType::Control},  // 260
                                           {"<unk>", TokenType::Unknown}}));      // 261
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  std::vector<int32_t> ids;
  REQUIRE(tok->encode("a<u>b<u>v", EncodeOptions{}, &ids).is_ok());
  CHECK(ids == std::vector<int32_t>{'a', 258, 'b', 259});
  ids.clear();
  const std::string chat = "<|im_start|>hi<|im_end|><unk>";
  REQUIRE(tok->encode(chat, EncodeOptions{}, &ids).is_ok());
  CHECK(ids == bytes_of(chat));  // control and unknown spellings stay text
  ids.clear();
  EncodeOptions parse;
  parse.parse_special = true;
  REQUIRE(tok->encode(chat, parse, &ids).is_ok());
  CHECK(ids == std::vector<int32_t>{256, 'h', 'i', 257, 261});
  // User-defined pieces decode verbatim: the text comes back.
  std::string back;
  ids.clear();
  REQUIRE(tok->encode("x<u>vy", EncodeOptions{}, &ids).is_ok());
  REQUIRE(tok->decode(ids.data(), ids.size(), &back).is_ok());
  CHECK(back == "x<u>vy");
  // add_eos: needs an eos id.
  EncodeOptions eos;
  eos.add_eos = true;
  ids.clear();
  CHECK(tok->encode("a", eos, &ids).code() == EMBER_ERR_INVALID_ARGUMENT);
  Vocab v = tok->vocab();
  v.eos_id = 260;
  v.bos_id = 256;
  auto tok2 = Tokenizer::create(v);
  REQUIRE(tok2.is_ok());
  ids.clear();
  eos.add_bos = true;
  REQUIRE(tok2->encode("a", eos, &ids).is_ok());
  CHECK(ids == std::vector<int32_t>{256, 'a', 260});
}

TEST_CASE("SPM: the dummy prefix follows a special piece and add_space_prefix=false (Gemma) has none") {
  Vocab v;
  v.kind = TokenizerKind::SentencePiece;
  v.pieces = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "<u>"};
  v.scores = {0, 0, 0, 0, 0, 0, 1, 0};
  v.types = {2, 3, 3, 1, 1, 1, 1, 4};
  v.unk_id = 0, v.bos_id = 1, v.eos_id = 2;
  auto tok = Tokenizer::create(v);
  REQUIRE(tok.is_ok());
  std::vector<int32_t> ids;
  REQUIRE(tok->encode("a<u>a", EncodeOptions{}, &ids).is_ok());
  CHECK(ids == std::vector<int32_t>{6, 7, 6});
  v.add_space_prefix = false;
  auto gemma = Tokenizer::create(v);
  REQUIRE(gemma.is_ok());
  ids.clear();
  REQUIRE(gemma->encode("a<u>a b", EncodeOptions{}, &ids).is_ok());
  CHECK(ids == std::vector<int32_t>{4, 7, 4, 3, 5});
  std::string back;
  REQUIRE(gemma->decode(ids.data(), ids.size(), &back).is_ok());
  CHECK(back == "a<u>a b");
}

TEST_CASE("Gemma 4: BPE over raw UTF-8 with spaces as U+2581 and <0xHH> byte pieces") {
  Vocab v;
  v.kind = TokenizerKind::BytePairBPE;
  v.pre = "gemma4";
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.pieces.push_back(buf);
    v.types.push_back(static_cast<uint8_t>(TokenType::Byte));
  }
  for (const char* p : {"\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "\n\n", "ab"}) {
    v.pieces.push_back(p);  // ids 256..261
    v.types.push_back(static_cast<uint8_t>(TokenType::Normal));
  }
  v.merges = {"\xE2\x96\x81 a", "a b"};
  v.add_bos = false;
  v.add_space_prefix = false;
  auto tok = Tokenizer::create(v);
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().message());
  std::vector<int32_t> ids;
  REQUIRE(tok->encode("ab a\n\nx", EncodeOptions{}, &ids).is_ok());
  // "ab" merges; " a" is "▁a"; the newline run is one piece; 'x' is <0x78>.
  CHECK(ids == std::vector<int32_t>{261, 259, 260, 0x78});
  std::string back;
  REQUIRE(tok->decode(ids.data(), ids.size(), &back).is_ok());
  CHECK(back == "ab a\n\nx");
}

TEST_CASE("end of generation: eos, eot, eom and the end-of-turn pieces by text") {
  Vocab v = byte_vocab({{"<|im_start|>", TokenType::Control},   // 256
                        {"<|im_end|>", TokenType::Control},     // 257
                        {"<|endoftext|>", TokenType::Control},  // 258
                        {"<end_of_turn>", TokenType::Control},  // 259
                        {"<eos-ish>", TokenType::Control},      // 260
                        {"<eom-ish>", TokenType::Control},      // 261
                        {"<|eot_id|>", TokenType::Control}});   // 262
  v.eos_id = 260;
  v.eom_id = 261;
  auto tok = Tokenizer::create(v);
  REQUIRE(tok.is_ok());
  CHECK(tok->eog_ids() == std::vector<int32_t>{257, 258, 259, 260, 261, 262});
  CHECK(tok->is_eog(257));
  CHECK(tok->is_eog(260));
  CHECK_FALSE(tok->is_eog(256));
  CHECK_FALSE(tok->is_eog('a'));
  CHECK_FALSE(tok->is_eog(-1));
  // Out-of-range eot/eom ids are refused.
  v.eot_id = 263;
  const Status s = Tokenizer::create(v).status();
  CHECK(s.code() == EMBER_ERR_BAD_TOKENIZER);
  CHECK(s.message().find("eot_id=263") != std::string::npos);
  // A BPE vocabulary naming an unknown pre-tokenizer is refused by name.
  v.eot_id = -1;
  v.pre = "tekken";
  const Status u = Tokenizer::create(v).status();
  CHECK(u.code() == EMBER_ERR_UNSUPPORTED);
  CHECK(u.message().find("'tekken'") != std::string::npos);
}

}  // TEST_SUITE
}  // namespace ember

// The WordPiece tokenizer (BERT vocabularies, GGUF "bert"): a hand-made
// vocabulary for each rule (longest match, continuations, unk words,
// punctuation and CJK split, accents and case, what is dropped), decoding
// and its clean-up, hostile input (invalid UTF-8, huge words, empty text),
// and llama.cpp's bert-bge vocabulary through .ember and GGUF round trips,
// ember_embed_tokenize and `ember tokenize`.
#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "ember.h"
#include "format/model_file.h"
#include "test_data.h"
#include "tokenizer/llama_vocab_set.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_normalization.h"
#include "tools/convert/gguf.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"
#include "tools/convert/vocab_import.h"

namespace ember {
namespace {

// Ids of the hand-made vocabulary.
enum : int32_t {
  kPad, kUnk, kCls, kSep, kHello, kWorld, kUn, kUnaff, kAffable, kAble, kPlay, kIng, kComma,
  kBang, kDot, kPlus, kA, kB, kCafe, kZhong, kWen, kCafeAccent, kHelloCap, kQuote, kS, kContA,
  kAA, kContAA, kIt, kCount
};

Vocab small_vocab() {
  Vocab v;
  v.kind = TokenizerKind::WordPiece;
  v.pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\u2581hello", "\u2581world", "\u2581un",
              "\u2581unaff", "affable", "able", "\u2581play", "ing", "\u2581,", "\u2581!",
              "\u2581.", "\u2581+", "\u2581a", "\u2581b", "\u2581cafe", "\u2581\u4E2D",
              "\u2581\u6587", "\u2581caf\u00E9", "\u2581Hello", "\u2581'", "\u2581s", "a",
              "\u2581aa", "aa", "\u2581it"};
  v.types.assign(v.pieces.size(), static_cast<uint8_t>(TokenType::Normal));
  v.types[kPad] = v.types[kCls] = v.types[kSep] = static_cast<uint8_t>(TokenType::Control);
  v.types[kUnk] = static_cast<uint8_t>(TokenType::Unknown);
  v.bos_id = kCls;
  v.eos_id = kSep;
  v.unk_id = kUnk;
  v.pad_id = kPad;
  v.add_bos = v.add_eos = true;
  v.add_space_prefix = v.byte_fallback = false;
  return v;
}

Tokenizer small(bool lowercase = true, bool strip_accents = true) {
  Vocab v = small_vocab();
  REQUIRE(v.pieces.size() == static_cast<size_t>(kCount));
  v.lowercase = lowercase;
  v.strip_accents = strip_accents;
  auto t = Tokenizer::create(std::move(v));
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  return std::move(t).value();
}

std::vector<int32_t> ids(const Tokenizer& t, std::string_view text, EncodeOptions o = {}) {
  std::vector<int32_t> out;
  const Status s = t.encode(text, o, &out);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  return out;
}

using Ids = std::vector<int32_t>;

std::string decoded(const Tokenizer& t, const Ids& in) {
  std::string out;
  REQUIRE(t.decode(in.data(), in.size(), &out).is_ok());
  return out;
}

Result<Tokenizer> bge(const std::string& dir, Vocab* vocab = nullptr) {
  const std::string bytes = test::read_text_file(dir + "/ggml-vocab-bert-bge.gguf");
  EMBER_ASSIGN_OR_RETURN(GgufFile g, GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                     bytes.size()));
  EMBER_ASSIGN_OR_RETURN(Vocab v, vocab_from_gguf(g));
  if (vocab != nullptr) *vocab = v;
  return Tokenizer::create(std::move(v));
}

// Every vector of the bert-bge set through `t`.
void check_bge_vectors(const Tokenizer& t, const std::string& dir) {
  const std::string base = dir + "/ggml-vocab-bert-bge.gguf";
  const std::vector<test::Case> cases = test::load_cases(base + ".inp", base + ".out");
  REQUIRE(cases.size() >= 40);
  for (const test::Case& c : cases) {
    INFO("input '" << c.input << "'");
    CHECK(ids(t, c.input) == c.expected);
  }
}

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("wordpiece: longest piece from the left, continuations, unk words") {
  const Tokenizer t = small();
  CHECK(ids(t, "hello world") == Ids{kHello, kWorld});
  // "▁unaff" + "able", not "▁un" + "affable": the longest first piece wins.
  CHECK(ids(t, "unaffable") == Ids{kUnaff, kAble});
  CHECK(ids(t, "playing") == Ids{kPlay, kIng});
  // A word that cannot be cut to its end is one unk, not its pieces.
  CHECK(ids(t, "xyz") == Ids{kUnk});
  CHECK(ids(t, "playx") == Ids{kUnk});
  CHECK(ids(t, "hello xyz world") == Ids{kHello, kUnk, kWorld});
  CHECK(ids(t, "aaaaa") == Ids{kAA, kContAA, kContA});
}

TEST_CASE("wordpiece: the normalizer splits, lowercases, strips accents and drops controls") {
  const Tokenizer t = small();
  CHECK(ids(t, "Hello World") == Ids{kHello, kWorld});
  // Punctuation and the ASCII symbols are words of their own.
  CHECK(ids(t, "hello,world!") == Ids{kHello, kComma, kWorld, kBang});
  CHECK(ids(t, "a+b") == Ids{kA, kPlus, kB});
  CHECK(ids(t, "a$b") == Ids{kA, kUnk, kB});
  // Precomposed and decomposed accents both go.
  CHECK(ids(t, "Caf\u00E9") == Ids{kCafe});
  CHECK(ids(t, "Cafe\u0301") == Ids{kCafe});
  CHECK(ids(t, "CAF\u00C9.") == Ids{kCafe, kDot});
  // CJK ideographs are words of their own, even inside a word.
  CHECK(ids(t, "\u4E2D\u6587") == Ids{kZhong, kWen});
  CHECK(ids(t, "hello\u4E2Dworld") == Ids{kHello, kZhong, kWorld});
  // Any white space ends a word; controls, format characters, NUL and
  // U+FFFD are dropped without ending one.
  CHECK(ids(t, "\thello\u3000world\n") == Ids{kHello, kWorld});
  CHECK(ids(t, "hel\u200Blo") == Ids{kHello});
  CHECK(ids(t, "hel\x01lo") == Ids{kHello});
  CHECK(ids(t, std::string_view("hel\0lo", 6)) == Ids{kHello});
  CHECK(ids(t, "hel\uFFFDlo") == Ids{kHello});
}

TEST_CASE("wordpiece: lowercase and strip_accents off keep case and accents") {
  const Tokenizer keep = small(false, false);
  CHECK(ids(keep, "Hello hello") == Ids{kHelloCap, kHello});
  CHECK(ids(keep, "caf\u00E9") == Ids{kCafeAccent});
  CHECK(ids(keep, "Cafe\u0301") == Ids{kUnk});  // the mark stays, no piece has it
  const Tokenizer lower_only = small(true, false);
  CHECK(ids(lower_only, "CAF\u00C9") == Ids{kCafeAccent});
  CHECK(ids(lower_only, "Hello") == Ids{kHello});
}

TEST_CASE("wordpiece: CLS and SEP around the text, special pieces parsed on request") {
  const Tokenizer t = small();
  EncodeOptions o;
  o.add_bos = o.add_eos = true;
  CHECK(ids(t, "hello", o) == Ids{kCls, kHello, kSep});
  CHECK(ids(t, "", o) == Ids{kCls, kSep});
  CHECK(ids(t, "[CLS]hello [SEP]", EncodeOptions{false, false, true}) == Ids{kCls, kHello, kSep});
  CHECK(ids(t, "[CLS]", EncodeOptions{}) == Ids{kUnk, kUnk, kUnk});  // "[", "cls", "]"
}

TEST_CASE("wordpiece: decoding joins continuations and cleans the spaces as llama.cpp does") {
  const Tokenizer t = small();
  CHECK(decoded(t, {kCls, kHello, kComma, kWorld, kBang, kSep}) == "hello, world!");
  CHECK(decoded(t, {kPlay, kIng, kDot}) == "playing.");
  CHECK(decoded(t, {kIt, kQuote, kS}) == "it's");
  CHECK(decoded(t, {kHello, kUnk}) == "hello[UNK]");  // an unknown piece prints as it is
  CHECK(decoded(t, {}).empty());
  // A stream: the first word's space goes, at the start or after CLS.
  std::string s;
  REQUIRE(t.decode_token(-1, kHello, &s).is_ok());
  REQUIRE(t.decode_token(kHello, kWorld, &s).is_ok());
  REQUIRE(t.decode_token(kWorld, kIng, &s).is_ok());
  CHECK(s == "hello worlding");
  s.clear();
  REQUIRE(t.decode_token(kCls, kPlay, &s).is_ok());
  CHECK(s == "play");
}

TEST_CASE("wordpiece: the space clean-up, pass by pass") {
  auto clean = [](std::string s, size_t from = 0) {
    wordpiece_clean_up_spaces(&s, from);
    return s;
  };
  CHECK(clean("a . b , c ! d ? e") == "a. b, c! d? e");
  CHECK(clean("x ' y ' z") == "x'y'z");
  CHECK(clean("a ' ' b") == "a'' b");  // a space taken once is not taken again
  CHECK(clean("I 'm we 're you 've he 's") == "I'm we're you've he's");
  CHECK(clean("do 't I 'd you 'll") == "do 't I 'd you 'll");
  CHECK(clean("a . b .", 2) == "a . b.");  // only from `from` on
  CHECK(clean(" .") == ".");
  CHECK(clean("") == "");
  CHECK(clean("caf\u00E9 !") == "caf\u00E9!");
}

TEST_CASE("wordpiece: create refuses merges, a pre-tokenizer and a missing unk") {
  Vocab v = small_vocab();
  v.unk_id = -1;
  Status s = Tokenizer::create(v).status();
  CHECK(s.code() == EMBER_ERR_BAD_TOKENIZER);
  CHECK(s.message().find("unk_id = -1") != std::string::npos);
  v = small_vocab();
  v.pre = "bert-bge";
  s = Tokenizer::create(v).status();
  CHECK(s.code() == EMBER_ERR_BAD_TOKENIZER);
  CHECK(s.message().find("'bert-bge' on a WordPiece vocabulary") != std::string::npos);
  v = small_vocab();
  v.merges = {"a b"};
  s = Tokenizer::create(v).status();
  CHECK(s.code() == EMBER_ERR_BAD_TOKENIZER);
  CHECK(s.message().find("1 merges") != std::string::npos);
}

TEST_CASE("wordpiece: hostile input: invalid UTF-8, huge words, empty text") {
  const Tokenizer t = small();
  // Bytes that are not UTF-8 are dropped (llama.cpp reads each as U+FFFD).
  CHECK(ids(t, "hel\xFFlo") == Ids{kHello});
  CHECK(ids(t, "hello\xC3") == Ids{kHello});
  CHECK(ids(t, "\xED\xA0\x80").empty());  // a surrogate
  CHECK(ids(t, "\xF4\x90\x80\x80").empty());  // past U+10FFFF
  CHECK(ids(t, "").empty());
  CHECK(ids(t, " \t\n ").empty());
  // A 1 MiB word: cut, or one unk; a 1 MiB run of punctuation: a word each.
  const auto start = std::chrono::steady_clock::now();
  const Ids as = ids(t, std::string(1 << 20, 'a'));
  REQUIRE(as.size() == 1 + ((1 << 20) - 2) / 2);  // "▁aa", then "aa" to the end
  CHECK(as.front() == kAA);
  CHECK(ids(t, std::string(1 << 20, 'q')) == Ids{kUnk});
  CHECK(ids(t, std::string(1 << 20, '!')).size() == (1u << 20));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 20.0);
  // Random bytes: never an error, every id a piece.
  std::mt19937 rng(46);
  std::string noise(1 << 16, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::vector<int32_t> out;
  REQUIRE(t.encode(noise, EncodeOptions{true, true, true}, &out).is_ok());
  for (int32_t id : out) CHECK((id >= 0 && id < kCount));
  std::string text;
  CHECK(t.decode(out.data(), out.size(), &text).is_ok());
}

TEST_CASE("wordpiece: the generated Unicode tables") {
  CHECK(unicode_canonical_base(0xC9) == 'E');
  CHECK(unicode_canonical_base(0x1EC7) == 'e');   // ệ: two marks
  CHECK(unicode_canonical_base(0xFA10) == 0x585A);  // a compatibility ideograph
  CHECK(unicode_canonical_base(0xAC01) == 0x1100);  // a Hangul syllable: its first jamo
  CHECK(unicode_canonical_base('a') == 'a');
  CHECK(unicode_simple_lowercase('A') == 'a');
  CHECK(unicode_simple_lowercase(0x130) == 'i');
  CHECK(unicode_simple_lowercase(0x100) == 0x101);   // a run of step 2
  CHECK(unicode_simple_lowercase(0x101) == 0x101);
  CHECK(unicode_simple_lowercase(0x10400) == 0x10428);  // Deseret
  CHECK(unicode_simple_lowercase(0x4E2D) == 0x4E2D);
  CHECK(is_unicode_control(0x7F));
  CHECK(is_unicode_control(0x200B));   // Cf
  CHECK(is_unicode_control(0xE000));   // Co
  CHECK_FALSE(is_unicode_control('a'));
  CHECK_FALSE(is_unicode_control(0x378));  // unassigned (Cn) is not a control
  MESSAGE("Unicode tables: " << std::string(unicode_tables_version()));
}

TEST_CASE("wordpiece: bert-bge from GGUF: CLS and SEP, its vectors, and decoding") {
  const std::string dir = test::require_llama_vocab_dir();
  if (dir.empty()) return;
  Vocab v;
  auto t = bge(dir, &v);
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  CHECK(v.kind == TokenizerKind::WordPiece);
  CHECK(v.bos_id == 101);
  CHECK(v.eos_id == 102);
  CHECK(v.unk_id == 100);
  CHECK(v.pad_id == 0);
  CHECK((v.add_bos && v.add_eos && v.lowercase && v.strip_accents));
  CHECK(v.pre.empty());
  check_bge_vectors(*t, dir);
  EncodeOptions o{true, true, true};
  CHECK(ids(*t, "Hello world", o) == Ids{101, 7592, 2088, 102});
  CHECK(ids(*t, "[CLS] Hello [SEP]", EncodeOptions{false, false, true}) == Ids{101, 7592, 102});
  CHECK(decoded(*t, {101, 7592, 1010, 2088, 999, 102}) == "hello, world!");
}

TEST_CASE("wordpiece: bert-bge survives .ember and GGUF round trips") {
  const std::string dir = test::require_llama_vocab_dir();
  if (dir.empty()) return;
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  auto m = make_synthetic(shape, DType::F32, 7, dir + "/ggml-vocab-bert-bge.gguf");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  ModelSpec& spec = m.value()->spec;
  REQUIRE(spec.vocab.kind == TokenizerKind::WordPiece);
  const std::string tmp = test::temp_dir("wordpiece");
  // .ember: the kind, the ids, and the normalizer flags (off here, so the
  // file carries them) come back.
  REQUIRE(write_model(spec, tmp + "/bge.ember").is_ok());
  auto file = ModelFile::open(tmp + "/bge.ember", ModelFile::Options{});
  REQUIRE_MESSAGE(file.is_ok(), file.status().message());
  const Vocab& back = file.value()->vocab();
  CHECK(back.kind == TokenizerKind::WordPiece);
  CHECK(back.pieces == spec.vocab.pieces);
  CHECK((back.bos_id == 101 && back.eos_id == 102 && back.unk_id == 100 && back.add_eos));
  auto t = Tokenizer::create(back);
  REQUIRE(t.is_ok());
  check_bge_vectors(*t, dir);
  spec.vocab.lowercase = false;
  spec.vocab.strip_accents = false;
  REQUIRE(write_model(spec, tmp + "/bge-cased.ember").is_ok());
  auto cased = ModelFile::open(tmp + "/bge-cased.ember", ModelFile::Options{});
  REQUIRE(cased.is_ok());
  CHECK_FALSE(cased.value()->vocab().lowercase);
  CHECK_FALSE(cased.value()->vocab().strip_accents);
  // GGUF: written as "bert" with llama.cpp's keys, read back the same.
  REQUIRE(write_gguf(spec, tmp + "/bge.gguf").is_ok());
  const std::string bytes = test::read_text_file(tmp + "/bge.gguf");
  auto g = GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  REQUIRE(g.is_ok());
  CHECK(g.value().get_string("tokenizer.ggml.model").value() == "bert");
  auto gv = vocab_from_gguf(g.value());
  REQUIRE(gv.is_ok());
  CHECK(gv.value().pieces == spec.vocab.pieces);
  CHECK(gv.value().types == spec.vocab.types);
  CHECK((gv.value().bos_id == 101 && gv.value().eos_id == 102 && gv.value().unk_id == 100));
  CHECK_FALSE(gv.value().lowercase);
  CHECK_FALSE(gv.value().strip_accents);
}

TEST_CASE("wordpiece: ember_embed_tokenize gives [CLS] ... [SEP], `ember tokenize` reads bert GGUF") {
  const std::string dir = test::require_llama_vocab_dir();
  if (dir.empty()) return;
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  auto m = make_synthetic(shape, DType::F32, 7, dir + "/ggml-vocab-bert-bge.gguf");
  REQUIRE(m.is_ok());
  const std::string path = test::temp_dir("wordpiece") + "/bge-embed.ember";
  REQUIRE(write_model(m.value()->spec, path).is_ok());
  ember_model* model = nullptr;
  REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK, ember_last_error());
  int32_t out[16];
  size_t n = 0;
  const char text[] = "Hello, world!";
  REQUIRE(ember_embed_tokenize(model, text, sizeof text - 1, out, 16, &n) == EMBER_OK);
  CHECK(Ids(out, out + n) == Ids{101, 7592, 1010, 2088, 999, 102});
  ember_model_free(model);

  const test::CliRun r =
      test::run_ember("tokenize " + dir + "/ggml-vocab-bert-bge.gguf --text 'Hello world'");
  REQUIRE(r.code == 0);
  CHECK(r.out == "7592 2088\n");
  const test::CliRun info = test::run_ember("info " + path);
  REQUIRE(info.code == 0);
  CHECK(info.out.find("tokenizer    wordpiece, 30522 pieces") != std::string::npos);
}

}  // TEST_SUITE
}  // namespace ember

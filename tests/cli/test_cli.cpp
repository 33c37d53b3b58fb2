// The `ember` command as a user meets it: exit codes, one-line errors that
// start with the status name, tokenize against the conformance vectors,
// info, demo without test data, and seeds that give the same text for any
// thread count.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "model/stories_fixture.h"
#include "test_data.h"

namespace {

using Run = ember::test::CliRun;

Run run(const std::string& args) { return ember::test::run_ember(args); }

std::vector<std::string> split_tests(const std::string& text, const std::string& sep) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (true) {
    const size_t next = text.find(sep, at);
    parts.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + sep.size();
  }
  return parts;
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("errors exit non-zero with one stderr line starting with the status name") {
  struct Case {
    std::string args;
    std::string status;
  };
  const std::string dir = ember::test::temp_dir("cli");
  { FILE* f = std::fopen((dir + "/garbage.ember").c_str(), "wb"); std::fputs("not a model at all", f); std::fclose(f); }
  const Case cases[] = {
      {"run -m /nonexistent/model.ember -p hi", "EMBER_ERR_IO"},
      {"run -m " + dir + "/garbage.ember -p hi", "EMBER_ERR_FORMAT"},
      {"run -p hi", "EMBER_ERR_INVALID_ARGUMENT"},
      {"run -m x.ember --temp nan", "EMBER_ERR_INVALID_ARGUMENT"},
      {"run -m x.ember --top-p 2", "EMBER_ERR_INVALID_ARGUMENT"},
      {"run -m x.ember --kv-type q4", "EMBER_ERR_INVALID_ARGUMENT"},
      {"run -m x.ember --bogus", "EMBER_ERR_INVALID_ARGUMENT"},
      {"convert /nonexistent.bin -o x.ember --tokenizer t.bin", "EMBER_ERR_IO"},
      {"convert " + dir + "/garbage.ember -o " + dir + "/out.ember", "EMBER_ERR_INVALID_ARGUMENT"},
      {"info /nonexistent.ember", "EMBER_ERR_IO"},
      {"tokenize /nonexistent.gguf --text hi", "EMBER_ERR_IO"},
      {"frobnicate", "EMBER_ERR_INVALID_ARGUMENT"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Run r = run(c.args);
    CHECK(r.code != 0);
    CHECK(r.err.rfind(c.status + ": ", 0) == 0);
    CHECK(r.err.find(c.status + ": ") == r.err.rfind(c.status + ": "));  // one error line
  }
}

TEST_CASE("tokenize: GGUF vocabularies give the conformance ids") {
  for (const char* name : {"ggml-vocab-llama-spm", "ggml-vocab-gpt-2"}) {
    CAPTURE(name);
    const std::string gguf = ember::test::test_data(std::string("vocab/") + name + ".gguf");
    if (gguf.empty()) return;
    const auto inputs = split_tests(ember::test::read_text_file(gguf + ".inp"), "\n__ggml_vocab_test__\n");
    std::istringstream expected(ember::test::read_text_file(gguf + ".out"));
    // Spot-check through the CLI (the library suite checks every vector).
    std::string line;
    for (size_t i = 0; i < 6 && std::getline(expected, line); ++i) {
      const std::string file = ember::test::temp_dir("cli") + "/input.txt";
      FILE* f = std::fopen(file.c_str(), "wb");
      std::fwrite(inputs[i].data(), 1, inputs[i].size(), f);
      std::fclose(f);
      const Run r = run("tokenize " + gguf + " --file " + file);
      REQUIRE(r.code == 0);
      std::string got = r.out;
      while (!got.empty() && got.back() == '\n') got.pop_back();
      while (!line.empty() && line.back() == ' ') line.pop_back();
      while (!line.empty() && line.front() == ' ') line.erase(line.begin());
      CHECK(got == line);
    }
  }
}

TEST_CASE("backends lists every entry's probe: the cpu available with its memory, vulkan present or why not") {
  const Run r = run("backends");
  REQUIRE(r.code == 0);
  const std::vector<std::string> lines = split_tests(r.out, "\n");
  REQUIRE(lines.size() > 2);
  CHECK(lines[0].find("device type") != std::string::npos);
  CHECK(lines[1].rfind("cpu ", 0) == 0);
  CHECK(lines[1].find("available") != std::string::npos);
  CHECK(lines[1].find("GiB") != std::string::npos);
  CHECK(lines[2].rfind("vulkan ", 0) == 0);  // a probe row, or "absent" when not built
  CHECK(r.out.find("--backend auto picks") != std::string::npos);
}

TEST_CASE("info shows hyper-parameters, tokenizer, every tensor with its type, provenance and digest") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  const Run r = run("info " + model + " --verify-digest");
  REQUIRE(r.code == 0);
  for (const char* needle : {"dim 64", "hidden 172", "layers 5", "heads 8", "kv-heads 4", "vocab 512",
                             "sentencepiece", "stories260K.bin", "(verified)", "blk.4.ffn_down.weight", "f32"}) {
    CHECK_MESSAGE(r.out.find(needle) != std::string::npos, needle);
  }
}

TEST_CASE("the same seed gives the same text across runs and thread counts") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  const std::string args = "run -m " + model + " -p 'Lily had a' -n 60 --temp 0.9 --top-k 40 --top-p 0.95 --seed 11";
  const Run one = run(args + " --threads 1");
  const Run two = run(args + " --threads 2");
  const Run again = run(args + " --threads 1");
  REQUIRE(one.code == 0);
  CHECK(one.out == two.out);
  CHECK(one.out == again.out);
  const Run other = run("run -m " + model + " -p 'Lily had a' -n 60 --temp 0.9 --top-k 40 --top-p 0.95 --seed 12");
  CHECK(other.out != one.out);
}

TEST_CASE("run: the timing line on stderr starts on its own line after the text") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  // stdout and stderr into one pipe: stdout is fully buffered there, so the
  // text's final newline must be flushed before the timings are written.
  Run r;
  {
    FILE* p = popen((std::string(EMBER_CLI_PATH) + " run -m " + model + " -p 'Lily had a' -n 12 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  REQUIRE(r.code == 0);
  const size_t at = r.out.find("load ");
  REQUIRE(at != std::string::npos);
  REQUIRE(at > 0);
  CHECK(r.out[at - 1] == '\n');
  CHECK(r.out.find("tokens generated") > at);
  CHECK(r.out.back() == '\n');
  // Without 2>&1, stdout is the prompt and the text, then one newline.
  const Run plain = run("run -m " + model + " -p 'Lily had a' -n 12");
  REQUIRE(plain.code == 0);
  CHECK(plain.out.rfind("Lily had a", 0) == 0);
  CHECK(plain.out.back() == '\n');
  CHECK(plain.out.find("load ") == std::string::npos);
  CHECK(plain.err.find("12 tokens generated") != std::string::npos);
}

TEST_CASE("run: --stop ends the text before the first stop string, which is never printed") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  const std::string base = "run -m " + model + " -p 'Lily had a' -n 40";
  const Run plain = run(base);
  REQUIRE(plain.code == 0);
  REQUIRE(plain.out.rfind("Lily had a", 0) == 0);
  const std::string text = plain.out.substr(10, plain.out.size() - 11);  // without the prompt and the newline
  REQUIRE(text.size() > 30);
  std::string stop = text.substr(20, 5);
  REQUIRE(stop.find('\'') == std::string::npos);
  const Run r = run(base + " --stop never-there --stop '" + stop + "'");
  REQUIRE(r.code == 0);
  CHECK(r.out == "Lily had a" + text.substr(0, text.find(stop)) + "\n");
  const Run empty = run(base + " --stop ''");
  CHECK(empty.code != 0);
  CHECK(empty.err.find("EMBER_ERR_INVALID_ARGUMENT: ") != std::string::npos);
  CHECK(empty.err.find("stop_strings[0] is empty") != std::string::npos);
}

TEST_CASE("run: --verify-digest and --dump-logits go through ember_generate") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  const std::string dir = ember::test::temp_dir("cli-run");
  const Run r = run("run -m " + model + " -p 'Lily had a' -n 4 --verify-digest --dump-logits " + dir + "/logits.txt");
  REQUIRE(r.code == 0);
  const Run plain = run("run -m " + model + " -p 'Lily had a' -n 4");
  CHECK(r.out == plain.out);
  std::istringstream in(ember::test::read_text_file(dir + "/logits.txt"));
  int lines = 0;
  std::string line;
  while (std::getline(in, line)) ++lines;
  CHECK(lines == 512);  // stories260K's vocabulary
  // A context too small for the text: stopping is not an error, and says so.
  const Run full = run("run -m " + model + " -p 'Lily had a' -n 40 --ctx 8");
  CHECK(full.code == 0);
  CHECK(full.err.find("[context full at 8 positions") != std::string::npos);
  const Run shifted = run("run -m " + model + " -p 'Lily had a' -n 40 --ctx 8 --context-shift");
  CHECK(shifted.code == 0);
  CHECK(shifted.err.find("context full") == std::string::npos);
  CHECK(shifted.out.size() > full.out.size());
}

TEST_CASE("draft model flags: run, chat and plan take one, another vocabulary is refused naming it, serve too") {
  const std::string model = ember::test::stories_model("llama2c");
  if (model.empty()) return;
  const std::string dir = ember::test::temp_dir("cli-draft");
  // The same model drafts: greedy, every draft kept, the same text.
  const Run plain = run("run -m " + model + " -p 'Lily had a' -n 40");
  const Run drafted = run("run -m " + model + " -p 'Lily had a' -n 40 --draft " + model + " --draft-max 3");
  REQUIRE(plain.code == 0);
  REQUIRE(drafted.code == 0);
  CHECK(drafted.out == plain.out);
  CHECK(drafted.err.find("draft: ") != std::string::npos);
  CHECK(drafted.err.find("accepted (100%)") != std::string::npos);
  const Run both = run("run -m " + model + " -p x --draft " + model + " --lookup");
  CHECK(both.code != 0);
  CHECK(both.err.find("--draft and --lookup") != std::string::npos);
  // chat: the same replies with the draft as without.
  {
    std::ofstream f(dir + "/turns.txt");
    f << "Tell me about Lily\nAnd then?\n/quit\n";
  }
  const Run chat = run("chat -m " + model + " -n 16 < " + dir + "/turns.txt");
  const Run chat_drafted = run("chat -m " + model + " -n 16 --draft " + model + " < " + dir + "/turns.txt");
  REQUIRE(chat.code == 0);
  REQUIRE(chat_drafted.code == 0);
  CHECK(chat_drafted.out == chat.out);
  CHECK(chat_drafted.err.find("draft: ") != std::string::npos);
  // plan: the draft's session planned beside the target's, both counted.
  const Run plan = run("plan -m " + model + " --ctx 128 --draft " + model + " --json");
  REQUIRE(plan.code == 0);
  auto number = [&](const std::string& text, const std::string& key, size_t from = 0) -> long long {
    const size_t at = text.find("\"" + key + "\": ", from);
    REQUIRE(at != std::string::npos);
    return std::stoll(text.substr(at + key.size() + 4));
  };
  const size_t draft_at = plan.out.find("\"draft\": {");
  REQUIRE(draft_at != std::string::npos);
  const long long target_private = number(plan.out, "private_bytes");
  const long long draft_private = number(plan.out, "private_bytes", draft_at);
  CHECK(draft_private > 0);
  CHECK(number(plan.out, "total_private_bytes") == target_private + draft_private);
  const Run tight = run("plan -m " + model + " --ctx 128 --draft " + model + " --max-bytes " +
                        std::to_string(target_private + draft_private / 2));
  REQUIRE(tight.code == 0);
  CHECK(tight.out.find("DOES NOT FIT") != std::string::npos);
  // Another vocabulary: refused by run and chat at start, and by serve before it listens.
  const std::string foreign = dir + "/builtin-vocab.ember";
  REQUIRE(run("synth --shape tiny --vocab builtin -o " + foreign).code == 0);
  for (const std::string& cmd : {"run -m " + model + " -p x --draft " + foreign,
                                 "chat -m " + model + " --draft " + foreign + " < /dev/null",
                                 "serve -m " + model + " --port 0 --draft " + foreign}) {
    CAPTURE(cmd);
    const Run r = run(cmd);
    CHECK(r.code != 0);
    CHECK(r.err.find("EMBER_ERR_INVALID_ARGUMENT") != std::string::npos);
    CHECK(r.err.find("vocabulary") != std::string::npos);
    CHECK(r.out.find("listening") == std::string::npos);
  }
}

TEST_CASE("demo generates with a synthetic model when there is no test data, and says so") {
  const std::string dir = ember::test::temp_dir("cli-demo");
  const Run r = run("demo --out " + dir + " -n 8");
  // With EMBER_TEST_DATA pointing nowhere, demo must make its own model.
  const std::string cmd = std::string("EMBER_TEST_DATA=") + dir + "/none " + EMBER_CLI_PATH + " demo --out " + dir +
                          " -n 8 2>" + dir + "/err >" + dir + "/out";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(ember::test::read_text_file(dir + "/err").find("SYNTHETIC") != std::string::npos);
  CHECK(!ember::test::read_text_file(dir + "/out").empty());
  CHECK(r.code == 0);
}

}  // TEST_SUITE

TEST_CASE("plan --embeddings: an encoder is planned as an embedding session, and refused without one") {
  const std::string dir = ember::test::temp_dir("cli-embed-plan");
  const std::string bert = dir + "/tiny-bert.ember";
  REQUIRE(run("synth --shape tiny --arch bert -o " + bert).code == 0);
  const Run logits = run("plan -m " + bert);
  CHECK(logits.code != 0);
  CHECK(logits.err.find("embeddings") != std::string::npos);
  const Run plan = run("plan -m " + bert + " --embeddings --seqs 4 --ctx 64 --json");
  REQUIRE(plan.code == 0);
  CHECK(plan.out.find("\"embeddings\": true") != std::string::npos);
  CHECK(plan.out.find("\"n_seqs\": 4") != std::string::npos);
  // ember embed runs it (one vector of the model's 64 floats per input).
  const Run emb = run("embed -m " + bert + " -p 'Lily had a' -p 'a cat' --json");
  REQUIRE(emb.code == 0);
  CHECK(emb.out.find("\"index\": 1") != std::string::npos);
  CHECK(run("plan -m " + bert + " --embeddings --lookup").code != 0);
}

TEST_CASE("embed with a reranker: query<TAB>document lines give one score each, /v1/rerank's JSON, and a line without a tab is refused") {
  const std::string dir = ember::test::temp_dir("cli-rerank");
  const std::string model = dir + "/tiny-reranker.ember";
  REQUIRE(run("synth --shape tiny --arch bert-reranker -o " + model).code == 0);
  {
    std::FILE* f = std::fopen((dir + "/pairs.txt").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("a cat\tLily had a cat\na cat\tthe sun\nthe sun\tthe sun\n", f);
    std::fclose(f);
  }
  const Run text = run("embed -m " + model + " -f " + dir + "/pairs.txt");
  REQUIRE(text.code == 0);
  int lines = 0;
  for (char c : text.out) lines += c == '\n';
  CHECK(lines == 3);
  CHECK(text.err.find("rank pooling") != std::string::npos);
  const Run json = run("embed -m " + model + " -f " + dir + "/pairs.txt --json");
  REQUIRE(json.code == 0);
  CHECK(json.out.find("\"relevance_score\"") != std::string::npos);
  CHECK(json.out.find("\"index\": 2") != std::string::npos);
  // The same pair scores the same, whatever its neighbours.
  const Run one = run("embed -m " + model + " -p 'the sun\tthe sun'");
  REQUIRE(one.code == 0);
  CHECK(text.out.substr(text.out.rfind('\n', text.out.size() - 2) + 1) == one.out);
  const Run bad = run("embed -m " + model + " -p 'no tab'");
  CHECK(bad.code != 0);
  CHECK(bad.err.find("query<TAB>document") != std::string::npos);
  // A model without a classifier head cannot rank.
  const std::string bert = dir + "/tiny-bert.ember";
  REQUIRE(run("synth --shape tiny --arch bert -o " + bert).code == 0);
  const Run no_head = run("embed -m " + bert + " --pooling rank -p 'a\tb'");
  CHECK(no_head.code != 0);
  CHECK(no_head.err.find("classifier head") != std::string::npos);
}

// `ember run|perplexity|bench -m FILE.gguf`: converted once into the cache
// (EMBER_CACHE_DIR, a temp folder here: never the user's cache), reused,
// replaced when corrupt, listed and cleared by `ember cache`.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "test_data.h"

namespace {

using ember::test::run_ember;
namespace fs = std::filesystem;

std::vector<std::string> cached_models(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".ember") == 0) out.push_back(e.path().string());
  }
  return out;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("run -m FILE.gguf converts once into EMBER_CACHE_DIR, then uses the cache") {
  const std::string gguf = ember::test::test_data("models/stories260K-f32.gguf");
  if (gguf.empty()) return;
  const std::string dir = ember::test::temp_dir("cli-cache");
  const std::string cache = dir + "/cache";
  fs::remove_all(cache);
  // Not named .gguf: GGUF is recognised by its magic.
  const std::string model = dir + "/downloaded.bin";
  fs::copy_file(gguf, model, fs::copy_options::overwrite_existing);
  const std::string env = "EMBER_CACHE_DIR=" + cache;
  const std::string args = " -p 'Once upon a time' -n 24";

  const auto first = run_ember("run -m " + model + args, env);
  REQUIRE(first.code == 0);
  CHECK(first.err.find("converted " + model + " -> " + cache + "/") != std::string::npos);
  CHECK(first.err.find("ember cache clear") != std::string::npos);
  const std::vector<std::string> entries = cached_models(cache);
  REQUIRE(entries.size() == 1);
  // Keyed by the GGUF file's SHA-256 (shared/README.md lists it).
  CHECK(fs::path(entries[0]).filename().string().rfind(
            "047bf46455a544931cff6fef14d7910154c56afbc23ab1c5e56a72e69912c04b.", 0) == 0);

  const auto second = run_ember("run -m " + model + args, env);
  REQUIRE(second.code == 0);
  CHECK(second.err.find("converted") == std::string::npos);
  CHECK(second.err.find("using the cache") != std::string::npos);
  CHECK(second.out == first.out);
  CHECK(cached_models(cache) == entries);
  // The same as running the converted file directly.
  const auto direct = run_ember("run -m " + entries[0] + args, env);
  REQUIRE(direct.code == 0);
  CHECK(direct.out == first.out);
  CHECK(direct.err.find("cache") == std::string::npos);

  // perplexity and bench take the GGUF file too, from the cache.
  const std::string text = dir + "/text.txt";
  {
    FILE* f = std::fopen(text.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("Once upon a time, there was a little girl named Lily. She liked to play outside.\n", f);
    std::fclose(f);
  }
  const auto ppl = run_ember("perplexity -m " + model + " -f " + text, env);
  CHECK(ppl.code == 0);
  CHECK(ppl.err.find("using the cache") != std::string::npos);
  const auto ppl_direct = run_ember("perplexity -m " + entries[0] + " -f " + text, env);
  CHECK(ppl_direct.code == 0);
  CHECK(ppl.out == ppl_direct.out);
  const auto bench = run_ember("bench -m " + model + " -p 8 -n 4 -r 1", env);
  CHECK(bench.code == 0);
  CHECK(bench.err.find("using the cache") != std::string::npos);

  // `ember cache list` names the entry and its source; `clear` empties it.
  const auto list = run_ember("cache list", env);
  CHECK(list.code == 0);
  CHECK(list.out.find(entries[0]) != std::string::npos);
  CHECK(list.out.find("downloaded.bin") != std::string::npos);
  const auto clear = run_ember("cache clear", env);
  CHECK(clear.code == 0);
  CHECK(clear.out.find("removed 1 file") != std::string::npos);
  CHECK(cached_models(cache).empty());
  const auto again = run_ember("run -m " + model + args, env);
  CHECK(again.code == 0);
  CHECK(again.err.find("converted") != std::string::npos);
  CHECK(again.out == first.out);
  fs::remove_all(dir);
}

TEST_CASE("a corrupt cache entry is converted again, a file beside the cache is left alone") {
  const std::string gguf = ember::test::test_data("models/stories260K-f32.gguf");
  if (gguf.empty()) return;
  const std::string dir = ember::test::temp_dir("cli-cache-corrupt");
  const std::string cache = dir + "/cache";
  fs::remove_all(cache);
  const std::string env = "EMBER_CACHE_DIR=" + cache;
  const std::string args = " -p 'Lily had a' -n 12";
  const auto first = run_ember("run -m " + gguf + args, env);
  REQUIRE(first.code == 0);
  const std::vector<std::string> entries = cached_models(cache);
  REQUIRE(entries.size() == 1);
  const auto size = fs::file_size(entries[0]);

  for (const std::string damage : {"truncate", "overwrite"}) {
    CAPTURE(damage);
    if (damage == "truncate") {
      fs::resize_file(entries[0], size / 2);
    } else {
      FILE* f = std::fopen(entries[0].c_str(), "r+b");
      REQUIRE(f != nullptr);
      std::fputs("garbage garbage garbage", f);  // over the framing
      std::fclose(f);
    }
    const auto r = run_ember("run -m " + gguf + args, env);
    REQUIRE(r.code == 0);
    CHECK(r.err.find("fails its checks") != std::string::npos);
    CHECK(count(r.err, "converted ") == 1);
    CHECK(r.out == first.out);
    CHECK(fs::file_size(entries[0]) == size);
    const auto next = run_ember("run -m " + gguf + args, env);
    CHECK(next.err.find("using the cache") != std::string::npos);
    CHECK(next.err.find("converted") == std::string::npos);
  }

  // `cache clear` removes what ember wrote there, nothing else.
  const std::string other = cache + "/notes.txt";
  { FILE* f = std::fopen(other.c_str(), "w"); std::fputs("mine", f); std::fclose(f); }
  const std::string unfinished = entries[0] + ".tmp-abcdef";
  { FILE* f = std::fopen(unfinished.c_str(), "w"); std::fputs("half", f); std::fclose(f); }
  const auto list = run_ember("cache list", env);
  CHECK(list.out.find("unfinished") != std::string::npos);
  CHECK(list.out.find("notes.txt") == std::string::npos);
  const auto clear = run_ember("cache clear", env);
  CHECK(clear.code == 0);
  CHECK(clear.out.find("removed 2 file") != std::string::npos);
  CHECK(fs::exists(other));
  CHECK(!fs::exists(unfinished));
  CHECK(cached_models(cache).empty());
  // A GGUF file that converts but is no model (a vocabulary only): an error
  // naming it, and no entry left behind.
  const std::string vocab = ember::test::test_data("vocab/ggml-vocab-llama-spm.gguf");
  if (!vocab.empty()) {
    const auto r = run_ember("run -m " + vocab + " -p hi -n 2", env);
    CHECK(r.code != 0);
    CHECK(r.err.find("EMBER_ERR_MISSING_TENSOR: " + vocab + ": converted, but the result cannot run") !=
          std::string::npos);
    CHECK(cached_models(cache).empty());
  }
  const auto bad = run_ember("cache frobnicate", env);
  CHECK(bad.code != 0);
  CHECK(bad.err.rfind("EMBER_ERR_INVALID_ARGUMENT: ", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("a GGUF file changed in place is hashed again and converted anew, touched, it finds its entry") {
  const std::string gguf = ember::test::test_data("models/stories260K-f32.gguf");
  if (gguf.empty()) return;
  const std::string dir = ember::test::temp_dir("cli-cache-changed");
  const std::string cache = dir + "/cache";
  fs::remove_all(cache);
  const std::string model = dir + "/model.gguf";
  fs::copy_file(gguf, model, fs::copy_options::overwrite_existing);
  const std::string env = "EMBER_CACHE_DIR=" + cache;
  const std::string args = " -p 'Lily had a' -n 8";
  REQUIRE(run_ember("run -m " + model + args, env).code == 0);
  REQUIRE(cached_models(cache).size() == 1);
  // Its digest is remembered (so a large file is not read at every run).
  size_t memos = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache + "/digests")) ++memos;
  CHECK(memos == 1);

  // A new modification time, the same bytes: the same entry.
  fs::last_write_time(model, fs::last_write_time(model) + std::chrono::seconds(5));
  const auto touched = run_ember("run -m " + model + args, env);
  CHECK(touched.code == 0);
  CHECK(touched.err.find("using the cache") != std::string::npos);
  CHECK(cached_models(cache).size() == 1);

  // The last byte is part of the last tensor's data: another model, another key.
  {
    FILE* f = std::fopen(model.c_str(), "r+b");
    REQUIRE(f != nullptr);
    REQUIRE(std::fseek(f, -1, SEEK_END) == 0);
    const int c = std::fgetc(f);
    REQUIRE(std::fseek(f, -1, SEEK_END) == 0);
    std::fputc(c ^ 0x01, f);
    std::fclose(f);
  }
  const auto changed = run_ember("run -m " + model + args, env);
  CHECK(changed.code == 0);
  CHECK(changed.err.find("converted " + model) != std::string::npos);
  CHECK(cached_models(cache).size() == 2);
  const auto clear = run_ember("cache clear", env);
  CHECK(clear.out.find("removed 2 file") != std::string::npos);
  CHECK(!fs::exists(cache + "/digests"));
  fs::remove_all(dir);
}

TEST_CASE("the cache folder: EMBER_CACHE_DIR, else XDG_CACHE_HOME/ember/models, else HOME/.cache/ember/models") {
  const std::string dir = ember::test::temp_dir("cli-cache-dirs");
  const auto a = run_ember("cache list", "EMBER_CACHE_DIR=" + dir + "/a XDG_CACHE_HOME=" + dir + "/x HOME=" + dir + "/h");
  CHECK(a.code == 0);
  CHECK(a.out.rfind(dir + "/a: 0 file", 0) == 0);
  const auto x = run_ember("cache list", "EMBER_CACHE_DIR= XDG_CACHE_HOME=" + dir + "/x HOME=" + dir + "/h");
  CHECK(x.out.rfind(dir + "/x/ember/models: 0 file", 0) == 0);
  const auto h = run_ember("cache list", "env -u EMBER_CACHE_DIR -u XDG_CACHE_HOME HOME=" + dir + "/h");
  CHECK(h.out.rfind(dir + "/h/.cache/ember/models: 0 file", 0) == 0);
  fs::remove_all(dir);
}

}  // TEST_SUITE

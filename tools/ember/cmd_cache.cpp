// `ember cache list|clear`: the GGUF conversions `ember run|perplexity|bench
// -m FILE.gguf` keep (tools/ember/model_cache.h).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

const char* kCacheHelp =
    "usage: ember cache list|clear\n"
    "  `ember run|perplexity|bench -m FILE.gguf` converts a GGUF file once into an .ember file in the\n"
    "  cache, keyed by the file's SHA-256 and this ember's version, and runs that.\n"
    "  list   the cached models: size, the GGUF file they came from, path\n"
    "  clear  delete every cached model (and unfinished conversions)\n"
    "  The folder: $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember/models, else ~/.cache/ember/models.\n";

int parse_cache(int argc, char** argv, std::string* action) {
  Args args(argc, argv, {});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kCacheHelp, stdout);
    return 0;
  }
  args.check_known({});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember cache --help)");
  const auto& pos = args.positionals();
  if (pos.size() != 1 || (pos[0] != "list" && pos[0] != "clear")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected `ember cache list` or `ember cache clear` (see ember cache --help)");
  }
  *action = pos[0];
  return kRun;
}

int report_list(const std::string& dir, const std::vector<CacheEntry>& entries) {
  uint64_t total = 0;
  size_t models = 0, memos = 0;
  for (const CacheEntry& e : entries) {
    total += e.memo ? 0 : e.bytes;
    (e.memo ? memos : models)++;
  }
  std::printf("%s: %zu file(s), %.1f MB\n", dir.c_str(), models, total / 1e6);
  for (const CacheEntry& e : entries) {
    if (e.memo) continue;
    std::string what = e.source_file.empty() ? "(unreadable: converted again when next used)" : "from " + e.source_file;
    if (e.temporary) what = "(an unfinished conversion: never used)";
    else if (!e.current) what += " (made by another ember version: not used by this one)";
    std::printf("%10.1f MB  %s  %s\n", e.bytes / 1e6, what.c_str(), e.path.c_str());
  }
  if (memos) std::printf("(and %zu remembered GGUF digest(s) in %s/digests)\n", memos, dir.c_str());
  return 0;
}

// Deletes every entry (the remembered digests counted apart: not models),
// then the digests folder when empty.
int clear(const std::string& dir, const std::vector<CacheEntry>& entries) {
  size_t removed = 0;
  uint64_t freed = 0;
  int code = 0;
  for (const CacheEntry& e : entries) {
    if (::unlink(e.path.c_str()) == 0) {
      if (e.memo) continue;
      ++removed;
      freed += e.bytes;
    } else {
      code = report(EMBER_ERR_IO, "cannot delete '" + e.path + "'");
    }
  }
  std::printf("removed %zu file(s), %.1f MB, from %s\n", removed, freed / 1e6, dir.c_str());
  ::rmdir((dir + "/digests").c_str());  // when empty
  return code;
}

}  // namespace

int cmd_cache(int argc, char** argv) {
  std::string action;
  if (const int code = parse_cache(argc, argv, &action); code != kRun) return code;
  std::string dir, error;
  std::vector<CacheEntry> entries;
  ember_status st = model_cache_dir(&dir, &error);
  if (st == EMBER_OK) st = list_cache(dir, /*with_sources=*/action == "list", &entries, &error);
  if (st != EMBER_OK) return report(st, error);
  return action == "list" ? report_list(dir, entries) : clear(dir, entries);
}

}  // namespace ember::cli

// The conversion cache: `ember run|perplexity|bench -m FILE.gguf` converts a
// GGUF file once into an .ember file kept in a cache folder, keyed by the
// GGUF file's SHA-256 and this ember's version and schema, and runs that.
// docs/decisions.md ("Running a GGUF file: the conversion cache") says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember.h"

namespace ember::cli {

// The cache folder: $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember/models,
// else $HOME/.cache/ember/models (not created here). An error when none of
// them is set (EMBER_ERR_INVALID_ARGUMENT, the message in *error).
ember_status model_cache_dir(std::string* dir, std::string* error);

// What the cache holds: converted models (`<sha256>.<tag>.ember`), the
// temporary files of conversions in progress or interrupted, and the
// remembered digests of GGUF files (`digests/`, so a big file is not hashed
// at every run).
struct CacheEntry {
  std::string path;
  uint64_t bytes = 0;
  bool temporary = false;   // an unfinished write (never opened as a model)
  bool memo = false;        // a remembered digest (digests/), not a model
  bool current = false;     // made by this ember (its tag); older ones are never used
  std::string source_file;  // the GGUF file's name, from the model's provenance ("" if unreadable
                            // or not asked for)
};
// Every entry, sorted by path; with_sources: open each model for its
// source_file. Errors: EMBER_ERR_IO (the folder cannot be read).
ember_status list_cache(const std::string& dir, bool with_sources, std::vector<CacheEntry>* out,
                        std::string* error);

// Opens `path` for run, perplexity and bench. A GGUF file (recognised by its
// magic, not its name) is replaced by its cached conversion, converted first
// when there is none (stderr says which, and where); a cached file that
// fails the loader's checks is deleted and converted again, once. Anything
// else is opened as it is. On failure prints the error (report()) and
// returns the exit code; 0 and *out_model on success. `options` as for
// ember_model_open.
int open_model_for_cli(const std::string& path, const ember_model_options* options, ember_model** out_model,
                       std::string* opened_path = nullptr);

}  // namespace ember::cli

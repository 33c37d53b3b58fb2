// The run steps of `ember convert` and `ember synth` (tools/ember/
// cmd_convert.cpp) for the commands that make a model file on their way:
// `ember demo`, and the cache `ember run -m FILE.gguf` converts into
// (model_cache.cpp). Errors: an ember_status and the message in *error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember.h"

namespace ember::cli {

// `ember convert IN -o OUT.ember [--tokenizer T] [--dtype D] [--layout L]`.
struct ConvertRequest {
  std::string input;      // a GGUF file (by its magic) or a llama2.c checkpoint
  std::string tokenizer;  // the checkpoint's tokenizer.bin
  std::string output;
  std::string type;       // re-type the weights to this; "" keeps the source's
  std::string layout = "rows16";
};

struct ConvertOutcome {
  std::string quantize_report;  // what re-typing did ("" without a type), for stderr
  size_t tensors = 0;
  uint64_t weight_bytes = 0;
  std::string quantization;     // the recipe recorded
  size_t vocab_pieces = 0;
  double ms = 0;
};

ember_status run_convert(const ConvertRequest& request, ConvertOutcome* outcome, std::string* error);

// The .ember bytes of a GGUF file converted with convert's defaults (the
// source's types, rows16): what the cache keeps.
ember_status convert_gguf_to_bytes(const std::string& gguf, std::vector<uint8_t>* bytes, std::string* error);

// The format version conversions write (part of the cache's key).
uint32_t conversion_schema_version();

// `ember synth --shape S -o FILE ...`: a model of a named shape with
// deterministic pseudo-random weights.
struct SynthRequest {
  std::string shape;          // tiny, 110m, 0.5b, 1.1b
  std::string arch = "llama";
  std::string type = "f32";
  std::string vocab;          // a llama2.c tokenizer.bin, or "" for the built-in vocabulary
  uint64_t seed = 42;
  uint32_t head_dim = 0, rope_dims = 0, long_rope_orig = 0, context = 0;  // 0: the shape's
  std::string layout = "rows16";
  std::string output;
  bool gguf = false;          // GGUF v3 instead of .ember
};

struct SynthOutcome {
  uint64_t parameters = 0, weight_bytes = 0;
  size_t vocab_pieces = 0;
  double ms = 0;
};

ember_status run_synth(const SynthRequest& request, SynthOutcome* outcome, std::string* error);

// `ember imatrix`'s file (cmd_imatrix.cpp collects, cmd_convert.cpp writes
// the GGUF llama-quantize --imatrix reads): per matrix the sums of squares
// of its input columns and the rows counted.
struct ImatrixOut {
  struct Entry {
    std::string name;
    std::vector<float> sum_sq;
    double rows = 0;
  };
  std::vector<Entry> entries;
  std::string dataset;  // the calibration text's path
  uint32_t chunks = 0, chunk_size = 0;
};
ember_status write_imatrix_out(const std::string& path, const ImatrixOut& m, std::string* error);

}  // namespace ember::cli

// `ember synth --shape tiny|110m|0.5b|1.1b --dtype TYPE -o FILE
// [--gguf] [--seed N] [--vocab FILE|builtin]`: a model of a named shape with
// deterministic pseudo-random weights (the same seed, the same bytes), as
// .ember or as a GGUF llama.cpp loads, for benchmarks side by side.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/convert/gguf_writer.h"
#include "tools/convert/quantize.h"
#include "tools/convert/synthetic.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// The Llama 2 vocabulary from the shared data directory ($EMBER_TEST_DATA,
// else ../shared beside the current directory or above it), or "".
std::string find_llama2_vocab() {
  const std::string rel = "/models/llama2-tokenizer.bin";
  if (const char* d = std::getenv("EMBER_TEST_DATA"); d && *d) {
    return exists(d + rel) ? d + rel : "";
  }
  for (const char* c : {"../shared", "../../shared", "../../../shared"}) {
    if (exists(c + rel)) return c + rel;
  }
  return "";
}

const char* kSynthHelp =
    "usage: ember synth --shape tiny|110m|0.5b|1.1b -o FILE [--dtype TYPE] [--gguf]\n"
    "                   [--arch llama|llama3|qwen2|qwen3|phi3|gemma2|gemma3] [--head-dim N] [--rope-dims N]\n"
    "                   [--longrope ORIG] [--context N] [--seed N] [--vocab FILE|builtin] [--layout rows16|row-major]\n"
    "  deterministic pseudo-random weights of a named shape (norms f32), for tests and benchmarks:\n"
    "    tiny  dim 64,   hidden 192,  2 layers,  4 heads,  2 kv-heads\n"
    "    110m  dim 768,  hidden 2048, 12 layers, 12 heads, 12 kv-heads, vocabulary 32000\n"
    "    0.5b  dim 896,  hidden 4864, 24 layers, 14 heads, 2 kv-heads,  vocabulary 32000\n"
    "    1.1b  dim 2048, hidden 5632, 22 layers, 32 heads, 4 kv-heads,  vocabulary 32000\n"
    "  --dtype T   weight type (default f32): f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl, and for\n"
    "              shapes whose widths are multiples of 256 (110m, 1.1b) q2_k q3_k q4_k q5_k q6_k iq4_xs\n"
    "  --gguf      write GGUF v3 (the family's architecture) that llama.cpp loads, instead of .ember\n"
    "  --arch A    llama (default: llama2-style) or llama3 (theta 500000, tied embeddings, Llama\n"
    "              3.1-style rope_freqs frequency factors) or qwen2 (Q/K/V biases, half-split RoPE,\n"
    "              theta 1000000, tied embeddings) or qwen3 (qwen2 with per-head Q/K RMSNorm for the\n"
    "              biases) or phi3 (half-split RoPE; the GGUF fuses Q/K/V and gate/up) or gemma2 /\n"
    "              gemma3 (GELU FFN, post norms, sqrt(dim) embeddings, a window of 8 on even layers,\n"
    "              heads 2 x dim / heads wide; gemma2: soft-capping; gemma3: Q/K norms, two RoPE\n"
    "              bases, linear factor 8 on global layers)\n"
    "  --head-dim N  attention head width (default dim / heads; Qwen3 and Gemma heads are wider:\n"
    "              queries n_heads * N wide, written as GGUF attention.key_length)\n"
    "  --rope-dims N  partial rotary: RoPE on the first N elements of each head (even, <= the head\n"
    "              width; Phi-4-mini: 96 of 128), written as GGUF rope.dimension_count; GGUF import\n"
    "              takes it for phi3 only (llama.cpp's llama/qwen2/qwen3 assert full rotary)\n"
    "  --longrope ORIG  phi3 only: LongRoPE factors (rope_factors_long/short) with original context\n"
    "              ORIG: sessions with a context > ORIG use the long factors, others the short\n"
    "              ones; attention factor sqrt(1 + ln(context / ORIG) / ln(ORIG)) as llama.cpp's\n"
    "              converter derives it\n"
    "  --context N   the model's training context (default: the shape's)\n"
    "  --seed N    weight seed (default 42): the same seed gives the same bytes\n"
    "  --vocab V   a llama2.c tokenizer.bin, or 'builtin' (a small byte-level vocabulary, padded to\n"
    "              the shape's size); default: models/llama2-tokenizer.bin from the test data\n"
    "              directory ($EMBER_TEST_DATA or ../shared) when present, else builtin\n"
    "  --layout L  .ember only: q8_0/q4_0/q5_0/k-quant/iq4_xs matrices as rows16 (default, for the CPU kernels) or\n"
    "              row-major\n";

}  // namespace

int cmd_synth(int argc, char** argv) {
  Args args(argc, argv,
            {"--shape", "--dtype", "-o", "--seed", "--vocab", "--layout", "--arch", "--head-dim", "--rope-dims", "--longrope",
             "--context"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kSynthHelp, stdout);
    return 0;
  }
  args.check_known({"--shape", "--dtype", "-o", "--seed", "--vocab", "--layout", "--gguf", "--arch", "--head-dim",
                    "--rope-dims", "--longrope", "--context"});
  const int64_t seed = args.get_int("--seed", 42, 0, INT64_MAX);
  const int64_t head_dim = args.get_int("--head-dim", 0, 0, kMaxHeadDim);
  const int64_t rope_dims = args.get_int("--rope-dims", 0, 0, kMaxHeadDim);
  const int64_t longrope = args.get_int("--longrope", 0, 0, kMaxSeqLen);
  const int64_t context = args.get_int("--context", 0, 0, kMaxSeqLen);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember synth --help)");
  if (!args.positionals().empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "unexpected argument '" + args.positionals()[0] + "' (see ember synth --help)");
  }
  if (!args.has("-o")) return report(EMBER_ERR_INVALID_ARGUMENT, "-o FILE is required (see ember synth --help)");
  SynthShape shape;
  const std::string shape_name = args.get("--shape");
  if (!synth_shape(shape_name, &shape)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--shape '" + shape_name + "' is not a shape (tiny, 110m, 0.5b, 1.1b)");
  }
  shape.head_dim = static_cast<uint32_t>(head_dim);
  shape.rope_dims = static_cast<uint32_t>(rope_dims);
  shape.long_rope_orig = static_cast<uint32_t>(longrope);
  if (context) shape.context = static_cast<uint32_t>(context);
  if (head_dim % 2 != 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--head-dim " + std::to_string(head_dim) + " must be even");
  shape.arch = args.get("--arch", "llama");
  if (!synth_arch_known(shape.arch)) {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "--arch '" + shape.arch + "' is not a family (llama, llama3, qwen2, qwen3, phi3, gemma2, gemma3)");
  }
  DType dtype = DType::F32;
  const std::string dtype_arg = args.get("--dtype", "f32");
  if (!dtype_from_name(dtype_arg.c_str(), &dtype)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--dtype '" + dtype_arg + "' is not a type (see ember synth --help)");
  }
  auto layout = parse_layout(args.get("--layout", "rows16"));
  if (!layout.is_ok()) return report(layout.status().code(), layout.status().message());
  std::string vocab = args.get("--vocab");
  if (vocab == "builtin") {
    vocab.clear();
  } else if (vocab.empty()) {
    vocab = find_llama2_vocab();
  } else if (!exists(vocab)) {
    return report(EMBER_ERR_IO, "--vocab '" + vocab + "' does not exist");
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto model = make_synthetic(shape, dtype, static_cast<uint64_t>(seed), vocab);
  if (!model.is_ok()) return report(model.status().code(), model.status().message());
  ModelSpec& spec = model.value()->spec;
  spec.quant_layout = layout.value();
  const std::string out = args.get("-o");
  const bool gguf = args.has("--gguf");
  Status s;
  if (gguf) {
    GgufWriteOptions go;
    go.name = "ember-synthetic-" + shape.arch + "-" + shape.name;
    s = write_gguf(spec, out, go);
  } else {
    s = write_model(spec, out);
  }
  if (!s.is_ok()) return report(s.code(), s.message());
  uint64_t bytes = 0, params = 0;
  for (const auto& t : spec.tensors) {
    bytes += t.size;
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    params += n;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "synth: %s %s, %.1fM parameters, %.2f MB of weights, vocabulary %zu (%s), seed %lld -> '%s' (%s), %.0f ms\n",
               shape.name.c_str(), dtype_name(dtype), params / 1e6, bytes / 1e6, spec.vocab.pieces.size(),
               vocab.empty() ? "built-in" : vocab.c_str(), static_cast<long long>(seed), out.c_str(),
               gguf ? "GGUF v3" : ".ember", ms);
  return 0;
}

}  // namespace ember::cli

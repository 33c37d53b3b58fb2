// The commands that write model files through the conversion library
// (tools/convert/tool_api.h), each as parse / run / report:
//   `ember convert IN -o OUT.ember [--tokenizer FILE] [--dtype T] [--layout L]`
//   `ember quantize IN.ember -o OUT.ember --type PRESET | --dtype T [--gguf]`:
//     re-types the weights of an .ember model (q4_k_m, ...: per-tensor rules,
//     docs/decisions.md "Quantization presets"; norms stay f32; matrices whose
//     rows are not whole blocks of the target keep their float type, said on
//     stderr); --gguf writes GGUF v3 with the same weight bytes instead.
//   `ember synth --shape tiny|110m|0.5b|1.1b --dtype TYPE -o FILE [--gguf]
//     [--seed N] [--vocab FILE|builtin]`: a model of a named shape with
//     deterministic pseudo-random weights (the same seed, the same bytes), as
//     .ember or as a GGUF llama.cpp loads, for benchmarks side by side.
// convert's and synth's run steps are convert_steps.h (demo and the GGUF
// cache make models through them).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/convert/tool_api.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/convert_steps.h"

namespace ember::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// ---- ember convert --------------------------------------------------------------

int parse_convert(int argc, char** argv, ConvertRequest* r) {
  Args args(argc, argv, {"-o", "--tokenizer", "--dtype", "--layout"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember convert IN -o OUT.ember [--tokenizer tokenizer.bin] [--dtype q8_0|q4_0|f16|bf16|f32]\n"
              "                     [--layout rows16|row-major]\n"
              "  IN is a GGUF v2/v3 file (llama architecture) or a llama2.c checkpoint; GGUF weights of types\n"
              "  f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs are copied bit\n"
              "  for bit (any other type is refused, naming the tensor and the type);\n"
              "  a llama2.c checkpoint needs its tokenizer.bin via --tokenizer.\n"
              "  --dtype re-types the weights as `ember quantize` does (default: keep the source's types).\n");
    std::fputs(tools::kLayoutHelp, stdout);
    return 0;
  }
  args.check_known({"-o", "--tokenizer", "--dtype", "--layout"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  if (args.positionals().size() != 1) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected one input file (see ember convert --help)");
  }
  if (!args.has("-o")) return report(EMBER_ERR_INVALID_ARGUMENT, "-o OUT.ember is required");
  std::string error;
  ember_status st = EMBER_OK;
  if (args.has("--dtype") && (st = tools::check_target_type(args.get("--dtype"), &error)) != EMBER_OK) {
    return report(st, error);
  }
  r->layout = args.get("--layout", "rows16");
  if ((st = tools::check_layout(r->layout, &error)) != EMBER_OK) return report(st, error);
  r->input = args.positionals()[0];
  r->output = args.get("-o");
  r->type = args.get("--dtype");
  r->tokenizer = args.get("--tokenizer");
  if (!tools::is_gguf_file(r->input) && !args.has("--tokenizer")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "'" + r->input +
                                                  "' is not GGUF, so it is read as a llama2.c checkpoint, which "
                                                  "needs --tokenizer FILE");
  }
  return kRun;
}

int report_convert(const ConvertRequest& r, const ConvertOutcome& o) {
  std::fprintf(stderr, "converted '%s' -> '%s': %zu tensors, %.2f MB of weights (%s), vocabulary %zu, %.0f ms\n",
               r.input.c_str(), r.output.c_str(), o.tensors, o.weight_bytes / 1e6, o.quantization.c_str(),
               o.vocab_pieces, o.ms);
  return 0;
}

// ---- ember quantize ----------------------------------------------------------------

struct QuantizeRequest {
  std::string input, output;
  std::string preset;  // --type; "" with --dtype
  std::string type;    // --dtype
  std::string layout;
  std::string imatrix;  // --imatrix FILE
  std::string awq;      // --awq FILE
  bool gguf = false;
};

struct QuantizeOutcome {
  std::string report;        // the mixture or what re-typing did, for stderr
  std::string quantization;  // the recipe recorded
  double ms = 0;
};

int parse_quantize(int argc, char** argv, QuantizeRequest* r) {
  Args args(argc, argv, {"-o", "--dtype", "--type", "--layout", "--imatrix", "--awq"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("usage: ember quantize IN.ember -o OUT.ember --type PRESET [--layout rows16|row-major]\n"
                "  PRESET: %s\n"
                "  per-tensor rules by role and layer (docs/decisions.md \"Quantization presets\"); each tensor's\n"
                "  type, the fallbacks and the mixture (bits per weight) are printed on stderr.\n"
                "   or: ember quantize IN.ember -o OUT.ember --dtype q8_0|q4_0|f16|bf16|f32 [--layout ...]\n",
                tools::quant_preset_names());
    std::puts(
              "  matrices become DTYPE (also q4_1 q5_0 q5_1 iq4_nl, and q2_k q3_k q4_k q5_k q6_k iq4_xs);\n"
              "  norms stay f32; a matrix whose rows are not whole blocks of DTYPE (32 elements, 256 for\n"
              "  the k-quants and iq4_xs) keeps its float type (each such tensor is named on stderr).\n"
              "  The recipe is recorded in the file's provenance (ember info shows it).");
    std::fputs(tools::kLayoutHelp, stdout);
    std::puts("  --gguf       write GGUF v3 (the same weight bytes) instead of .ember, for other runtimes");
    std::puts("  --imatrix F  an importance matrix (ember imatrix, or llama-imatrix's GGUF or .dat): each matrix's\n"
              "               scale searches weigh a column's rounding error by its mean squared activation");
    std::puts("  --awq F      activation-aware scaling from an importance matrix's statistics (it may be the\n"
              "               --imatrix file): per group (norm -> q/k/v, norm -> gate/up, v -> output, up -> down)\n"
              "               input columns are scaled by mean-square^(a/2), a searched on the quantized error,\n"
              "               and the preceding norm or matrix divided; one line per group on stderr");
    return 0;
  }
  args.check_known({"-o", "--dtype", "--type", "--layout", "--gguf", "--imatrix", "--awq"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember quantize --help)");
  if (args.positionals().size() != 1) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected one input .ember file (see ember quantize --help)");
  }
  if (!args.has("-o")) return report(EMBER_ERR_INVALID_ARGUMENT, "-o OUT.ember is required");
  if (args.has("--dtype") == args.has("--type")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, std::string("one of --type PRESET (") + tools::quant_preset_names() +
                                                  ") or --dtype TYPE is required");
  }
  const bool use_preset = args.has("--type");
  std::string error;
  ember_status st = tools::check_preset(use_preset ? args.get("--type") : "q8_0", &error);
  if (st == EMBER_OK) st = tools::check_target_type(use_preset ? "f32" : args.get("--dtype"), &error);
  if (st == EMBER_OK) st = tools::check_layout(args.get("--layout", "rows16"), &error);
  if (st != EMBER_OK) return report(st, error);
  r->input = args.positionals()[0];
  r->output = args.get("-o");
  if (r->input == r->output) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "-o '" + r->output + "' is the input file; write a new file");
  }
  r->preset = use_preset ? args.get("--type") : "";
  r->type = args.get("--dtype");
  r->layout = args.get("--layout", "rows16");
  r->gguf = args.has("--gguf");
  r->imatrix = args.get("--imatrix");
  r->awq = args.get("--awq");
  return kRun;
}

void print_progress(const tools::PresetStep& c) {
  std::string shape;
  for (int64_t d : c.shape) {
    if (!shape.empty()) shape += 'x';
    shape += std::to_string(d);
  }
  std::fprintf(stderr, "quantize: [%d/%d] %-28s %-10s %s -> %s", c.index + 1, c.count, c.tensor.c_str(),
               shape.c_str(), c.from.c_str(), c.chosen.c_str());
  if (c.want != c.chosen) {
    std::fprintf(stderr, " (fallback from %s: rows of %lld elements)", c.want.c_str(),
                 static_cast<long long>(c.shape.back()));
  }
  if (c.weighted) std::fputs(" [imatrix]", stderr);
  std::fputc('\n', stderr);
}

void print_awq_line(const std::string& line) { std::fprintf(stderr, "quantize: %s", line.c_str()); }

ember_status run_quantize(const QuantizeRequest& r, QuantizeOutcome* o, std::string* error) {
  const auto t0 = std::chrono::steady_clock::now();
  tools::ModelDraft model;
  ember_status st = model.import_ember(r.input, error);
  if (st != EMBER_OK) return st;
  if (!r.imatrix.empty()) {
    std::string summary;
    st = model.use_imatrix(r.imatrix, &summary, error);
    if (st != EMBER_OK) return st;
    std::fprintf(stderr, "quantize: %s\n", summary.c_str());
  }
  if (!r.awq.empty()) {
    std::string summary;
    st = model.use_awq(r.awq, print_awq_line, &summary, error);
    if (st != EMBER_OK) return st;
    std::fprintf(stderr, "quantize: %s\n", summary.c_str());
  }
  if (!r.preset.empty()) {
    if (const int quantized = model.facts().quantized_tensors) {
      std::fprintf(stderr, "quantize: %d tensors of '%s' are quantized; they are dequantized to f32 first "
                   "(the result carries both roundings)\n", quantized, r.input.c_str());
    }
    st = model.apply_preset(r.preset, print_progress, &o->report, error);
  } else {
    st = model.retype(r.type, &o->report, error);
  }
  if (st == EMBER_OK) st = model.set_layout(r.layout, error);
  if (st == EMBER_OK) st = r.gguf ? model.write_gguf(r.output, "", error) : model.write_ember(r.output, error);
  if (st != EMBER_OK) return st;
  o->ms = ms_since(t0);
  o->quantization = model.facts().quantization;
  return EMBER_OK;
}

int report_quantize(const QuantizeRequest& r, const QuantizeOutcome& o) {
  std::fputs(o.report.c_str(), stderr);
  std::fprintf(stderr, "quantized '%s' -> '%s' in %.0f ms: %s\n", r.input.c_str(), r.output.c_str(), o.ms,
               o.quantization.c_str());
  return 0;
}

// ---- ember synth -------------------------------------------------------------------

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
    "                   [--arch llama|llama3|qwen2|qwen3|phi3|gemma2|gemma3|bert|nomic-bert|bert-reranker]\n"
    "                   [--head-dim N] [--rope-dims N]\n"
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
    "              bases, linear factor 8 on global layers) or bert / nomic-bert (encoders for\n"
    "              embeddings) or bert-reranker (bert with a classifier head, rank pooling)\n"
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
    "  --vocab V   a GGUF file (its whole tokenizer.ggml.* vocabulary, e.g. llama.cpp's\n"
    "              ggml-vocab-qwen2.gguf: 151,936 pieces), a llama2.c tokenizer.bin, or 'builtin' (a\n"
    "              small byte-level vocabulary, padded to the shape's size); default: models/llama2-tokenizer.bin from the test data\n"
    "              directory ($EMBER_TEST_DATA or ../shared) when present, else builtin\n"
    "  --layout L  .ember only: q8_0/q4_0/q5_0/k-quant/iq4_xs matrices as rows16 (default, for the CPU kernels) or\n"
    "              row-major\n";

int parse_synth(int argc, char** argv, SynthRequest* r) {
  Args args(argc, argv,
            {"--shape", "--dtype", "-o", "--seed", "--vocab", "--layout", "--arch", "--head-dim", "--rope-dims", "--longrope",
             "--context"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kSynthHelp, stdout);
    return 0;
  }
  args.check_known({"--shape", "--dtype", "-o", "--seed", "--vocab", "--layout", "--gguf", "--arch", "--head-dim",
                    "--rope-dims", "--longrope", "--context"});
  r->seed = static_cast<uint64_t>(args.get_int("--seed", 42, 0, INT64_MAX));
  r->head_dim = static_cast<uint32_t>(args.get_int("--head-dim", 0, 0, tools::max_head_dim()));
  r->rope_dims = static_cast<uint32_t>(args.get_int("--rope-dims", 0, 0, tools::max_head_dim()));
  r->long_rope_orig = static_cast<uint32_t>(args.get_int("--longrope", 0, 0, tools::max_context()));
  r->context = static_cast<uint32_t>(args.get_int("--context", 0, 0, tools::max_context()));
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember synth --help)");
  if (!args.positionals().empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "unexpected argument '" + args.positionals()[0] + "' (see ember synth --help)");
  }
  if (!args.has("-o")) return report(EMBER_ERR_INVALID_ARGUMENT, "-o FILE is required (see ember synth --help)");
  r->shape = args.get("--shape");
  if (!tools::synth_shape_known(r->shape)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--shape '" + r->shape + "' is not a shape (tiny, 110m, 0.5b, 1.1b)");
  }
  if (r->head_dim % 2 != 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--head-dim " + std::to_string(r->head_dim) + " must be even");
  }
  r->arch = args.get("--arch", "llama");
  if (!tools::synth_family_known(r->arch)) {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "--arch '" + r->arch + "' is not a family (llama, llama3, qwen2, qwen3, phi3, gemma2, gemma3)");
  }
  r->type = args.get("--dtype", "f32");
  if (!tools::weight_type_known(r->type)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--dtype '" + r->type + "' is not a type (see ember synth --help)");
  }
  r->layout = args.get("--layout", "rows16");
  std::string error;
  if (const ember_status st = tools::check_layout(r->layout, &error); st != EMBER_OK) return report(st, error);
  r->vocab = args.get("--vocab");
  if (r->vocab == "builtin") {
    r->vocab.clear();
  } else if (r->vocab.empty()) {
    r->vocab = find_llama2_vocab();
  } else if (!exists(r->vocab)) {
    return report(EMBER_ERR_IO, "--vocab '" + r->vocab + "' does not exist");
  }
  r->output = args.get("-o");
  r->gguf = args.has("--gguf");
  return kRun;
}

int report_synth(const SynthRequest& r, const SynthOutcome& o) {
  std::fprintf(stderr, "synth: %s %s, %.1fM parameters, %.2f MB of weights, vocabulary %zu (%s), seed %lld -> '%s' (%s), %.0f ms\n",
               r.shape.c_str(), r.type.c_str(), o.parameters / 1e6, o.weight_bytes / 1e6, o.vocab_pieces,
               r.vocab.empty() ? "built-in" : r.vocab.c_str(), static_cast<long long>(r.seed), r.output.c_str(),
               r.gguf ? "GGUF v3" : ".ember", o.ms);
  return 0;
}

}  // namespace

// ---- Run steps (convert_steps.h) -------------------------------------------------

ember_status run_convert(const ConvertRequest& r, ConvertOutcome* o, std::string* error) {
  const auto t0 = std::chrono::steady_clock::now();
  tools::ModelDraft model;
  ember_status st = model.import_file(r.input, r.tokenizer, error);
  if (st == EMBER_OK && !r.type.empty()) st = model.retype(r.type, &o->quantize_report, error);
  if (st == EMBER_OK) st = model.set_layout(r.layout, error);
  if (st == EMBER_OK) st = model.write_ember(r.output, error);
  if (st != EMBER_OK) return st;
  o->ms = ms_since(t0);
  const tools::DraftFacts f = model.facts();
  o->tensors = f.tensors;
  o->weight_bytes = f.weight_bytes;
  o->quantization = f.quantization;
  o->vocab_pieces = f.vocab_pieces;
  return EMBER_OK;
}

ember_status convert_gguf_to_bytes(const std::string& gguf, std::vector<uint8_t>* bytes, std::string* error) {
  tools::ModelDraft model;
  ember_status st = model.import_file(gguf, "", error);
  if (st == EMBER_OK) st = model.set_layout("rows16", error);
  if (st == EMBER_OK) st = model.serialize(bytes, error);
  return st;
}

uint32_t conversion_schema_version() { return tools::written_schema_version(); }

ember_status run_synth(const SynthRequest& r, SynthOutcome* o, std::string* error) {
  const auto t0 = std::chrono::steady_clock::now();
  tools::SynthRequest s;
  s.shape = r.shape;
  s.arch = r.arch;
  s.type = r.type;
  s.vocab_path = r.vocab;
  s.seed = r.seed;
  s.head_dim = r.head_dim;
  s.rope_dims = r.rope_dims;
  s.long_rope_orig = r.long_rope_orig;
  s.context = r.context;
  tools::ModelDraft model;
  ember_status st = model.make_synthetic(s, error);
  if (st == EMBER_OK) st = model.set_layout(r.layout, error);
  if (st == EMBER_OK) {
    st = r.gguf ? model.write_gguf(r.output, "ember-synthetic-" + r.arch + "-" + r.shape, error)
                : model.write_ember(r.output, error);
  }
  if (st != EMBER_OK) return st;
  const tools::DraftFacts f = model.facts();
  o->parameters = f.parameters;
  o->weight_bytes = f.weight_bytes;
  o->vocab_pieces = f.vocab_pieces;
  o->ms = ms_since(t0);
  return EMBER_OK;
}

// ---- The commands ------------------------------------------------------------------

int cmd_convert(int argc, char** argv) {
  ConvertRequest r;
  if (const int code = parse_convert(argc, argv, &r); code != kRun) return code;
  ConvertOutcome o;
  std::string error;
  const ember_status st = run_convert(r, &o, &error);
  // What re-typing did comes first, even when writing then fails.
  std::fputs(o.quantize_report.c_str(), stderr);
  return st == EMBER_OK ? report_convert(r, o) : report(st, error);
}

ember_status write_imatrix_out(const std::string& path, const ImatrixOut& m, std::string* error) {
  tools::ImatrixData d;
  d.datasets.push_back(m.dataset);
  d.chunk_count = m.chunks;
  d.chunk_size = m.chunk_size;
  for (const ImatrixOut::Entry& e : m.entries) d.entries.push_back({e.name, e.sum_sq, e.rows});
  return tools::write_imatrix_file(path, d, error);
}

int cmd_quantize(int argc, char** argv) {
  QuantizeRequest r;
  if (const int code = parse_quantize(argc, argv, &r); code != kRun) return code;
  QuantizeOutcome o;
  std::string error;
  const ember_status st = run_quantize(r, &o, &error);
  return st == EMBER_OK ? report_quantize(r, o) : report(st, error);
}

int cmd_synth(int argc, char** argv) {
  SynthRequest r;
  if (const int code = parse_synth(argc, argv, &r); code != kRun) return code;
  SynthOutcome o;
  std::string error;
  const ember_status st = run_synth(r, &o, &error);
  return st == EMBER_OK ? report_synth(r, o) : report(st, error);
}

}  // namespace ember::cli

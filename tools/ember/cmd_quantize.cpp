// `ember quantize IN.ember -o OUT.ember --type PRESET` (q4_k_m, ...: per-tensor
// rules, docs/decisions.md "Quantization presets") or `--dtype T`:
// re-types the weights of an .ember model (norms stay f32; matrices whose
// rows are not whole blocks of the target keep their float type, said on
// stderr). Any stored type is a target (reference quantizer, core/dtype.h).
// --gguf writes GGUF v3 with the same weight bytes instead of .ember.
#include <chrono>
#include <cstdio>
#include <string>

#include "tools/convert/gguf_writer.h"
#include "tools/convert/quantize.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

void print_progress(int i, int n, const PresetChoice& c) {
  std::string shape;
  for (int64_t d : c.shape) {
    if (!shape.empty()) shape += 'x';
    shape += std::to_string(d);
  }
  std::fprintf(stderr, "quantize: [%d/%d] %-28s %-10s %s -> %s", i + 1, n, c.tensor.c_str(), shape.c_str(),
               dtype_name(c.from), dtype_name(c.chosen));
  if (c.want != c.chosen) {
    std::fprintf(stderr, " (fallback from %s: rows of %lld elements)", dtype_name(c.want),
                 static_cast<long long>(c.shape.back()));
  }
  std::fputc('\n', stderr);
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  Args args(argc, argv, {"-o", "--dtype", "--type", "--layout"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("usage: ember quantize IN.ember -o OUT.ember --type PRESET [--layout rows16|row-major]\n"
                "  PRESET: %s\n"
                "  per-tensor rules by role and layer (docs/decisions.md \"Quantization presets\"); each tensor's\n"
                "  type, the fallbacks and the mixture (bits per weight) are printed on stderr.\n"
                "   or: ember quantize IN.ember -o OUT.ember --dtype q8_0|q4_0|f16|bf16|f32 [--layout ...]\n",
                quant_preset_names());
    std::puts(
              "  matrices become DTYPE (also q4_1 q5_0 q5_1 iq4_nl, and q2_k q3_k q4_k q5_k q6_k iq4_xs);\n"
              "  norms stay f32; a matrix whose rows are not whole blocks of DTYPE (32 elements, 256 for\n"
              "  the k-quants and iq4_xs) keeps its float type (each such tensor is named on stderr).\n"
              "  The recipe is recorded in the file's provenance (ember info shows it).");
    std::fputs(kLayoutHelp, stdout);
    std::puts("  --gguf       write GGUF v3 (the same weight bytes) instead of .ember, for other runtimes");
    return 0;
  }
  args.check_known({"-o", "--dtype", "--type", "--layout", "--gguf"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember quantize --help)");
  if (args.positionals().size() != 1) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected one input .ember file (see ember quantize --help)");
  }
  if (!args.has("-o")) return report(EMBER_ERR_INVALID_ARGUMENT, "-o OUT.ember is required");
  if (args.has("--dtype") == args.has("--type")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, std::string("one of --type PRESET (") + quant_preset_names() +
                                                  ") or --dtype TYPE is required");
  }
  const bool use_preset = args.has("--type");
  Result<QuantPreset> preset = parse_quant_preset(use_preset ? args.get("--type") : "q8_0");
  if (!preset.is_ok()) return report(preset.status().code(), preset.status().message());
  auto target = parse_target_dtype(use_preset ? "f32" : args.get("--dtype"));
  if (!target.is_ok()) return report(target.status().code(), target.status().message());
  auto layout = parse_layout(args.get("--layout", "rows16"));
  if (!layout.is_ok()) return report(layout.status().code(), layout.status().message());
  const std::string in = args.positionals()[0], out = args.get("-o");
  if (in == out) return report(EMBER_ERR_INVALID_ARGUMENT, "-o '" + out + "' is the input file; write a new file");

  const auto t0 = std::chrono::steady_clock::now();
  auto model = import_ember(in);
  if (!model.is_ok()) return report(model.status().code(), model.status().message());
  QuantizeReport rep;
  PresetReport prep;
  Status s;
  if (use_preset) {
    int quantized_src = 0;
    for (const auto& t : model.value()->spec.tensors) quantized_src += dtype_is_quantized(t.dtype);
    if (quantized_src) {
      std::fprintf(stderr, "quantize: %d tensors of '%s' are quantized; they are dequantized to f32 first "
                   "(the result carries both roundings)\n", quantized_src, in.c_str());
    }
    s = quantize_model_preset(model.value().get(), preset.value(), &prep, print_progress);
  } else {
    s = quantize_model(model.value().get(), target.value(), &rep);
  }
  if (!s.is_ok()) return report(s.code(), s.message());
  model.value()->spec.quant_layout = layout.value();
  if (args.has("--gguf")) {
    s = write_gguf(model.value()->spec, out);
  } else {
    s = write_model(model.value()->spec, out);
  }
  if (!s.is_ok()) return report(s.code(), s.message());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::fputs(use_preset ? describe_preset_report(preset.value(), prep).c_str() : describe_quantize_report(rep).c_str(),
             stderr);
  std::fprintf(stderr, "quantized '%s' -> '%s' in %.0f ms: %s\n", in.c_str(), out.c_str(), ms,
               model.value()->spec.provenance.quantization.c_str());
  return 0;
}

}  // namespace ember::cli

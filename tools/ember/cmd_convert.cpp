// `ember convert IN -o OUT.ember [--tokenizer FILE] [--dtype T]`
#include <chrono>
#include <cstdio>

#include "tools/convert/importers.h"
#include "tools/convert/quantize.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {

int cmd_convert(int argc, char** argv) {
  Args args(argc, argv, {"-o", "--tokenizer", "--dtype", "--layout"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember convert IN -o OUT.ember [--tokenizer tokenizer.bin] [--dtype q8_0|q4_0|f16|bf16|f32]\n"
              "                     [--layout rows16|row-major]\n"
              "  IN is a GGUF v2/v3 file (llama architecture) or a llama2.c checkpoint; GGUF weights of types\n"
              "  f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs are copied bit\n"
              "  for bit (any other type is refused, naming the tensor and the type);\n"
              "  a llama2.c checkpoint needs its tokenizer.bin via --tokenizer.\n"
              "  --dtype re-types the weights as `ember quantize` does (default: keep the source's types).\n");
    std::fputs(kLayoutHelp, stdout);
    return 0;
  }
  args.check_known({"-o", "--tokenizer", "--dtype", "--layout"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  if (args.positionals().size() != 1) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected one input file (see ember convert --help)");
  }
  if (!args.has("-o")) return report(EMBER_ERR_INVALID_ARGUMENT, "-o OUT.ember is required");
  DType target = DType::F32;
  if (args.has("--dtype")) {
    auto t = parse_target_dtype(args.get("--dtype"));
    if (!t.is_ok()) return report(t.status().code(), t.status().message());
    target = t.value();
  }
  auto layout = parse_layout(args.get("--layout", "rows16"));
  if (!layout.is_ok()) return report(layout.status().code(), layout.status().message());
  const std::string in = args.positionals()[0];
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::unique_ptr<ImportedModel>> imported = Status::error(EMBER_ERR_INTERNAL, "not imported");
  if (is_gguf_file(in)) {
    imported = import_gguf(in);
  } else {
    if (!args.has("--tokenizer")) {
      return report(EMBER_ERR_INVALID_ARGUMENT,
                    "'" + in + "' is not GGUF, so it is read as a llama2.c checkpoint, which needs --tokenizer FILE");
    }
    imported = import_llama2c(in, args.get("--tokenizer"));
  }
  if (!imported.is_ok()) return report(imported.status().code(), imported.status().message());
  if (args.has("--dtype")) {
    QuantizeReport rep;
    const Status q = quantize_model(imported.value().get(), target, &rep);
    if (!q.is_ok()) return report(q.code(), q.message());
    std::fputs(describe_quantize_report(rep).c_str(), stderr);
  }
  ModelSpec& spec = imported.value()->spec;
  spec.quant_layout = layout.value();
  const Status s = write_model(spec, args.get("-o"));
  if (!s.is_ok()) return report(s.code(), s.message());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  uint64_t bytes = 0;
  for (const auto& t : spec.tensors) bytes += t.size;
  std::fprintf(stderr, "converted '%s' -> '%s': %zu tensors, %.2f MB of weights (%s), vocabulary %zu, %.0f ms\n",
               in.c_str(), args.get("-o").c_str(), spec.tensors.size(), bytes / 1e6,
               spec.provenance.quantization.c_str(), spec.vocab.pieces.size(), ms);
  return 0;
}

}  // namespace ember::cli

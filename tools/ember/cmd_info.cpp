// `ember info M.ember`: what is in a model file, after verification, as
// parse / run / report. An inspection through the tools-side header
// (tools/convert/tool_api.h): the file is read as stored, without building
// the model, so a file that does not load can still be looked at.
#include <cstdio>
#include <string>

#include "tools/convert/tool_api.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

struct InfoRequest {
  std::string path;
  bool verify_digest = false;
  bool dump = false;     // --dump-tensors DIR
  std::string dump_dir;
};

int parse_info(int argc, char** argv, InfoRequest* r) {
  Args args(argc, argv, {"--dump-tensors"});
  if (args.has("--help") || args.has("-h") || args.positionals().size() != 1) {
    std::puts(
        "usage: ember info MODEL.ember [--verify-digest] [--dump-tensors DIR]\n"
        "  --dump-tensors DIR  also write every tensor dequantized to f32 as DIR/NAME.f32 (raw little-endian,\n"
        "                      rows in order; a developer check, see tools/scripts/check_quant_types.sh)");
    return args.positionals().size() == 1 ? 0 : 2;
  }
  args.check_known({"--verify-digest", "--dump-tensors"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  r->path = args.positionals()[0];
  r->verify_digest = args.has("--verify-digest");
  r->dump = args.has("--dump-tensors");
  r->dump_dir = args.get("--dump-tensors");
  return kRun;
}

void report_hparams(const tools::FileFacts& f) {
  std::printf("hparams      dim %u  hidden %u  layers %u  heads %u  kv-heads %u  head-dim %u\n", f.dim, f.hidden_dim,
              f.n_layers, f.n_heads, f.n_kv_heads, f.head_dim);
  std::printf("             vocab %u  max context %u  norm eps %g  rope theta %g (%s pairs)  output %s\n",
              f.vocab_size, f.max_context, f.norm_eps, f.rope_theta, f.rope_adjacent ? "adjacent" : "half",
              f.tied_embeddings ? "tied" : "separate");
  if (f.partial_or_long_rope) {
    std::printf("             rope on %u of %u dims  attention factor %g  original context %u\n", f.rotated_dims,
                f.head_dim, f.rope_attn_factor, f.long_rope_threshold);
  }
  if (f.gemma) {
    std::printf("             soft-cap attention %g final %g  sliding window %u (period %u)  rope theta sliding %g"
                "  global linear factor %g\n",
                f.attn_softcap, f.final_softcap, f.sliding_window, f.swa_period, f.rope_theta_sliding,
                f.rope_scale_global);
  }
}

void report_header(const InfoRequest& r, const tools::FileFacts& f) {
  std::printf("file         %s (%llu bytes)\n", r.path.c_str(), static_cast<unsigned long long>(f.file_bytes));
  std::printf("arch         %s  schema v%u\n", f.arch.c_str(), f.schema_version);
  std::printf("build        ember %s (%s)\n", EMBER_VERSION_STRING, EMBER_BUILD_FLAVOR);
  report_hparams(f);
  std::printf("tokenizer    %s, %zu pieces, %zu merges, bos %d eos %d unk %d pad %d, add_bos %d add_space_prefix %d "
              "byte_fallback %d\n",
              f.tokenizer.c_str(), f.pieces, f.merges, f.bos_id, f.eos_id, f.unk_id,
              f.pad_id, f.add_bos, f.add_space_prefix, f.byte_fallback);
  std::printf("provenance   source %s (sha256 %s)\n", f.source_file.c_str(),
              f.source_sha256.empty() ? "-" : f.source_sha256.c_str());
  std::printf("             converter %s, weights %s\n", f.converter.c_str(), f.quantization.c_str());
  std::printf("data         %llu bytes at offset %llu, sha256 %s%s\n", static_cast<unsigned long long>(f.data_bytes),
              static_cast<unsigned long long>(f.data_offset), f.data_sha256.c_str(),
              r.verify_digest ? " (verified)" : "");
  uint64_t params = 0, total_bytes = 0;
  for (const tools::TensorFacts& t : f.tensors) params += t.elements;
  std::printf("tensors      %zu, %llu parameters\n", f.tensors.size(), static_cast<unsigned long long>(params));
  // The mixture of weight types (GGUF presets mix several per file).
  for (const tools::TypeFacts& k : f.types) {
    total_bytes += k.bytes;
    std::printf("  type %-7s %4d tensors %14llu bytes %14llu weights (%.4g bits/weight)\n", k.name.c_str(), k.tensors,
                static_cast<unsigned long long>(k.bytes), static_cast<unsigned long long>(k.elements),
                k.bits_per_weight);
  }
  std::printf("  overall %.4f bits/weight\n", params ? 8.0 * static_cast<double>(total_bytes) / params : 0.0);
}

void report_tensor(const tools::TensorFacts& t) {
  char shape[64];
  if (t.n_dims == 1) {
    std::snprintf(shape, sizeof shape, "[%lld]", static_cast<long long>(t.shape[0]));
  } else {
    std::snprintf(shape, sizeof shape, "[%lld, %lld]", static_cast<long long>(t.shape[0]),
                  static_cast<long long>(t.shape[1]));
  }
  std::printf("  %-28s %-6s %-16s %-9s %12llu bytes @ %llu\n", t.name.c_str(), t.type.c_str(), shape,
              t.layout.c_str(), static_cast<unsigned long long>(t.bytes), static_cast<unsigned long long>(t.offset));
}

}  // namespace

int cmd_info(int argc, char** argv) {
  InfoRequest r;
  if (const int code = parse_info(argc, argv, &r); code != kRun) return code;
  tools::FileView view;
  std::string error;
  ember_status st = view.open(r.path, r.verify_digest, &error);
  if (st != EMBER_OK) return report(st, error);
  const tools::FileFacts& f = view.facts();
  report_header(r, f);
  // Each tensor is dumped (with --dump-tensors) before its line is printed.
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    if (r.dump && (st = view.dump_tensor(i, r.dump_dir, &error)) != EMBER_OK) return report(st, error);
    report_tensor(f.tensors[i]);
  }
  return 0;
}

}  // namespace ember::cli

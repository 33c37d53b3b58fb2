// `ember info M.ember`: what is in a model file, after verification.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/layout.h"

#include "format/model_file.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

// DIR/NAME.f32: the tensor dequantized row by row (rows16 gathered first).
Status dump_tensor(const TensorView& t, const std::string& dir) {
  const std::string path = dir + "/" + t.name + ".f32";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status::error(EMBER_ERR_IO, "cannot write '%s': %s", path.c_str(), std::strerror(errno));
  const int64_t rows = t.rows(), cols = t.cols();
  uint64_t row_bytes = 0;
  dtype_bytes(t.dtype, static_cast<uint64_t>(cols), &row_bytes);
  std::vector<float> row(cols);
  std::vector<uint8_t> gathered(row_bytes);
  bool ok = true;
  for (int64_t r = 0; r < rows && ok; ++r) {
    const uint8_t* src = layout_row(t.layout, t.dtype, t.data, cols, r, gathered.data());
    dequantize_row(t.dtype, src, row.data(), cols);
    ok = std::fwrite(row.data(), sizeof(float), cols, f) == static_cast<size_t>(cols);
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return Status::error(EMBER_ERR_IO, "writing '%s' failed", path.c_str());
  return Status::ok();
}

}  // namespace

int cmd_info(int argc, char** argv) {
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
  ModelFile::Options opt;
  opt.verify_digest = args.has("--verify-digest");
  auto file = ModelFile::open(args.positionals()[0], opt);
  if (!file.is_ok()) return report(file.status().code(), file.status().message());
  const ModelFile& m = *file.value();
  const HParams& hp = m.hparams();
  std::printf("file         %s (%zu bytes)\n", args.positionals()[0].c_str(), m.mapping().size());
  std::printf("arch         %s  schema v%u\n", model_arch_name(hp.arch), m.contents().schema_version);
  std::printf("build        ember %s (%s)\n", EMBER_VERSION_STRING, EMBER_BUILD_FLAVOR);
  std::printf("hparams      dim %u  hidden %u  layers %u  heads %u  kv-heads %u  head-dim %u\n", hp.dim,
              hp.hidden_dim, hp.n_layers, hp.n_heads, hp.n_kv_heads, hp.head_dim());
  std::printf("             vocab %u  max context %u  norm eps %g  rope theta %g (%s pairs)  output %s\n",
              hp.vocab_size, hp.max_seq_len, hp.norm_eps, hp.rope_theta,
              hp.rope_style == RopeStyle::Adjacent ? "adjacent" : "half", hp.tied_embeddings ? "tied" : "separate");
  if (hp.rope_dims != 0 || hp.rope_attn_factor != 1.0f || hp.rope_orig_context != 0) {
    std::printf("             rope on %u of %u dims  attention factor %g  original context %u\n", hp.rotated_dims(),
                hp.head_dim(), hp.rope_attn_factor, hp.long_rope_threshold());
  }
  if (model_arch_is_gemma(hp.arch)) {
    std::printf("             soft-cap attention %g final %g  sliding window %u (period %u)  rope theta sliding %g"
                "  global linear factor %g\n",
                hp.attn_softcap, hp.final_softcap, hp.sliding_window, hp.swa_period,
                hp.rope_theta_swa != 0.0f ? hp.rope_theta_swa : hp.rope_theta, hp.rope_scale_global);
  }
  const Vocab& v = m.vocab();
  std::printf("tokenizer    %s, %zu pieces, %zu merges, bos %d eos %d unk %d pad %d, add_bos %d add_space_prefix %d "
              "byte_fallback %d\n",
              v.kind == TokenizerKind::SentencePiece ? "sentencepiece" : "byte-level bpe", v.pieces.size(),
              v.merges.size(), v.bos_id, v.eos_id, v.unk_id, v.pad_id, v.add_bos, v.add_space_prefix,
              v.byte_fallback);
  const Provenance& p = m.provenance();
  std::printf("provenance   source %s (sha256 %s)\n", p.source_file.c_str(),
              p.source_sha256.empty() ? "-" : to_hex(p.source_sha256.data(), p.source_sha256.size()).c_str());
  std::printf("             converter %s, weights %s\n", p.converter.c_str(), p.quantization.c_str());
  std::printf("data         %llu bytes at offset %llu, sha256 %s%s\n",
              static_cast<unsigned long long>(m.contents().data_size),
              static_cast<unsigned long long>(m.contents().data_offset),
              to_hex(m.contents().data_sha256.data(), 32).c_str(), opt.verify_digest ? " (verified)" : "");
  uint64_t params = 0;
  for (const auto& t : m.tensors()) params += t.elements();
  std::printf("tensors      %zu, %llu parameters\n", m.tensors().size(), static_cast<unsigned long long>(params));
  // The mixture of weight types (GGUF presets mix several per file).
  int count[kDTypeCount] = {};
  uint64_t bytes[kDTypeCount] = {}, elements[kDTypeCount] = {}, total_bytes = 0;
  for (const auto& t : m.tensors()) {
    const int i = static_cast<int>(t.dtype);
    ++count[i];
    bytes[i] += t.size;
    elements[i] += t.elements();
    total_bytes += t.size;
  }
  for (int i = 0; i < kDTypeCount; ++i) {
    if (!count[i]) continue;
    std::printf("  type %-7s %4d tensors %14llu bytes %14llu weights (%.4g bits/weight)\n",
                dtype_name(static_cast<DType>(i)), count[i], static_cast<unsigned long long>(bytes[i]),
                static_cast<unsigned long long>(elements[i]), dtype_bits(static_cast<DType>(i)));
  }
  std::printf("  overall %.4f bits/weight\n", params ? 8.0 * static_cast<double>(total_bytes) / params : 0.0);
  for (const auto& t : m.tensors()) {
    char shape[64];
    if (t.n_dims == 1) {
      std::snprintf(shape, sizeof shape, "[%lld]", static_cast<long long>(t.shape[0]));
    } else {
      std::snprintf(shape, sizeof shape, "[%lld, %lld]", static_cast<long long>(t.shape[0]),
                    static_cast<long long>(t.shape[1]));
    }
    if (args.has("--dump-tensors")) {
      const Status st = dump_tensor(t, args.get("--dump-tensors"));
      if (!st.is_ok()) return report(st.code(), st.message());
    }
    std::printf("  %-28s %-6s %-16s %-9s %12llu bytes @ %llu\n", t.name.c_str(), dtype_name(t.dtype), shape,
                layout_name(t.layout), static_cast<unsigned long long>(t.size),
                static_cast<unsigned long long>(t.offset));
  }
  return 0;
}

}  // namespace ember::cli

// `ember imatrix -m MODEL -f TEXT -o FILE`: an importance matrix for
// quantizing (issue 45). The text is tokenized once and cut into chunks of
// --ctx tokens (a partial last chunk is dropped), each chunk's first token
// replaced by BOS as llama-imatrix does; each chunk runs from a fresh
// session in steps of up to --batch rows while the session collects, per
// weight matrix, the sums of squares of its input columns
// (ember_session_collect_activations). The file is llama.cpp's GGUF imatrix
// format: `ember quantize --imatrix` and `llama-quantize --imatrix` read it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/convert_steps.h"
#include "tools/ember/files.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

const char* kImatrixHelp =
    "usage: ember imatrix -m MODEL -f TEXT_FILE -o OUT.gguf [--ctx N] [--chunks K] [--batch B] [--threads T]\n"
    "                     [--process-output]\n"
    "  collects an importance matrix: per weight matrix, each input column's sum of squares over the text\n"
    "  (run the unquantized model). OUT is llama.cpp's GGUF imatrix format, for ember quantize --imatrix\n"
    "  and llama-quantize --imatrix.\n"
    "  --ctx N           tokens per chunk, the first replaced by BOS (default 512, as llama-imatrix)\n"
    "  --chunks K        at most K chunks (default: all whole chunks of the text)\n"
    "  --batch B         rows per step (default: the chunk)\n"
    "  --threads T       CPU threads (default 0: all cores)\n"
    "  --process-output  also the logits head (output.weight); llama-imatrix leaves it out unless asked\n"
    "  the cpu backend collects; progress per chunk on stderr.\n";

struct ImatrixRequest {
  std::string model, text_path, text, output;
  int64_t ctx = 512, chunks = 0, batch = 0, threads = 0;
  bool process_output = false;
};

int parse_imatrix(int argc, char** argv, ImatrixRequest* r) {
  Args args(argc, argv, {"-m", "-f", "-o", "--ctx", "--chunks", "--batch", "--threads"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kImatrixHelp, stdout);
    return 0;
  }
  args.check_known({"-m", "-f", "-o", "--ctx", "--chunks", "--batch", "--threads", "--process-output"});
  r->ctx = args.get_int("--ctx", 512, 2, 1 << 20);
  r->chunks = args.get_int("--chunks", 0, 1, INT32_MAX);
  r->batch = args.get_int("--batch", 0, 1, 1 << 20);
  r->threads = args.get_int("--threads", 0, 0, 1024);
  r->process_output = args.has("--process-output");
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember imatrix --help)");
  for (const char* flag : {"-m", "-f", "-o"}) {
    if (!args.has(flag)) {
      return report(EMBER_ERR_INVALID_ARGUMENT, std::string(flag) + " is required (see ember imatrix --help)");
    }
  }
  r->model = args.get("-m");
  r->text_path = args.get("-f");
  r->output = args.get("-o");
  std::string error;
  if (const ember_status st = read_file(r->text_path, &r->text, &error); st != EMBER_OK) {
    return report(st, "-f: " + error);
  }
  return kRun;
}

struct Handles {
  ember_model* model = nullptr;
  ember_session* session = nullptr;
  ~Handles() {
    ember_session_free(session);
    ember_model_free(model);
  }
};

// The text's ids without BOS. 0 or the exit code (reported).
int tokenize_text(const ImatrixRequest& r, ember_model* model, std::vector<int32_t>* ids) {
  ids->resize(r.text.size() + 16);
  size_t n = 0;
  ember_status st = ember_tokenize(model, r.text.data(), r.text.size(), 0, ids->data(), ids->size(), &n);
  if (st == EMBER_ERR_INVALID_ARGUMENT && n > ids->size()) {
    ids->resize(n);
    st = ember_tokenize(model, r.text.data(), r.text.size(), 0, ids->data(), ids->size(), &n);
  }
  if (st != EMBER_OK) return report_last(st);
  ids->resize(n);
  return 0;
}

int run_imatrix(const ImatrixRequest& r) {
  Handles h;
  if (const int code = open_model_for_cli(r.model, nullptr, &h.model)) return code;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(h.model, &info);
  if (r.ctx > info.max_context) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--ctx " + std::to_string(r.ctx) + " is more than the model's context (" +
                                                  std::to_string(info.max_context) + ")");
  }
  std::vector<int32_t> ids;
  if (const int code = tokenize_text(r, h.model, &ids)) return code;
  // As llama-imatrix: BOS + the text, cut into whole chunks of ctx tokens.
  if (info.bos_id >= 0) ids.insert(ids.begin(), info.bos_id);
  int64_t n_chunks = static_cast<int64_t>(ids.size()) / r.ctx;
  if (r.chunks > 0 && n_chunks > r.chunks) n_chunks = r.chunks;
  if (n_chunks == 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "-f '" + r.text_path + "' has " + std::to_string(ids.size()) +
                                                  " tokens, less than one chunk of --ctx " + std::to_string(r.ctx));
  }
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = static_cast<int32_t>(r.ctx);
  so.n_threads = static_cast<int32_t>(r.threads);
  so.max_batch = static_cast<int32_t>(r.batch > 0 ? std::min(r.batch, r.ctx) : r.ctx);
  if (const ember_status st = ember_session_create(h.model, &so, &h.session); st != EMBER_OK) return report_last(st);
  if (const ember_status st = ember_session_collect_activations(h.session, 1, r.process_output ? 1 : 0);
      st != EMBER_OK) {
    return report_last(st);
  }
  std::fprintf(stderr, "imatrix: %lld chunks of %lld tokens from '%s' on %s\n", static_cast<long long>(n_chunks),
               static_cast<long long>(r.ctx), r.text_path.c_str(), ember_session_backend(h.session));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> chunk(static_cast<size_t>(r.ctx));
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy(ids.begin() + c * r.ctx, ids.begin() + (c + 1) * r.ctx, chunk.begin());
    if (info.bos_id >= 0) chunk[0] = info.bos_id;
    ember_status st = ember_session_reset(h.session);
    if (st == EMBER_OK) st = ember_session_prefill(h.session, chunk.data(), chunk.size(), nullptr);
    if (st != EMBER_OK) return report_last(st);
    // Every chunk on a terminal (one line, rewritten); a log gets a line at
    // each tenth.
    const bool tty = ::isatty(2) != 0;
    if (tty || (c + 1) * 10 / n_chunks != c * 10 / n_chunks) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "%simatrix: chunk %lld/%lld, %.1f s (%.0f tok/s)%s", tty ? "\r" : "",
                   static_cast<long long>(c + 1), static_cast<long long>(n_chunks), secs,
                   static_cast<double>((c + 1) * r.ctx) / std::max(secs, 1e-9), tty ? "" : "\n");
    }
  }
  if (::isatty(2)) std::fputc('\n', stderr);
  ImatrixOut out;
  out.dataset = r.text_path;
  out.chunks = static_cast<uint32_t>(n_chunks);
  out.chunk_size = static_cast<uint32_t>(r.ctx);
  const size_t n = ember_session_activation_count(h.session);
  for (size_t i = 0; i < n; ++i) {
    ember_activation_stats s;
    ember_status st = ember_session_activation_stats(h.session, i, &s, nullptr, 0);
    if (st != EMBER_OK) return report_last(st);
    ImatrixOut::Entry e;
    e.name = s.weight;
    e.rows = static_cast<double>(s.rows);
    e.sum_sq.resize(static_cast<size_t>(s.cols));
    st = ember_session_activation_stats(h.session, i, &s, e.sum_sq.data(), e.sum_sq.size());
    if (st != EMBER_OK) return report_last(st);
    out.entries.push_back(std::move(e));
  }
  std::string error;
  if (const ember_status st = write_imatrix_out(r.output, out, &error); st != EMBER_OK) return report(st, error);
  std::fprintf(stderr, "imatrix: %zu matrices, %lld tokens -> '%s'\n", out.entries.size(),
               static_cast<long long>(n_chunks * r.ctx), r.output.c_str());
  return 0;
}

}  // namespace

int cmd_imatrix(int argc, char** argv) {
  ImatrixRequest r;
  if (const int code = parse_imatrix(argc, argv, &r); code != kRun) return code;
  return run_imatrix(r);
}

}  // namespace ember::cli

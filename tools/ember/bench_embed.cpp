// `ember bench --embed`: embedding throughput. The inputs are the lines of
// a file (-f, tokenized as ember embed tokenizes them) or --inputs N
// synthetic inputs of --tokens T ids each (BOS, then ids spread over the
// vocabulary by a fixed generator: the same every run); all of them are
// embedded -r times in one embedding session (--seqs inputs run together,
// default as many as one step of --batch rows holds) after one warm-up run.
// Reports the median embeddings and tokens per second (JSON:
// metrics.embeddings_per_second, metrics.tokens_per_second).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

const char* kHelp =
    "usage: ember bench -m MODEL --embed [-f FILE | --inputs 64 --tokens 128] [-r 3] [--seqs N]\n"
    "                   [--pooling mean|cls|last] [--batch B] [--threads T] [--backend cpu|vulkan|auto] [--json]\n"
    "  Embeds every input -r times (after a warm-up) in one embedding session and reports the median\n"
    "  embeddings/s and tokens/s. -f FILE: one input per line, tokenized as ember embed does;\n"
    "  otherwise --inputs synthetic inputs of --tokens ids each.\n";

struct Request {
  std::string model, file;
  int64_t inputs = 64, tokens = 128, reps = 3, seqs = 0;
  int32_t pooling = EMBER_POOLING_UNSPECIFIED;
  ember_session_options so{};
  bool json = false;
};

int parse(int argc, char** argv, Request* r) {
  std::vector<std::string> with_value = {"-m", "-f", "--inputs", "--tokens", "-r", "--seqs", "--pooling"};
  std::vector<std::string> known = with_value;
  known.push_back("--embed");
  known.push_back("--json");
  for (int i = 0; kSessionFlags[i]; ++i) {
    with_value.push_back(kSessionFlags[i]);
    known.push_back(kSessionFlags[i]);
  }
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  args.check_known(known);
  session_options_from_args(args, &r->so);
  r->inputs = args.get_int("--inputs", 64, 1, 1 << 20);
  r->tokens = args.get_int("--tokens", 128, 1, 1 << 20);
  r->reps = args.get_int("-r", 3, 1, 1000);
  r->seqs = args.get_int("--seqs", 0, 1, 256);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember bench --embed --help)");
  if (r->so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (args.has("--pooling")) {
    const std::string p = args.get("--pooling");
    r->pooling = pooling_from_name(p);
    if (r->pooling < EMBER_POOLING_MEAN || r->pooling > EMBER_POOLING_LAST) {
      return report(EMBER_ERR_INVALID_ARGUMENT, "--pooling '" + p + "': must be mean, cls or last");
    }
  }
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required");
  r->model = args.get("-m");
  r->file = args.get("-f");
  r->json = args.has("--json");
  return kRun;
}

// The inputs' ids: the file's lines, or synthetic ones.
int make_inputs(ember_model* model, const Request& r, std::vector<std::vector<int32_t>>* out) {
  ember_model_info info{};
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  if (r.file.empty()) {
    uint32_t state = 12345;
    for (int64_t i = 0; i < r.inputs; ++i) {
      std::vector<int32_t> ids;
      if (info.bos_id >= 0) ids.push_back(info.bos_id);
      while (static_cast<int64_t>(ids.size()) < r.tokens) {
        state = state * 1664525u + 1013904223u;
        ids.push_back(static_cast<int32_t>(3 + (state >> 8) % static_cast<uint32_t>(std::max(info.vocab_size - 3, 1))));
      }
      out->push_back(std::move(ids));
    }
    return 0;
  }
  std::vector<std::string> lines;
  if (const int code = read_input_lines(r.file, &lines)) return code;
  int64_t tokens = 0;
  return embed_tokenize_all(model, lines, out, &tokens);
}

struct Result {
  std::vector<double> secs;
  int64_t tokens = 0;
  size_t inputs = 0;
  int32_t n_seqs = 0, dim = 0, context = 0;
  std::string backend;
};

int run(const Request& r, Result* res) {
  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(r.model, nullptr, &model)) return code;
  struct Free {
    ember_model* m;
    ember_session* s = nullptr;
    ~Free() {
      ember_session_free(s);
      ember_model_free(m);
    }
  } h{model};
  std::vector<std::vector<int32_t>> inputs;
  if (const int code = make_inputs(model, r, &inputs)) return code;
  size_t longest = 1;
  for (const auto& v : inputs) {
    longest = std::max(longest, v.size());
    res->tokens += static_cast<int64_t>(v.size());
  }
  ember_session_options so = r.so;
  so.embeddings = 1;
  if (so.context_length == 0) so.context_length = static_cast<int32_t>(longest);
  const int64_t per_step = std::max<int64_t>(1, so.max_batch / static_cast<int64_t>(longest));
  so.n_seqs = static_cast<int32_t>(r.seqs ? r.seqs : std::min<int64_t>({per_step, 64, static_cast<int64_t>(inputs.size())}));
  if (const ember_status st = ember_session_create(model, &so, &h.s); st != EMBER_OK) return report_last(st);
  res->inputs = inputs.size();
  res->n_seqs = so.n_seqs;
  res->context = so.context_length;
  res->dim = ember_session_embedding_size(h.s);
  res->backend = ember_session_backend(h.s);
  std::vector<const int32_t*> ptrs;
  std::vector<size_t> counts;
  for (const auto& v : inputs) {
    ptrs.push_back(v.data());
    counts.push_back(v.size());
  }
  std::vector<float> out(inputs.size() * static_cast<size_t>(res->dim));
  ember_embed_options eo;
  ember_embed_options_default(&eo);
  eo.pooling = r.pooling;
  for (int64_t rep = 0; rep <= r.reps; ++rep) {  // rep 0: the warm-up
    const auto t0 = std::chrono::steady_clock::now();
    const ember_status st = ember_embed_tokens(h.s, ptrs.data(), counts.data(), ptrs.size(), &eo, out.data(), out.size());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st != EMBER_OK) return report_last(st);
    if (rep > 0) res->secs.push_back(secs);
  }
  return 0;
}

void print(const Request& r, const Result& res) {
  const double secs = percentile(res.secs, 0.5);
  const double eps = static_cast<double>(res.inputs) / secs, tps = static_cast<double>(res.tokens) / secs;
  if (r.json) {
    Json j;
    j.begin_object();
    j.str("benchmark", "embed").str("model", r.model).str("backend", res.backend);
    j.begin_object("workload")
        .integer("inputs", static_cast<int64_t>(res.inputs))
        .integer("tokens", res.tokens)
        .integer("sequences", res.n_seqs)
        .integer("context", res.context)
        .integer("dim", res.dim)
        .integer("repetitions", r.reps)
        .end_object();
    j.begin_object("metrics")
        .num("embeddings_per_second", eps, 2)
        .num("tokens_per_second", tps, 1)
        .num("seconds_median", secs, 4)
        .end_object();
    j.end_object();
    std::fputs(j.text().c_str(), stdout);
    return;
  }
  std::printf("embed: %zu inputs, %lld tokens, %d sequence(s) of ctx %d, %d floats each, on %s\n", res.inputs,
              static_cast<long long>(res.tokens), res.n_seqs, res.context, res.dim, res.backend.c_str());
  std::printf("embeddings/s %.2f   tokens/s %.1f   (median of %lld: %.1f ms)\n", eps, tps,
              static_cast<long long>(r.reps), secs * 1e3);
}

}  // namespace

int bench_embed(int argc, char** argv) {
  Request r;
  if (const int code = parse(argc, argv, &r); code != kRun) return code;
  Result res;
  if (const int code = run(r, &res)) return code;
  print(r, res);
  return 0;
}

}  // namespace ember::cli

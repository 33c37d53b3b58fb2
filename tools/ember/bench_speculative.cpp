// `ember bench --lookup`: speculative decoding by prompt lookup against
// plain decoding of the same prompt, greedy, interleaved repetition by
// repetition in one session, and what the measured acceptance and step
// costs predict for it.
//
// The prediction: a decode step that verifies d drafts runs d + 1 rows; its
// cost relative to a one-row step, c(d + 1), is measured here (a step of n
// rows at the prompt's end, n = 1 .. draft_max + 1). With the run's tokens
// per step t and mean rows per step m, speculation should decode
// t / c(m) times as fast as plain decoding (c interpolated between whole
// rows; prompt lookup's drafting costs microseconds and is not counted). A
// draft model adds m - 1 of its own one-row steps per step, each costing d
// of a target step (measured too): t / (c(m) + (m - 1) d).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

const char* kHelp =
    "usage: ember bench -m MODEL --lookup [--draft DRAFT_MODEL] [-f PROMPT_FILE | -p TEXT] [-n 128] [-r 5]\n"
    "                   [--draft-max K] [--parallel N]\n"
    "                   [--lookup-ngram N] [--threads T] [--backend cpu|vulkan|auto] [--json]\n"
    "  Greedy decoding of -n tokens after the prompt, with prompt lookup and without, interleaved\n"
    "  (-r repetitions each, medians). The prompt: a text file (-f) or text (-p); default, a text\n"
    "  that repeats, which lookup is made for. Reports tok/s of both, the speed-up, the acceptance\n"
    "  (accepted / drafted), tokens per decode step, the cost of a step of n rows against one row,\n"
    "  and the speed-up those predict. --parallel N: N streams of the prompt as sequences of one session,\n"
    "  stepped together as ember serve --parallel N does, every stream drafting; tok/s is the aggregate.\n";

struct One {
  double tok_s = 0;
  int32_t generated = 0, steps = 0, drafted = 0, accepted = 0, sampled = 0;
};

// Both sessions emptied, and the options of one greedy generation of n
// tokens after the prompt: with speculation (the draft session's drafts,
// or prompt lookup without one) or without.
ember_status fresh_run(ember_session* s, ember_session* draft, const std::vector<int32_t>& prompt, int32_t n,
                       bool speculate, int32_t k, int32_t ngram, ember_generate_options* g) {
  ember_status st = ember_session_reset(s);
  if (st == EMBER_OK && draft) st = ember_session_reset(draft);
  if (st != EMBER_OK) return st;
  ember_generate_options_default(g);
  g->max_new_tokens = n;
  g->prompt_tokens = prompt.data();
  g->n_prompt_tokens = prompt.size();
  g->lookup = speculate && !draft ? 1 : 0;
  g->draft_session = speculate ? draft : nullptr;
  g->draft_max = k;
  g->lookup_ngram = ngram;
  return EMBER_OK;
}

ember_status generate_once(ember_session* s, const std::vector<int32_t>& prompt, int32_t n, bool speculate, int32_t k,
                           int32_t ngram, One* out, ember_session* draft) {
  ember_generate_options g;
  ember_status st = fresh_run(s, draft, prompt, n, speculate, k, ngram, &g);
  if (st != EMBER_OK) return st;
  st = ember_generate(s, nullptr, &g, nullptr, nullptr);
  if (st != EMBER_OK) return st;
  ember_generate_stats stats;
  stats.struct_size = sizeof stats;
  ember_generate_last_stats(s, &stats);
  out->generated = stats.generated_tokens;
  out->sampled = stats.sampled_tokens;
  out->steps = stats.decode_steps;
  out->drafted = stats.drafted_tokens;
  out->accepted = stats.accepted_tokens;
  out->tok_s = stats.decode_ms > 0 && stats.sampled_tokens > 1 ? (stats.sampled_tokens - 1) * 1000.0 / stats.decode_ms
                                                               : 0.0;
  return EMBER_OK;
}

// --parallel N: N greedy streams of the same prompt as sequences of one
// session, stepped together by a generator (as ember serve runs its slots);
// tok/s is the aggregate from the step where the last stream got its first
// token (their prompts are chunked over the first steps) to the end: every
// token released in between over that time. The counts are the streams' sums.
struct StreamClock {
  std::vector<int32_t> released;  // tokens per stream
  int32_t started = 0;            // streams with a first token
  double t_all = 0;               // when the last of them got it
  int64_t after = 0;              // tokens released after t_all
};

int count_token(void* user, const ember_generator_event* e) {
  auto* c = static_cast<StreamClock*>(user);
  if (e->finish != EMBER_STOP_NONE) return 0;
  if (c->released[static_cast<size_t>(e->seq)]++ == 0 && ++c->started == static_cast<int32_t>(c->released.size())) {
    c->t_all = now_s();
  } else if (c->t_all > 0) {
    ++c->after;
  }
  return 0;
}

ember_status generate_streams(ember_session* s, ember_generator* gen, const std::vector<int32_t>& prompt, int32_t n,
                              int32_t streams, bool speculate, int32_t k, int32_t ngram, One* out,
                              ember_session* draft) {
  ember_generate_options g;
  ember_status st = fresh_run(s, draft, prompt, n, speculate, k, ngram, &g);
  if (st != EMBER_OK) return st;
  for (int32_t q = 0; q < streams; ++q) {
    if ((st = ember_generator_start(gen, q, nullptr, &g)) != EMBER_OK) return st;
  }
  StreamClock clock;
  clock.released.assign(static_cast<size_t>(streams), 0);
  while (ember_generator_active(gen, -1) > 0) {
    if ((st = ember_generator_step(gen, count_token, &clock)) != EMBER_OK) return st;
  }
  const double t_end = now_s();
  *out = One{};
  for (int32_t q = 0; q < streams; ++q) {
    ember_generate_stats stats;
    stats.struct_size = sizeof stats;
    if ((st = ember_generator_seq_stats(gen, q, &stats)) != EMBER_OK) return st;
    if (stats.stop_reason == EMBER_STOP_ERROR) return EMBER_ERR_INTERNAL;
    out->generated += stats.generated_tokens;
    out->sampled += stats.sampled_tokens;
    out->steps += stats.decode_steps;
    out->drafted += stats.drafted_tokens;
    out->accepted += stats.accepted_tokens;
  }
  out->tok_s = clock.t_all > 0 && t_end > clock.t_all ? clock.after / (t_end - clock.t_all) : 0.0;
  return EMBER_OK;
}

// Seconds of one step of n rows after the prompt (best of reps).
ember_status step_cost(ember_session* s, const std::vector<int32_t>& prompt, int32_t n, int reps, double* out) {
  ember_status st = ember_session_reset(s);
  if (st == EMBER_OK) st = ember_session_prefill(s, prompt.data(), prompt.size(), nullptr);
  if (st != EMBER_OK) return st;
  const int32_t pos = ember_session_position(s);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    st = ember_session_prefill(s, prompt.data(), static_cast<size_t>(n), nullptr);
    const double t = now_s() - t0;
    if (st != EMBER_OK) return st;
    best = std::min(best, t);
    st = ember_session_remove(s, pos, pos + n);
    if (st != EMBER_OK) return st;
  }
  *out = best;
  return EMBER_OK;
}

// The prompt: -f FILE, -p TEXT, or a text that repeats (a list written out three times).
int prompt_text(const Args& args, std::string* text) {
  if (args.has("-f")) {
    std::ifstream in(args.get("-f"), std::ios::binary);
    if (!in) return report(EMBER_ERR_IO, "cannot read -f '" + args.get("-f") + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    *text = ss.str();
  } else if (args.has("-p")) {
    *text = args.get("-p");
  } else {
    const std::string list = "1. Preheat the oven to 180 degrees.\n2. Mix the flour, the sugar and the eggs.\n"
                             "3. Pour the batter into the tin.\n4. Bake for forty minutes.\n";
    *text = "Recipe:\n" + list + "\nThe same recipe again:\n" + list + "\nAnd once more:\n";
  }
  return 0;
}

// What one run measured, for the report.
struct Outcome {
  double plain = 0, spec = 0, speedup = 0, acceptance = 0, per_step = 0, mean_rows = 0, rel = 0, predicted = 0;
  double draft_rel = 0;  // --draft: one draft model step against one target step
};

void print_report(const Args& args, const std::vector<int32_t>& prompt, int32_t n, int reps, int32_t k, int32_t ngram,
                  int32_t threads, int32_t streams, bool draft, const One& o, const Outcome& m,
                  const std::vector<double>& cost) {
  if (args.has("--json")) {
    Json j;
    j.begin_object();
    j.begin_object("workload")
        .str("model", args.get("-m"))
        .integer("prompt_tokens", static_cast<int64_t>(prompt.size()))
        .integer("n_gen", n)
        .integer("repetitions", reps)
        .integer("draft_max", k)
        .integer("lookup_ngram", ngram)
        .str("draft_model", args.get("--draft"))
        .integer("threads", threads)
        .integer("parallel", streams)
        .end_object();
    j.begin_object("metrics")
        .num("tokens_per_second", m.spec)
        .num("baseline_tokens_per_second", m.plain)
        .num("speedup", m.speedup)
        .num("acceptance_rate", m.acceptance, 4)
        .num("tokens_per_step", m.per_step, 4)
        .integer("drafted_tokens", o.drafted)
        .integer("accepted_tokens", o.accepted)
        .integer("decode_steps", o.steps)
        .num("mean_rows_per_step", m.mean_rows, 4)
        .num("step_cost_ratio", m.rel, 4)
        .num("draft_step_cost_ratio", m.draft_rel, 4)
        .num("predicted_speedup", m.predicted, 4);
    j.begin_array("step_ms_by_rows");  // one stream only
    for (int32_t rows = 1; streams == 1 && rows <= k + 1; ++rows) {
      j.num(nullptr, cost[static_cast<size_t>(rows)] * 1e3, 4);
    }
    j.end_array().end_object().end_object();
    std::fputs(j.text().c_str(), stdout);
    return;
  }
  if (draft) {
    std::printf("prompt %zu tokens, %d generated, draft model %s: draft max %d\n", prompt.size(), n,
                args.get("--draft").c_str(), k);
  } else {
    std::printf("prompt %zu tokens, %d generated, lookup: draft max %d, ngram %d\n", prompt.size(), n, k, ngram);
  }
  if (streams > 1) {
    std::printf("  %d streams of that prompt decoded together (as ember serve --parallel %d): aggregate tok/s\n",
                streams, streams);
    std::printf("  plain    %8.1f tok/s\n  %-8s %8.1f tok/s   x%.2f\n", m.plain, draft ? "draft" : "lookup", m.spec,
                m.speedup);
  } else {
    std::printf("  plain    %8.1f tok/s\n  %-8s %8.1f tok/s   x%.2f (predicted x%.2f)\n", m.plain,
                draft ? "draft" : "lookup", m.spec, m.speedup, m.predicted);
  }
  std::printf("  acceptance %.1f%% (%d of %d drafted), %.2f tokens per step, %.2f rows per step", 100 * m.acceptance,
              o.accepted, o.drafted, m.per_step, m.mean_rows);
  if (streams == 1) std::printf(" costing x%.2f of a one-row step", m.rel);
  if (streams == 1 && draft) std::printf(", + %.2f draft steps of x%.3f each", m.mean_rows - 1, m.draft_rel);
  std::printf("\n");
  if (streams > 1) return;
  std::printf("  step ms by rows:");
  for (int32_t rows = 1; rows <= k + 1; ++rows) std::printf(" %d: %.2f", rows, cost[static_cast<size_t>(rows)] * 1e3);
  std::printf("\n");
}

}  // namespace

int bench_lookup(int argc, char** argv) {
  std::vector<std::string> with_value = {"-m", "-f", "-p", "-n", "-r", "--threads", "--backend", "--parallel"};
  for (int i = 0; kSpeculativeFlags[i]; ++i) with_value.push_back(kSpeculativeFlags[i]);
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kHelp, stdout);
    std::fputs(kSpeculativeHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = with_value;
  known.insert(known.end(), {"--lookup", "--json"});
  args.check_known(known);
  const int32_t n = static_cast<int32_t>(args.get_int("-n", 128, 1, 1 << 20));
  const int reps = static_cast<int>(args.get_int("-r", 5, 1, 1000));
  const int32_t streams = static_cast<int32_t>(args.get_int("--parallel", 1, 1, 64));
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_threads = static_cast<int32_t>(args.get_int("--threads", 0, 0, 1024));
  ember_generate_options g;
  ember_generate_options_default(&g);
  speculative_from_args(args, &g, &so);
  const std::string backend = args.get("--backend", "cpu");
  so.backend = backend == "auto" ? EMBER_BACKEND_AUTO : backend == "vulkan" ? EMBER_BACKEND_VULKAN
               : backend == "cpu"  ? EMBER_BACKEND_CPU : -1;
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember bench --lookup --help)");
  if (so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend '" + backend + "' is not cpu, vulkan or auto");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required");
  if (args.has("-f") && args.has("-p")) return report(EMBER_ERR_INVALID_ARGUMENT, "-f and -p both give the prompt");
  std::string text;
  if (const int code = prompt_text(args, &text)) return code;
  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(args.get("-m"), nullptr, &model)) return code;
  std::vector<int32_t> prompt(text.size() + 8);
  size_t count = 0;
  ember_status st =
      ember_tokenize_prompt(model, text.c_str(), text.size(), 0, -1, prompt.data(), prompt.size(), &count);
  if (st != EMBER_OK) {
    ember_model_free(model);
    return report_last(st);
  }
  prompt.resize(count);
  const int32_t k = g.draft_max;
  so.context_length = static_cast<int32_t>(prompt.size()) + n + k + 2;
  so.n_seqs = streams;
  so.max_batch = std::max<int32_t>(streams * (k + 1), std::min<int32_t>(512, static_cast<int32_t>(prompt.size())));
  ember_session* s = nullptr;
  st = ember_session_create(model, &so, &s);
  if (st != EMBER_OK) {
    const int code = report_last(st);
    ember_model_free(model);
    return code;
  }
  // --draft: the draft model's session, the same context, sequences and threads.
  ember_model* draft_model = nullptr;
  ember_session* draft = nullptr;
  ember_generator* gen = nullptr;
  auto fail = [&](ember_status e) {
    const int code = report_last(e);
    ember_generator_free(gen);
    ember_session_free(draft);
    ember_model_free(draft_model);
    ember_session_free(s);
    ember_model_free(model);
    return code;
  };
  if (args.has("--draft")) {
    if (const int code = open_draft_session(args.get("--draft"), s, so, &draft_model, &draft)) {
      ember_session_free(s);
      ember_model_free(model);
      return code;
    }
  }
  if (streams > 1) {
    ember_generator_options go;
    ember_generator_options_default(&go);
    go.max_step_rows = so.max_batch;
    if ((st = ember_generator_create(s, &go, &gen)) != EMBER_OK) return fail(st);
  }
  auto once = [&](bool speculate, One* out) {
    return streams > 1 ? generate_streams(s, gen, prompt, n, streams, speculate, k, g.lookup_ngram, out, draft)
                       : generate_once(s, prompt, n, speculate, k, g.lookup_ngram, out, draft);
  };
  // Step costs of 1 .. k + 1 rows.
  std::vector<double> cost(static_cast<size_t>(k + 2), 0.0);
  for (int32_t rows = 1; streams == 1 && rows <= k + 1; ++rows) {
    st = step_cost(s, prompt, rows, 3 + reps, &cost[static_cast<size_t>(rows)]);
    if (st != EMBER_OK) return fail(st);
  }
  double draft_cost = 0;  // a one-row step of the draft model
  if (streams == 1 && draft && (st = step_cost(draft, prompt, 1, 3 + reps, &draft_cost)) != EMBER_OK) return fail(st);
  // Warm-up, then interleaved repetitions.
  One warm;
  if ((st = once(false, &warm)) != EMBER_OK) return fail(st);
  std::vector<double> plain_tps, spec_tps;
  One spec_last;
  for (int r = 0; r < reps; ++r) {
    One a, b;
    if ((st = once(false, &a)) != EMBER_OK) return fail(st);
    if ((st = once(true, &b)) != EMBER_OK) return fail(st);
    plain_tps.push_back(a.tok_s);
    spec_tps.push_back(b.tok_s);
    spec_last = b;
    if (!args.has("--json")) std::fprintf(stderr, "bench: repetition %d/%d: %.1f vs %.1f tok/s\n", r + 1, reps, b.tok_s, a.tok_s);
  }
  Outcome m;
  m.plain = median(plain_tps);
  m.spec = median(spec_tps);
  const One& o = spec_last;  // greedy: every repetition drafts the same
  m.acceptance = o.drafted > 0 ? static_cast<double>(o.accepted) / o.drafted : 0.0;
  m.per_step = o.steps > 0 ? static_cast<double>(o.sampled - 1) / o.steps : 0.0;
  m.mean_rows = o.steps > 0 ? 1.0 + static_cast<double>(o.drafted) / o.steps : 1.0;
  const int32_t lo = std::min<int32_t>(k + 1, static_cast<int32_t>(m.mean_rows));
  const int32_t hi = std::min<int32_t>(k + 1, lo + 1);
  const double c = cost[static_cast<size_t>(lo)] + (cost[static_cast<size_t>(hi)] - cost[static_cast<size_t>(lo)]) *
                                                       (m.mean_rows - lo);
  m.rel = streams == 1 ? c / cost[1] : 0.0;
  m.draft_rel = streams == 1 ? draft_cost / cost[1] : 0.0;
  // The draft model's rounds: one one-row step per drafted token (its
  // first round, after the prompt, a row or two more).
  const double spent = m.rel + (m.mean_rows - 1.0) * m.draft_rel;
  m.predicted = m.rel > 0 ? m.per_step / spent : 0.0;
  m.speedup = m.plain > 0 ? m.spec / m.plain : 0.0;
  print_report(args, prompt, n, reps, k, g.lookup_ngram, so.n_threads, streams, draft != nullptr, o, m, cost);
  ember_generator_free(gen);
  ember_session_free(draft);
  ember_model_free(draft_model);
  ember_session_free(s);
  ember_model_free(model);
  return 0;
}

}  // namespace ember::cli

// `ember bench -m M [-p 64,512] [-n 128] [-r 5] [--threads T] [--backend B]
// [--json]`: prefill and decode speed with everything that produced the
// numbers (ARCHITECTURE.md principle 6), in the shape of the reproducible
// benchmark template users ask for: hardware, software, workload, metrics.
//
// Per input length p, one repetition is: reset the session, prefill p
// tokens as one batch (BOS then a fixed pseudo-random sequence of ordinary
// ids), take the greedy next token, then decode n tokens greedily one at a
// time. With a depth d (-d), the session first holds d tokens of context
// (prefilled once, kept across repetitions) and the p tokens and the decode
// run after them. One untimed warm-up repetition comes first, at each input length.
// Figures are mean ± sd over the repetitions; inter-token latencies are
// pooled over them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"
#include "tools/ember/model_cache.h"
#include "tools/ember/model_facts.h"
#include "tools/ember/svg_plot.h"

#include "ember_git_hash.h"  // generated at build time: EMBER_GIT_HASH

namespace ember::cli {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

bool parse_lengths(const std::string& s, std::vector<int32_t>* out) {
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, comma - at);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (1 << 20)) return false;
    out->push_back(static_cast<int32_t>(v));
    at = comma + 1;
  }
  return !out->empty();
}

// One (input length, parallel sessions) point's measurements, every
// repetition; with several sessions the per-session figures are pooled and
// aggregate_tps is the sessions' decoded tokens over the decode wall time.
struct Run {
  int32_t prompt = 0;
  int32_t parallel = 1;
  int32_t threads_per_session = 0;
  // parallel > 1: the streams ran as sequences of one session, batched (the
  // CPU), or as independent sessions (a backend without batched decoding).
  bool batched = false;
  std::vector<double> first_token_ms, prefill_tps, decode_tps, itl_ms, aggregate_tps;
};

std::string human_count(double n) {
  char buf[32];
  if (n >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  } else if (n >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  }
  return buf;
}

std::string yaml_string(const std::string& s) {
  std::string o = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

// --sweep prompt=64,256,1024 [parallel=1,4,16]: each item KEY=LIST.
bool parse_sweep(const std::string& item, std::vector<int32_t>* prompts, std::vector<int32_t>* parallel,
                 std::string* error) {
  const size_t eq = item.find('=');
  const std::string key = eq == std::string::npos ? "" : item.substr(0, eq);
  std::vector<int32_t> values;
  if ((key != "prompt" && key != "parallel") || !parse_lengths(item.substr(eq + 1), &values)) {
    *error = "--sweep '" + item + "': expected prompt=64,256,1024 or parallel=1,4,16 (positive integers)";
    return false;
  }
  if (key == "parallel") {
    for (int32_t v : values) {
      if (v > 256) {
        *error = "--sweep '" + item + "': parallel " + std::to_string(v) + " is more than 256 sessions";
        return false;
      }
    }
  }
  *(key == "prompt" ? prompts : parallel) = values;
  return true;
}

const char* kBenchHelp =
    "usage: ember bench -m MODEL [-p 64,512] [-n 128] [-d 0] [-r 5] [--threads T] [--backend cpu|vulkan|auto]\n"
    "                   [--kv-type f32|f16|q8_0] [--json | --format text|json|yaml] [--probe-mb MB]\n"
    "                   [--parallel 1,2,4,8,16] [--sweep prompt=64,256,1024 [parallel=1,4,16]] [--plot OUT.svg]\n"
    "  MODEL is an .ember file or a GGUF file (converted once into the cache: ember cache --help)\n"
    "  -p LIST      input lengths, comma-separated; each is prefilled as one batch (default 64,512)\n"
    "  -n N         tokens decoded greedily after each prefill (default 128)\n"
    "  -d N         depth: N tokens of context before each prompt (prefilled once, untimed), so the\n"
    "               prefill and decode figures are at that depth (default 0; as llama-bench's -d)\n"
    "  -r R         timed repetitions after a warm-up, per input length (default 5); figures are mean ± sd\n"
    "  --threads T  CPU threads (default 0: all cores)\n"
    "  --backend B  cpu (default), vulkan or auto\n"
    "  --kv-type T  the KV cache's element type: f32 (default), f16 or q8_0 (as llama-bench's -ctk/-ctv)\n"
    "  --json       the reproducible template (hardware, software, runs[] of workload + metrics) on stdout\n"
    "  --format F   text (default), json (= --json) or yaml: exactly the template's fields, one document per run\n"
    "  --probe-mb   buffer of the memory read-bandwidth probe, MB (default 512)\n"
    "  --parallel L streams decoded at once (default 1): N sequences of one session, each step one batch\n"
    "               (every weight read once for all N); aggregate tok/s, per-stream ITL p50/p95 and TTFT.\n"
    "               A backend without batched decoding runs N independent sessions, T / N threads each\n"
    "  --sweep      input lengths (prompt=, replaces -p) and streams (parallel=, as --parallel)\n"
    "  --plot F     an SVG of the sweep: throughput vs parallel sessions, TTFT vs input length, ITL histogram\n"
    "  --lookup     speculative decoding by prompt lookup against plain decoding: ember bench --lookup --help\n"
    "  --embed      embedding throughput (embeddings/s): ember bench --embed --help\n"
    "  The context is sized to the workload (longest input + n + 1), beyond the model's own when asked\n"
    "  (RoPE models run there as llama-bench runs them; the speed is measured, not the quality).\n";

// ---- parse ---------------------------------------------------------------------------

struct BenchRequest {
  std::string path;
  std::vector<int32_t> lengths;        // input lengths
  std::vector<int32_t> parallel = {1};  // streams
  int64_t n_gen = 128, reps = 5, threads_arg = 0, probe_mb = 512;
  int32_t depth = 0;                    // tokens of context before each run
  int32_t kv_type = EMBER_KV_F32;       // --kv-type
  std::string kv_type_name = "f32";
  std::string format;                   // text, json, yaml
  std::string plot_path;                // "" for no plot
  std::string backend_name;
  int32_t backend = EMBER_BACKEND_CPU;
  bool quiet = false;                   // no progress on stderr (json, yaml)
};

// -p, then --parallel and --sweep (whose second item may follow as a
// positional; --sweep may also be repeated).
int parse_workload(Args& args, BenchRequest* r) {
  if (!parse_lengths(args.get("-p", "64,512"), &r->lengths)) {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "-p '" + args.get("-p") + "': expected input lengths like 64,512 (each 1..1048576)");
  }
  std::vector<std::string> sweep = args.get_all("--sweep");
  for (const std::string& p : args.positionals()) {
    if (sweep.empty() || p.find('=') == std::string::npos) {
      return report(EMBER_ERR_INVALID_ARGUMENT, "unexpected argument '" + p + "' (see ember bench --help)");
    }
    sweep.push_back(p);
  }
  if (args.has("--parallel")) sweep.insert(sweep.begin(), "parallel=" + args.get("--parallel"));
  for (const std::string& item : sweep) {
    std::string error;
    if (!parse_sweep(item, &r->lengths, &r->parallel, &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
  }
  return kRun;
}

// --format / --json, --plot, --backend.
int parse_output(Args& args, BenchRequest* r) {
  r->format = args.get("--format", args.has("--json") ? "json" : "text");
  if (r->format != "text" && r->format != "json" && r->format != "yaml") {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--format '" + r->format + "' is not text, json or yaml");
  }
  if (args.has("--json") && r->format != "json") {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--json and --format " + r->format + ": give one");
  }
  r->plot_path = args.get("--plot");
  if (args.has("--plot") && r->plot_path.empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--plot needs a file name");
  }
  r->backend_name = args.get("--backend", "cpu");
  if (r->backend_name == "auto") {
    r->backend = EMBER_BACKEND_AUTO;
  } else if (r->backend_name == "vulkan") {
    r->backend = EMBER_BACKEND_VULKAN;
  } else if (r->backend_name != "cpu") {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "--backend '" + r->backend_name + "' is not a backend (cpu, vulkan, auto)");
  }
  r->quiet = r->format != "text";
  return kRun;
}

int parse_bench(int argc, char** argv, BenchRequest* r) {
  const std::vector<std::string> with_value = {"-m",         "-p",         "-n",       "-d",      "-r",      "--threads",
                                               "--backend",  "--probe-mb", "--format", "--sweep", "--plot",
                                               "--parallel", "--kv-type"};
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kBenchHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = with_value;
  known.push_back("--json");
  args.check_known(known);
  r->n_gen = args.get_int("-n", 128, 1, 1 << 20);
  r->reps = args.get_int("-r", 5, 1, 1000);
  r->depth = static_cast<int32_t>(args.get_int("-d", 0, 0, 1 << 20));
  r->threads_arg = args.get_int("--threads", 0, 0, 1024);
  r->probe_mb = args.get_int("--probe-mb", 512, 1, 1 << 20);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember bench --help)");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember bench --help)");
  r->path = args.get("-m");
  if (args.has("--kv-type")) {
    r->kv_type_name = args.get("--kv-type");
    const std::string& kv = r->kv_type_name;
    r->kv_type = kv == "f32" ? EMBER_KV_F32 : kv == "f16" ? EMBER_KV_F16 : kv == "q8_0" ? EMBER_KV_Q8_0 : -1;
    if (r->kv_type < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type '" + kv + "' is not f32, f16 or q8_0");
  }
  if (const int code = parse_workload(args, r); code != kRun) return code;
  return parse_output(args, r);
}

// ---- run -----------------------------------------------------------------------------

// What a run measured, and what it ran on.
struct BenchResult {
  ModelFacts facts;
  ember_model_info info{};
  HardwareInfo hw;
  int total_threads = 0;
  int32_t context = 0;       // positions the sessions hold
  bool beyond_model = false;  // more than the model's own context
  std::vector<Run> runs;
  std::string kernels;        // what the sessions ran on
  // The machine, measured after the model.
  uint64_t rss = 0;
  double bw = 0;
  bool numa_bound = false;
};

// The prompt: BOS, then ids from a fixed xorshift sequence over the
// vocabulary, skipping BOS and EOS (the same prompt every run).
std::vector<int32_t> bench_prompt(const ember_model_info& info, int32_t length) {
  std::vector<int32_t> prompt(length);
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  for (int32_t i = 0; i < length; ++i) {
    int32_t id;
    do {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      id = static_cast<int32_t>(rng % static_cast<uint64_t>(info.vocab_size));
    } while (id == info.bos_id || id == info.eos_id);
    prompt[i] = id;
  }
  if (info.bos_id >= 0) prompt[0] = info.bos_id;
  return prompt;
}

// One repetition's times, steady-clock seconds.
struct Rep {
  double t0 = 0, t_first = 0, t_end = 0, prefill_s = 0;
  std::vector<double> itl;
};

// Brings sequence `seq` to the first `depth` tokens of `prompt` and nothing
// after: when it holds them already only the tail goes (the context is
// prefilled once, not per repetition); else it starts empty. Sliding-window
// rings refuse a partial remove: those start over each time.
ember_status to_depth(ember_session* session, int32_t seq, const std::vector<int32_t>& prompt, int32_t depth,
                      std::vector<float>& logits) {
  const int32_t pos = ember_session_seq_position(session, seq);
  if (depth > 0 && pos >= depth) {
    const ember_status s = ember_session_seq_remove(session, seq, depth, pos);
    if (s != EMBER_ERR_UNSUPPORTED) return s;
  }
  ember_status s = ember_session_seq_remove(session, seq, 0, pos);
  if (s != EMBER_OK || depth == 0) return s;
  ember_batch_item item{};
  item.seq = seq;
  item.tokens = prompt.data();
  item.n_tokens = static_cast<size_t>(depth);
  item.logits = logits.data();
  return ember_session_decode_batch(session, &item, 1);
}

// One repetition on one session: reset (to the depth), prefill p, greedy
// next token, decode n_decode tokens.
ember_status one_rep(ember_session* session, const std::vector<int32_t>& prompt, std::vector<float>& logits,
                     int32_t depth, int32_t p, int64_t n_decode, Rep* rep) {
  ember_status s = depth > 0 ? to_depth(session, 0, prompt, depth, logits) : ember_session_reset(session);
  if (s != EMBER_OK) return s;
  rep->t0 = now_s();
  s = ember_session_prefill(session, prompt.data() + depth, static_cast<size_t>(p), logits.data());
  if (s != EMBER_OK) return s;
  rep->prefill_s = now_s() - rep->t0;
  int32_t tok = argmax(logits);
  rep->t_first = now_s();
  double t_prev = rep->t_first;
  rep->itl.clear();
  rep->itl.reserve(static_cast<size_t>(n_decode));
  for (int64_t i = 0; i < n_decode; ++i) {
    s = ember_session_decode(session, tok, logits.data());
    if (s != EMBER_OK) return s;
    tok = argmax(logits);
    const double t = now_s();
    rep->itl.push_back((t - t_prev) * 1e3);
    t_prev = t;
  }
  rep->t_end = t_prev;
  return EMBER_OK;
}

// One repetition of n streams as sequences of one session: every stream's
// prompt prefilled in one batched call (its steps cut at max_batch rows),
// then n_decode steps of one token per stream, all streams in each step.
// Every stream's first token and each step's tokens arrive together.
ember_status batched_rep(ember_session* session, const std::vector<int32_t>& prompt,
                         std::vector<std::vector<float>>& logits, int32_t depth, int32_t p, int64_t n_decode,
                         std::vector<Rep>* reps) {
  const size_t n = reps->size();
  std::vector<ember_batch_item> items(n, ember_batch_item{});
  std::vector<int32_t> next(n, 0);
  for (size_t i = 0; i < n; ++i) {
    ember_status s = to_depth(session, static_cast<int32_t>(i), prompt, depth, logits[i]);
    if (s != EMBER_OK) return s;
    items[i].seq = static_cast<int32_t>(i);
    items[i].tokens = prompt.data() + depth;
    items[i].n_tokens = static_cast<size_t>(p);
    items[i].logits = logits[i].data();
  }
  const double t0 = now_s();
  ember_status s = ember_session_decode_batch(session, items.data(), n);
  if (s != EMBER_OK) return s;
  const double t_first = now_s();
  for (size_t i = 0; i < n; ++i) {
    (*reps)[i].t0 = t0;
    (*reps)[i].prefill_s = t_first - t0;
    (*reps)[i].t_first = t_first;
    (*reps)[i].itl.clear();
    (*reps)[i].itl.reserve(static_cast<size_t>(n_decode));
    next[i] = argmax(logits[i]);
    items[i].tokens = &next[i];
    items[i].n_tokens = 1;
  }
  double t_prev = t_first;
  for (int64_t k = 0; k < n_decode; ++k) {
    s = ember_session_decode_batch(session, items.data(), n);
    if (s != EMBER_OK) return s;
    const double t = now_s();
    for (size_t i = 0; i < n; ++i) {
      next[i] = argmax(logits[i]);
      (*reps)[i].itl.push_back((t - t_prev) * 1e3);
    }
    t_prev = t;
  }
  for (Rep& r : *reps) r.t_end = t_prev;
  return EMBER_OK;
}

// The sessions of one parallel point: with several streams, one session of
// n sequences, batched, where the backend runs that; else independent
// sessions, T / n threads each.
struct Streams {
  std::vector<ember_session*> sessions;
  bool batched = false;
  int32_t threads_per_session = 0;
  ~Streams() {
    for (ember_session* s : sessions) ember_session_free(s);
  }
};

ember_status open_streams(ember_model* model, const BenchRequest& r, const BenchResult& res, int32_t n_sessions,
                          Streams* out) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_threads = n_sessions > 1 ? std::max(1, res.total_threads / n_sessions) : static_cast<int32_t>(r.threads_arg);
  so.backend = r.backend;
  so.kv_type_k = so.kv_type_v = r.kv_type;
  so.max_batch = *std::max_element(r.lengths.begin(), r.lengths.end());
  so.context_length = res.context;
  out->threads_per_session = so.n_threads > 0 ? so.n_threads : res.total_threads;
  if (n_sessions > 1) {
    ember_session_options bo = so;
    bo.n_threads = static_cast<int32_t>(r.threads_arg);
    bo.n_seqs = n_sessions;
    ember_session* s = nullptr;
    const ember_status bst = ember_session_create(model, &bo, &s);
    if (bst == EMBER_OK) {
      out->batched = true;
      out->threads_per_session = res.total_threads;
      out->sessions.push_back(s);
      return EMBER_OK;
    }
    if (bst != EMBER_ERR_UNSUPPORTED) return bst;
    if (!r.quiet) {
      std::fprintf(stderr, "bench: %s; %d independent sessions instead\n", ember_last_error(), n_sessions);
    }
  }
  out->sessions.assign(static_cast<size_t>(n_sessions), nullptr);
  for (ember_session*& s : out->sessions) {
    const ember_status st = ember_session_create(model, &so, &s);
    if (st != EMBER_OK) return st;
  }
  return EMBER_OK;
}

// One timed repetition of every stream at input length p into `run`.
ember_status timed_rep(const Streams& streams, const std::vector<int32_t>& prompt,
                       std::vector<std::vector<float>>& logits, int32_t depth, int32_t p, int64_t n_gen, Run* run) {
  const size_t n = logits.size();  // the streams
  std::vector<Rep> rep(n);
  std::vector<ember_status> status(n, EMBER_OK);
  if (streams.batched) {
    const ember_status bs = batched_rep(streams.sessions[0], prompt, logits, depth, p, n_gen, &rep);
    for (ember_status& x : status) x = bs;
  } else if (n == 1) {
    status[0] = one_rep(streams.sessions[0], prompt, logits[0], depth, p, n_gen, &rep[0]);
  } else {
    std::vector<std::thread> pool;
    for (size_t i = 0; i < n; ++i) {
      pool.emplace_back(
          [&, i] { status[i] = one_rep(streams.sessions[i], prompt, logits[i], depth, p, n_gen, &rep[i]); });
    }
    for (auto& t : pool) t.join();
  }
  double first = INFINITY, last = 0;
  for (size_t i = 0; i < n; ++i) {
    if (status[i] != EMBER_OK) return status[i];
    run->first_token_ms.push_back((rep[i].t_first - rep[i].t0) * 1e3);
    run->prefill_tps.push_back(p / rep[i].prefill_s);
    run->decode_tps.push_back(static_cast<double>(n_gen) / (rep[i].t_end - rep[i].t_first));
    run->itl_ms.insert(run->itl_ms.end(), rep[i].itl.begin(), rep[i].itl.end());
    first = std::min(first, rep[i].t_first);
    last = std::max(last, rep[i].t_end);
  }
  run->aggregate_tps.push_back(static_cast<double>(n_gen) * static_cast<double>(n) / (last - first));
  return EMBER_OK;
}

// Every input length at one number of streams: a warm-up, then the
// repetitions.
ember_status measure_streams(ember_model* model, const BenchRequest& r, int32_t n_sessions,
                             const std::vector<int32_t>& prompt, BenchResult* res) {
  Streams streams;
  ember_status st = open_streams(model, r, *res, n_sessions, &streams);
  if (st != EMBER_OK) return st;
  std::vector<std::vector<float>> logits(static_cast<size_t>(n_sessions), std::vector<float>(res->info.vocab_size));
  for (const int32_t p : r.lengths) {
    // Warm-up at this input length, as llama-bench warms each test: the
    // weights paged in, caches and the thread pools warm, and the
    // scratch a prompt of p tokens writes touched once, so the first
    // timed repetition of a longer prompt does not take its first-touch
    // page faults (one warm-up at the first length only: 1.1b IQ4_XS,
    // `-p 64,512 -r 1`, 512-token prefill 343-410 tok/s against 383-422
    // with this, three interleaved pairs on a 2-vCPU VM). A few decode
    // steps suffice.
    const int64_t warm_steps = std::min<int64_t>(r.n_gen, 16);
    if (streams.batched) {
      std::vector<Rep> warm(static_cast<size_t>(n_sessions));
      st = batched_rep(streams.sessions[0], prompt, logits, r.depth, p, warm_steps, &warm);
    }
    for (int i = 0; !streams.batched && st == EMBER_OK && i < n_sessions; ++i) {
      Rep warm;
      st = one_rep(streams.sessions[i], prompt, logits[i], r.depth, p, warm_steps, &warm);
    }
    if (st != EMBER_OK) return st;
    Run run;
    run.prompt = p;
    run.parallel = n_sessions;
    run.batched = streams.batched;
    run.threads_per_session = streams.threads_per_session;
    for (int64_t k = 0; st == EMBER_OK && k < r.reps; ++k) {
      st = timed_rep(streams, prompt, logits, r.depth, p, r.n_gen, &run);
    }
    res->runs.push_back(std::move(run));
    if (st != EMBER_OK) return st;
  }
  // What the sessions ran on: the kernels chosen (CPU) or the device.
  if (res->kernels.empty()) res->kernels = ember_session_backend(streams.sessions[0]);
  return EMBER_OK;
}

// The context the workload needs. Beyond the model's own the session still
// runs (every family ember has is RoPE: positions are computed, not
// learned), as llama-bench runs it; the speed is what is measured there.
int size_context(const BenchRequest& r, BenchResult* res) {
  const int32_t max_prompt = *std::max_element(r.lengths.begin(), r.lengths.end());
  const int64_t needed = static_cast<int64_t>(r.depth) + max_prompt + r.n_gen + 1;
  if (needed > (int64_t{1} << 20)) {
    const std::string d = r.depth > 0 ? "-d " + std::to_string(r.depth) + " plus " : "";
    return report(EMBER_ERR_INVALID_ARGUMENT, d + "-p " + std::to_string(max_prompt) + " plus -n " +
                                                  std::to_string(r.n_gen) + " needs " + std::to_string(needed) +
                                                  " positions; at most 1048576");
  }
  res->context = static_cast<int32_t>(needed);
  res->beyond_model = res->context > res->info.max_context;
  if (res->beyond_model) {
    std::fprintf(stderr,
                 "bench: the workload needs %d positions, beyond the model's own %d: the session is sized to %d "
                 "(RoPE positions past the trained context; the speed is measured, not the quality)\n",
                 res->context, res->info.max_context, res->context);
  }
  return 0;
}

// The model's sessions at every number of streams; 0, or the exit code of
// the error reported.
int measure_model(const BenchRequest& r, BenchResult* res) {
  ember_model_options mo;
  ember_model_options_default(&mo);
  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(r.path, &mo, &model)) return code;
  int code = 0;
  if (const ember_status fst = model_facts(model, &res->facts); fst != EMBER_OK) code = report_last(fst);
  res->info.struct_size = sizeof res->info;
  if (!code) ember_model_get_info(model, &res->info);
  res->hw = probe_hardware();
  res->total_threads = r.threads_arg > 0 ? static_cast<int>(r.threads_arg) : res->hw.logical_threads;
  if (!code) code = size_context(r, res);
  if (!code && !r.quiet) {
    std::fprintf(stderr, "bench: per input length a warm-up, then %lld repetitions%s\n", static_cast<long long>(r.reps),
                 r.parallel.size() > 1 || r.parallel[0] > 1 ? " and number of sessions" : "");
  }
  const std::vector<int32_t> prompt =
      code ? std::vector<int32_t>()
           : bench_prompt(res->info, r.depth + *std::max_element(r.lengths.begin(), r.lengths.end()));
  for (size_t i = 0; !code && i < r.parallel.size(); ++i) {
    const ember_status st = measure_streams(model, r, r.parallel[i], prompt, res);
    if (st != EMBER_OK) code = report_last(st);
  }
  ember_model_free(model);
  return code;
}

int run_bench(const BenchRequest& r, BenchResult* res) {
  // The read probe runs before the model and after it (never during it,
  // where it would evict the weights), with as many threads as the run
  // used; the better figure is the limit. This host's bandwidth drifts by
  // a third within minutes, and one probe at a slow moment made decode
  // look faster than memory (126% of it).
  const int probe_threads = r.threads_arg > 0 ? static_cast<int>(r.threads_arg) : probe_hardware().logical_threads;
  const uint64_t probe_bytes = static_cast<uint64_t>(r.probe_mb) << 20;
  double bw_before = probe_read_bandwidth_gbs(probe_threads, probe_bytes, 8);
  // Its buffer must not count in the run's peak RSS: without a reset of
  // the high-water mark the first probe's figure is not used.
  if (!reset_peak_rss()) bw_before = 0;
  if (const int code = measure_model(r, res)) return code;
  // Peak RSS first: the probe's buffer is not the model's memory.
  res->rss = peak_rss_bytes();
  res->bw = std::max(bw_before, probe_read_bandwidth_gbs(res->total_threads, probe_bytes, 8));
  const HardwareInfo& hw = res->hw;
  res->numa_bound = hw.numa_nodes > 1 && !hw.mems_allowed.empty() &&
                    hw.mems_allowed != "0-" + std::to_string(hw.numa_nodes - 1);
  return 0;
}

// ---- report --------------------------------------------------------------------------

// The SVG of the sweep: throughput vs parallel streams, TTFT vs input
// length, the ITL histogram of the first number of streams.
int write_plot(const BenchRequest& r, const BenchResult& res) {
  SvgDocument doc(900, 330);
  LineChart tp;
  tp.id = "throughput-vs-parallel";
  const bool any_batched = std::any_of(res.runs.begin(), res.runs.end(), [](const Run& x) { return x.batched; });
  tp.title = any_batched ? "Decode throughput vs parallel streams (batched: one step for all streams)"
                         : "Decode throughput vs parallel sessions (independent sessions)";
  tp.x_label = "parallel streams";
  tp.y_label = "decoded tokens/s, all streams";
  tp.log2_x = true;
  for (int32_t p : r.lengths) {
    PlotSeries s;
    s.name = "input " + std::to_string(p);
    for (const Run& x : res.runs) {
      if (x.prompt != p) continue;
      s.x.push_back(x.parallel);
      s.y.push_back(std::stod(plot_number(stats_of(x.aggregate_tps).mean)));
    }
    tp.series.push_back(s);
  }
  LineChart ttft;
  ttft.id = "ttft-vs-prompt";
  ttft.title = "Time to first token vs input length";
  ttft.x_label = "input tokens";
  ttft.y_label = "first token ms (mean)";
  ttft.log2_x = true;
  for (int32_t n : r.parallel) {
    PlotSeries s;
    s.name = n == 1 ? "1 session" : std::to_string(n) + " sessions";
    for (const Run& x : res.runs) {
      if (x.parallel != n) continue;
      s.x.push_back(x.prompt);
      s.y.push_back(stats_of(x.first_token_ms).mean);
    }
    ttft.series.push_back(s);
  }
  Histogram itl;
  itl.id = "itl-histogram";
  itl.title = "Inter-token latency (" + std::to_string(r.parallel[0]) + " session" + (r.parallel[0] > 1 ? "s" : "") +
              ", all input lengths)";
  itl.x_label = "ms between tokens";
  itl.y_label = "tokens";
  for (const Run& x : res.runs) {
    if (x.parallel == r.parallel[0]) itl.values.insert(itl.values.end(), x.itl_ms.begin(), x.itl_ms.end());
  }
  doc.add(tp);
  doc.add(ttft);
  doc.add(itl);
  const std::string svg = doc.text("ember bench: " + r.path + ", " + res.facts.quantization + ", " + res.hw.cpu_model);
  FILE* f = std::fopen(r.plot_path.c_str(), "wb");
  if (!f || std::fwrite(svg.data(), 1, svg.size(), f) != svg.size()) {
    if (f) std::fclose(f);
    return report(EMBER_ERR_IO, "--plot '" + r.plot_path + "': cannot write the file");
  }
  if (std::fclose(f) != 0) return report(EMBER_ERR_IO, "--plot '" + r.plot_path + "': cannot write the file");
  if (!r.quiet) std::fprintf(stderr, "bench: plot written to %s\n", r.plot_path.c_str());
  return 0;
}

// Exactly the seed's template (docs/decisions.md "Deployment decisions": hardware, software,
// workload, metrics), one document per run.
int report_yaml(const BenchRequest& r, const BenchResult& res) {
  const HardwareInfo& hw = res.hw;
  for (size_t i = 0; i < res.runs.size(); ++i) {
    const Run& x = res.runs[i];
    const Stats ftl = stats_of(x.first_token_ms), dec = stats_of(x.parallel > 1 ? x.aggregate_tps : x.decode_tps);
    std::printf("%s# Reproducible CPU inference benchmark template (ember bench --format yaml)\n", i ? "---\n" : "");
    std::printf("hardware:\n  cpu_model: %s\n  physical_cores: %d\n  logical_threads: %d\n"
                "  memory_capacity_gb: %.1f\n  memory_bandwidth: %s\n",
                yaml_string(hw.cpu_model).c_str(), hw.physical_cores, hw.logical_threads, hw.memory_capacity_gb,
                yaml_string(plot_number(res.bw, 1) + " GB/s measured (read probe: " +
                            std::to_string(res.total_threads) + " threads, " + std::to_string(r.probe_mb) +
                            " MB, best of 8)")
                    .c_str());
    std::printf("software:\n  inference_framework: %s\n  backend: %s\n  quantization: %s\n  thread_count: %d\n"
                "  numa_affinity: %s\n",
                yaml_string(std::string("ember ") + ember_version() + " (git " + EMBER_GIT_HASH + ", " +
                            EMBER_BUILD_FLAVOR + ")")
                    .c_str(),
                yaml_string(res.kernels).c_str(), yaml_string(res.facts.quantization).c_str(),
                x.batched ? x.threads_per_session : x.threads_per_session * x.parallel,
                res.numa_bound ? "true" : "false");
    std::printf("workload:\n  model_size: %s\n  input_length: %d\n  output_length: %lld\n  batch_size: %d\n",
                yaml_string(human_count(static_cast<double>(res.info.n_parameters))).c_str(), x.prompt,
                static_cast<long long>(r.n_gen), x.batched ? x.parallel : 1);
    if (r.depth > 0) std::printf("  # after %d tokens of context (ember bench -d)\n", r.depth);
    if (r.kv_type != EMBER_KV_F32) std::printf("  # KV cache %s (ember bench --kv-type)\n", r.kv_type_name.c_str());
    if (x.parallel > 1 && x.batched) {
      std::printf("  # %d streams decoded together: sequences of one session, one batched step each token\n",
                  x.parallel);
    } else if (x.parallel > 1) {
      std::printf("  # %d independent sessions at once (no batched decoding on this backend), %d thread(s) each\n",
                  x.parallel, x.threads_per_session);
    }
    std::printf("metrics:\n  first_token_latency_ms: %.3f\n  tokens_per_second: %.3f%s\n", ftl.mean, dec.mean,
                x.parallel > 1 ? "  # all sessions together" : "");
  }
  return 0;
}

void json_machine(const BenchRequest& r, const BenchResult& res, Json* j) {
  const HardwareInfo& hw = res.hw;
  // The float-matmul providers asked for (backends/cpu/kernel_providers.h);
  // which families each one ran is in `kernels` (the backend's description).
  const char* isa_env = std::getenv("EMBER_ISA");
  const char* kernels_env = std::getenv("EMBER_KERNELS");
  j->begin_object("hardware")
      .str("cpu_model", hw.cpu_model)
      .integer("physical_cores", hw.physical_cores)
      .integer("logical_threads", hw.logical_threads)
      .num("memory_capacity_gb", hw.memory_capacity_gb, 1)
      .num("memory_bandwidth_gbs", res.bw, 1)
      .str("memory_bandwidth_probe", std::to_string(res.total_threads) + " threads, " + std::to_string(r.probe_mb) +
                                         " MB buffer, best of 8 read passes")
      .str("cpu_features", hw.cpu_features)
      .integer("numa_nodes", hw.numa_nodes)
      .end_object();
  j->begin_object("software")
      .str("inference_framework", "ember")
      .str("version", ember_version())
      .str("git_hash", EMBER_GIT_HASH)
      .str("build", EMBER_BUILD_FLAVOR)
      .str("backend", r.backend_name)
      .str("kernels", res.kernels)
      .str("ember_isa", isa_env ? isa_env : "")
      .str("ember_kernels", kernels_env ? kernels_env : "")
      .str("quantization", res.facts.quantization)
      .str("quantization_recipe", res.facts.recipe)
      .integer("thread_count", res.total_threads)
      .boolean("numa_affinity", res.numa_bound)
      .str("cpu_affinity", hw.cpu_affinity)
      .end_object();
}

// The KV cache bytes one decode step reads on average over the run's
// decoded tokens (keys and values of every position before it, every
// layer): with the weights, what decode at depth must read. An estimate:
// the head size taken as dim / heads, sliding windows not counted.
int64_t kv_bytes_per_token(const BenchRequest& r, const BenchResult& res, const Run& x) {
  const ember_model_info& m = res.info;
  if (m.n_heads <= 0) return 0;
  const double kv_dim = static_cast<double>(m.n_kv_heads) * (m.dim / m.n_heads);
  const double elem = r.kv_type == EMBER_KV_F16 ? 2.0 : r.kv_type == EMBER_KV_Q8_0 ? 34.0 / 32.0 : 4.0;
  const double positions = r.depth + x.prompt + r.n_gen / 2.0;
  return static_cast<int64_t>(m.n_layers * 2.0 * kv_dim * elem * positions);
}

void json_run(const BenchRequest& r, const BenchResult& res, const Run& x, Json* j) {
  const Stats ftl = stats_of(x.first_token_ms), pre = stats_of(x.prefill_tps), dec = stats_of(x.decode_tps);
  const Stats agg = stats_of(x.aggregate_tps);
  const double eff = res.facts.decode_bytes_per_token * dec.mean / 1e9;
  j->begin_object();
  j->begin_object("workload")
      .str("model", r.path)
      .str("model_size", human_count(static_cast<double>(res.info.n_parameters)))
      .integer("parameters", static_cast<int64_t>(res.info.n_parameters))
      .integer("model_bytes", static_cast<int64_t>(res.facts.weight_bytes))
      .str("model_sha256", res.facts.sha256)
      .integer("input_length", x.prompt)
      .integer("depth", r.depth)
      .str("kv_type", r.kv_type_name)
      .integer("output_length", r.n_gen)
      .integer("batch_size", x.batched ? x.parallel : 1)
      .integer("parallel_sessions", x.parallel)
      .boolean("batched", x.batched)
      .integer("threads_per_session", x.threads_per_session)
      .integer("context_length", res.context)
      .integer("model_context", res.info.max_context)
      .boolean("context_beyond_model", res.beyond_model)
      .integer("repetitions", r.reps)
      .end_object();
  j->begin_object("metrics")
      .num("first_token_latency_ms", ftl.mean)
      .num("first_token_latency_ms_sd", ftl.sd)
      .num("tokens_per_second", dec.mean)
      .num("tokens_per_second_sd", dec.sd)
      .num("aggregate_tokens_per_second", agg.mean)
      .num("prefill_tokens_per_second", pre.mean)
      .num("prefill_tokens_per_second_sd", pre.sd)
      .num("inter_token_latency_ms_p50", percentile(x.itl_ms, 0.50))
      .num("inter_token_latency_ms_p95", percentile(x.itl_ms, 0.95))
      .integer("inter_token_latency_count", static_cast<int64_t>(x.itl_ms.size()))
      .integer("peak_rss_bytes", static_cast<int64_t>(res.rss))
      .integer("weight_bytes_per_token", static_cast<int64_t>(res.facts.decode_bytes_per_token))
      .integer("kv_bytes_per_token", kv_bytes_per_token(r, res, x))
      .num("effective_bandwidth_gbs", eff)
      .num("bandwidth_utilization_pct", res.bw > 0 ? 100.0 * eff / res.bw : 0.0, 1)
      .end_object();
  j->end_object();
}

int report_json(const BenchRequest& r, const BenchResult& res) {
  Json j;
  j.begin_object();
  json_machine(r, res, &j);
  j.begin_array("runs");
  for (const Run& x : res.runs) json_run(r, res, x, &j);
  j.end_array();
  j.end_object();
  std::fputs(j.text().c_str(), stdout);
  return 0;
}

int report_text(const BenchRequest& r, const BenchResult& res) {
  const HardwareInfo& hw = res.hw;
  const ModelFacts& facts = res.facts;
  std::printf("model     %s: %s parameters, %.1f MB, %s, sha256 %.16s…\n", r.path.c_str(),
              human_count(static_cast<double>(res.info.n_parameters)).c_str(), facts.weight_bytes / 1e6,
              facts.quantization.c_str(), facts.sha256.c_str());
  std::printf("machine   %s: %d cores, %d threads, %.1f GB; read probe %.1f GB/s (%d threads)\n", hw.cpu_model.c_str(),
              hw.physical_cores, hw.logical_threads, hw.memory_capacity_gb, res.bw, res.total_threads);
  std::printf("          features %s\n", hw.cpu_features.c_str());
  std::printf("build     %s\n", EMBER_BUILD_FLAVOR);
  std::printf("software  ember %s (git %s), backend %s, %d thread(s)%s, kernels %s\n", ember_version(), EMBER_GIT_HASH,
              r.backend_name.c_str(), res.total_threads, res.numa_bound ? ", NUMA-bound" : "", res.kernels.c_str());
  std::printf("workload  batch 1, %lld decoded tokens, %scontext %d%s; %lld repetitions after a warm-up; mean ± sd\n\n",
              static_cast<long long>(r.n_gen), r.depth > 0 ? ("depth " + std::to_string(r.depth) + ", ").c_str() : "",
              res.context, res.beyond_model ? " (beyond the model's own)" : "", static_cast<long long>(r.reps));
  const bool multi = r.parallel.size() > 1 || r.parallel[0] > 1;
  std::printf("%7s  %s%20s  %18s  %18s  %17s  %20s\n", "prompt", multi ? " streams  all tok/s  " : "",
              "prefill tok/s", "first token ms", "decode tok/s", "ITL p50/p95 ms", "decode GB/s (probe)");
  for (const Run& x : res.runs) {
    const Stats ftl = stats_of(x.first_token_ms), pre = stats_of(x.prefill_tps), dec = stats_of(x.decode_tps);
    const double eff = facts.decode_bytes_per_token * dec.mean / 1e9;
    char c1[32], c2[32], c3[32], c4[32], c5[32];
    std::snprintf(c1, sizeof c1, "%.1f ± %.1f", pre.mean, pre.sd);
    std::snprintf(c2, sizeof c2, "%.2f ± %.2f", ftl.mean, ftl.sd);
    std::snprintf(c3, sizeof c3, "%.2f ± %.2f", dec.mean, dec.sd);
    std::snprintf(c4, sizeof c4, "%.2f / %.2f", percentile(x.itl_ms, 0.5), percentile(x.itl_ms, 0.95));
    std::snprintf(c5, sizeof c5, "%.1f (%.0f%%)", eff, res.bw > 0 ? 100.0 * eff / res.bw : 0.0);
    if (multi) {
      std::printf("%7d  %8d  %9.1f  %21s  %19s  %19s  %17s  %20s\n", x.prompt, x.parallel,
                  stats_of(x.aggregate_tps).mean, c1, c2, c3, c4, c5);
    } else {
      std::printf("%7d  %21s  %19s  %19s  %17s  %20s\n", x.prompt, c1, c2, c3, c4, c5);
    }
  }
  std::printf("\npeak RSS %.1f MB (mapped weights included)\n", res.rss / 1e6);
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--lookup" || std::string(argv[i]) == "--draft") return bench_lookup(argc, argv);
    if (std::string(argv[i]) == "--embed") return bench_embed(argc, argv);
  }
  BenchRequest r;
  if (const int code = parse_bench(argc, argv, &r); code != kRun) return code;
  BenchResult res;
  if (const int code = run_bench(r, &res)) return code;
  if (!r.plot_path.empty()) {
    if (const int code = write_plot(r, res)) return code;
  }
  if (r.format == "yaml") return report_yaml(r, res);
  if (r.format == "json") return report_json(r, res);
  return report_text(r, res);
}

}  // namespace ember::cli

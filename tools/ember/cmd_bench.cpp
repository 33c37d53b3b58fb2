// `ember bench -m M [-p 64,512] [-n 128] [-r 5] [--threads T] [--backend B]
// [--json]`: prefill and decode speed with everything that produced the
// numbers (DESIGN.md principle 6), in the shape of the reproducible
// benchmark template users ask for: hardware, software, workload, metrics.
//
// Per input length p, one repetition is: reset the session, prefill p
// tokens as one batch (BOS then a fixed pseudo-random sequence of ordinary
// ids), take the greedy next token, then decode n tokens greedily one at a
// time. One untimed warm-up repetition comes first, at each input length.
// Figures are mean ± sd over the repetitions; inter-token latencies are
// pooled over them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "format/model_file.h"
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
    "usage: ember bench -m MODEL [-p 64,512] [-n 128] [-r 5] [--threads T] [--backend cpu|vulkan|auto]\n"
    "                   [--json | --format text|json|yaml] [--probe-mb MB]\n"
    "                   [--parallel 1,2,4,8,16] [--sweep prompt=64,256,1024 [parallel=1,4,16]] [--plot OUT.svg]\n"
    "  MODEL is an .ember file or a GGUF file (converted once into the cache: ember cache --help)\n"
    "  -p LIST      input lengths, comma-separated; each is prefilled as one batch (default 64,512)\n"
    "  -n N         tokens decoded greedily after each prefill (default 128)\n"
    "  -r R         timed repetitions after a warm-up, per input length (default 5); figures are mean ± sd\n"
    "  --threads T  CPU threads (default 0: all cores)\n"
    "  --backend B  cpu (default), vulkan or auto\n"
    "  --json       the reproducible template (hardware, software, runs[] of workload + metrics) on stdout\n"
    "  --format F   text (default), json (= --json) or yaml: exactly the template's fields, one document per run\n"
    "  --probe-mb   buffer of the memory read-bandwidth probe, MB (default 512)\n"
    "  --parallel L streams decoded at once (default 1): N sequences of one session, each step one batch\n"
    "               (every weight read once for all N); aggregate tok/s, per-stream ITL p50/p95 and TTFT.\n"
    "               A backend without batched decoding runs N independent sessions, T / N threads each\n"
    "  --sweep      input lengths (prompt=, replaces -p) and streams (parallel=, as --parallel)\n"
    "  --plot F     an SVG of the sweep: throughput vs parallel sessions, TTFT vs input length, ITL histogram\n"
    "  The context is sized to the workload (longest input + n + 1), beyond the model's own when asked\n"
    "  (RoPE models run there as llama-bench runs them; the speed is measured, not the quality).\n";

}  // namespace

int cmd_bench(int argc, char** argv) {
  const std::vector<std::string> with_value = {"-m",         "-p",         "-n",       "-r",      "--threads",
                                               "--backend",  "--probe-mb", "--format", "--sweep", "--plot",
                                               "--parallel"};
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kBenchHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = with_value;
  known.push_back("--json");
  args.check_known(known);
  const int64_t n_gen = args.get_int("-n", 128, 1, 1 << 20);
  const int64_t reps = args.get_int("-r", 5, 1, 1000);
  const int64_t threads_arg = args.get_int("--threads", 0, 0, 1024);
  const int64_t probe_mb = args.get_int("--probe-mb", 512, 1, 1 << 20);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember bench --help)");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember bench --help)");
  std::vector<int32_t> lengths;
  if (!parse_lengths(args.get("-p", "64,512"), &lengths)) {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "-p '" + args.get("-p") + "': expected input lengths like 64,512 (each 1..1048576)");
  }
  std::vector<int32_t> parallel = {1};
  // `--sweep prompt=... parallel=...`: the second item may follow as a
  // positional; --sweep may also be repeated.
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
    if (!parse_sweep(item, &lengths, &parallel, &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
  }
  std::string format = args.get("--format", args.has("--json") ? "json" : "text");
  if (format != "text" && format != "json" && format != "yaml") {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--format '" + format + "' is not text, json or yaml");
  }
  if (args.has("--json") && format != "json") {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--json and --format " + format + ": give one");
  }
  const std::string plot_path = args.get("--plot");
  if (args.has("--plot") && plot_path.empty()) return report(EMBER_ERR_INVALID_ARGUMENT, "--plot needs a file name");
  const std::string backend_name = args.get("--backend", "cpu");
  int32_t backend = EMBER_BACKEND_CPU;
  if (backend_name == "auto") {
    backend = EMBER_BACKEND_AUTO;
  } else if (backend_name == "vulkan") {
    backend = EMBER_BACKEND_VULKAN;
  } else if (backend_name != "cpu") {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--backend '" + backend_name + "' is not a backend (cpu, vulkan, auto)");
  }
  const bool quiet = format != "text";
  const std::string path = args.get("-m");

  ember_model_options mo;
  ember_model_options_default(&mo);
  ember_model* model = nullptr;
  std::string opened;  // the cached conversion for a GGUF file
  if (const int code = open_model_for_cli(path, &mo, &model, &opened)) return code;
  ember_status st = EMBER_OK;
  auto facts = model_facts(opened);
  if (!facts.is_ok()) {
    ember_model_free(model);
    return report(facts.status().code(), facts.status().message());
  }
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  const HardwareInfo hw = probe_hardware();
  const int total_threads = threads_arg > 0 ? static_cast<int>(threads_arg) : hw.logical_threads;

  // The context the workload needs. Beyond the model's own the session
  // still runs (every family ember has is RoPE: positions are computed, not
  // learned), as llama-bench runs it; the speed is what is measured there.
  const int32_t max_prompt = *std::max_element(lengths.begin(), lengths.end());
  const int64_t needed = static_cast<int64_t>(max_prompt) + n_gen + 1;
  if (needed > (int64_t{1} << 20)) {
    ember_model_free(model);
    return report(EMBER_ERR_INVALID_ARGUMENT, "-p " + std::to_string(max_prompt) + " plus -n " +
                                                  std::to_string(n_gen) + " needs " + std::to_string(needed) +
                                                  " positions; at most 1048576");
  }
  const int32_t context = static_cast<int32_t>(needed);
  const bool beyond_model = context > info.max_context;
  if (beyond_model) {
    std::fprintf(stderr,
                 "bench: the workload needs %d positions, beyond the model's own %d: the session is sized to %d "
                 "(RoPE positions past the trained context; the speed is measured, not the quality)\n",
                 context, info.max_context, context);
  }

  // The prompt: BOS, then ids from a fixed xorshift sequence over the
  // vocabulary, skipping BOS and EOS (the same prompt every run).
  std::vector<int32_t> prompt(max_prompt);
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  for (int32_t i = 0; i < max_prompt; ++i) {
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

  // One repetition on one session: reset, prefill p, greedy next token,
  // decode n_decode tokens. Times are steady-clock seconds.
  struct Rep {
    double t0 = 0, t_first = 0, t_end = 0, prefill_s = 0;
    std::vector<double> itl;
  };
  auto one_rep = [&](ember_session* session, std::vector<float>& logits, int32_t p, int64_t n_decode,
                     Rep* rep) -> ember_status {
    ember_status s = ember_session_reset(session);
    if (s != EMBER_OK) return s;
    rep->t0 = now_s();
    s = ember_session_prefill(session, prompt.data(), static_cast<size_t>(p), logits.data());
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
  };

  // One repetition of n streams as sequences of one session: every stream's
  // prompt prefilled in one batched call (its steps cut at max_batch rows),
  // then n_decode steps of one token per stream, all streams in each step.
  // Every stream's first token and each step's tokens arrive together.
  std::vector<ember_batch_item> items;
  std::vector<int32_t> next;
  auto batched_rep = [&](ember_session* session, std::vector<std::vector<float>>& logits, int32_t p, int64_t n_decode,
                         std::vector<Rep>* reps) -> ember_status {
    const size_t n = reps->size();
    items.assign(n, ember_batch_item{});
    next.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      ember_status s = ember_session_seq_remove(session, static_cast<int32_t>(i), 0,
                                                ember_session_seq_position(session, static_cast<int32_t>(i)));
      if (s != EMBER_OK) return s;
      items[i].seq = static_cast<int32_t>(i);
      items[i].tokens = prompt.data();
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
  };

  if (!quiet) {
    std::fprintf(stderr, "bench: per input length a warm-up, then %lld repetitions%s\n", static_cast<long long>(reps),
                 parallel.size() > 1 || parallel[0] > 1 ? " and number of sessions" : "");
  }
  std::vector<Run> runs;
  std::string kernels;
  for (const int32_t n_sessions : parallel) {
    ember_session_options so;
    ember_session_options_default(&so);
    so.n_threads = n_sessions > 1 ? std::max(1, total_threads / n_sessions) : static_cast<int32_t>(threads_arg);
    so.backend = backend;
    so.max_batch = max_prompt;
    so.context_length = context;
    // Several streams: one session of n_sessions sequences, batched, where
    // the backend runs that; else independent sessions.
    bool batched = false;
    std::vector<ember_session*> sessions;
    if (n_sessions > 1) {
      ember_session_options bo = so;
      bo.n_threads = static_cast<int32_t>(threads_arg);
      bo.n_seqs = n_sessions;
      ember_session* s = nullptr;
      const ember_status bst = ember_session_create(model, &bo, &s);
      if (bst == EMBER_OK) {
        batched = true;
        sessions.push_back(s);
      } else if (bst != EMBER_ERR_UNSUPPORTED) {
        st = bst;
      } else if (!quiet) {
        std::fprintf(stderr, "bench: %s; %d independent sessions instead\n", ember_last_error(), n_sessions);
      }
    }
    if (!batched) {
      sessions.assign(static_cast<size_t>(n_sessions), nullptr);
      for (ember_session*& s : sessions) {
        if (st == EMBER_OK) st = ember_session_create(model, &so, &s);
      }
    }
    std::vector<std::vector<float>> logits(static_cast<size_t>(n_sessions), std::vector<float>(info.vocab_size));
    for (size_t li = 0; st == EMBER_OK && li < lengths.size(); ++li) {
      const int32_t p = lengths[li];
      // Warm-up at this input length, as llama-bench warms each test: the
      // weights paged in, caches and the thread pools warm, and the
      // scratch a prompt of p tokens writes touched once, so the first
      // timed repetition of a longer prompt does not take its first-touch
      // page faults (one warm-up at the first length only: 1.1b IQ4_XS,
      // `-p 64,512 -r 1`, 512-token prefill 343-410 tok/s against 383-422
      // with this, three interleaved pairs on a 2-vCPU VM). A few decode
      // steps suffice.
      if (batched) {
        std::vector<Rep> warm(static_cast<size_t>(n_sessions));
        st = batched_rep(sessions[0], logits, p, std::min<int64_t>(n_gen, 16), &warm);
      }
      for (int i = 0; !batched && st == EMBER_OK && i < n_sessions; ++i) {
        Rep warm;
        st = one_rep(sessions[i], logits[i], p, std::min<int64_t>(n_gen, 16), &warm);
      }
      if (st != EMBER_OK) break;
      Run run;
      run.prompt = p;
      run.parallel = n_sessions;
      run.batched = batched;
      run.threads_per_session = batched ? total_threads : so.n_threads > 0 ? so.n_threads : total_threads;
      for (int64_t r = 0; st == EMBER_OK && r < reps; ++r) {
        std::vector<Rep> rep(static_cast<size_t>(n_sessions));
        std::vector<ember_status> status(static_cast<size_t>(n_sessions), EMBER_OK);
        if (batched) {
          const ember_status bs = batched_rep(sessions[0], logits, p, n_gen, &rep);
          for (ember_status& x : status) x = bs;
        } else if (n_sessions == 1) {
          status[0] = one_rep(sessions[0], logits[0], p, n_gen, &rep[0]);
        } else {
          std::vector<std::thread> pool;
          for (int i = 0; i < n_sessions; ++i) {
            pool.emplace_back([&, i] { status[i] = one_rep(sessions[i], logits[i], p, n_gen, &rep[i]); });
          }
          for (auto& t : pool) t.join();
        }
        double first = INFINITY, last = 0;
        for (int i = 0; i < n_sessions; ++i) {
          if (status[i] != EMBER_OK) st = status[i];
          if (st != EMBER_OK) break;
          run.first_token_ms.push_back((rep[i].t_first - rep[i].t0) * 1e3);
          run.prefill_tps.push_back(p / rep[i].prefill_s);
          run.decode_tps.push_back(static_cast<double>(n_gen) / (rep[i].t_end - rep[i].t_first));
          run.itl_ms.insert(run.itl_ms.end(), rep[i].itl.begin(), rep[i].itl.end());
          first = std::min(first, rep[i].t_first);
          last = std::max(last, rep[i].t_end);
        }
        if (st == EMBER_OK) run.aggregate_tps.push_back(static_cast<double>(n_gen) * n_sessions / (last - first));
      }
      runs.push_back(std::move(run));
    }
    // What the sessions ran on: the kernels chosen (CPU) or the device.
    if (st == EMBER_OK && kernels.empty()) kernels = ember_session_backend(sessions[0]);
    const int code = st != EMBER_OK ? report_last(st) : 0;
    for (ember_session* s : sessions) ember_session_free(s);
    if (code) {
      ember_model_free(model);
      return code;
    }
  }
  ember_model_free(model);

  // The machine, measured after the model so the probe does not evict it
  // mid-run; with as many threads as the run used.
  // Peak RSS first: the probe's buffer is not the model's memory.
  const uint64_t rss = peak_rss_bytes();
  const int threads = total_threads;
  const double bw = probe_read_bandwidth_gbs(threads, static_cast<uint64_t>(probe_mb) << 20, 8);
  const char* isa_env = std::getenv("EMBER_ISA");
  // The float-matmul providers asked for (backends/cpu/kernel_providers.h);
  // which families each one ran is in `kernels` (the backend's description).
  const char* kernels_env = std::getenv("EMBER_KERNELS");
  const bool numa_bound = hw.numa_nodes > 1 && !hw.mems_allowed.empty() &&
                          hw.mems_allowed != "0-" + std::to_string(hw.numa_nodes - 1);

  if (!plot_path.empty()) {
    SvgDocument doc(900, 330);
    LineChart tp;
    tp.id = "throughput-vs-parallel";
    const bool any_batched = std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.batched; });
    tp.title = any_batched ? "Decode throughput vs parallel streams (batched: one step for all streams)"
                           : "Decode throughput vs parallel sessions (independent sessions)";
    tp.x_label = "parallel streams";
    tp.y_label = "decoded tokens/s, all streams";
    tp.log2_x = true;
    for (int32_t p : lengths) {
      PlotSeries s;
      s.name = "input " + std::to_string(p);
      for (const Run& r : runs) {
        if (r.prompt != p) continue;
        s.x.push_back(r.parallel);
        s.y.push_back(std::stod(plot_number(stats_of(r.aggregate_tps).mean)));
      }
      tp.series.push_back(s);
    }
    LineChart ttft;
    ttft.id = "ttft-vs-prompt";
    ttft.title = "Time to first token vs input length";
    ttft.x_label = "input tokens";
    ttft.y_label = "first token ms (mean)";
    ttft.log2_x = true;
    for (int32_t n : parallel) {
      PlotSeries s;
      s.name = n == 1 ? "1 session" : std::to_string(n) + " sessions";
      for (const Run& r : runs) {
        if (r.parallel != n) continue;
        s.x.push_back(r.prompt);
        s.y.push_back(stats_of(r.first_token_ms).mean);
      }
      ttft.series.push_back(s);
    }
    Histogram itl;
    itl.id = "itl-histogram";
    itl.title = "Inter-token latency (" + std::to_string(parallel[0]) + " session" + (parallel[0] > 1 ? "s" : "") +
                ", all input lengths)";
    itl.x_label = "ms between tokens";
    itl.y_label = "tokens";
    for (const Run& r : runs) {
      if (r.parallel == parallel[0]) itl.values.insert(itl.values.end(), r.itl_ms.begin(), r.itl_ms.end());
    }
    doc.add(tp);
    doc.add(ttft);
    doc.add(itl);
    const std::string svg = doc.text("ember bench: " + path + ", " + facts->quantization + ", " + hw.cpu_model);
    FILE* f = std::fopen(plot_path.c_str(), "wb");
    if (!f || std::fwrite(svg.data(), 1, svg.size(), f) != svg.size()) {
      if (f) std::fclose(f);
      return report(EMBER_ERR_IO, "--plot '" + plot_path + "': cannot write the file");
    }
    if (std::fclose(f) != 0) return report(EMBER_ERR_IO, "--plot '" + plot_path + "': cannot write the file");
    if (!quiet) std::fprintf(stderr, "bench: plot written to %s\n", plot_path.c_str());
  }

  if (format == "yaml") {
    // Exactly the seed's template (docs/decisions.md: hardware, software,
    // workload, metrics), one document per run.
    for (size_t i = 0; i < runs.size(); ++i) {
      const Run& r = runs[i];
      const Stats ftl = stats_of(r.first_token_ms), dec = stats_of(r.parallel > 1 ? r.aggregate_tps : r.decode_tps);
      std::printf("%s# Reproducible CPU inference benchmark template (ember bench --format yaml)\n", i ? "---\n" : "");
      std::printf("hardware:\n  cpu_model: %s\n  physical_cores: %d\n  logical_threads: %d\n"
                  "  memory_capacity_gb: %.1f\n  memory_bandwidth: %s\n",
                  yaml_string(hw.cpu_model).c_str(), hw.physical_cores, hw.logical_threads, hw.memory_capacity_gb,
                  yaml_string(plot_number(bw, 1) + " GB/s measured (read probe: " + std::to_string(threads) +
                              " threads, " + std::to_string(probe_mb) + " MB, best of 8)")
                      .c_str());
      std::printf("software:\n  inference_framework: %s\n  backend: %s\n  quantization: %s\n  thread_count: %d\n"
                  "  numa_affinity: %s\n",
                  yaml_string(std::string("ember ") + ember_version() + " (git " + EMBER_GIT_HASH + ", " +
                              EMBER_BUILD_FLAVOR + ")")
                      .c_str(),
                  yaml_string(kernels).c_str(), yaml_string(facts->quantization).c_str(),
                  r.batched ? r.threads_per_session : r.threads_per_session * r.parallel,
                  numa_bound ? "true" : "false");
      std::printf("workload:\n  model_size: %s\n  input_length: %d\n  output_length: %lld\n  batch_size: %d\n",
                  yaml_string(human_count(static_cast<double>(info.n_parameters))).c_str(), r.prompt,
                  static_cast<long long>(n_gen), r.batched ? r.parallel : 1);
      if (r.parallel > 1 && r.batched) {
        std::printf("  # %d streams decoded together: sequences of one session, one batched step each token\n",
                    r.parallel);
      } else if (r.parallel > 1) {
        std::printf("  # %d independent sessions at once (no batched decoding on this backend), %d thread(s) each\n",
                    r.parallel, r.threads_per_session);
      }
      std::printf("metrics:\n  first_token_latency_ms: %.3f\n  tokens_per_second: %.3f%s\n", ftl.mean, dec.mean,
                  r.parallel > 1 ? "  # all sessions together" : "");
    }
    return 0;
  }

  if (format == "json") {
    Json j;
    j.begin_object();
    j.begin_object("hardware")
        .str("cpu_model", hw.cpu_model)
        .integer("physical_cores", hw.physical_cores)
        .integer("logical_threads", hw.logical_threads)
        .num("memory_capacity_gb", hw.memory_capacity_gb, 1)
        .num("memory_bandwidth_gbs", bw, 1)
        .str("memory_bandwidth_probe", std::to_string(threads) + " threads, " + std::to_string(probe_mb) +
                                           " MB buffer, best of 8 read passes")
        .str("cpu_features", hw.cpu_features)
        .integer("numa_nodes", hw.numa_nodes)
        .end_object();
    j.begin_object("software")
        .str("inference_framework", "ember")
        .str("version", ember_version())
        .str("git_hash", EMBER_GIT_HASH)
        .str("build", EMBER_BUILD_FLAVOR)
        .str("backend", backend_name)
        .str("kernels", kernels)
        .str("ember_isa", isa_env ? isa_env : "")
        .str("ember_kernels", kernels_env ? kernels_env : "")
        .str("quantization", facts->quantization)
        .str("quantization_recipe", facts->recipe)
        .integer("thread_count", threads)
        .boolean("numa_affinity", numa_bound)
        .str("cpu_affinity", hw.cpu_affinity)
        .end_object();
    j.begin_array("runs");
    for (const Run& r : runs) {
      const Stats ftl = stats_of(r.first_token_ms), pre = stats_of(r.prefill_tps), dec = stats_of(r.decode_tps);
      const Stats agg = stats_of(r.aggregate_tps);
      const double eff = facts->decode_bytes_per_token * dec.mean / 1e9;
      j.begin_object();
      j.begin_object("workload")
          .str("model", path)
          .str("model_size", human_count(static_cast<double>(info.n_parameters)))
          .integer("parameters", static_cast<int64_t>(info.n_parameters))
          .integer("model_bytes", static_cast<int64_t>(facts->weight_bytes))
          .str("model_sha256", facts->sha256)
          .integer("input_length", r.prompt)
          .integer("output_length", n_gen)
          .integer("batch_size", r.batched ? r.parallel : 1)
          .integer("parallel_sessions", r.parallel)
          .boolean("batched", r.batched)
          .integer("threads_per_session", r.threads_per_session)
          .integer("context_length", context)
          .integer("model_context", info.max_context)
          .boolean("context_beyond_model", beyond_model)
          .integer("repetitions", reps)
          .end_object();
      j.begin_object("metrics")
          .num("first_token_latency_ms", ftl.mean)
          .num("first_token_latency_ms_sd", ftl.sd)
          .num("tokens_per_second", dec.mean)
          .num("tokens_per_second_sd", dec.sd)
          .num("aggregate_tokens_per_second", agg.mean)
          .num("prefill_tokens_per_second", pre.mean)
          .num("prefill_tokens_per_second_sd", pre.sd)
          .num("inter_token_latency_ms_p50", percentile(r.itl_ms, 0.50))
          .num("inter_token_latency_ms_p95", percentile(r.itl_ms, 0.95))
          .integer("inter_token_latency_count", static_cast<int64_t>(r.itl_ms.size()))
          .integer("peak_rss_bytes", static_cast<int64_t>(rss))
          .integer("weight_bytes_per_token", static_cast<int64_t>(facts->decode_bytes_per_token))
          .num("effective_bandwidth_gbs", eff)
          .num("bandwidth_utilization_pct", bw > 0 ? 100.0 * eff / bw : 0.0, 1)
          .end_object();
      j.end_object();
    }
    j.end_array();
    j.end_object();
    std::fputs(j.text().c_str(), stdout);
    return 0;
  }

  std::printf("model     %s: %s parameters, %.1f MB, %s, sha256 %.16s…\n", path.c_str(),
              human_count(static_cast<double>(info.n_parameters)).c_str(), facts->weight_bytes / 1e6,
              facts->quantization.c_str(), facts->sha256.c_str());
  std::printf("machine   %s: %d cores, %d threads, %.1f GB; read probe %.1f GB/s (%d threads)\n", hw.cpu_model.c_str(),
              hw.physical_cores, hw.logical_threads, hw.memory_capacity_gb, bw, threads);
  std::printf("          features %s\n", hw.cpu_features.c_str());
  std::printf("build     %s\n", EMBER_BUILD_FLAVOR);
  std::printf("software  ember %s (git %s), backend %s, %d thread(s)%s, kernels %s\n", ember_version(), EMBER_GIT_HASH,
              backend_name.c_str(), threads, numa_bound ? ", NUMA-bound" : "", kernels.c_str());
  std::printf("workload  batch 1, %lld decoded tokens, context %d%s; %lld repetitions after a warm-up; mean ± sd\n\n",
              static_cast<long long>(n_gen), context, beyond_model ? " (beyond the model's own)" : "",
              static_cast<long long>(reps));
  const bool multi = parallel.size() > 1 || parallel[0] > 1;
  std::printf("%7s  %s%20s  %18s  %18s  %17s  %20s\n", "prompt", multi ? " streams  all tok/s  " : "",
              "prefill tok/s", "first token ms", "decode tok/s", "ITL p50/p95 ms", "decode GB/s (probe)");
  for (const Run& r : runs) {
    const Stats ftl = stats_of(r.first_token_ms), pre = stats_of(r.prefill_tps), dec = stats_of(r.decode_tps);
    const double eff = facts->decode_bytes_per_token * dec.mean / 1e9;
    char c1[32], c2[32], c3[32], c4[32], c5[32];
    std::snprintf(c1, sizeof c1, "%.1f ± %.1f", pre.mean, pre.sd);
    std::snprintf(c2, sizeof c2, "%.2f ± %.2f", ftl.mean, ftl.sd);
    std::snprintf(c3, sizeof c3, "%.2f ± %.2f", dec.mean, dec.sd);
    std::snprintf(c4, sizeof c4, "%.2f / %.2f", percentile(r.itl_ms, 0.5), percentile(r.itl_ms, 0.95));
    std::snprintf(c5, sizeof c5, "%.1f (%.0f%%)", eff, bw > 0 ? 100.0 * eff / bw : 0.0);
    if (multi) {
      std::printf("%7d  %8d  %9.1f  %21s  %19s  %19s  %17s  %20s\n", r.prompt, r.parallel,
                  stats_of(r.aggregate_tps).mean, c1, c2, c3, c4, c5);
    } else {
      std::printf("%7d  %21s  %19s  %19s  %17s  %20s\n", r.prompt, c1, c2, c3, c4, c5);
    }
  }
  std::printf("\npeak RSS %.1f MB (mapped weights included)\n", rss / 1e6);
  return 0;
}

}  // namespace ember::cli

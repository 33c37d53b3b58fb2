// `ember bench -m M [-p 64,512] [-n 128] [-r 5] [--threads T] [--backend B]
// [--json]`: prefill and decode speed with everything that produced the
// numbers (DESIGN.md principle 6), in the shape of the reproducible
// benchmark template users ask for: hardware, software, workload, metrics.
//
// Per input length p, one repetition is: reset the session, prefill p
// tokens as one batch (BOS then a fixed pseudo-random sequence of ordinary
// ids), take the greedy next token, then decode n tokens greedily one at a
// time. One untimed warm-up repetition comes first. Figures are mean ± sd
// over the repetitions; inter-token latencies are pooled over them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "format/model_file.h"
#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"
#include "tools/ember/model_cache.h"
#include "tools/ember/model_facts.h"

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

// One input length's measurements, every repetition.
struct Run {
  int32_t prompt = 0;
  std::vector<double> first_token_ms, prefill_tps, decode_tps, itl_ms;
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

const char* kBenchHelp =
    "usage: ember bench -m MODEL [-p 64,512] [-n 128] [-r 5] [--threads T] [--backend cpu|vulkan|auto]\n"
    "                   [--json] [--probe-mb MB]\n"
    "  MODEL is an .ember file or a GGUF file (converted once into the cache: ember cache --help)\n"
    "  -p LIST      input lengths, comma-separated; each is prefilled as one batch (default 64,512)\n"
    "  -n N         tokens decoded greedily after each prefill (default 128)\n"
    "  -r R         timed repetitions after one warm-up (default 5); figures are mean ± sd\n"
    "  --threads T  CPU threads (default 0: all cores)\n"
    "  --backend B  cpu (default), vulkan or auto\n"
    "  --json       the reproducible template (hardware, software, runs[] of workload + metrics) on stdout\n"
    "  --probe-mb   buffer of the memory read-bandwidth probe, MB (default 512)\n";

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args args(argc, argv, {"-m", "-p", "-n", "-r", "--threads", "--backend", "--probe-mb"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kBenchHelp, stdout);
    return 0;
  }
  args.check_known({"-m", "-p", "-n", "-r", "--threads", "--backend", "--probe-mb", "--json"});
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
  const std::string backend_name = args.get("--backend", "cpu");
  int32_t backend = EMBER_BACKEND_CPU;
  if (backend_name == "auto") {
    backend = EMBER_BACKEND_AUTO;
  } else if (backend_name == "vulkan") {
    backend = EMBER_BACKEND_VULKAN;
  } else if (backend_name != "cpu") {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--backend '" + backend_name + "' is not a backend (cpu, vulkan, auto)");
  }
  const bool json = args.has("--json");
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

  const int32_t max_prompt = *std::max_element(lengths.begin(), lengths.end());
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_threads = static_cast<int32_t>(threads_arg);
  so.backend = backend;
  so.max_batch = max_prompt;
  so.context_length = static_cast<int32_t>(max_prompt + n_gen + 1);
  if (so.context_length > info.max_context) {
    ember_model_free(model);
    return report(EMBER_ERR_INVALID_ARGUMENT, "-p " + std::to_string(max_prompt) + " plus -n " + std::to_string(n_gen) +
                                                  " needs " + std::to_string(so.context_length) +
                                                  " positions; the model's context is " +
                                                  std::to_string(info.max_context));
  }
  ember_session* session = nullptr;
  st = ember_session_create(model, &so, &session);
  if (st != EMBER_OK) {
    const int code = report_last(st);
    ember_model_free(model);
    return code;
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

  std::vector<float> logits(info.vocab_size);
  std::vector<Run> runs;
  auto one_rep = [&](int32_t p, int64_t n_decode, Run* run) -> ember_status {
    ember_status s = ember_session_reset(session);
    if (s != EMBER_OK) return s;
    const double t0 = now_s();
    s = ember_session_prefill(session, prompt.data(), static_cast<size_t>(p), logits.data());
    if (s != EMBER_OK) return s;
    const double t_prefill = now_s();
    int32_t tok = argmax(logits);
    const double t_first = now_s();
    double t_prev = t_first;
    std::vector<double> itl;
    itl.reserve(static_cast<size_t>(n_decode));
    for (int64_t i = 0; i < n_decode; ++i) {
      s = ember_session_decode(session, tok, logits.data());
      if (s != EMBER_OK) return s;
      tok = argmax(logits);
      const double t = now_s();
      itl.push_back((t - t_prev) * 1e3);
      t_prev = t;
    }
    if (run) {
      run->first_token_ms.push_back((t_first - t0) * 1e3);
      run->prefill_tps.push_back(p / (t_prefill - t0));
      run->decode_tps.push_back(static_cast<double>(n_decode) / (t_prev - t_first));
      run->itl_ms.insert(run->itl_ms.end(), itl.begin(), itl.end());
    }
    return EMBER_OK;
  };

  if (!json) std::fprintf(stderr, "bench: warm-up, then %lld repetitions per input length\n", static_cast<long long>(reps));
  // Warm-up: the weights paged in, caches and the thread pool warm; a few
  // decode steps suffice for that.
  st = one_rep(lengths[0], std::min<int64_t>(n_gen, 16), nullptr);
  for (int32_t p : lengths) {
    Run run;
    run.prompt = p;
    for (int64_t r = 0; st == EMBER_OK && r < reps; ++r) st = one_rep(p, n_gen, &run);
    runs.push_back(std::move(run));
  }
  if (st != EMBER_OK) {
    const int code = report_last(st);
    ember_session_free(session);
    ember_model_free(model);
    return code;
  }
  // What the session ran on: the kernels chosen (CPU) or the device.
  const std::string kernels = ember_session_backend(session);
  ember_session_free(session);
  ember_model_free(model);

  // The machine, measured after the model so the probe does not evict it
  // mid-run; with as many threads as the run used.
  // Peak RSS first: the probe's buffer is not the model's memory.
  const uint64_t rss = peak_rss_bytes();
  const HardwareInfo hw = probe_hardware();
  const int threads = threads_arg > 0 ? static_cast<int>(threads_arg) : hw.logical_threads;
  const double bw = probe_read_bandwidth_gbs(threads, static_cast<uint64_t>(probe_mb) << 20, 8);
  const char* isa_env = std::getenv("EMBER_ISA");
  const bool numa_bound = hw.numa_nodes > 1 && !hw.mems_allowed.empty() &&
                          hw.mems_allowed != "0-" + std::to_string(hw.numa_nodes - 1);

  if (json) {
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
        .str("quantization", facts->quantization)
        .str("quantization_recipe", facts->recipe)
        .integer("thread_count", threads)
        .boolean("numa_affinity", numa_bound)
        .str("cpu_affinity", hw.cpu_affinity)
        .end_object();
    j.begin_array("runs");
    for (const Run& r : runs) {
      const Stats ftl = stats_of(r.first_token_ms), pre = stats_of(r.prefill_tps), dec = stats_of(r.decode_tps);
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
          .integer("batch_size", 1)
          .integer("context_length", so.context_length)
          .integer("repetitions", reps)
          .end_object();
      j.begin_object("metrics")
          .num("first_token_latency_ms", ftl.mean)
          .num("first_token_latency_ms_sd", ftl.sd)
          .num("tokens_per_second", dec.mean)
          .num("tokens_per_second_sd", dec.sd)
          .num("prefill_tokens_per_second", pre.mean)
          .num("prefill_tokens_per_second_sd", pre.sd)
          .num("inter_token_latency_ms_p50", percentile(r.itl_ms, 0.50))
          .num("inter_token_latency_ms_p95", percentile(r.itl_ms, 0.95))
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
  std::printf("workload  batch 1, %lld decoded tokens; %lld repetitions after a warm-up; mean ± sd\n\n",
              static_cast<long long>(n_gen), static_cast<long long>(reps));
  std::printf("%7s  %20s  %18s  %18s  %17s  %20s\n", "prompt", "prefill tok/s", "first token ms", "decode tok/s",
              "ITL p50/p95 ms", "decode GB/s (probe)");
  for (const Run& r : runs) {
    const Stats ftl = stats_of(r.first_token_ms), pre = stats_of(r.prefill_tps), dec = stats_of(r.decode_tps);
    const double eff = facts->decode_bytes_per_token * dec.mean / 1e9;
    char c1[32], c2[32], c3[32], c4[32], c5[32];
    std::snprintf(c1, sizeof c1, "%.1f ± %.1f", pre.mean, pre.sd);
    std::snprintf(c2, sizeof c2, "%.2f ± %.2f", ftl.mean, ftl.sd);
    std::snprintf(c3, sizeof c3, "%.2f ± %.2f", dec.mean, dec.sd);
    std::snprintf(c4, sizeof c4, "%.2f / %.2f", percentile(r.itl_ms, 0.5), percentile(r.itl_ms, 0.95));
    std::snprintf(c5, sizeof c5, "%.1f (%.0f%%)", eff, bw > 0 ? 100.0 * eff / bw : 0.0);
    std::printf("%7d  %21s  %19s  %19s  %17s  %20s\n", r.prompt, c1, c2, c3, c4, c5);
  }
  std::printf("\npeak RSS %.1f MB (mapped weights included)\n", rss / 1e6);
  return 0;
}

}  // namespace ember::cli

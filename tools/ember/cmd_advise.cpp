// `ember advise`: where to run a model, from measured numbers. For each
// option (this machine, from `ember bench --json` reports or a throughput;
// other machines given as --gpu NAME:USD_PER_HOUR:TOK_PER_S) it computes
//   cost per 1M tokens = hourly / (throughput x utilization x 3600) x 1e6
//   replicas           = ceil(qps x tokens_per_request x headroom / (throughput x utilization))
// whether the option meets a latency SLO (from a bench report's TTFT/ITL),
// the crossover load between each CPU and GPU option and a recommendation
// with its reasons. With -m it also says what fits here: for each model the
// largest context whose plan (mapped weights + private bytes) fits a memory
// budget. docs/decisions.md ("Deployment decisions") defines each figure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"
#include "tools/ember/model_cache.h"
#include "tools/ember/model_facts.h"

namespace ember::cli {
namespace {

using nlohmann::json;

struct Option {
  std::string name;
  std::string kind;    // "cpu" or "gpu"
  std::string source;  // where the numbers came from
  double hourly = 0;
  double throughput = 0;  // generated tokens/s of one replica
  bool measured_latency = false;
  double ttft_ms = 0, itl_p50_ms = 0, itl_p95_ms = 0;
  // Computed.
  double cost_per_1m = 0;
  int64_t replicas = 0;
  double hourly_at_load = 0, cost_per_1m_at_load = 0;
  double request_ms_p50 = 0, request_ms_p95 = 0;
  int slo = -1;  // -1 not checked or not measured, 0 misses, 1 meets
};

struct Crossover {
  std::string cpu, gpu;
  // The lowest load (generated tokens/s of demand) from which on the GPU
  // option costs less per hour than the CPU option; 0 when it always does,
  // -1 when it never does at scale.
  double tokens_per_s = -1;
};

bool parse_number(const std::string& s, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// A number field of a JSON object; false when absent or not a number.
bool number_at(const json& obj, const char* key, double* out) {
  if (!obj.is_object()) return false;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}

std::string string_at(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// An option from `ember bench --json`: the slowest run's throughput and the
// worst run's latencies (conservative when the report has several lengths).
bool option_from_bench(const std::string& path, double hourly, Option* o, std::string* error) {
  std::string text;
  if (read_file(path, &text, error) != EMBER_OK) {
    *error = "--bench '" + path + "': " + *error;
    return false;
  }
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "--bench '" + path + "': not JSON (expected the output of ember bench --json)";
    return false;
  }
  const auto runs = j.find("runs");
  if (runs == j.end() || !runs->is_array() || runs->empty()) {
    *error = "--bench '" + path + "': no \"runs\" array (expected the output of ember bench --json)";
    return false;
  }
  o->throughput = INFINITY;
  for (const json& run : *runs) {
    const json metrics = run.is_object() && run.contains("metrics") ? run["metrics"] : json();
    double tps, ttft, p50, p95;
    if (!number_at(metrics, "tokens_per_second", &tps) || !number_at(metrics, "first_token_latency_ms", &ttft) ||
        !number_at(metrics, "inter_token_latency_ms_p50", &p50) ||
        !number_at(metrics, "inter_token_latency_ms_p95", &p95)) {
      *error = "--bench '" + path +
               "': a run lacks metrics.tokens_per_second, first_token_latency_ms or inter_token_latency_ms_p50/p95";
      return false;
    }
    if (!(tps > 0)) {
      *error = "--bench '" + path + "': metrics.tokens_per_second = " + std::to_string(tps) + " (must be > 0)";
      return false;
    }
    o->throughput = std::min(o->throughput, tps);
    o->ttft_ms = std::max(o->ttft_ms, ttft);
    o->itl_p50_ms = std::max(o->itl_p50_ms, p50);
    o->itl_p95_ms = std::max(o->itl_p95_ms, p95);
  }
  const json sw = j.contains("software") ? j["software"] : json();
  const json hw = j.contains("hardware") ? j["hardware"] : json();
  const std::string backend = string_at(sw, "backend"), kernels = string_at(sw, "kernels");
  o->kind = backend == "vulkan" || kernels.rfind("vulkan", 0) == 0 ? "gpu" : "cpu";
  const std::string cpu = string_at(hw, "cpu_model");
  o->name = (backend.empty() ? std::string("this machine") : backend) + (cpu.empty() ? "" : " on " + cpu);
  o->source = path;
  o->hourly = hourly;
  o->measured_latency = true;
  return true;
}

// NAME:USD_PER_HOUR:TOK_PER_S
bool option_from_gpu(const std::string& spec, Option* o, std::string* error) {
  const size_t b = spec.rfind(':');
  const size_t a = b == std::string::npos || b == 0 ? std::string::npos : spec.rfind(':', b - 1);
  double usd = 0, tps = 0;
  if (a == std::string::npos || a == 0) {
    *error = "--gpu '" + spec + "': expected NAME:USD_PER_HOUR:TOK_PER_S (e.g. L4:0.70:2400)";
    return false;
  }
  if (!parse_number(spec.substr(a + 1, b - a - 1), &usd) || usd < 0) {
    *error = "--gpu '" + spec + "': USD_PER_HOUR '" + spec.substr(a + 1, b - a - 1) + "' is not a number >= 0";
    return false;
  }
  if (!parse_number(spec.substr(b + 1), &tps) || !(tps > 0)) {
    *error = "--gpu '" + spec + "': TOK_PER_S '" + spec.substr(b + 1) + "' is not a number > 0";
    return false;
  }
  o->name = spec.substr(0, a);
  o->kind = "gpu";
  o->source = "--gpu";
  o->hourly = usd;
  o->throughput = tps;
  return true;
}

// Hourly cost of serving `demand` generated tokens/s with this option: whole
// replicas, at least one.
int64_t replicas_for(double demand, double headroom, double effective) {
  const double r = std::ceil(demand * headroom / effective - 1e-9);
  return std::max<int64_t>(1, static_cast<int64_t>(r));
}

// The crossover: costs are step functions of the demand d (tokens/s),
// C(d) = hourly x max(1, ceil(d x H / eff)), constant between the points
// d = k x eff / H. Walk the merged steps up to the load beyond which the
// GPU is cheaper whatever the rounding (when its cost per token is lower),
// and return the right end of the last interval where the GPU costs as
// much or more.
double crossover(const Option& cpu, const Option& gpu, double headroom, double utilization) {
  const double ec = cpu.throughput * utilization, eg = gpu.throughput * utilization;
  const double per_token_c = cpu.hourly / ec, per_token_g = gpu.hourly / eg;
  // Beyond d_max: hourly_g x (d H / eg + 1) < hourly_c x d H / ec.
  if (!(per_token_g < per_token_c)) return -1;
  const double d_max = gpu.hourly / (headroom * (per_token_c - per_token_g));
  const double step_c = ec / headroom, step_g = eg / headroom;
  double last_not_cheaper = -1;  // right end of the last interval where C_gpu >= C_cpu
  double d = 0;
  int64_t kc = 1, kg = 1;  // the next step index of each
  for (int64_t guard = 0; guard < 20000000; ++guard) {
    // The interval (d, next]: both costs constant.
    const double next = std::min(kc * step_c, kg * step_g);
    const double cost_c = cpu.hourly * static_cast<double>(kc), cost_g = gpu.hourly * static_cast<double>(kg);
    if (cost_g >= cost_c) last_not_cheaper = next;
    if (d >= d_max) break;
    d = next;
    if (kc * step_c <= d) ++kc;
    if (kg * step_g <= d) ++kg;
  }
  return last_not_cheaper < 0 ? 0 : last_not_cheaper;
}

std::string money(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 1 ? "$%.4f" : "$%.2f", v);
  return buf;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "8G", "512M", "1.5GiB", "123456" (bytes).
bool parse_size(const std::string& s, uint64_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || !std::isfinite(v) || v <= 0) return false;
  std::string unit(end);
  double mul = 1;
  if (unit.empty() || unit == "B") {
    mul = 1;
  } else if (unit == "K" || unit == "KiB") {
    mul = 1024.0;
  } else if (unit == "M" || unit == "MiB") {
    mul = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GiB") {
    mul = 1024.0 * 1024 * 1024;
  } else if (unit == "KB") {
    mul = 1e3;
  } else if (unit == "MB") {
    mul = 1e6;
  } else if (unit == "GB") {
    mul = 1e9;
  } else {
    return false;
  }
  if (v * mul > 1.8e19) return false;
  *out = static_cast<uint64_t>(v * mul);
  return *out > 0;
}

uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
  }
  return 0;
}

struct FitRow {
  std::string model, quantization;
  int32_t model_context = 0;
  int32_t largest_context = 0;  // 0: not even one position fits
  uint64_t bytes_at_largest = 0;
  std::string limited_by;       // "budget" or "model context"
  std::vector<std::pair<int32_t, uint64_t>> asked;  // context, plan bytes (0 = plan failed)
};

// Mapped weights + private bytes of a plan at `ctx`; 0 when it cannot be planned.
uint64_t plan_total(const ember_model* model, ember_session_options so, int32_t ctx) {
  so.context_length = ctx;
  so.max_batch = std::min(so.max_batch, ctx);
  ember_memory_plan p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  if (ember_plan(model, &so, &p) != EMBER_OK) return 0;
  return p.weights_mapped_bytes + p.private_bytes;
}

const char* kAdviseHelp =
    "usage: ember advise [--bench B.json ... | --throughput TOK_S] --hourly-cost USD [--utilization U]\n"
    "                    [--qps Q --tokens-per-request N] [--headroom H] [--latency-slo-ms L]\n"
    "                    [--gpu NAME:USD_PER_HOUR:TOK_PER_S ...] [--json]\n"
    "       ember advise -m MODEL ... [--ctx 2048,8192] [--memory-budget SIZE] [--kv-type f32|f16|q8_0] [--json]\n"
    "  --bench B.json    a report of `ember bench --json` on this machine (one option per file): its slowest\n"
    "                    run's decode tokens/s and its worst TTFT and ITL p50/p95\n"
    "  --throughput T    this machine's generated tokens/s instead of a report (no latency known)\n"
    "  --hourly-cost USD what this machine costs per hour\n"
    "  --gpu N:USD:TOK   another option: name, USD per hour, generated tokens/s (repeatable)\n"
    "  --utilization U   the busy fraction each replica sustains, 0..1 (default 0.7)\n"
    "  --qps Q, --tokens-per-request N   the load: requests/s and tokens generated per request\n"
    "  --headroom H      capacity reserved over the load, 1..10 (default 1.5)\n"
    "  --latency-slo-ms L  the longest acceptable request: TTFT + (N - 1) x ITL p95 (TTFT alone without N)\n"
    "  cost per 1M tokens = hourly / (throughput x utilization x 3600) x 1e6\n"
    "  replicas = ceil(qps x N x headroom / (throughput x utilization)), at least 1\n"
    "  crossover: the lowest load from which on a GPU option costs less per hour than a CPU option\n"
    "  -m MODEL          what fits here: the largest context whose plan (mapped weights + private bytes)\n"
    "                    fits --memory-budget (default: MemAvailable), up to the model's own context\n";

// ---- parse ---------------------------------------------------------------------------

struct AdviseRequest {
  double utilization = 0.7, headroom = 1.5, qps = 0, slo_ms = 0;
  int64_t tokens = 0;         // per request
  bool json_out = false;
  bool cost_mode = false;     // options to compare (--bench, --throughput, --gpu)
  bool load = false;          // --qps (and --tokens-per-request)
  std::vector<Option> options;
  // What fits here (-m).
  std::vector<std::string> models;
  uint64_t budget = 0;
  std::vector<int32_t> asked;  // --ctx
  ember_session_options session{};
};

// The flags of the cost comparison, checked together.
int parse_mode(Args& args, AdviseRequest* r) {
  const auto benches = args.get_all("--bench");
  const auto gpus = args.get_all("--gpu");
  r->models = args.get_all("-m");
  r->cost_mode = !benches.empty() || args.has("--throughput") || !gpus.empty();
  if (!r->cost_mode && r->models.empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "nothing to advise on: give --bench B.json or --throughput TOK_S with --hourly-cost, --gpu "
                  "NAME:USD:TOK_S, or -m MODEL (see ember advise --help)");
  }
  if (!benches.empty() && args.has("--throughput")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--bench and --throughput both describe this machine; give one");
  }
  if ((!benches.empty() || args.has("--throughput")) && !args.has("--hourly-cost")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--hourly-cost USD is required with --bench or --throughput");
  }
  if (args.has("--qps") != args.has("--tokens-per-request")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, std::string(args.has("--qps") ? "--qps" : "--tokens-per-request") +
                                                  " needs " + (args.has("--qps") ? "--tokens-per-request" : "--qps") +
                                                  " (the load is requests/s x tokens per request)");
  }
  r->load = args.has("--qps");
  return kRun;
}

// The options compared: this machine (bench reports or a throughput), then
// the --gpu ones.
int parse_options(Args& args, double hourly, double throughput, AdviseRequest* r) {
  std::string error;
  for (const std::string& b : args.get_all("--bench")) {
    Option o;
    if (!option_from_bench(b, hourly, &o, &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
    r->options.push_back(o);
  }
  if (args.has("--throughput")) {
    Option o;
    o.name = "this machine";
    o.kind = "cpu";
    o.source = "--throughput";
    o.hourly = hourly;
    o.throughput = throughput;
    r->options.push_back(o);
  }
  for (const std::string& g : args.get_all("--gpu")) {
    Option o;
    if (!option_from_gpu(g, &o, &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
    r->options.push_back(o);
  }
  return kRun;
}

// -m's budget, contexts and session options.
int parse_fit(Args& args, AdviseRequest* r) {
  r->budget = mem_available_bytes();
  if (args.has("--memory-budget") && !parse_size(args.get("--memory-budget"), &r->budget)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--memory-budget '" + args.get("--memory-budget") +
                                                  "': expected a size like 8G, 512M, 1.5GiB or bytes");
  }
  if (r->budget == 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--memory-budget is required here (MemAvailable is unknown)");
  }
  if (args.has("--ctx")) {
    const std::string list = args.get("--ctx");
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, comma - at);
      char* end = nullptr;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 1 || v > (1 << 20)) {
        return report(EMBER_ERR_INVALID_ARGUMENT,
                      "--ctx '" + list + "': '" + item + "' is not a context length in 1..1048576");
      }
      r->asked.push_back(static_cast<int32_t>(v));
      at = comma + 1;
    }
  }
  ember_session_options& so = r->session;
  ember_session_options_default(&so);
  so.n_threads = static_cast<int32_t>(args.get_int("--threads", 0, 0, 1024));
  if (args.has("--kv-type")) {
    const std::string kv = args.get("--kv-type");
    const int32_t t = kv == "f32" ? EMBER_KV_F32 : kv == "f16" ? EMBER_KV_F16 : kv == "q8_0" ? EMBER_KV_Q8_0 : -1;
    if (t < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type '" + kv + "' is not f32, f16 or q8_0");
    so.kv_type_k = so.kv_type_v = t;
  }
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  return kRun;
}

int parse_advise(int argc, char** argv, AdviseRequest* r) {
  const std::vector<std::string> with_value = {"--bench",     "--throughput",         "--hourly-cost", "--utilization",
                                               "--qps",       "--tokens-per-request", "--headroom",
                                               "--latency-slo-ms", "--gpu", "-m", "--ctx", "--memory-budget",
                                               "--kv-type", "--threads"};
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kAdviseHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = with_value;
  known.push_back("--json");
  args.check_known(known);
  r->utilization = args.get_float("--utilization", 0.7, 1e-6, 1.0);
  r->headroom = args.get_float("--headroom", 1.5, 1.0, 10.0);
  r->qps = args.get_float("--qps", 0, 1e-9, 1e12);
  r->tokens = args.get_int("--tokens-per-request", 0, 1, int64_t{1} << 40);
  r->slo_ms = args.get_float("--latency-slo-ms", 0, 1e-6, 1e12);
  const double hourly = args.get_float("--hourly-cost", 0, 0, 1e9);
  const double throughput = args.get_float("--throughput", 0, 1e-9, 1e15);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember advise --help)");
  r->json_out = args.has("--json");
  if (const int code = parse_mode(args, r); code != kRun) return code;
  if (const int code = parse_options(args, hourly, throughput, r); code != kRun) return code;
  return r->models.empty() ? kRun : parse_fit(args, r);
}

// ---- run -----------------------------------------------------------------------------

struct AdviseResult {
  std::vector<Option> options;  // with their costs
  double demand = 0;            // generated tokens/s of the load
  std::vector<Crossover> crossovers;
  int best = -1;                // the recommended option
  std::vector<std::string> reasons;
  std::vector<FitRow> fits;
};

// Each option's cost per 1M tokens; at the load, its replicas and hourly
// cost; with a bench report, its request latency against the SLO.
void cost_options(const AdviseRequest& r, AdviseResult* res) {
  res->options = r.options;
  res->demand = r.qps * static_cast<double>(r.tokens);
  for (Option& o : res->options) {
    const double eff = o.throughput * r.utilization;
    o.cost_per_1m = o.hourly / (eff * 3600) * 1e6;
    if (r.load) {
      o.replicas = replicas_for(res->demand, r.headroom, eff);
      o.hourly_at_load = o.hourly * static_cast<double>(o.replicas);
      o.cost_per_1m_at_load = o.hourly_at_load / (res->demand * 3600) * 1e6;
    }
    if (o.measured_latency) {
      const double n = r.tokens > 0 ? static_cast<double>(r.tokens - 1) : 0;
      o.request_ms_p50 = o.ttft_ms + n * o.itl_p50_ms;
      o.request_ms_p95 = o.ttft_ms + n * o.itl_p95_ms;
      if (r.slo_ms > 0) o.slo = o.request_ms_p95 <= r.slo_ms ? 1 : 0;
    }
  }
  for (const Option& c : res->options) {
    if (c.kind != "cpu") continue;
    for (const Option& g : res->options) {
      if (g.kind != "gpu") continue;
      res->crossovers.push_back({c.name, g.name, crossover(c, g, r.headroom, r.utilization)});
    }
  }
}

// Why the best option is best: cheapest, the SLO, each crossover.
void explain_best(const AdviseRequest& r, AdviseResult* res) {
  const Option& b = res->options[res->best];
  std::vector<std::string>& reasons = res->reasons;
  if (r.load) {
    reasons.insert(reasons.begin(),
                   "cheapest at " + fmt("%g", r.qps) + " QPS x " + std::to_string(r.tokens) + " tokens (x" +
                       fmt("%g", r.headroom) + " headroom): " + std::to_string(b.replicas) + " replica(s), " +
                       money(b.hourly_at_load) + "/hour, " + money(b.cost_per_1m_at_load) + " per 1M tokens");
  } else {
    reasons.insert(reasons.begin(), "lowest cost per 1M tokens at " + fmt("%g", r.utilization * 100) +
                                        "% utilization: " + money(b.cost_per_1m) + " (no --qps: no load compared)");
  }
  if (r.slo_ms > 0) {
    reasons.push_back(b.slo == 1 ? b.name + " meets the SLO: " + fmt("%.1f", b.request_ms_p95) + " ms <= " +
                                       fmt("%.1f", r.slo_ms) + " ms"
                                 : b.name + "'s latency is not measured (no bench report): check it before relying "
                                            "on the SLO");
  }
  for (const Crossover& x : res->crossovers) {
    if (!r.load) break;
    if (x.tokens_per_s < 0) {
      reasons.push_back(x.gpu + " costs more per token than " + x.cpu + " at every load: no crossover");
    } else {
      const double q = x.tokens_per_s / static_cast<double>(r.tokens);
      reasons.push_back("the load is " + std::string(r.qps > q ? "above" : "at or below") + " the crossover of " +
                        x.cpu + " and " + x.gpu + " (" + fmt("%.3g", q) + " QPS): " + (r.qps > q ? x.gpu : x.cpu) +
                        " is cheaper there");
    }
  }
}

// The recommendation: among the options that meet the SLO (or whose latency
// is not known), the cheapest per hour at the load (per token without a
// load); fewer replicas break ties.
void recommend(const AdviseRequest& r, AdviseResult* res) {
  for (size_t i = 0; i < res->options.size(); ++i) {
    const Option& o = res->options[i];
    if (o.slo == 0) {
      res->reasons.push_back(o.name + " misses the latency SLO: a " + std::to_string(r.tokens) +
                             "-token request takes " + fmt("%.1f", o.request_ms_p95) + " ms at ITL p95 > " +
                             fmt("%.1f", r.slo_ms) + " ms");
      continue;
    }
    if (res->best < 0) {
      res->best = static_cast<int>(i);
      continue;
    }
    const Option& b = res->options[res->best];
    const double ob = r.load ? o.hourly_at_load : o.cost_per_1m, bb = r.load ? b.hourly_at_load : b.cost_per_1m;
    if (ob < bb || (ob == bb && o.replicas < b.replicas)) res->best = static_cast<int>(i);
  }
  if (res->best >= 0) {
    explain_best(r, res);
  } else if (!res->options.empty()) {
    res->reasons.push_back("no option meets the SLO");
  }
}

// What fits here: per model, the largest context whose plan fits the
// budget (a bisection up to the model's own), and each context asked.
int fit_models(const AdviseRequest& r, AdviseResult* res) {
  for (const std::string& path : r.models) {
    ember_model* model = nullptr;
    if (const int code = open_model_for_cli(path, nullptr, &model)) return code;
    ember_model_info info;
    info.struct_size = sizeof info;
    ember_model_get_info(model, &info);
    FitRow row;
    row.model = path;
    ModelFacts facts;
    row.quantization = model_facts(model, &facts) == EMBER_OK ? facts.quantization : "?";
    row.model_context = info.max_context;
    int32_t lo = 0, hi = info.max_context;
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo + 1) / 2;
      const uint64_t t = plan_total(model, r.session, mid);
      if (t != 0 && t <= r.budget) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    row.largest_context = lo;
    row.bytes_at_largest = lo > 0 ? plan_total(model, r.session, lo) : 0;
    row.limited_by = lo == info.max_context ? "model context" : "budget";
    for (int32_t c : r.asked) row.asked.emplace_back(c, plan_total(model, r.session, c));
    ember_model_free(model);
    res->fits.push_back(row);
  }
  return 0;
}

int run_advise(const AdviseRequest& r, AdviseResult* res) {
  cost_options(r, res);
  recommend(r, res);
  return fit_models(r, res);
}

// ---- report --------------------------------------------------------------------------

void json_option(const AdviseRequest& r, const Option& o, Json* j) {
  j->begin_object()
      .str("name", o.name)
      .str("kind", o.kind)
      .str("source", o.source)
      .num("hourly_usd", o.hourly, 6)
      .num("tokens_per_second", o.throughput, 3)
      .num("effective_tokens_per_second", o.throughput * r.utilization, 3)
      .num("cost_per_1m_tokens_usd", o.cost_per_1m, 6);
  if (r.load) {
    j->integer("replicas", o.replicas)
        .num("hourly_usd_at_load", o.hourly_at_load, 6)
        .num("cost_per_1m_tokens_usd_at_load", o.cost_per_1m_at_load, 6);
  }
  if (o.measured_latency) {
    j->num("first_token_latency_ms", o.ttft_ms)
        .num("inter_token_latency_ms_p50", o.itl_p50_ms)
        .num("inter_token_latency_ms_p95", o.itl_p95_ms)
        .num("request_latency_ms_p50", o.request_ms_p50)
        .num("request_latency_ms_p95", o.request_ms_p95);
  }
  j->str("meets_slo", o.slo == 1 ? "yes" : o.slo == 0 ? "no" : r.slo_ms > 0 ? "unknown" : "not asked");
  j->end_object();
}

void json_costs(const AdviseRequest& r, const AdviseResult& res, Json* j) {
  j->begin_object("inputs").num("utilization", r.utilization, 4).num("headroom", r.headroom, 4);
  if (r.load) j->num("qps", r.qps, 6).integer("tokens_per_request", r.tokens).num("demand_tokens_per_s", res.demand, 3);
  if (r.slo_ms > 0) j->num("latency_slo_ms", r.slo_ms, 3);
  j->end_object();
  j->begin_array("options");
  for (const Option& o : res.options) json_option(r, o, j);
  j->end_array();
  j->begin_array("crossovers");
  for (const Crossover& x : res.crossovers) {
    j->begin_object().str("cpu", x.cpu).str("gpu", x.gpu);
    if (x.tokens_per_s < 0) {
      j->str("crossover", "none: the GPU option costs more per token at every load");
    } else {
      j->num("crossover_tokens_per_s", x.tokens_per_s, 3);
      if (r.tokens > 0) j->num("crossover_qps", x.tokens_per_s / static_cast<double>(r.tokens), 6);
    }
    j->end_object();
  }
  j->end_array();
  j->begin_object("recommendation").str("option", res.best >= 0 ? res.options[res.best].name : "");
  j->begin_array("reasons");
  for (const std::string& reason : res.reasons) j->str(nullptr, reason);
  j->end_array().end_object();
}

void json_fits(const AdviseRequest& r, const AdviseResult& res, Json* j) {
  j->begin_object("fit").integer("memory_budget_bytes", static_cast<int64_t>(r.budget));
  j->begin_array("models");
  for (const FitRow& f : res.fits) {
    j->begin_object()
        .str("model", f.model)
        .str("quantization", f.quantization)
        .integer("model_context", f.model_context)
        .integer("largest_context", f.largest_context)
        .integer("bytes_at_largest_context", static_cast<int64_t>(f.bytes_at_largest))
        .str("limited_by", f.limited_by);
    j->begin_array("contexts");
    for (const auto& [c, b] : f.asked) {
      j->begin_object().integer("context", c).integer("bytes", static_cast<int64_t>(b));
      j->boolean("fits", b != 0 && b <= r.budget).end_object();
    }
    j->end_array().end_object();
  }
  j->end_array().end_object();
}

int report_json(const AdviseRequest& r, const AdviseResult& res) {
  Json j;
  j.begin_object();
  if (r.cost_mode) json_costs(r, res, &j);
  if (!res.fits.empty()) json_fits(r, res, &j);
  j.end_object();
  std::fputs(j.text().c_str(), stdout);
  return 0;
}

void text_costs(const AdviseRequest& r, const AdviseResult& res) {
  std::printf("utilization %g, headroom x%g", r.utilization, r.headroom);
  if (r.load) {
    std::printf(", load %g QPS x %lld tokens = %g tokens/s", r.qps, static_cast<long long>(r.tokens), res.demand);
  }
  if (r.slo_ms > 0) std::printf(", latency SLO %g ms", r.slo_ms);
  std::printf("\n\n| option | kind | $/hour | tok/s | $/1M tokens |%s%s\n",
              r.load ? " replicas | $/hour at load |" : "", r.slo_ms > 0 ? " request p95 ms | SLO |" : "");
  std::printf("|---|---|---:|---:|---:|%s%s\n", r.load ? "---:|---:|" : "", r.slo_ms > 0 ? "---:|---|" : "");
  for (const Option& o : res.options) {
    std::printf("| %s | %s | %s | %.1f | %s |", o.name.c_str(), o.kind.c_str(), money(o.hourly).c_str(), o.throughput,
                money(o.cost_per_1m).c_str());
    if (r.load) std::printf(" %lld | %s |", static_cast<long long>(o.replicas), money(o.hourly_at_load).c_str());
    if (r.slo_ms > 0) {
      std::printf(" %s | %s |", o.measured_latency ? fmt("%.1f", o.request_ms_p95).c_str() : "-",
                  o.slo == 1 ? "meets" : o.slo == 0 ? "misses" : "unknown");
    }
    std::printf("\n");
  }
  if (!res.crossovers.empty()) std::printf("\n");
  for (const Crossover& x : res.crossovers) {
    if (x.tokens_per_s < 0) {
      std::printf("crossover %s / %s: none (the GPU option costs more per token at every load)\n", x.cpu.c_str(),
                  x.gpu.c_str());
    } else {
      std::printf("crossover %s / %s: %.1f tokens/s", x.cpu.c_str(), x.gpu.c_str(), x.tokens_per_s);
      if (r.tokens > 0) std::printf(" = %.3g QPS", x.tokens_per_s / static_cast<double>(r.tokens));
      std::printf(" (above it the GPU option costs less per hour)\n");
    }
  }
  std::printf("\nrecommendation: %s\n", res.best >= 0 ? res.options[res.best].name.c_str() : "none");
  for (const std::string& reason : res.reasons) std::printf("  - %s\n", reason.c_str());
}

void text_fits(const AdviseRequest& r, const AdviseResult& res) {
  std::printf("%swhat fits in %.2f GiB (mapped weights + private bytes of the plan):\n\n", r.cost_mode ? "\n" : "",
              static_cast<double>(r.budget) / (1ull << 30));
  std::printf("| model | quantization | model context | largest context | MiB there | limited by |\n");
  std::printf("|---|---|---:|---:|---:|---|\n");
  for (const FitRow& f : res.fits) {
    std::printf("| %s | %s | %d | %d | %.1f | %s |\n", f.model.c_str(), f.quantization.c_str(), f.model_context,
                f.largest_context, f.bytes_at_largest / 1048576.0, f.limited_by.c_str());
  }
  for (const FitRow& f : res.fits) {
    for (const auto& [c, b] : f.asked) {
      std::printf("  %s at context %d: %s\n", f.model.c_str(), c,
                  b == 0 ? "cannot be planned" : (fmt("%.1f MiB, ", b / 1048576.0) +
                                                  (b <= r.budget ? "fits" : "does not fit")).c_str());
    }
  }
}

int report_text(const AdviseRequest& r, const AdviseResult& res) {
  if (r.cost_mode) text_costs(r, res);
  if (!res.fits.empty()) text_fits(r, res);
  return 0;
}

}  // namespace

int cmd_advise(int argc, char** argv) {
  AdviseRequest r;
  if (const int code = parse_advise(argc, argv, &r); code != kRun) return code;
  AdviseResult res;
  if (const int code = run_advise(r, &res)) return code;
  return r.json_out ? report_json(r, res) : report_text(r, res);
}

}  // namespace ember::cli

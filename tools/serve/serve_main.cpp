// `ember serve`: options, the plan of all slots, and the server's start.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/model_cache.h"
#include "tools/serve/server.h"

namespace ember::serve {
namespace {

const char* kHelp =
    "usage: ember serve -m MODEL [options]\n"
    "  An OpenAI-compatible HTTP server: POST /v1/completions, POST /v1/chat/completions (stream: true for\n"
    "  server-sent events), GET /v1/models, GET /health, GET /metrics (Prometheus).\n"
    "  --host H           address to listen on (default 127.0.0.1)\n"
    "  --port P           port (default 8080; 0 = any free port, printed at start)\n"
    "  --parallel N       slots: requests decoded at once, each with its own KV cache (default 1).\n"
    "                     Round-robin, one token per slot in turn: not yet batched, so N streams share\n"
    "                     one stream's speed\n"
    "  --ctx N            context per slot (default: the model's, capped so all slots fit --max-bytes)\n"
    "  --max-bytes B      the budget of all slots' private memory: the server refuses to start over it\n"
    "  --max-queue Q      requests waiting for a slot before 429 (default 64)\n"
    "  --timeout S        seconds a generation request may take (default 600)\n"
    "  --max-body B       largest request body in bytes (default 8 MiB; larger: 413)\n"
    "  --max-connections C  open connections (default 64; more: 503)\n"
    "  --api-key K | --api-key-file F   require Authorization: Bearer K (except GET /health)\n"
    "  --tls-cert C --tls-key K         serve HTTPS with this PEM certificate chain and key (mbedTLS)\n"
    "  --threads T, --batch B, --kv-type T, --kv-type-k T, --kv-type-v T, --backend B: as for ember run\n";

std::string mib(uint64_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  return buf;
}

bool plan_for(ember_model* model, ember_session_options so, int32_t ctx, ember_memory_plan* plan) {
  so.context_length = ctx;
  plan->struct_size = sizeof *plan;
  return ember_plan(model, &so, plan) == EMBER_OK;
}

}  // namespace

int serve_main(int argc, char** argv) {
  using cli::report;
  std::vector<std::string> with_value = {"-m",        "--host",    "--port",         "--parallel",  "--api-key",
                                         "--api-key-file", "--tls-cert", "--tls-key", "--max-queue", "--timeout",
                                         "--max-body", "--max-connections"};
  std::vector<std::string> known = with_value;
  for (int i = 0; cli::kSessionFlags[i]; ++i) {
    with_value.push_back(cli::kSessionFlags[i]);
    known.push_back(cli::kSessionFlags[i]);
  }
  cli::Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  args.check_known(known);
  ServerConfig config;
  config.host = args.get("--host", "127.0.0.1");
  config.port = static_cast<int>(args.get_int("--port", 8080, 0, 65535));
  const int32_t slots = static_cast<int32_t>(args.get_int("--parallel", 1, 1, 256));
  const int32_t max_queue = static_cast<int32_t>(args.get_int("--max-queue", 64, 0, 1 << 20));
  config.timeout_s = args.get_float("--timeout", 600, 0.001, 1e7);
  config.limits.max_body = static_cast<size_t>(args.get_int("--max-body", 8 << 20, 1, 1 << 30));
  config.max_connections = static_cast<int>(args.get_int("--max-connections", 64, 1, 65536));
  ember_session_options so;
  cli::session_options_from_args(args, &so);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember serve --help)");
  if (so.kv_type_k < 0 || so.kv_type_v < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type must be f32, f16 or q8_0");
  if (so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember serve --help)");
  if (args.has("--api-key") && args.has("--api-key-file")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--api-key and --api-key-file both give the key: pass one");
  }
  config.api_key = args.get("--api-key");
  if (args.has("--api-key-file")) {
    std::ifstream f(args.get("--api-key-file"));
    if (!f) return report(EMBER_ERR_IO, "cannot read --api-key-file '" + args.get("--api-key-file") + "'");
    std::getline(f, config.api_key);
    while (!config.api_key.empty() && (config.api_key.back() == '\r' || config.api_key.back() == ' ')) {
      config.api_key.pop_back();
    }
  }
  if ((args.has("--api-key") || args.has("--api-key-file")) && config.api_key.empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "the API key is empty");
  }
  if (args.has("--tls-cert") != args.has("--tls-key")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--tls-cert and --tls-key go together");
  }
  std::unique_ptr<TlsConfig> tls;
  if (args.has("--tls-cert")) {
    tls = std::make_unique<TlsConfig>();
    std::string error;
    if (!tls->load(args.get("--tls-cert"), args.get("--tls-key"), &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
  }

  ember_model* model = nullptr;
  std::string opened;
  if (const int code = cli::open_model_for_cli(args.get("-m"), nullptr, &model, &opened)) return code;
  struct ModelGuard {
    ember_model* m;
    ~ModelGuard() { ember_model_free(m); }
  } guard{model};
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  {
    std::string name = args.get("-m");
    const size_t slash = name.find_last_of('/');
    config.model_name = slash == std::string::npos ? name : name.substr(slash + 1);
  }

  // The plan of all slots against the budget (--max-bytes is for them all;
  // the sessions themselves get no cap of their own).
  const uint64_t budget = so.max_bytes;
  so.max_bytes = 0;
  const bool ctx_given = args.has("--ctx");
  int32_t ctx = ctx_given ? so.context_length : info.max_context;
  ember_memory_plan plan;
  if (!plan_for(model, so, ctx, &plan)) return cli::report_last(EMBER_ERR_INVALID_ARGUMENT);
  auto total = [&](const ember_memory_plan& p) { return p.private_bytes * static_cast<uint64_t>(slots); };
  if (budget && total(plan) > budget && !ctx_given) {
    // The largest context that fits, by bisection over the plan.
    int32_t lo = 0, hi = ctx;
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      ember_memory_plan p;
      if (plan_for(model, so, mid, &p) && total(p) <= budget) lo = mid; else hi = mid;
    }
    if (lo >= 16) {
      ctx = lo;
      plan_for(model, so, ctx, &plan);
    }
  }
  so.context_length = ctx;
  std::fprintf(stderr,
               "plan: %d slot(s) x ctx %d: per slot weights mapped %s, resident %s, KV %s, arena %s, private %s; "
               "all slots private %s%s%s\n",
               slots, ctx, mib(plan.weights_mapped_bytes).c_str(), mib(plan.weights_resident_bytes).c_str(),
               mib(plan.kv_bytes).c_str(), mib(plan.arena_bytes).c_str(), mib(plan.private_bytes).c_str(),
               mib(total(plan)).c_str(), budget ? (" of the budget " + mib(budget)).c_str() : "",
               ctx_given || !budget || ctx == info.max_context ? "" : " (--ctx capped to fit)");
  if (budget && total(plan) > budget) {
    const uint64_t fit_slots = plan.private_bytes ? budget / plan.private_bytes : 0;
    int32_t lo = 0, hi = ctx;
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      ember_memory_plan p;
      if (plan_for(model, so, mid, &p) && total(p) <= budget) lo = mid; else hi = mid;
    }
    return report(EMBER_ERR_NO_MEMORY,
                  std::to_string(slots) + " slot(s) at ctx " + std::to_string(ctx) + " need " + mib(total(plan)) +
                      ", over --max-bytes " + mib(budget) + ": " + std::to_string(fit_slots) +
                      " slot(s) fit at this ctx" +
                      (lo > 0 ? ", or " + std::to_string(slots) + " slot(s) at --ctx " + std::to_string(lo) : std::string()));
  }
  std::fprintf(stderr, "chat template: %s\n", chat_template_name(model).c_str());

  Metrics metrics;
  RoundRobinConfig rc;
  rc.slots = slots;
  rc.max_queue = max_queue;
  rc.prefill_chunk = so.max_batch;
  rc.session = so;
  std::string error;
  std::unique_ptr<Scheduler> scheduler = make_round_robin_scheduler(model, rc, &metrics, &error);
  if (!scheduler) return report(EMBER_ERR_NO_MEMORY, "creating the slots' sessions: " + error);
  std::fprintf(stderr, "scheduler: round-robin over %d slot(s), one token per slot per step (not batched: every "
               "weight is read once per sequence), queue %d\n", slots, max_queue);
  Server server(config, model, scheduler.get(), &metrics, tls.get());
  if (!server.listen(&error)) return report(EMBER_ERR_IO, error);
  server.run();
  scheduler.reset();
  return 0;
}

}  // namespace ember::serve

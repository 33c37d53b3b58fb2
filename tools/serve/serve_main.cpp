// `ember serve`: options, the plan of all slots, and the server's start.
#include <algorithm>
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
    "  --parallel N       slots: requests decoded at once (default 1), batched: each step runs every\n"
    "                     slot's next token in one pass, every weight read once for all of them\n"
    "  --cache-slots N    extra sequences that keep finished requests' tokens and KV, so a prompt that\n"
    "                     starts the same way (a system prompt, earlier turns) reuses them: the prefix\n"
    "                     cache, least recently used evicted first (default: = --parallel; 0: only the\n"
    "                     slots' own sequences are reused)\n"
    "  --ctx N            context per sequence (default: the model's, capped so all fit --max-bytes)\n"
    "  --max-bytes B      the budget of all sequences' private memory: the server refuses to start over it\n"
    "  --max-queue Q      requests waiting for a slot before 429 (default 64)\n"
    "  --timeout S        seconds a generation request may take (default 600)\n"
    "  --max-body B       largest request body in bytes (larger: 413). Default: what the longest prompt a\n"
    "                     slot's context holds takes as JSON (6 bytes per byte of its text, escaped),\n"
    "                     at least 64 KiB, at most 8 MiB. A request holds at most 4x its body + 64 KiB\n"
    "                     while it is read (JSON parsed into what is kept, nesting at most 64 deep);\n"
    "                     the plan states what all connections may hold\n"
    "  --max-connections C  open connections (default 64); beyond them 4 spare slots answer GET/HEAD\n"
    "                     /health and /metrics, and anything else with 503 and Retry-After\n"
    "  --max-connections-per-client N   connections one address may hold (default: half of\n"
    "                     --max-connections; 0: no cap, for a server behind a proxy); more: 429\n"
    "  --header-timeout S  a request's line and headers (and a TLS handshake) within S s (default 10;\n"
    "                     408 after)\n"
    "  --min-recv-rate B  a body must arrive at B bytes/s or faster after its first --header-timeout\n"
    "                     seconds (default 1024; 408 after)\n"
    "  --drain-timeout S  on SIGTERM/SIGINT, requests in flight get S s to finish (default 30), then are\n"
    "                     cut (exit status 1); a second signal exits at once\n"
    "  --alias NAME       another name a request's \"model\" may give (repeatable); the served name is\n"
    "                     the model file's name, and its name without the extension is an alias too;\n"
    "                     any other \"model\": 404 model_not_found\n"
    "  --api-key K | --api-key-file F   require Authorization: Bearer K (except GET /health)\n"
    "  --tls-cert C --tls-key K         serve HTTPS with this PEM certificate chain and key (mbedTLS)\n"
    "  --grammar-cache-mib M  the compiled grammars' memory (response_format schemas, the call grammars\n"
    "                     of tool_choice required or named; default 512): at most 16 alive, each capped at\n"
    "                     M/16 MiB (rules, the vocabulary's text, states, masks); counted in the plan. A\n"
    "                     grammar over its cap: 400; all 16 held by running requests: 503 and Retry-After\n"
    "  --batch B          rows of one step (default 512): every decoding slot's token, the rest for\n"
    "                     prompt chunks, so a long prompt delays the others by one such step\n"
    "  --threads T, --kv-type T, --kv-type-k T, --kv-type-v T, --backend B: as for ember run (the cpu\n"
    "                     and vulkan backends both run the slots batched).\n"
    "  --embeddings       also serve POST /v1/embeddings (OpenAI's shape: input as text(s) or token ids,\n"
    "                     encoding_format float or base64) from an embedding session of the same model,\n"
    "                     pooled as the file says (else mean) and L2-normalized; planned and counted in the\n"
    "                     budget beside the slots' session, both on one thread pool (they take turns by step)\n"
    "  --pooling P        the embeddings' pooling: mean, cls, last or none... (implies --embeddings;\n"
    "                     none is refused: a vector per token is not an OpenAI answer); rank (or a\n"
    "                     reranker whose file says rank): POST /v1/rerank instead (query, documents,\n"
    "                     top_n, return_documents; results[] best first, as llama.cpp's server answers)\n"
    "  --embed-ctx N      positions per embedding input (default: the model's context, at most 2048)\n"
    "  --embed-seqs N     inputs of one request run together as sequences (default 4)\n";

std::string mib(uint64_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  return buf;
}

// The longest text one token prints as: a prompt longer than the context
// times this cannot fit.
uint64_t longest_piece_bytes(const ember_model* model) {
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  uint64_t longest = 1;
  char buf[512];
  for (int32_t t = 0; t < info.vocab_size; ++t) {
    size_t len = 0;
    const ember_status st = ember_token_to_piece(model, -1, t, buf, sizeof buf, &len);
    if (st == EMBER_OK || st == EMBER_ERR_BUFFER_TOO_SMALL) longest = std::max<uint64_t>(longest, len);
  }
  return longest + 1;  // the leading space dropped at the start
}

// What the command line asked for.
struct ServeArgs {
  ServerConfig config;
  std::string model_path;
  int32_t slots = 1, cache_slots = 0, max_queue = 64;
  bool ctx_given = false, body_given = false;
  ember_session_options so;
  ember_generate_options speculative;  // --lookup, --draft-max, --lookup-ngram
  std::string draft_path;              // --draft
  ember_model* draft = nullptr;        // opened by serve_main
  std::unique_ptr<TlsConfig> tls;
  // --embeddings / --pooling: the embedding session's shape (0: none).
  bool embeddings = false;
  int32_t pooling = EMBER_POOLING_UNSPECIFIED;
  int32_t embed_ctx = 0, embed_seqs = 4;
};

// The session's plan, and the draft model's session beside it (the same
// context and sequences).
struct Planned {
  ember_memory_plan target{}, draft{}, embed{};
  uint64_t private_bytes() const { return target.private_bytes + draft.private_bytes + embed.private_bytes; }
};

// The embedding session's options: the generation session's backend and
// threads, its own context and sequences.
ember_session_options embed_options(const ServeArgs& a) {
  ember_session_options so = a.so;
  so.embeddings = 1;
  so.context_length = a.embed_ctx;
  so.n_seqs = a.embed_seqs;
  so.max_draft = 0;
  so.max_bytes = 0;
  return so;
}

ember_status plan_status(ember_model* model, const ServeArgs& a, int32_t ctx, int32_t n_seqs, Planned* p) {
  ember_session_options so = a.so;
  so.context_length = ctx;
  so.n_seqs = n_seqs;
  p->target.struct_size = sizeof p->target;
  p->draft = ember_memory_plan{};
  p->embed = ember_memory_plan{};
  ember_status st = ember_plan(model, &so, &p->target);
  if (st == EMBER_OK && a.embeddings) {
    const ember_session_options eso = embed_options(a);
    p->embed.struct_size = sizeof p->embed;
    st = ember_plan(model, &eso, &p->embed);
  }
  if (st != EMBER_OK || !a.draft) return st;
  so.max_draft = 0;
  so.context_length = p->target.context_length;
  p->draft.struct_size = sizeof p->draft;
  return ember_plan(a.draft, &so, &p->draft);
}

// The API key from --api-key or --api-key-file. 0 or the exit code.
int read_api_key(cli::Args& args, ServerConfig* config) {
  using cli::report;
  if (args.has("--api-key") && args.has("--api-key-file")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--api-key and --api-key-file both give the key: pass one");
  }
  config->api_key = args.get("--api-key");
  if (args.has("--api-key-file")) {
    std::ifstream f(args.get("--api-key-file"));
    if (!f) return report(EMBER_ERR_IO, "cannot read --api-key-file '" + args.get("--api-key-file") + "'");
    std::getline(f, config->api_key);
    while (!config->api_key.empty() && (config->api_key.back() == '\r' || config->api_key.back() == ' ')) {
      config->api_key.pop_back();
    }
  }
  if ((args.has("--api-key") || args.has("--api-key-file")) && config->api_key.empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "the API key is empty");
  }
  return 0;
}

// Parses and checks the flags. kRun to go on, else the exit code.
int parse_serve(int argc, char** argv, ServeArgs* a) {
  using cli::report;
  std::vector<std::string> with_value = {"-m",        "--host",    "--port",         "--parallel",  "--api-key",
                                         "--api-key-file", "--tls-cert", "--tls-key", "--max-queue", "--timeout",
                                         "--max-body", "--max-connections", "--cache-slots",
                                         "--max-connections-per-client", "--header-timeout", "--min-recv-rate",
                                         "--drain-timeout", "--alias", "--grammar-cache-mib", "--pooling",
                                         "--embed-ctx", "--embed-seqs"};
  for (int i = 0; cli::kSpeculativeFlags[i]; ++i) with_value.push_back(cli::kSpeculativeFlags[i]);
  std::vector<std::string> known = with_value;
  known.push_back("--lookup");
  known.push_back("--embeddings");
  for (int i = 0; cli::kSessionFlags[i]; ++i) {
    with_value.push_back(cli::kSessionFlags[i]);
    known.push_back(cli::kSessionFlags[i]);
  }
  cli::Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kHelp, stdout);
    std::fputs(cli::kSpeculativeHelp, stdout);
    std::fputs("  (each slot drafts; the drafted rows of every slot run in the same batched step)\n", stdout);
    return 0;
  }
  args.check_known(known);
  ServerConfig& config = a->config;
  config.host = args.get("--host", "127.0.0.1");
  config.port = static_cast<int>(args.get_int("--port", 8080, 0, 65535));
  a->slots = static_cast<int32_t>(args.get_int("--parallel", 1, 1, 256));
  a->cache_slots = static_cast<int32_t>(args.get_int("--cache-slots", a->slots, 0, 255));
  a->max_queue = static_cast<int32_t>(args.get_int("--max-queue", 64, 0, 1 << 20));
  config.timeout_s = args.get_float("--timeout", 600, 0.001, 1e7);
  config.limits.max_body = static_cast<size_t>(args.get_int("--max-body", 8 << 20, 1, 1 << 30));
  config.admission.max_connections = static_cast<int>(args.get_int("--max-connections", 64, 1, 65536));
  config.admission.max_per_client = static_cast<int>(
      args.get_int("--max-connections-per-client", std::max(1, config.admission.max_connections / 2), 0, 65536));
  config.header_timeout_ms = static_cast<int>(args.get_float("--header-timeout", 10, 0.1, 3600) * 1000);
  config.min_recv_rate = static_cast<uint64_t>(args.get_int("--min-recv-rate", 1024, 1, int64_t{1} << 40));
  config.body_grace_ms = config.header_timeout_ms;
  config.drain_timeout_s = args.get_float("--drain-timeout", 30, 0, 1e7);
  config.model_aliases = args.get_all("--alias");
  config.grammar_cache_bytes = static_cast<uint64_t>(args.get_int("--grammar-cache-mib", 512, 16, 1 << 20)) << 20;
  a->body_given = args.has("--max-body");
  cli::session_options_from_args(args, &a->so);
  ember_generate_options_default(&a->speculative);
  if (args.has("--draft") && args.has("--lookup")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--draft and --lookup both draft: pass one");
  }
  a->draft_path = args.get("--draft");
  cli::speculative_from_args(args, &a->speculative, &a->so);
  a->ctx_given = args.has("--ctx");
  a->embeddings = args.has("--embeddings") || args.has("--pooling");
  a->embed_ctx = static_cast<int32_t>(args.get_int("--embed-ctx", 0, 1, 1 << 20));
  a->embed_seqs = static_cast<int32_t>(args.get_int("--embed-seqs", 4, 1, 256));
  if (args.has("--pooling")) {
    const std::string p = args.get("--pooling");
    a->pooling = cli::pooling_from_name(p);
    if (a->pooling == -2) return report(EMBER_ERR_INVALID_ARGUMENT, "--pooling '" + p + "': must be mean, cls, last or rank");
    if (a->pooling == EMBER_POOLING_NONE) {
      return report(EMBER_ERR_INVALID_ARGUMENT, "--pooling none: /v1/embeddings answers one vector per input");
    }
  }
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember serve --help)");
  if (a->so.kv_type_k < 0 || a->so.kv_type_v < 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type must be f32, f16 or q8_0");
  }
  if (a->so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember serve --help)");
  a->model_path = args.get("-m");
  if (a->slots + a->cache_slots > 256) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--parallel " + std::to_string(a->slots) + " + --cache-slots " +
                                                  std::to_string(a->cache_slots) + " sequences: at most 256 in all");
  }
  if (const int code = read_api_key(args, &config)) return code;
  if (args.has("--tls-cert") != args.has("--tls-key")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--tls-cert and --tls-key go together");
  }
  if (args.has("--tls-cert")) {
    a->tls = std::make_unique<TlsConfig>();
    std::string error;
    if (!a->tls->load(args.get("--tls-cert"), args.get("--tls-key"), &error)) {
      return report(EMBER_ERR_INVALID_ARGUMENT, error);
    }
  }
  return cli::kRun;
}

// The refusal when every sequence's plan is over --max-bytes: what fits
// instead (fewer sequences at this ctx, or all at a smaller one).
int refuse_plan(ember_model* model, const ServeArgs& a, int32_t ctx, uint64_t budget, const Planned& plan,
                int32_t fitting_ctx) {
  const int32_t seqs = a.slots + a.cache_slots;
  std::string what = std::to_string(seqs) + " sequence(s) (" + std::to_string(a.slots) + " slot(s) + " +
                     std::to_string(a.cache_slots) + " cache) at ctx " + std::to_string(ctx) +
                     (a.draft ? " with the draft model's" : "") + " need " + mib(plan.private_bytes()) +
                     ", over --max-bytes " + mib(budget) + ": ";
  int32_t fit = 0;  // sequences that fit at this ctx
  for (int32_t n = seqs - 1; n >= 1 && fit == 0; --n) {
    Planned p;
    if (plan_status(model, a, ctx, n, &p) == EMBER_OK && p.private_bytes() <= budget) fit = n;
  }
  what += std::to_string(fit) + " sequence(s) fit at this ctx";
  if (fit > a.slots) {
    what += " (--cache-slots " + std::to_string(fit - a.slots) + ")";
  } else if (fit > 0) {
    what += " (--parallel " + std::to_string(fit) + " --cache-slots 0)";
  }
  if (fitting_ctx > 0) what += ", or all of them at --ctx " + std::to_string(fitting_ctx);
  return cli::report(EMBER_ERR_NO_MEMORY, what);
}

// The plan of the one session (slots + cache-slots sequences) against the
// budget (--max-bytes is for everything the server holds; the session
// itself gets no cap of its own): the context capped to fit when not
// given, the plan printed, a start over the budget refused. Sets a->so's
// context. 0 or the exit code.
int plan_session(ember_model* model, const ember_model_info& info, ServeArgs* a, Planned* planned) {
  ember_session_options& so = a->so;
  const uint64_t budget = so.max_bytes;
  so.max_bytes = 0;
  const int32_t seqs = a->slots + a->cache_slots;
  int32_t ctx = a->ctx_given ? so.context_length : info.max_context;
  ember_status st = plan_status(model, *a, ctx, seqs, planned);
  if (st != EMBER_OK) return cli::report_last(st);
  const ember_memory_plan* plan = &planned->target;
  // The largest context at which every sequence fits the budget (0: none).
  auto fitting_ctx = [&]() {
    int32_t lo = 0, hi = ctx;
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      Planned p;
      if (plan_status(model, *a, mid, seqs, &p) == EMBER_OK && p.private_bytes() <= budget) lo = mid; else hi = mid;
    }
    return lo;
  };
  if (budget && planned->private_bytes() > budget && !a->ctx_given) {
    const int32_t lo = fitting_ctx();
    if (lo >= 16) {
      ctx = lo;
      plan_status(model, *a, ctx, seqs, planned);
    }
  }
  so.context_length = ctx;
  std::fprintf(stderr,
               "plan: one session of %d sequence(s) (%d slot(s) + %d cache) x ctx %d: weights mapped %s, "
               "resident %s, KV %s (%s per sequence), arena %s, private %s%s%s\n",
               seqs, a->slots, a->cache_slots, ctx, mib(plan->weights_mapped_bytes).c_str(),
               mib(plan->weights_resident_bytes).c_str(), mib(plan->kv_bytes).c_str(),
               mib(plan->kv_bytes / static_cast<uint64_t>(seqs)).c_str(), mib(plan->arena_bytes).c_str(),
               mib(plan->private_bytes).c_str(), budget ? (" of the budget " + mib(budget)).c_str() : "",
               a->ctx_given || !budget || ctx == info.max_context ? "" : " (--ctx capped to fit)");
  if (a->embeddings) {
    const ember_memory_plan& e = planned->embed;
    std::fprintf(stderr,
                 "plan: embeddings: a session of %d sequence(s) x ctx %d beside it: KV %s, arena %s, private %s\n",
                 e.n_seqs, e.context_length, mib(e.kv_bytes).c_str(), mib(e.arena_bytes).c_str(),
                 mib(e.private_bytes).c_str());
  }
  if (a->draft) {
    const ember_memory_plan& d = planned->draft;
    std::fprintf(stderr,
                 "plan: draft model %s, its session of the same sequences and ctx: weights mapped %s, resident %s, "
                 "KV %s, arena %s, private %s; private in all %s\n",
                 a->draft_path.c_str(), mib(d.weights_mapped_bytes).c_str(), mib(d.weights_resident_bytes).c_str(),
                 mib(d.kv_bytes).c_str(), mib(d.arena_bytes).c_str(), mib(d.private_bytes).c_str(),
                 mib(planned->private_bytes()).c_str());
  }
  if (budget && planned->private_bytes() > budget) {
    return refuse_plan(model, *a, ctx, budget, *planned, fitting_ctx());
  }
  return 0;
}

// The HTTP side's share (admission.h): what every connection may hold at
// most, beside the session's plan; sets the limits that follow from the
// context (the longest prompt, the derived --max-body) and prints the bound.
uint64_t plan_http(const ember_model* model, int32_t ctx, uint64_t session_bytes, bool body_given,
                   ServerConfig* config) {
  const uint64_t piece = longest_piece_bytes(model);
  config->max_prompt_bytes = static_cast<uint64_t>(ctx) * std::max<uint64_t>(piece, 32);
  if (!body_given) {
    config->limits.max_body = static_cast<size_t>(
        std::clamp<uint64_t>(6 * config->max_prompt_bytes + (64 << 10), 64 << 10, 8 << 20));
  }
  config->read.max_prompt_tokens = static_cast<size_t>(ctx);
  config->read.max_messages = static_cast<size_t>(ctx);
  HttpMemoryInputs hin;
  hin.http = config->limits;
  hin.read = config->read;
  hin.admission = config->admission;
  hin.read_buffer = kReadBufferBytes;
  hin.max_prompt_bytes = config->max_prompt_bytes;
  // The longest answer: the echoed prompt and a context of pieces, each
  // byte at most 6 when JSON-escaped, and the document built beside it.
  hin.max_response_bytes = 2 * 6 * (config->max_prompt_bytes + static_cast<uint64_t>(ctx) * piece) + (16 << 10);
  const HttpMemory http = http_memory_bound(hin);
  std::fprintf(stderr,
               "plan: http: %llu connection(s) (%d + %d spare) x %s at most (body %s: the body, the JSON read, "
               "headers, buffers, the prompt's tokenization, the response) + %s for one long prompt tokenized at a "
               "time = %s beside the sessions' private %s\n",
               static_cast<unsigned long long>(http.connections), config->admission.max_connections,
               config->admission.spare, mib(http.per_connection).c_str(), mib(config->limits.max_body).c_str(),
               mib(http.gate).c_str(), mib(http.total).c_str(), mib(session_bytes).c_str());
  return http.total;
}

// The compiled grammars' share (grammar_cache.h): the cache's budget, which
// caps every grammar alive; then everything the server may hold beside the
// mapped weights.
void plan_grammars(const ember_model* model, uint64_t session_bytes, uint64_t http_bytes, const ServerConfig& config) {
  const GrammarCache probe(model, 16, config.grammar_cache_bytes);
  std::fprintf(stderr,
               "plan: grammars: %zu compiled grammar(s) alive at most (kept or in use) x %s each (its rules, the "
               "vocabulary's text, states, masks) = %s (--grammar-cache-mib)\n",
               probe.capacity(), mib(probe.per_grammar_bytes()).c_str(), mib(probe.budget_bytes()).c_str());
  std::fprintf(stderr, "plan: private memory in all: sessions %s + http %s + grammars %s = %s\n",
               mib(session_bytes).c_str(), mib(http_bytes).c_str(), mib(probe.budget_bytes()).c_str(),
               mib(session_bytes + http_bytes + probe.budget_bytes()).c_str());
}

}  // namespace

int serve_main(int argc, char** argv) {
  ServeArgs a;
  if (const int code = parse_serve(argc, argv, &a); code != cli::kRun) return code;
  ember_model* model = nullptr;
  std::string opened;
  if (const int code = cli::open_model_for_cli(a.model_path, nullptr, &model, &opened)) return code;
  struct ModelGuard {
    ember_model* m;
    ~ModelGuard() { ember_model_free(m); }
  } guard{model};
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  ServerConfig& config = a.config;
  {
    const size_t slash = a.model_path.find_last_of('/');
    config.model_name = slash == std::string::npos ? a.model_path : a.model_path.substr(slash + 1);
    const size_t dot = config.model_name.find_last_of('.');
    if (dot != std::string::npos && dot > 0) config.model_aliases.push_back(config.model_name.substr(0, dot));
  }
  // --draft: its model, planned beside the target's and checked against it
  // when the scheduler makes its session.
  if (!a.draft_path.empty()) {
    if (const int code = cli::open_model_for_cli(a.draft_path, nullptr, &a.draft)) return code;
  }
  struct DraftGuard {
    ember_model* m;
    ~DraftGuard() { ember_model_free(m); }
  } draft_guard{a.draft};
  // An encoder (bert, nomic-bert) makes embedding sessions only: the server
  // embeds (or reranks) and has no slots; its completion endpoints answer 501.
  const bool encoder = info.encoder != 0;
  if (encoder && !a.embeddings) {
    a.embeddings = true;
    std::fprintf(stderr, "an encoder model: serving embeddings only (as --embeddings)\n");
  }
  // --embeddings: one pool for both sessions when --threads says how many
  // (their steps take turns, each with every thread).
  if (a.embeddings) {
    if (a.embed_ctx == 0) a.embed_ctx = std::min(info.max_context, 2048);
    if (a.so.n_threads > 0 && a.so.backend == EMBER_BACKEND_CPU) {
      if (const ember_status st = ember_threadpool_create(a.so.n_threads, &a.so.thread_pool); st != EMBER_OK) {
        return cli::report_last(st);
      }
    }
  }
  struct PoolGuard {
    ember_threadpool* p;
    ~PoolGuard() { ember_threadpool_free(p); }
  } pool_guard{a.so.thread_pool};
  Metrics metrics;
  std::string error;
  std::unique_ptr<Scheduler> scheduler;
  if (encoder) {
    // The embedding session alone, against the budget.
    Planned plan;
    const ember_session_options eso = embed_options(a);
    plan.embed.struct_size = sizeof plan.embed;
    if (const ember_status st = ember_plan(model, &eso, &plan.embed); st != EMBER_OK) return cli::report_last(st);
    if (a.so.max_bytes > 0 && plan.private_bytes() > a.so.max_bytes) {
      return cli::report(EMBER_ERR_NO_MEMORY, "the embedding session needs " + mib(plan.private_bytes()) +
                                                  ", more than --max-bytes " + mib(a.so.max_bytes));
    }
    a.so.context_length = a.embed_ctx;
    std::fprintf(stderr, "plan: the embedding session %s (%d sequence(s) of %d positions)\n",
                 mib(plan.private_bytes()).c_str(), a.embed_seqs, a.embed_ctx);
    plan_http(model, a.embed_ctx, plan.private_bytes(), a.body_given, &config);
  } else {
  Planned plan;
  if (const int code = plan_session(model, info, &a, &plan)) return code;
  std::fprintf(stderr, "chat template: %s\n", chat_template_name(model).c_str());
  const uint64_t http_bytes = plan_http(model, a.so.context_length, plan.private_bytes(), a.body_given, &config);
  plan_grammars(model, plan.private_bytes(), http_bytes, config);

  BatchedConfig bc;
  bc.slots = a.slots;
  bc.cache_slots = a.cache_slots;
  bc.max_queue = a.max_queue;
  bc.session = a.so;
  bc.lookup = a.speculative.lookup;
  bc.draft_max = a.speculative.draft_max;
  bc.lookup_ngram = a.speculative.lookup_ngram;
  bc.draft_model = a.draft;
  ember_status created = EMBER_OK;
  scheduler = make_batched_scheduler(model, bc, &metrics, &created, &error);
  if (!scheduler) {
    return cli::report(created, "creating the session of " + std::to_string(a.slots + a.cache_slots) +
                                    " sequences: " + error);
  }
  std::fprintf(stderr,
               "scheduler: batched, %d slot(s) decoded as one step (every weight read once for all), steps of at "
               "most %d rows (prompts chunked into what the decoding slots leave), prefix cache over %d extra "
               "sequence(s), queue %d\n",
               a.slots,
               static_cast<int>(std::min<int64_t>(a.so.max_batch, static_cast<int64_t>(a.so.context_length) *
                                                                      (a.slots + a.cache_slots))),
               a.cache_slots, a.max_queue);
  }
  // --embeddings: its session, and the service /v1/embeddings calls.
  struct EmbedGuard {
    ember_session* s = nullptr;
    ~EmbedGuard() { ember_session_free(s); }
  } embed_session;
  std::unique_ptr<EmbedService> embed;
  if (a.embeddings) {
    const ember_session_options eso = embed_options(a);
    if (const ember_status st = ember_session_create(model, &eso, &embed_session.s); st != EMBER_OK) {
      return cli::report(st, std::string("creating the embedding session: ") + ember_last_error());
    }
    int32_t pooling = a.pooling != EMBER_POOLING_UNSPECIFIED ? a.pooling : ember_model_pooling(model);
    if (pooling == EMBER_POOLING_UNSPECIFIED) pooling = EMBER_POOLING_MEAN;
    if (pooling == EMBER_POOLING_NONE) {
      return cli::report(EMBER_ERR_UNSUPPORTED, std::string("the model's file says pooling ") + cli::pooling_name(pooling) +
                                                    ": /v1/embeddings needs mean, cls or last (--pooling)");
    }
    embed = std::make_unique<EmbedService>(model, embed_session.s, pooling, a.embed_ctx);
    config.embed = embed.get();
    // An answer holds every vector as JSON text (~12 bytes a float): at most 64 MiB of them.
    const uint64_t per_input = static_cast<uint64_t>(ember_session_embedding_size(embed_session.s)) * 16 + 64;
    config.embed_limits.max_inputs =
        static_cast<size_t>(std::clamp<uint64_t>((64ull << 20) / per_input, 1, config.embed_limits.max_inputs));
    if (pooling == EMBER_POOLING_RANK) {
      // A reranker: its classifier head is checked now, not at the first request.
      const char* none[1] = {"x"};
      float score = 0;
      if (const ember_status st = ember_rerank(embed_session.s, "x", none, 1, &score); st != EMBER_OK) {
        return cli::report(st, std::string("--pooling rank: ") + ember_last_error());
      }
    }
    std::fprintf(stderr,
                 "%s: POST %s, %s pooling, %d %s, inputs of up to "
                 "%d tokens, at most %zu inputs a request, %d run together, on %s\n",
                 pooling == EMBER_POOLING_RANK ? "reranking" : "embeddings",
                 pooling == EMBER_POOLING_RANK ? "/v1/rerank" : "/v1/embeddings (L2-normalized)",
                 cli::pooling_name(pooling), pooling == EMBER_POOLING_RANK ? 1 : ember_session_embedding_size(embed_session.s),
                 pooling == EMBER_POOLING_RANK ? "score per document (the classifier head's first output)" : "floats per vector",
                 a.embed_ctx,
                 config.embed_limits.max_inputs, a.embed_seqs, ember_session_backend(embed_session.s));
  }
  Server server(config, model, scheduler.get(), &metrics, a.tls.get());
  if (!server.listen(&error)) return cli::report(EMBER_ERR_IO, error);
  const bool drained = server.run();
  scheduler.reset();
  return drained ? 0 : 1;
}

}  // namespace ember::serve

// `ember plan`: every byte a session would take, computed before anything is
// allocated, beside the first-order estimates users usually make.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {

const char* const kSessionFlags[] = {"--ctx",       "--batch",   "--threads",   "--kv-type", "--kv-type-k",
                                     "--kv-type-v", "--backend", "--max-bytes", nullptr};

const char* const kSpeculativeFlags[] = {"--draft-max", "--lookup-ngram", "--draft", nullptr};
const char* const kSpeculativeHelp =
    "speculative decoding (the same output, fewer weight reads where the text repeats):\n"
    "  --lookup           draft tokens by prompt lookup: what followed the latest earlier occurrence\n"
    "                     of the text's last tokens, verified in the decode step\n"
    "  --draft MODEL      draft tokens with this smaller model of the same vocabulary (greedy)\n"
    "  --draft-max K      most tokens drafted per step (1..16, default 4; adapts below it)\n"
    "  --lookup-ngram N   longest suffix matched (1..16, default 3)\n";

namespace {

int32_t kv_type_arg(Args& args, const std::string& flag, int32_t fallback) {
  if (!args.has(flag)) return fallback;
  const std::string v = args.get(flag);
  if (v == "f32") return EMBER_KV_F32;
  if (v == "f16") return EMBER_KV_F16;
  if (v == "q8_0") return EMBER_KV_Q8_0;
  return -1;  // reported by the caller
}

std::string mib(uint64_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%10.2f MiB", b / 1048576.0);
  return buf;
}

}  // namespace

void session_options_from_args(Args& args, ember_session_options* o) {
  ember_session_options_default(o);
  o->context_length = static_cast<int32_t>(args.get_int("--ctx", 0, 1, 1 << 20));
  o->max_batch = static_cast<int32_t>(args.get_int("--batch", 512, 1, 65536));
  o->n_threads = static_cast<int32_t>(args.get_int("--threads", 0, 0, 1024));
  o->max_bytes = static_cast<uint64_t>(args.get_int("--max-bytes", 0, 0, INT64_MAX));
  const int32_t both = kv_type_arg(args, "--kv-type", EMBER_KV_F32);
  o->kv_type_k = kv_type_arg(args, "--kv-type-k", both);
  o->kv_type_v = kv_type_arg(args, "--kv-type-v", both);
  const std::string backend = args.get("--backend", "cpu");
  o->backend = backend == "auto" ? EMBER_BACKEND_AUTO : backend == "vulkan" ? EMBER_BACKEND_VULKAN
               : backend == "cpu"  ? EMBER_BACKEND_CPU : -1;
}

void speculative_from_args(Args& args, ember_generate_options* g, ember_session_options* so) {
  const bool lookup = args.has("--lookup");
  const int64_t k = args.get_int("--draft-max", 4, 1, EMBER_MAX_DRAFT);
  const int64_t n = args.get_int("--lookup-ngram", 3, 1, 16);
  if (!lookup && !args.has("--draft")) return;
  g->lookup = lookup ? 1 : 0;  // --draft: the caller opens the model and sets draft_session
  g->draft_max = static_cast<int32_t>(k);
  g->lookup_ngram = static_cast<int32_t>(n);
  so->max_draft = static_cast<int32_t>(k);
}

int open_draft_session(const std::string& path, ember_session* target, const ember_session_options& so,
                       ember_model** draft_model, ember_session** draft_session) {
  *draft_session = nullptr;
  if (const int code = open_model_for_cli(path, nullptr, draft_model)) return code;
  ember_session_options dso = so;
  dso.max_draft = 0;
  dso.n_seqs = ember_session_n_seqs(target);
  ember_status st = ember_session_create(*draft_model, &dso, draft_session);
  if (st == EMBER_OK) st = ember_session_check_draft(target, *draft_session);
  if (st != EMBER_OK) {
    const int code = report(st, "--draft '" + path + "': " + ember_last_error());
    ember_session_free(*draft_session);
    ember_model_free(*draft_model);
    *draft_session = nullptr;
    *draft_model = nullptr;
    return code;
  }
  std::fprintf(stderr, "draft: %s on %s\n", path.c_str(), ember_session_backend(*draft_session));
  return 0;
}

namespace {

struct PlanRequest {
  std::string path;
  std::string draft;  // --draft MODEL, or empty
  ember_session_options so{};
  bool json = false;
};

struct PlanResult {
  ember_memory_plan plan{};
  ember_memory_plan draft{};  // --draft: the draft model's session (the same context and sequences)
  uint64_t private_bytes() const { return plan.private_bytes + draft.private_bytes; }
  ember_model_info info{};
};

const char* const kKvNames[] = {"f32", "f16", "q8_0"};

int parse_plan(int argc, char** argv, PlanRequest* r) {
  std::vector<std::string> with_value = {"-m", "--seqs", "--draft-max", "--lookup-ngram", "--draft"};
  std::vector<std::string> known = {"-m",     "--json",  "--seqs",      "--draft-max",
                                    "--lookup-ngram", "--lookup", "--draft", "--embeddings"};
  for (int i = 0; kSessionFlags[i]; ++i) {
    with_value.push_back(kSessionFlags[i]);
    known.push_back(kSessionFlags[i]);
  }
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember plan -m MODEL.ember [--ctx N] [--batch B] [--threads T] [--kv-type f32|f16|q8_0]\n"
              "                  [--kv-type-k T] [--kv-type-v T] [--backend cpu|vulkan|auto] [--max-bytes N]\n"
              "                  [--seqs N] [--lookup | --draft DRAFT.ember] [--draft-max K] [--embeddings] [--json]\n"
              "  --embeddings  an embedding session (as ember embed and serve --embeddings make; an encoder such\n"
              "             as bert has no other): its output rows are hidden states, any row of a step an output\n"
              "  --seqs N   sequences decoded together in one session (batched decoding, as ember serve\n"
              "             --parallel): N KV caches of --ctx positions each (default 1)\n"
              "  --lookup --draft-max K   room for speculative decoding: a step's logits for K drafted\n"
              "             tokens per sequence beside its own (as ember run/serve --lookup)\n"
              "  --draft DRAFT   a draft model too (as ember run/chat/serve --draft): its session, of the same\n"
              "             context and sequences, planned beside the target's and counted against --max-bytes");
    return 0;
  }
  args.check_known(known);
  ember_session_options& so = r->so;
  session_options_from_args(args, &so);
  so.n_seqs = static_cast<int32_t>(args.get_int("--seqs", 1, 1, 256));
  so.embeddings = args.has("--embeddings") ? 1 : 0;
  if (so.embeddings && (args.has("--draft") || args.has("--lookup"))) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--embeddings: an embedding session does not draft");
  }
  if (args.has("--draft") && args.has("--lookup")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--draft and --lookup both draft: pass one");
  }
  r->draft = args.get("--draft");
  ember_generate_options g;
  ember_generate_options_default(&g);
  speculative_from_args(args, &g, &so);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  if (so.kv_type_k < 0 || so.kv_type_v < 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type must be f32, f16 or q8_0");
  }
  if (so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required");
  r->path = args.get("-m");
  r->json = args.has("--json");
  return kRun;
}

int run_plan(const PlanRequest& r, PlanResult* res) {
  ember_model* model = nullptr;
  ember_status st = ember_model_open(r.path.c_str(), nullptr, &model);
  if (st != EMBER_OK) return report_last(st);
  res->plan.struct_size = sizeof res->plan;
  st = ember_plan(model, &r.so, &res->plan);
  // Reported before the calls below clear the last error.
  const int code = st == EMBER_OK ? 0 : report_last(st);
  res->info.struct_size = sizeof res->info;
  if (!code) ember_model_get_info(model, &res->info);
  ember_model_free(model);
  if (code || r.draft.empty()) return code;
  // The draft model's session: the target's context and sequences, no drafts of its own.
  ember_model* draft = nullptr;
  if ((st = ember_model_open(r.draft.c_str(), nullptr, &draft)) != EMBER_OK) {
    return report(st, "--draft '" + r.draft + "': " + ember_last_error());
  }
  ember_session_options dso = r.so;
  dso.context_length = res->plan.context_length;
  dso.max_draft = 0;
  dso.max_bytes = 0;
  res->draft.struct_size = sizeof res->draft;
  st = ember_plan(draft, &dso, &res->draft);
  const int draft_code = st == EMBER_OK ? 0 : report(st, "--draft '" + r.draft + "': " + ember_last_error());
  ember_model_free(draft);
  return draft_code;
}

int report_json(const PlanRequest& r, const PlanResult& res, bool fits) {
  const ember_memory_plan& p = res.plan;
  std::printf("{\n  \"model\": \"%s\",\n  \"parameters\": %llu,\n  \"context_length\": %d,\n  \"max_batch\": %d,\n"
              "  \"n_seqs\": %d,\n  \"embeddings\": %s,\n  \"kv_type_k\": \"%s\",\n  \"kv_type_v\": \"%s\",\n",
              r.path.c_str(), static_cast<unsigned long long>(res.info.n_parameters), p.context_length, p.max_batch,
              p.n_seqs, r.so.embeddings ? "true" : "false", kKvNames[r.so.kv_type_k], kKvNames[r.so.kv_type_v]);
  const struct { const char* key; uint64_t v; } rows[] = {
      {"weights_mapped_bytes", p.weights_mapped_bytes}, {"weights_resident_bytes", p.weights_resident_bytes},
      {"kv_bytes", p.kv_bytes}, {"activations_bytes", p.activations_bytes}, {"scratch_bytes", p.scratch_bytes},
      {"runtime_bytes", p.runtime_bytes}, {"arena_bytes", p.arena_bytes}, {"private_bytes", p.private_bytes},
      {"device_bytes", p.device_bytes}, {"estimate_weights_bytes", p.estimate_weights_bytes},
      {"estimate_kv_bytes", p.estimate_kv_bytes}};
  for (const auto& row : rows) std::printf("  \"%s\": %llu,\n", row.key, static_cast<unsigned long long>(row.v));
  if (!r.draft.empty()) {
    const ember_memory_plan& d = res.draft;
    std::printf("  \"draft\": {\"model\": \"%s\", \"weights_mapped_bytes\": %llu, \"weights_resident_bytes\": %llu, "
                "\"kv_bytes\": %llu, \"arena_bytes\": %llu, \"private_bytes\": %llu, \"device_bytes\": %llu},\n",
                r.draft.c_str(), static_cast<unsigned long long>(d.weights_mapped_bytes),
                static_cast<unsigned long long>(d.weights_resident_bytes), static_cast<unsigned long long>(d.kv_bytes),
                static_cast<unsigned long long>(d.arena_bytes), static_cast<unsigned long long>(d.private_bytes),
                static_cast<unsigned long long>(d.device_bytes));
  }
  std::printf("  \"total_private_bytes\": %llu,\n", static_cast<unsigned long long>(res.private_bytes()));
  std::printf("  \"max_bytes\": %llu,\n  \"fits\": %s\n}\n", static_cast<unsigned long long>(r.so.max_bytes),
              fits ? "true" : "false");
  return 0;
}

void row(const char* name, uint64_t v, const char* note) {
  std::printf("  %-24s %16llu %s  %s\n", name, static_cast<unsigned long long>(v), mib(v).c_str(), note);
}

int report_text(const PlanRequest& r, const PlanResult& res, bool fits) {
  const ember_memory_plan& p = res.plan;
  std::printf("memory plan for %s: context %d%s, batch %d, KV %s/%s, %llu parameters\n\n", r.path.c_str(),
              p.context_length,
              p.n_seqs > 1 ? (" x " + std::to_string(p.n_seqs) + " sequences (batched)").c_str() : "", p.max_batch,
              kKvNames[r.so.kv_type_k], kKvNames[r.so.kv_type_v],
              static_cast<unsigned long long>(res.info.n_parameters));
  std::printf("  %-24s %16s %s\n", "", "bytes", "");
  row("weights mapped", p.weights_mapped_bytes, "read in place from the file (page cache, shared)");
  row("weights resident", p.weights_resident_bytes, "copies: repacked or converted weights");
  const char* where = p.device_bytes ? "in device memory (part of device below)" : "in the arena";
  row("KV cache", p.kv_bytes, where);
  if (p.kv_bytes < p.estimate_kv_bytes) {
    std::printf("  %-24s %16s %s  sliding-window layers keep a ring of window + batch rows, not the context\n", "",
                "", "              ");
  }
  row("activations", p.activations_bytes, where);
  row("scratch", p.scratch_bytes, "in the arena");
  row("runtime buffers", p.runtime_bytes,
      p.n_seqs > 1 ? "in the arena: logits rows, token histories, a batched step's rows"
                   : "in the arena: logits, token history");
  row("arena", p.arena_bytes, "= one allocation per session");
  row("private", p.private_bytes, "resident + arena + session tables: cannot be paged back to the file");
  if (p.device_bytes) row("device", p.device_bytes, "GPU memory");
  std::printf("\n  first-order estimates:\n");
  row("parameters x bits / 8", p.estimate_weights_bytes, "vs weights mapped + resident above");
  row("KV formula", p.estimate_kv_bytes,
      p.n_seqs > 1 ? "layers x 2 x ctx x seqs x kv_heads x head_dim x kv_bits / 8"
                   : "layers x 2 x ctx x kv_heads x head_dim x kv_bits / 8");
  if (!r.draft.empty()) {
    const ember_memory_plan& d = res.draft;
    std::printf("\n  draft model %s (the same context and sequences):\n", r.draft.c_str());
    row("weights mapped", d.weights_mapped_bytes, "read in place from the file");
    row("weights resident", d.weights_resident_bytes, "copies: repacked or converted weights");
    row("KV cache", d.kv_bytes, d.device_bytes ? "in device memory" : "in its arena");
    row("arena", d.arena_bytes, "its session's one allocation");
    row("private", d.private_bytes, "");
    if (d.device_bytes) row("device", d.device_bytes, "GPU memory");
    row("private in all", res.private_bytes(), "target + draft: what --max-bytes is held to");
  }
  if (r.so.max_bytes) {
    std::printf("\n  budget %llu bytes: %s\n", static_cast<unsigned long long>(r.so.max_bytes),
                fits ? "fits" : "DOES NOT FIT (ember run would fail with EMBER_ERR_NO_MEMORY)");
  }
  return 0;
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  PlanRequest r;
  if (const int code = parse_plan(argc, argv, &r); code != kRun) return code;
  PlanResult res;
  if (const int code = run_plan(r, &res)) return code;
  const bool fits = r.so.max_bytes == 0 || res.private_bytes() <= r.so.max_bytes;
  return r.json ? report_json(r, res, fits) : report_text(r, res, fits);
}

}  // namespace ember::cli

// `ember run`: generate text. stdout carries the prompt and the continuation
// exactly as llama2.c prints them; stderr carries the timings.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/chat_render.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"
#include "tools/ember/grammar_flags.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Prints a piece as the reference does: a lone byte that is neither
// printable nor whitespace (a raw control byte from a byte token) is dropped.
void print_piece(const char* p, size_t n) {
  if (n == 0) return;
  if (n == 1) {
    const unsigned char c = static_cast<unsigned char>(p[0]);
    if (!(std::isprint(c) || std::isspace(c))) return;
  }
  std::fwrite(p, 1, n, stdout);
  std::fflush(stdout);
}

// Parses --tokens "1,2,3": decimal ids separated by commas (spaces around an
// id allowed), nothing else. Range against the vocabulary is checked later.
// The tokens of a prompt text (ember_tokenize_prompt: BOS as the model asks,
// control-token text parsed when parse_special). 0, or the reported exit code.
int prompt_tokens(const ember_model* model, const std::string& text, bool parse_special, std::vector<int32_t>* ids) {
  size_t n = 0;
  ember_status st = ember_tokenize_prompt(model, text.data(), text.size(), parse_special ? 1 : 0, -1, nullptr, 0, &n);
  if (st == EMBER_OK || st == EMBER_ERR_BUFFER_TOO_SMALL) {
    ids->resize(n);
    st = ember_tokenize_prompt(model, text.data(), text.size(), parse_special ? 1 : 0, -1, ids->data(), ids->size(), &n);
  }
  if (st != EMBER_OK) return report_last(st);
  ids->resize(n);
  return 0;
}

bool parse_token_list(const std::string& text, std::vector<int32_t>* out, std::string* error) {
  out->clear();
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    const std::string where = "--tokens '" + text + "': id #" + std::to_string(out->size() + 1);
    if (item.empty()) {
      *error = where + " is empty (expected ids separated by commas, e.g. 1,2,3)";
      return false;
    }
    for (char c : item) {
      if (c < '0' || c > '9') {
        *error = where + " = '" + item + "' is not a non-negative decimal integer";
        return false;
      }
    }
    errno = 0;
    const long long v = std::strtoll(item.c_str(), nullptr, 10);
    if (errno != 0 || v > INT32_MAX) {
      *error = where + " = '" + item + "' is too large for a token id";
      return false;
    }
    out->push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) return true;
    at = comma + 1;
  }
}

const char* kRunHelp =
    "usage: ember run -m MODEL -p PROMPT [-n NEW_TOKENS] [options]\n"
    "       ember run -m MODEL -f PROMPT_FILE [-n NEW_TOKENS] [options]\n"
    "       ember run -m MODEL --tokens 1,2,3 [-n NEW_TOKENS] [--ids] [options]\n"
    "  MODEL is an .ember file or a GGUF file (converted once into the cache: ember cache --help)\n"
    "  -n N               tokens to generate (default 128); 0 = prefill the prompt only\n"
    "  --tokens IDS       the prompt as exact token ids, comma-separated: nothing is tokenized or\n"
    "                     added (no BOS); instead of -p\n"
    "  --chat             -p is a user message: rendered with the model's chat template (or\n"
    "                     --template NAME|FILE; --system S adds a system message), only the reply printed\n"
    "  --ids              print the generated token ids, one per line, instead of the text (the\n"
    "                     prompt is not echoed)\n"
    "  --temp T           temperature; 0 = greedy (default 0)\n"
    "  --top-k K          keep the K most likely tokens (0 = off)\n"
    "  --top-p P          nucleus sampling (1 = off)\n"
    "  --min-p P          drop tokens below P x the top probability (0 = off)\n"
    "  --repeat-penalty R repetition penalty (1 = off)\n"
    "  --seed S           sampling seed (default 0)\n"
    "  --threads T        CPU threads (0 = all cores)\n"
    "  --ctx N            context length (default: the model's)\n"
    "  --batch B          most prompt tokens per prefill step (default 512)\n"
    "  --kv-type T        KV cache type f32|f16|q8_0 (or --kv-type-k / --kv-type-v)\n"
    "  --max-bytes N      refuse to start if the session needs more private memory\n"
    "  --context-shift    when the context is full, drop the older half and go on\n"
    "  --stop S           stop when the generated text contains S (repeatable; matched across\n"
    "                     tokens, never printed; S is taken literally: in bash, --stop $'\\n\\n')\n"
    "  --backend B        cpu|vulkan|auto (default cpu)\n"
    "  --dump-logits FILE write the logits after the last prompt token, one per line (works with -n 0)\n"
    "  --verify-digest    check the data segment's SHA-256 before running (integrity policy DIGEST)\n"
    "  --require-signature P.pem  refuse the model unless it is signed by this public key (ember sign);\n"
    "                     the signature policy includes the digest check\n";

// What the command line asked for.
struct RunConfig {
  std::string model, prompt, system, template_arg, dump_logits, signature_key, draft;
  GrammarFlags grammar;
  std::vector<int32_t> ids;  // --tokens
  std::vector<std::string> stops;
  bool chat = false, has_system = false, exact = false, print_ids = false, verify_digest = false;
  ember_generate_options g;
  ember_session_options so;
};

// Parses and checks the flags. Returns -1 to go on, else the exit code
// (0 after --help).
int parse_run(int argc, char** argv, RunConfig* c) {
  std::vector<std::string> with_value = {"-m",     "-p",   "-f",       "-n",    "--temp", "--top-k", "--top-p",
                                         "--min-p", "--repeat-penalty", "--seed", "--dump-logits",
                                         "--require-signature", "--tokens", "--stop", "--system", "--template"};
  for (int i = 0; kGrammarValueFlags[i]; ++i) with_value.push_back(kGrammarValueFlags[i]);
  for (int i = 0; kSpeculativeFlags[i]; ++i) with_value.push_back(kSpeculativeFlags[i]);
  std::vector<std::string> known = with_value;
  known.insert(known.end(), {"--verify-digest", "--context-shift", "--ids", "--chat", kGrammarSwitch, "--lookup"});
  for (int i = 0; kSessionFlags[i]; ++i) {
    with_value.push_back(kSessionFlags[i]);
    known.push_back(kSessionFlags[i]);
  }
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kRunHelp, stdout);
    std::fputs(kGrammarHelp, stdout);
    std::fputs(kSpeculativeHelp, stdout);
    return 0;
  }
  args.check_known(known);
  ember_generate_options& g = c->g;
  ember_generate_options_default(&g);
  const int64_t n_new = args.get_int("-n", 128, 0, 1 << 30);
  g.max_new_tokens = static_cast<int32_t>(n_new > INT32_MAX ? INT32_MAX : n_new);
  g.temperature = static_cast<float>(args.get_float("--temp", 0.0, 0.0, 100.0));
  g.top_k = static_cast<int32_t>(args.get_int("--top-k", 0, 0, 1 << 30));
  g.top_p = static_cast<float>(args.get_float("--top-p", 1.0, 0.0, 1.0));
  g.min_p = static_cast<float>(args.get_float("--min-p", 0.0, 0.0, 1.0));
  g.repeat_penalty = static_cast<float>(args.get_float("--repeat-penalty", 1.0, 0.0, 100.0));
  g.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0, INT64_MAX));
  g.context_shift = args.has("--context-shift") ? 1 : 0;
  session_options_from_args(args, &c->so);
  speculative_from_args(args, &g, &c->so);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember run --help)");
  if (c->so.kv_type_k < 0 || c->so.kv_type_v < 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type must be f32, f16 or q8_0");
  }
  if (c->so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember run --help)");
  c->model = args.get("-m");
  c->prompt = args.get("-p");
  if (args.has("-f")) {
    if (args.has("-p") || args.has("--tokens")) {
      return report(EMBER_ERR_INVALID_ARGUMENT, "-f gives the prompt: not with -p or --tokens");
    }
    std::ifstream in(args.get("-f"), std::ios::binary);
    if (!in) return report(EMBER_ERR_IO, "cannot read -f '" + args.get("-f") + "'");
    std::stringstream text;
    text << in.rdbuf();
    c->prompt = text.str();
  }
  c->chat = args.has("--chat");
  if (c->chat && (args.has("--tokens") || !args.has("-p"))) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--chat takes the user's message as -p (not --tokens)");
  }
  if (!c->chat && (args.has("--system") || args.has("--template"))) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--system and --template go with --chat");
  }
  if (args.has("--system")) c->system = args.get("--system");
  c->template_arg = args.get("--template");
  // With --chat the prompt is rendered and tokenized, then run as ids.
  c->exact = args.has("--tokens") || c->chat;
  c->print_ids = args.has("--ids");
  if (args.has("--tokens")) {
    if (args.has("-p")) return report(EMBER_ERR_INVALID_ARGUMENT, "-p and --tokens both give the prompt: pass one");
    std::string error;
    if (!parse_token_list(args.get("--tokens"), &c->ids, &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
  }
  c->has_system = args.has("--system");
  c->stops = args.get_all("--stop");
  c->dump_logits = args.get("--dump-logits");
  c->verify_digest = args.has("--verify-digest");
  c->signature_key = args.get("--require-signature");
  c->draft = args.get("--draft");
  if (args.has("--draft") && args.has("--lookup")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--draft and --lookup both draft: pass one");
  }
  std::string error;
  if (!read_grammar_flags(args, &c->grammar, &error)) return report(EMBER_ERR_INVALID_ARGUMENT, error);
  return -1;
}


// Opens the model with the integrity policy asked for. 0 or the exit code.
int open_run_model(const RunConfig& c, ember_model** model) {
  ember_model_options mo;
  ember_model_options_default(&mo);
  // The policy alone says what is checked; the signature includes the digest.
  if (c.verify_digest) mo.integrity_policy = EMBER_INTEGRITY_DIGEST;
  std::string public_key;  // must outlive ember_model_open
  if (!c.signature_key.empty()) {
    FILE* kf = std::fopen(c.signature_key.c_str(), "rb");
    if (!kf) return report(EMBER_ERR_IO, "cannot open --require-signature key '" + c.signature_key + "'");
    char kbuf[4096];
    size_t kn;
    while ((kn = std::fread(kbuf, 1, sizeof kbuf, kf)) > 0 && public_key.size() < (1 << 16)) public_key.append(kbuf, kn);
    std::fclose(kf);
    mo.integrity_policy = EMBER_INTEGRITY_SIGNATURE;
    mo.public_key_pem = public_key.c_str();
    mo.public_key_pem_len = public_key.size();
  }
  return open_model_for_cli(c.model, &mo, model);
}

// --chat: the user's message rendered with the chat template, as ids. Then
// every id (--tokens too) is checked against the vocabulary before anything
// runs or prints. 0 or the exit code.
int chat_and_check_ids(const ember_model* model, const ember_model_info& info, RunConfig* c) {
  if (c->chat) {
    ChatRenderer renderer;
    std::vector<ChatTurn> messages;
    if (c->has_system) messages.push_back({"system", c->system});
    messages.push_back({"user", c->prompt});
    std::string rendered;
    int rc = renderer.init(model, c->template_arg);
    if (rc == 0) rc = renderer.render(messages, /*add_generation_prompt=*/true, &rendered);
    if (rc == 0) rc = prompt_tokens(model, rendered, /*parse_special=*/true, &c->ids);
    if (rc != 0) return rc;
    std::fprintf(stderr, "chat template: %s\n", renderer.description().c_str());
  }
  for (size_t i = 0; i < c->ids.size(); ++i) {
    if (c->ids[i] >= info.vocab_size) {
      return report(EMBER_ERR_TOKEN_OUT_OF_RANGE, "--tokens: id #" + std::to_string(i + 1) + " = " +
                                                      std::to_string(c->ids[i]) + " is outside the vocabulary (0.." +
                                                      std::to_string(info.vocab_size - 1) + ")");
    }
  }
  return 0;
}

// The prompt, printed as its pieces (the reference's way), unless only ids
// are printed (or it is a chat). A text prompt's first id is the BOS it
// added, if any.
void echo_prompt(const ember_model* model, const ember_model_info& info, const RunConfig& c) {
  if (c.print_ids || c.chat) return;
  char buf[256];
  size_t len = 0;
  for (size_t i = c.exact || !info.add_bos ? 0 : 1; i < c.ids.size(); ++i) {
    if (ember_token_to_piece(model, i ? c.ids[i - 1] : -1, c.ids[i], buf, sizeof buf, &len) == EMBER_OK) {
      print_piece(buf, len);
    }
  }
}

// Runs the prompt ids through ember_generate, the text (or ids) to stdout.
ember_status generate(ember_session* session, RunConfig* c, std::vector<float>* prompt_logits) {
  ember_generate_options g = c->g;
  if (!c->dump_logits.empty()) g.prompt_logits = prompt_logits->data();
  std::vector<const char*> stop_ptrs;
  for (const std::string& x : c->stops) stop_ptrs.push_back(x.c_str());
  g.stop_strings = stop_ptrs.data();
  g.n_stop_strings = stop_ptrs.size();
  g.prompt_tokens = c->ids.data();
  g.n_prompt_tokens = c->ids.size();
  auto on_token = [](void*, int32_t, const char* piece, size_t len) {
    print_piece(piece, len);
    return 0;
  };
  auto on_id = [](void*, int32_t token, const char*, size_t) {
    std::printf("%d\n", token);
    std::fflush(stdout);
    return 0;
  };
  return ember_generate(session, nullptr, &g, c->print_ids ? static_cast<ember_token_callback>(on_id) : on_token,
                        nullptr);
}

// After generation: the logits file, the context note and the timings line.
// Returns the exit code.
int report_run(const RunConfig& c, ember_status st, const std::string& generate_error, bool tokenized,
               const ember_generate_stats& stats, const std::vector<float>& prompt_logits, double load_ms) {
  int code = 0;
  if (tokenized && !c.print_ids) {
    // llama2.c ends its output with a newline, whatever the text ended with;
    // flushed now, so that what follows on stderr starts on its own line.
    std::printf("\n");
    std::fflush(stdout);
  }
  if (st == EMBER_OK && !c.dump_logits.empty()) {
    FILE* f = std::fopen(c.dump_logits.c_str(), "w");
    if (!f) {
      code = report(EMBER_ERR_IO, "cannot write --dump-logits file '" + c.dump_logits + "'");
    } else {
      for (float v : prompt_logits) std::fprintf(f, "%.9g\n", v);
      std::fclose(f);
    }
  }
  if (st == EMBER_OK && stats.stop_reason == EMBER_STOP_CONTEXT_FULL) {
    std::fprintf(stderr, "[context full at %d positions: stopping; --context-shift goes on]\n", stats.position);
  }
  if (st != EMBER_OK && code == 0) code = tokenized ? report(st, generate_error) : 1;  // else reported already
  if (code == 0) {
    const int generated = stats.generated_tokens;
    const double decode_ms = stats.decode_ms;
    std::fprintf(stderr,
                 "load %.1f ms | prompt %d tokens, prefill %.1f ms (%.1f tok/s) | time to first token %.1f ms | "
                 "%d tokens generated, decode %.1f tok/s\n",
                 load_ms, stats.prompt_tokens, stats.prefill_ms,
                 stats.prefill_ms > 0 ? stats.prompt_tokens * 1000.0 / stats.prefill_ms : 0.0, stats.first_token_ms,
                 generated, decode_ms > 0 && generated > 1 ? (generated - 1) * 1000.0 / decode_ms : 0.0);
    if (c.g.lookup || c.g.draft_session) {
      std::fprintf(stderr, "%s: %d drafted, %d accepted (%.0f%%) | %d decode steps, %.2f tokens per step\n",
                   c.g.lookup ? "lookup" : "draft", stats.drafted_tokens, stats.accepted_tokens,
                   stats.drafted_tokens > 0 ? 100.0 * stats.accepted_tokens / stats.drafted_tokens : 0.0,
                   stats.decode_steps,
                   stats.decode_steps > 0 ? static_cast<double>(stats.sampled_tokens - 1) / stats.decode_steps : 0.0);
    }
  }
  return code;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  RunConfig c;
  if (const int code = parse_run(argc, argv, &c); code >= 0) return code;
  const double t0 = now_ms();
  ember_model* model = nullptr;
  if (const int code = open_run_model(c, &model)) return code;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  if (const int code = chat_and_check_ids(model, info, &c)) {
    ember_model_free(model);
    return code;
  }
  ember_grammar* grammar = nullptr;
  if (const int code = make_grammar(model, c.grammar, &grammar)) {
    ember_model_free(model);
    return code;
  }
  c.g.grammar = grammar;
  ember_session* session = nullptr;
  ember_status st = ember_session_create(model, &c.so, &session);
  if (st != EMBER_OK) {
    ember_grammar_free(grammar);
    ember_model_free(model);
    return report_last(st);
  }
  std::fprintf(stderr, "backend: %s\n", ember_session_backend(session));
  ember_model* draft_model = nullptr;
  ember_session* draft_session = nullptr;
  if (!c.draft.empty()) {
    ember_memory_plan plan;
    plan.struct_size = sizeof plan;
    ember_session_options dso = c.so;
    const ember_status planned = ember_plan(model, &c.so, &plan);
    int code = planned == EMBER_OK ? 0 : report_last(planned);
    dso.context_length = plan.context_length;
    if (!code) code = open_draft_session(c.draft, session, dso, &draft_model, &draft_session);
    if (code != 0) {
      ember_session_free(session);
      ember_grammar_free(grammar);
      ember_model_free(model);
      return code;
    }
    c.g.draft_session = draft_session;
  }
  const double t_loaded = now_ms();

  // The prompt's tokens, by the rule every generation uses (BOS as the
  // model asks), once: they are echoed and then run as they are.
  if (!c.exact && prompt_tokens(model, c.prompt, /*parse_special=*/false, &c.ids) != 0) st = EMBER_ERR_INVALID_ARGUMENT;
  if (st == EMBER_OK && c.ids.empty()) {
    report(EMBER_ERR_INVALID_ARGUMENT, "the prompt is empty (and the model adds no BOS): nothing to run");
    st = EMBER_ERR_INVALID_ARGUMENT;
  }
  const bool tokenized = st == EMBER_OK;
  std::vector<float> prompt_logits(c.dump_logits.empty() ? 0 : static_cast<size_t>(info.vocab_size));
  if (tokenized) {
    echo_prompt(model, info, c);
    st = generate(session, &c, &prompt_logits);
  }
  // Kept before the stats call below clears the last error.
  const std::string generate_error = st != EMBER_OK ? ember_last_error() : "";
  ember_generate_stats stats;
  stats.struct_size = sizeof stats;
  ember_generate_last_stats(session, &stats);
  const int code = report_run(c, st, generate_error, tokenized, stats, prompt_logits, t_loaded - t0);
  ember_session_free(draft_session);
  ember_model_free(draft_model);
  ember_session_free(session);
  ember_grammar_free(grammar);
  ember_model_free(model);
  return code;
}

}  // namespace ember::cli

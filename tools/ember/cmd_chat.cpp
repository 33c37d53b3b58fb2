// `ember chat -m MODEL [--system S] [--template NAME|FILE]`: a multi-turn
// chat in the terminal. Each turn renders the whole conversation with the
// model's chat template (or the named one), and the Conversation helper
// (tools/ember/conversation.h) keeps the session's KV: only the new tokens
// are prefilled. The reply streams to stdout; per-turn timings go to stderr.
// Lines starting with '/' are commands: /reset, /save FILE, /load FILE,
// /quit (also end of input).
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/ember/args.h"
#include "tools/ember/chat_render.h"
#include "tools/ember/commands.h"
#include "tools/ember/conversation.h"
#include "tools/ember/files.h"
#include "tools/ember/grammar_flags.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

const char* kChatHelp =
    "usage: ember chat -m MODEL [--system S] [--template NAME|FILE] [-n MAX] [options]\n"
    "  an interactive chat: type a message and press enter; the model's reply streams back.\n"
    "  Earlier turns stay in the KV cache (only new tokens are prefilled); per-turn time to\n"
    "  first token and tokens/s go to stderr.\n"
    "  commands: /reset (start over)  /save FILE  /load FILE (state and messages)  /quit\n"
    "  --system S       a system message first\n"
    "  --template T     a built-in template name (chatml, llama2, llama3, phi3, gemma, mistral, ...) or a\n"
    "                   Jinja file; default: the model's own (GGUF tokenizer.chat_template), else the\n"
    "                   family's built-in (said at start)\n"
    "  -n MAX           most tokens per reply (default 512)\n"
    "  --temp T --top-k K --top-p P --min-p P --seed S   sampling (default greedy)\n"
    "  --stop S         also stop a reply at S (repeatable)\n"
    "  --ctx --threads --kv-type --backend --batch --max-bytes   as for ember run\n"
    "  each reply follows, when asked:\n";

bool write_messages(const std::string& path, const std::vector<ChatTurn>& messages, std::string* error) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const ChatTurn& m : messages) j.push_back({{"role", m.role}, {"content", m.content}});
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  const std::string text = j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok ? true : (*error = "cannot write '" + path + "'", false);
}

// The messages file /save writes: an array of {"role", "content"} strings.
bool read_messages(const std::string& path, std::vector<ChatTurn>* out, std::string* error) {
  std::string text;
  if (read_file(path, &text, error) != EMBER_OK) return false;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    *error = "'" + path + "' is not a JSON array of messages";
    return false;
  }
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      *error = "'" + path + "': message " + std::to_string(i) + " is not {\"role\": string, \"content\": string}";
      return false;
    }
    out->push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return true;
}

bool read_line(std::string* out) {
  out->clear();
  int c;
  bool any = false;
  while ((c = std::fgetc(stdin)) != EOF) {
    any = true;
    if (c == '\n') return true;
    out->push_back(static_cast<char>(c));
  }
  return any;
}

// The flags of one chat: each turn's options, the session's, the
// constraint's. -1 to go on, else the exit code (reported).
int parse_chat_options(Args& args, TurnOptions* turn, ember_session_options* so, GrammarFlags* grammar_flags) {
  ember_generate_options_default(&turn->generate);
  turn->generate.max_new_tokens = static_cast<int32_t>(args.get_int("-n", 512, 1, 1 << 30));
  turn->generate.temperature = static_cast<float>(args.get_float("--temp", 0.0, 0.0, 100.0));
  turn->generate.top_k = static_cast<int32_t>(args.get_int("--top-k", 0, 0, 1 << 30));
  turn->generate.top_p = static_cast<float>(args.get_float("--top-p", 1.0, 0.0, 1.0));
  turn->generate.min_p = static_cast<float>(args.get_float("--min-p", 0.0, 0.0, 1.0));
  turn->generate.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0, INT64_MAX));
  turn->stop_strings = args.get_all("--stop");
  std::string flag_error;
  if (!read_grammar_flags(args, grammar_flags, &flag_error)) return report(EMBER_ERR_INVALID_ARGUMENT, flag_error);
  session_options_from_args(args, so);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember chat --help)");
  if (so->kv_type_k < 0 || so->kv_type_v < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type must be f32, f16 or q8_0");
  if (so->backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember chat --help)");
  if (!args.positionals().empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "unexpected argument '" + args.positionals()[0] + "' (see ember chat --help)");
  }

  return -1;
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  std::vector<std::string> with_value = {"-m",      "--system", "--template", "-n",   "--temp",
                                         "--top-k", "--top-p",  "--min-p",    "--seed", "--stop"};
  for (int i = 0; kGrammarValueFlags[i]; ++i) with_value.push_back(kGrammarValueFlags[i]);
  std::vector<std::string> known = with_value;
  known.push_back(kGrammarSwitch);
  for (int i = 0; kSessionFlags[i]; ++i) {
    with_value.push_back(kSessionFlags[i]);
    known.push_back(kSessionFlags[i]);
  }
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kChatHelp, stdout);
    std::fputs(kGrammarHelp, stdout);
    return 0;
  }
  args.check_known(known);
  TurnOptions turn;
  ember_session_options so;
  GrammarFlags grammar_flags;
  if (const int code = parse_chat_options(args, &turn, &so, &grammar_flags); code >= 0) return code;

  ember_model_options mo;
  ember_model_options_default(&mo);
  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(args.get("-m"), &mo, &model)) return code;
  ChatRenderer renderer;
  if (const int code = renderer.init(model, args.get("--template"))) {
    ember_model_free(model);
    return code;
  }
  ember_grammar* grammar = nullptr;  // each reply's constraint, if asked for
  if (const int code = make_grammar(model, grammar_flags, &grammar)) {
    ember_model_free(model);
    return code;
  }
  turn.generate.grammar = grammar;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  turn.add_bos = info.add_bos != 0;
  ember_session* session = nullptr;
  ember_status st = ember_session_create(model, &so, &session);
  if (st != EMBER_OK) {
    ember_grammar_free(grammar);
    ember_model_free(model);
    return report_last(st);
  }
  std::fprintf(stderr, "backend: %s | chat template: %s | context %d\n", ember_session_backend(session),
               renderer.description().c_str(), so.context_length > 0 ? so.context_length : info.max_context);
  std::fprintf(stderr, "type a message; /reset, /save FILE, /load FILE, /quit\n");

  Conversation conv(model, session);
  std::vector<ChatTurn> messages;
  if (args.has("--system")) messages.push_back({"system", args.get("--system")});
  const size_t pinned = messages.size();  // the system message is never dropped
  int code = 0;
  std::string line;
  int n_turn = 0;
  while (true) {
    std::fprintf(stderr, "> ");
    std::fflush(stderr);
    if (!read_line(&line)) break;
    if (line.empty()) continue;
    if (line[0] == '/') {
      const size_t sp = line.find(' ');
      const std::string cmd = line.substr(0, sp), arg = sp == std::string::npos ? "" : line.substr(sp + 1);
      if (cmd == "/quit" || cmd == "/exit") break;
      if (cmd == "/reset") {
        messages.resize(pinned);
        st = conv.reset();
        std::fprintf(stderr, st == EMBER_OK ? "[conversation reset]\n" : "[reset failed: %s]\n", ember_last_error());
      } else if (cmd == "/save" && !arg.empty()) {
        // The session's state (tokens and KV) in FILE, the messages beside it
        // in FILE.messages.json: a load continues the same conversation.
        st = conv.save(arg);
        std::string error = st == EMBER_OK ? "" : ember_last_error();
        if (st == EMBER_OK && !write_messages(arg + ".messages.json", messages, &error)) st = EMBER_ERR_IO;
        if (st == EMBER_OK) {
          std::fprintf(stderr, "[saved to %s and %s.messages.json]\n", arg.c_str(), arg.c_str());
        } else {
          std::fprintf(stderr, "[save failed: %s]\n", error.c_str());
        }
      } else if (cmd == "/load" && !arg.empty()) {
        std::vector<ChatTurn> loaded;
        std::string error;
        if (!read_messages(arg + ".messages.json", &loaded, &error)) {
          std::fprintf(stderr, "[load failed: %s]\n", error.c_str());
        } else if ((st = conv.load(arg)) != EMBER_OK) {
          std::fprintf(stderr, "[load failed: %s]\n", ember_last_error());
        } else {
          messages = std::move(loaded);
          std::fprintf(stderr, "[loaded %s: %zu messages]\n", arg.c_str(), messages.size());
        }
      } else {
        std::fprintf(stderr, "[unknown command '%s': /reset, /save FILE, /load FILE, /quit]\n", line.c_str());
      }
      continue;
    }
    messages.push_back({"user", line});
    std::string rendered;
    TurnStats stats;
    while (true) {
      if (const int rc = renderer.render(messages, /*add_generation_prompt=*/true, &rendered)) {
        code = rc;
        break;
      }
      auto on_piece = [](void*, int32_t, const char* piece, size_t len) {
        std::fwrite(piece, 1, len, stdout);
        std::fflush(stdout);
        return 0;
      };
      st = conv.turn(rendered, turn, on_piece, nullptr, &stats);
      // Context full: drop the oldest exchange after the system message and
      // render again (the session keeps the common prefix), or say so.
      if (st == EMBER_ERR_CONTEXT_FULL && messages.size() > pinned + 1) {
        const size_t drop = messages.size() > pinned + 2 ? 2 : 1;
        messages.erase(messages.begin() + static_cast<long>(pinned), messages.begin() + static_cast<long>(pinned + drop));
        std::fprintf(stderr, "[context full: the oldest %zu message(s) dropped]\n", drop);
        continue;
      }
      break;
    }
    if (code) break;
    std::printf("\n");
    std::fflush(stdout);
    if (st != EMBER_OK) {
      std::fprintf(stderr, "[turn failed: %s]\n", ember_last_error());
      messages.pop_back();
      if (st == EMBER_ERR_CONTEXT_FULL) continue;
      code = report_last(st);
      break;
    }
    messages.push_back({"assistant", stats.reply});
    ++n_turn;
    std::fprintf(stderr, "[turn %d: %d tokens reused, %d prefilled | first token %.1f ms | %d tokens, %.1f tok/s%s]\n",
                 n_turn, stats.reused_tokens, stats.prefilled_tokens, stats.first_token_ms, stats.generated_tokens,
                 stats.tokens_per_s,
                 stats.stop_reason == EMBER_STOP_MAX_TOKENS     ? " | -n reached"
                 : stats.stop_reason == EMBER_STOP_CONTEXT_FULL ? " | context full"
                                                                : "");
  }
  ember_session_free(session);
  ember_grammar_free(grammar);
  ember_model_free(model);
  return code;
}

}  // namespace ember::cli

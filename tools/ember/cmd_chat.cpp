// `ember chat -m MODEL [--system S] [--template NAME|FILE]`: a multi-turn
// chat in the terminal. Each turn renders the whole conversation with the
// model's chat template (or the named one), and the Conversation helper
// (tools/ember/conversation.h) keeps the session's KV: only the new tokens
// are prefilled. The reply streams to stdout; per-turn timings go to stderr.
// Lines starting with '/' are commands: /reset, /save FILE, /load FILE,
// /tool RESULT, /quit (also end of input). With --tools FILE the functions
// reach the template, a call the model writes is printed as a line of JSON
// (tools/ember/chat_tools.h) and /tool answers it.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/ember/args.h"
#include "tools/ember/chat_render.h"
#include "tools/ember/chat_tools.h"
#include "tools/ember/commands.h"
#include "tools/ember/conversation.h"
#include "tools/ember/files.h"
#include "tools/ember/grammar_flags.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

const char* kChatHelp =
    "usage: ember chat -m MODEL [--system S] [--template NAME|FILE] [--tools FILE] [-n MAX] [options]\n"
    "  an interactive chat: type a message and press enter; the model's reply streams back.\n"
    "  Earlier turns stay in the KV cache (only new tokens are prefilled); per-turn time to\n"
    "  first token and tokens/s go to stderr.\n"
    "  commands: /reset (start over)  /save FILE  /load FILE (state and messages)  /tool RESULT  /quit\n"
    "  --system S       a system message first\n"
    "  --tools FILE     functions the model may call: an OpenAI tools array, [{\"type\": \"function\",\n"
    "                   \"function\": {\"name\", \"description\", \"parameters\"}}], rendered by the template.\n"
    "                   A call is printed as one line of JSON, {\"tool_call\": {\"id\", \"name\", \"arguments\"}};\n"
    "                   answer each (in order) with /tool RESULT (text or JSON, a role \"tool\" message);\n"
    "                   when all are answered the model replies\n"
    "  --tool-choice C  auto (default: the model decides), none, required (every reply to a message is\n"
    "                   one or more calls, held by a grammar), or a function's name (that function)\n"
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
  for (const ChatTurn& m : messages) {
    nlohmann::ordered_json o = {{"role", m.role}, {"content", m.content}};
    for (const serve::ToolCall& c : m.tool_calls) {
      o["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
    j.push_back(std::move(o));
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  const std::string text = j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok ? true : (*error = "cannot write '" + path + "'", false);
}

// One message's calls as /save writes them: [{id, type, function {name,
// arguments}}]; false when they are not.
bool read_calls(const nlohmann::json& calls, std::vector<serve::ToolCall>* out) {
  if (!calls.is_array()) return false;
  for (const auto& c : calls) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string() || !c.contains("function")) return false;
    const auto& f = c["function"];
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("arguments") ||
        !f["arguments"].is_string()) {
      return false;
    }
    out->push_back({c["id"].get<std::string>(), f["name"].get<std::string>(), f["arguments"].get<std::string>()});
  }
  return true;
}

// The messages file /save writes: an array of {"role", "content"} strings,
// with an assistant's "tool_calls" and a tool message's "tool_call_id".
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
    ChatTurn t;
    bool ok = m.is_object() && m.contains("role") && m["role"].is_string() && m.contains("content") &&
              m["content"].is_string();
    if (ok && m.contains("tool_calls")) ok = read_calls(m["tool_calls"], &t.tool_calls);
    if (ok && m.contains("tool_call_id")) ok = m["tool_call_id"].is_string();
    if (!ok) {
      *error = "'" + path + "': message " + std::to_string(i) +
               " is not {\"role\": string, \"content\": string, \"tool_calls\"?, \"tool_call_id\"?}";
      return false;
    }
    t.role = m["role"].get<std::string>();
    t.content = m["content"].get<std::string>();
    if (m.contains("tool_call_id")) t.tool_call_id = m["tool_call_id"].get<std::string>();
    out->push_back(std::move(t));
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
  if (args.has("--tool-choice") && !args.has("--tools")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--tool-choice needs --tools FILE (the functions to call)");
  }
  session_options_from_args(args, so);
  if (args.has("--draft") && args.has("--lookup")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--draft and --lookup both draft: pass one");
  }
  speculative_from_args(args, &turn->generate, so);
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


namespace {

// The conversation, and what each line of input does to it.
class ChatLoop {
 public:
  // Lifetime: everything given outlives the loop.
  ChatLoop(ember_model* model, ember_session* session, const ChatRenderer& renderer, const TurnOptions& turn,
           const ChatTools& tools, const ember_grammar* call_grammar)
      : conv_(model, session), renderer_(renderer), turn_(turn), tools_(tools), call_grammar_(call_grammar),
        syntax_(renderer.tool_syntax()) {}

  // Reads lines until /quit or the end of input; 0 or the exit code.
  int run(const std::vector<ChatTurn>& first) {
    messages_ = first;
    pinned_ = messages_.size();  // the system message is never dropped
    std::string line;
    while (true) {
      std::fprintf(stderr, "> ");
      std::fflush(stderr);
      if (!read_line(&line)) return 0;
      if (line.empty()) continue;
      if (line[0] == '/') {
        bool quit = false;
        const int code = command(line, &quit);
        if (code || quit) return code;
        continue;
      }
      if (!waiting_.empty()) std::fprintf(stderr, "[%zu tool call(s) left unanswered]\n", waiting_.size());
      waiting_.clear();
      messages_.push_back({"user", line});
      if (const int code = reply(/*to_user=*/true)) return code;
    }
  }

 private:
  // One '/' line. 0 or the exit code; *quit set by /quit.
  int command(const std::string& line, bool* quit) {
    const size_t sp = line.find(' ');
    const std::string cmd = line.substr(0, sp), arg = sp == std::string::npos ? "" : line.substr(sp + 1);
    ember_status st;
    if (cmd == "/quit" || cmd == "/exit") {
      *quit = true;
    } else if (cmd == "/reset") {
      messages_.resize(pinned_);
      waiting_.clear();
      st = conv_.reset();
      std::fprintf(stderr, st == EMBER_OK ? "[conversation reset]\n" : "[reset failed: %s]\n", ember_last_error());
    } else if (cmd == "/save" && !arg.empty()) {
      // The session's state (tokens and KV) in FILE, the messages beside it
      // in FILE.messages.json: a load continues the same conversation.
      st = conv_.save(arg);
      std::string error = st == EMBER_OK ? "" : ember_last_error();
      if (st == EMBER_OK && !write_messages(arg + ".messages.json", messages_, &error)) st = EMBER_ERR_IO;
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
      } else if ((st = conv_.load(arg)) != EMBER_OK) {
        std::fprintf(stderr, "[load failed: %s]\n", ember_last_error());
      } else {
        messages_ = std::move(loaded);
        waiting_.clear();
        std::fprintf(stderr, "[loaded %s: %zu messages]\n", arg.c_str(), messages_.size());
      }
    } else if (cmd == "/tool") {
      return tool_result(arg);
    } else {
      std::fprintf(stderr, "[unknown command '%s': /reset, /save FILE, /load FILE, /tool RESULT, /quit]\n",
                   line.c_str());
    }
    return 0;
  }

  // /tool RESULT: the answer to the oldest unanswered call; the model
  // replies once every call has one.
  int tool_result(const std::string& result) {
    if (waiting_.empty()) {
      std::fprintf(stderr, "[no tool call is waiting for a result: /tool answers the model's calls]\n");
      return 0;
    }
    ChatTurn t{"tool", result};
    t.tool_call_id = waiting_.front();
    waiting_.erase(waiting_.begin());
    messages_.push_back(std::move(t));
    if (!waiting_.empty()) {
      std::fprintf(stderr, "[%zu more tool call(s) to answer]\n", waiting_.size());
      return 0;
    }
    return reply(/*to_user=*/false);
  }

  struct Sink {
    ReplyReader* reader;
    std::string* shown;
    static int call(void* self, int32_t, const char* piece, size_t len) {
      Sink* s = static_cast<Sink*>(self);
      const std::string text = s->reader ? s->reader->add(std::string(piece, len)) : std::string(piece, len);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      *s->shown += text;
      return 0;
    }
  };

  // The model's reply to the conversation so far (a user message, or the
  // results of its calls). 0, or the exit code.
  int reply(bool to_user) {
    TurnOptions t = turn_;
    // A demanded call answers a user message; after the results the model speaks freely.
    const bool demanded = to_user && tools_.demanded();
    if (tools_.demanded()) t.generate.grammar = demanded ? call_grammar_ : nullptr;
    std::string rendered, shown, rest;
    std::vector<serve::ToolCall> calls;
    TurnStats stats;
    ember_status st;
    while (true) {
      if (const int rc = renderer_.render(messages_, /*add_generation_prompt=*/true, &rendered)) return rc;
      std::unique_ptr<ReplyReader> reader;
      if (tools_.on()) reader = std::make_unique<ReplyReader>(syntax_, demanded, tools_);
      shown.clear();
      Sink sink{reader.get(), &shown};
      st = conv_.turn(rendered, t, &Sink::call, &sink, &stats);
      if (reader) calls = reader->finish(&rest);
      // Context full: drop the oldest exchange after the system message and
      // render again (the session keeps the common prefix), or say so.
      if (st == EMBER_ERR_CONTEXT_FULL && messages_.size() > pinned_ + 1) {
        const size_t drop = messages_.size() > pinned_ + 2 ? 2 : 1;
        messages_.erase(messages_.begin() + static_cast<long>(pinned_),
                        messages_.begin() + static_cast<long>(pinned_ + drop));
        std::fprintf(stderr, "[context full: the oldest %zu message(s) dropped]\n", drop);
        continue;
      }
      break;
    }
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::printf("\n");
    for (const serve::ToolCall& c : calls) std::printf("%s\n", tool_call_line(c).c_str());
    std::fflush(stdout);
    // A call cut by -n (its arguments not whole) is shown, not kept.
    const size_t before = calls.size();
    calls.erase(std::remove_if(calls.begin(), calls.end(),
                               [](const serve::ToolCall& c) {
                                 return !nlohmann::json::parse(c.arguments, nullptr, false).is_object();
                               }),
                calls.end());
    if (calls.size() < before) std::fprintf(stderr, "[%zu call(s) cut short (-n): not kept]\n", before - calls.size());
    if (st != EMBER_OK) {
      std::fprintf(stderr, "[turn failed: %s]\n", ember_last_error());
      if (to_user) messages_.pop_back();
      return st == EMBER_ERR_CONTEXT_FULL ? 0 : report_last(st);
    }
    ChatTurn answer{"assistant", shown + rest};
    answer.tool_calls = calls;
    for (const serve::ToolCall& c : calls) waiting_.push_back(c.id);
    messages_.push_back(std::move(answer));
    ++n_turn_;
    if (!calls.empty()) std::fprintf(stderr, "[%zu tool call(s): answer each with /tool RESULT, in order]\n", calls.size());
    std::fprintf(stderr, "[turn %d: %d tokens reused, %d prefilled | first token %.1f ms | %d tokens, %.1f tok/s%s]\n",
                 n_turn_, stats.reused_tokens, stats.prefilled_tokens, stats.first_token_ms, stats.generated_tokens,
                 stats.tokens_per_s,
                 stats.stop_reason == EMBER_STOP_MAX_TOKENS     ? " | -n reached"
                 : stats.stop_reason == EMBER_STOP_CONTEXT_FULL ? " | context full"
                                                                : "");
    return 0;
  }

  Conversation conv_;
  const ChatRenderer& renderer_;
  const TurnOptions& turn_;
  const ChatTools& tools_;
  const ember_grammar* call_grammar_;
  int syntax_;
  std::vector<ChatTurn> messages_;
  size_t pinned_ = 0;
  std::vector<std::string> waiting_;  // the ids of calls not answered yet, in order
  int n_turn_ = 0;
};

}  // namespace

int cmd_chat(int argc, char** argv) {
  std::vector<std::string> with_value = {"-m",     "--system", "--template", "-n",     "--temp",  "--top-k",
                                         "--top-p", "--min-p", "--seed",     "--stop", "--tools", "--tool-choice"};
  for (int i = 0; kGrammarValueFlags[i]; ++i) with_value.push_back(kGrammarValueFlags[i]);
  for (int i = 0; kSpeculativeFlags[i]; ++i) with_value.push_back(kSpeculativeFlags[i]);
  std::vector<std::string> known = with_value;
  known.push_back(kGrammarSwitch);
  known.push_back("--lookup");
  for (int i = 0; kSessionFlags[i]; ++i) {
    with_value.push_back(kSessionFlags[i]);
    known.push_back(kSessionFlags[i]);
  }
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kChatHelp, stdout);
    std::fputs(kGrammarHelp, stdout);
    std::fputs(kSpeculativeHelp, stdout);
    return 0;
  }
  args.check_known(known);
  TurnOptions turn;
  ember_session_options so;
  GrammarFlags grammar_flags;
  if (const int code = parse_chat_options(args, &turn, &so, &grammar_flags); code >= 0) return code;
  ChatTools tools;
  std::string error;
  if (args.has("--tools") && !read_chat_tools(args.get("--tools"), args.get("--tool-choice"), &tools, &error)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, error);
  }
  if (tools.demanded() && grammar_flags.any()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--tool-choice " + tools.choice +
                                                  " holds replies to a call's grammar: it cannot be given with "
                                                  "--grammar-file, --json-schema or --json-object");
  }

  ember_model_options mo;
  ember_model_options_default(&mo);
  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(args.get("-m"), &mo, &model)) return code;
  struct Owned {  // freed in reverse order of creation
    ember_model* model;
    ember_grammar* grammar = nullptr;
    ember_session* session = nullptr;
    ember_model* draft_model = nullptr;
    ember_session* draft = nullptr;
    ~Owned() {
      ember_session_free(draft);
      ember_model_free(draft_model);
      ember_session_free(session);
      ember_grammar_free(grammar);
      ember_model_free(model);
    }
  } owned{model};
  ChatRenderer renderer;
  renderer.set_tools(tools.json);
  if (const int code = renderer.init(model, args.get("--template"))) return code;
  // Each reply's constraint: the flags', or a demanded call's.
  const int code = tools.demanded() ? make_tool_grammar(model, tools, renderer.tool_syntax(), &owned.grammar)
                                    : make_grammar(model, grammar_flags, &owned.grammar);
  if (code) return code;
  turn.generate.grammar = owned.grammar;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  turn.add_bos = info.add_bos != 0;
  const ember_status st = ember_session_create(model, &so, &owned.session);
  if (st != EMBER_OK) return report_last(st);
  if (args.has("--draft")) {
    ember_memory_plan plan;
    plan.struct_size = sizeof plan;
    ember_session_options dso = so;
    if (ember_plan(model, &so, &plan) == EMBER_OK) dso.context_length = plan.context_length;
    if (const int c = open_draft_session(args.get("--draft"), owned.session, dso, &owned.draft_model, &owned.draft)) {
      return c;
    }
    turn.generate.draft_session = owned.draft;
  }
  std::fprintf(stderr, "backend: %s | chat template: %s | context %d\n", ember_session_backend(owned.session),
               renderer.description().c_str(), so.context_length > 0 ? so.context_length : info.max_context);
  if (tools.on()) {
    static const char* const kForms[] = {"Hermes <tool_call>", "Llama 3 JSON", "Mistral [TOOL_CALLS][...]",
                                         "Mistral [TOOL_CALLS]name[ARGS]", "Phi-4 <|tool_call|>",
                                         "Gemma 4 <|tool_call>call:"};
    const int syntax = renderer.tool_syntax();
    std::fprintf(stderr, "tools: %zu function(s), tool choice %s, calls read in the %s form\n",
                 tools.functions.size(), tools.choice.c_str(),
                 syntax >= 0 && syntax < 6 ? kForms[syntax] : "Hermes <tool_call>");
  }
  std::fprintf(stderr, "type a message; /reset, /save FILE, /load FILE, /tool RESULT, /quit\n");
  std::vector<ChatTurn> first;
  if (args.has("--system")) first.push_back({"system", args.get("--system")});
  ChatLoop loop(model, owned.session, renderer, turn, tools, owned.grammar);
  return loop.run(first);
}

}  // namespace ember::cli

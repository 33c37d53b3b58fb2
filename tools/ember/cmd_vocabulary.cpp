// A model file's vocabulary at work, for an .ember file or any GGUF file
// that holds one (a vocabulary-only GGUF too: the C API opens models, not
// bare vocabularies, so this goes through the tools-side header,
// tools/convert/tool_api.h). Each command as parse / run / report:
//   `ember tokenize FILE (--text T | --file F) [--special]`: ids without BOS;
//     --special turns text spelling a control token into that token (a
//     rendered chat template).
//   `ember template --messages M.json [--template-file T | -m MODEL |
//     --template NAME] [--add-generation-prompt] [--bos-token S]
//     [--eos-token S]`: prints the rendered prompt exactly (no newline added).
//     M.json is an array of messages ({"role", "content", ...}) or an object
//     with "messages" and any other template variables ("tools", "documents",
//     "bos_token", ...). JSON is read with nlohmann-json (exceptions off:
//     docs/decisions.md "Chat templates").
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/convert/tool_api.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"

namespace ember::cli {
namespace {

using Json = nlohmann::ordered_json;  // keeps the file's key order, as Python's json does

// ---- ember tokenize -------------------------------------------------------------------

struct TokenizeRequest {
  std::string path, text;
  bool special = false;
};

int parse_tokenize(int argc, char** argv, TokenizeRequest* r) {
  Args args(argc, argv, {"--text", "--file"});
  if (args.has("--help") || args.has("-h")) {
    std::puts("usage: ember tokenize FILE (--text T | --file F) [--special]\n  FILE: an .ember model or a GGUF file\n"
              "  --special  text spelling a control token (\"<|im_start|>\") becomes that token");
    return 0;
  }
  args.check_known({"--text", "--file", "--special"});
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  if (args.positionals().size() != 1 || args.has("--text") == args.has("--file")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "expected FILE and exactly one of --text or --file");
  }
  r->text = args.get("--text");
  if (args.has("--file")) {
    std::string error;
    if (const ember_status st = read_file(args.get("--file"), &r->text, &error); st != EMBER_OK) {
      return report(st, error);
    }
  }
  r->path = args.positionals()[0];
  r->special = args.has("--special");
  return kRun;
}

ember_status run_tokenize(const TokenizeRequest& r, std::vector<int32_t>* ids, std::string* error) {
  tools::FileVocabulary vocab;
  const ember_status st = vocab.open(r.path, error);
  return st == EMBER_OK ? vocab.tokenize(r.text, r.special, ids, error) : st;
}

int report_tokenize(const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
  std::printf("\n");
  return 0;
}

// ---- ember template -------------------------------------------------------------------

struct TemplateRequest {
  Json messages;                // the array
  Json extra = Json::object();  // the other variables of an object file, in its order
  std::string tmpl;             // the template's text
  tools::ChatRenderOptions options;
};

void template_help() {
  std::puts(
      "usage: ember template --messages M.json [--template-file T | -m MODEL | --template NAME]\n"
      "                      [--add-generation-prompt] [--bos-token S] [--eos-token S] [--now UNIX_SECONDS]\n"
      "  prints the prompt the chat template makes of the messages, exactly (nothing added)\n"
      "  M.json: [{\"role\": ..., \"content\": ...}, ...], or {\"messages\": [...], \"tools\": [...], ...}\n"
      "  -m MODEL: the template of an .ember or GGUF file (tokenizer.chat_template); BOS/EOS pieces from it\n"
      "  --now: the time strftime_now() renders (UTC; default: now)");
  std::string names;
  for (const auto& n : tools::builtin_chat_template_names()) names += " " + n;
  std::printf("  built-in templates:%s\n", names.c_str());
}

// --messages: the array, or an object's "messages" and its other entries.
int parse_messages(const std::string& path, TemplateRequest* r) {
  std::string text, error;
  ember_status st = read_file(path, &text, &error);
  if (st != EMBER_OK) return report(st, error);
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return report(EMBER_ERR_INVALID_ARGUMENT, "--messages " + path + ": not valid JSON");
  if (j.is_array()) {
    r->messages = j;
  } else if (j.is_object() && j.contains("messages") && j["messages"].is_array()) {
    r->messages = j["messages"];
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "messages") continue;
      if ((st = tools::check_template_value(it.value(), &error)) != EMBER_OK) return report(st, error);
      r->extra[it.key()] = it.value();
    }
  } else {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "--messages: expected an array of messages or an object with a \"messages\" array");
  }
  for (size_t i = 0; i < r->messages.size(); ++i) {
    const Json& m = r->messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return report(EMBER_ERR_INVALID_ARGUMENT, "--messages: message " + std::to_string(i) + " has no string \"role\"");
  }
  if ((st = tools::check_template_value(r->messages, &error)) != EMBER_OK) return report(st, error);
  return kRun;
}

// The template's text: a file, a built-in, or a model file's own (with its
// BOS and EOS pieces).
int parse_template_source(const Args& args, TemplateRequest* r) {
  std::string error;
  ember_status st = EMBER_OK;
  if (args.has("--template-file")) {
    if ((st = read_file(args.get("--template-file"), &r->tmpl, &error)) != EMBER_OK) return report(st, error);
  } else if (args.has("--template")) {
    const char* b = tools::builtin_chat_template(args.get("--template"));
    if (!b) {
      std::string names;
      for (const auto& n : tools::builtin_chat_template_names()) names += (names.empty() ? "" : ", ") + n;
      return report(EMBER_ERR_INVALID_ARGUMENT,
                    "--template '" + args.get("--template") + "' is not a built-in template (" + names + ")");
    }
    r->tmpl = b;
  } else {
    tools::FileVocabulary vocab;
    if ((st = vocab.open(args.get("-m"), &error)) != EMBER_OK) return report(st, error);
    if (vocab.chat_template().empty())
      return report(EMBER_ERR_UNSUPPORTED, args.get("-m") + " has no chat template; use --template NAME");
    r->tmpl = vocab.chat_template();
    r->options.bos_token = vocab.bos_piece();
    r->options.eos_token = vocab.eos_piece();
  }
  return kRun;
}

int parse_template(int argc, char** argv, TemplateRequest* r) {
  const std::vector<std::string> valued = {"--messages", "--template-file", "-m", "--template", "--bos-token",
                                           "--eos-token", "--now"};
  Args args(argc, argv, valued);
  if (args.has("--help") || args.has("-h")) {
    template_help();
    return 0;
  }
  std::vector<std::string> known = valued;
  known.push_back("--add-generation-prompt");
  args.check_known(known);
  r->options.now_unix = args.get_int("--now", -1, 0, INT64_MAX / 2);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  const int sources = int(args.has("--template-file")) + int(args.has("-m")) + int(args.has("--template"));
  if (!args.has("--messages") || sources != 1 || !args.positionals().empty())
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "expected --messages M.json and exactly one of --template-file, -m or --template");
  if (const int code = parse_messages(args.get("--messages"), r); code != kRun) return code;
  r->options.add_generation_prompt = args.has("--add-generation-prompt");
  if (const int code = parse_template_source(args, r); code != kRun) return code;
  // The JSON's own bos/eos/add_generation_prompt, then the flags, win over defaults.
  if (const auto b = r->extra.find("bos_token"); b != r->extra.end() && b->is_string()) r->options.bos_token = *b;
  if (const auto e = r->extra.find("eos_token"); e != r->extra.end() && e->is_string()) r->options.eos_token = *e;
  const auto g = r->extra.find("add_generation_prompt");
  if (g != r->extra.end() && !args.has("--add-generation-prompt")) {
    r->options.add_generation_prompt = tools::template_truthy(*g);
  }
  if (args.has("--bos-token")) r->options.bos_token = args.get("--bos-token");
  if (args.has("--eos-token")) r->options.eos_token = args.get("--eos-token");
  return kRun;
}

int report_template(const std::string& out) {
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : report(EMBER_ERR_IO, "writing the prompt to stdout failed");
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  TokenizeRequest r;
  if (const int code = parse_tokenize(argc, argv, &r); code != kRun) return code;
  std::vector<int32_t> ids;
  std::string error;
  const ember_status st = run_tokenize(r, &ids, &error);
  return st == EMBER_OK ? report_tokenize(ids) : report(st, error);
}

int cmd_template(int argc, char** argv) {
  TemplateRequest r;
  if (const int code = parse_template(argc, argv, &r); code != kRun) return code;
  std::string out, error;
  const ember_status st = tools::render_chat_template(r.tmpl, r.messages, r.extra, r.options, &out, &error);
  return st == EMBER_OK ? report_template(out) : report(st, error);
}

}  // namespace ember::cli

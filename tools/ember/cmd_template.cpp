// `ember template --messages M.json [--template-file T | -m MODEL |
// --template NAME] [--add-generation-prompt] [--bos-token S] [--eos-token S]`:
// prints the rendered prompt exactly (no newline added).
//
// M.json is an array of messages ({"role", "content", ...}) or an object
// with "messages" and any other template variables ("tools", "documents",
// "bos_token", ...). JSON is read with nlohmann-json (exceptions off:
// docs/decisions.md "Chat templates").
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "format/model_file.h"
#include "platforms/linux/mapped_file.h"
#include "tools/convert/gguf.h"
#include "tools/convert/vocab_import.h"
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

namespace ember::cli {
namespace {

using Json = nlohmann::ordered_json;  // keeps the file's key order, as Python's json does

Result<chat::Value> from_json(const Json& j, int depth) {
  using chat::Value;
  if (depth > 128) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "messages JSON nests deeper than 128");
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > uint64_t(INT64_MAX)) return Status::error(EMBER_ERR_UNSUPPORTED, "integer %llu is wider than 64 bits", (unsigned long long)u);
      return Value::integer(int64_t(u));
    }
    case Json::value_t::number_float: return Value::real(j.get<double>());
    case Json::value_t::string: return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      chat::List items;
      for (const auto& x : j) {
        EMBER_ASSIGN_OR_RETURN(Value v, from_json(x, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::make_list(std::move(items));
    }
    case Json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it) {
        EMBER_ASSIGN_OR_RETURN(Value v, from_json(it.value(), depth + 1));
        d.set(it.key(), std::move(v));
      }
      return d;
    }
    default: return Status::error(EMBER_ERR_INVALID_ARGUMENT, "messages JSON holds a value of an unknown type");
  }
}

// The vocabulary of an .ember or GGUF file (its template and special pieces).
Result<Vocab> model_vocab(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  if (mapped.size() >= 4 && std::memcmp(mapped.data(), "GGUF", 4) == 0) {
    EMBER_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::parse(mapped.data(), mapped.size()));
    return vocab_from_gguf(gguf);
  }
  ModelContents contents;
  EMBER_TRY(verify_model(mapped.data(), mapped.size(), &contents));
  return std::move(contents.vocab);
}

}  // namespace

int cmd_template(int argc, char** argv) {
  const std::vector<std::string> valued = {"--messages", "--template-file", "-m", "--template", "--bos-token",
                                           "--eos-token", "--now"};
  Args args(argc, argv, valued);
  if (args.has("--help") || args.has("-h")) {
    std::puts(
        "usage: ember template --messages M.json [--template-file T | -m MODEL | --template NAME]\n"
        "                      [--add-generation-prompt] [--bos-token S] [--eos-token S] [--now UNIX_SECONDS]\n"
        "  prints the prompt the chat template makes of the messages, exactly (nothing added)\n"
        "  M.json: [{\"role\": ..., \"content\": ...}, ...], or {\"messages\": [...], \"tools\": [...], ...}\n"
        "  -m MODEL: the template of an .ember or GGUF file (tokenizer.chat_template); BOS/EOS pieces from it\n"
        "  --now: the time strftime_now() renders (UTC; default: now)");
    std::string names;
    for (const auto& n : chat::builtin_chat_template_names()) names += " " + n;
    std::printf("  built-in templates:%s\n", names.c_str());
    return 0;
  }
  std::vector<std::string> known = valued;
  known.push_back("--add-generation-prompt");
  args.check_known(known);
  int64_t now = args.get_int("--now", -1, 0, INT64_MAX / 2);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error());
  int sources = int(args.has("--template-file")) + int(args.has("-m")) + int(args.has("--template"));
  if (!args.has("--messages") || sources != 1 || !args.positionals().empty())
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "expected --messages M.json and exactly one of --template-file, -m or --template");

  auto text = read_file(args.get("--messages"));
  if (!text.is_ok()) return report(text.status().code(), text.status().message());
  Json j = Json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return report(EMBER_ERR_INVALID_ARGUMENT, "--messages " + args.get("--messages") + ": not valid JSON");
  chat::Value extra = chat::Value::make_dict();
  Json messages_json;
  if (j.is_array()) {
    messages_json = j;
  } else if (j.is_object() && j.contains("messages") && j["messages"].is_array()) {
    messages_json = j["messages"];
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "messages") continue;
      auto v = from_json(it.value(), 0);
      if (!v.is_ok()) return report(v.status().code(), v.status().message());
      extra.set(it.key(), std::move(v).value());
    }
  } else {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "--messages: expected an array of messages or an object with a \"messages\" array");
  }
  for (size_t i = 0; i < messages_json.size(); ++i) {
    const Json& m = messages_json[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return report(EMBER_ERR_INVALID_ARGUMENT, "--messages: message " + std::to_string(i) + " has no string \"role\"");
  }
  auto messages = from_json(messages_json, 0);
  if (!messages.is_ok()) return report(messages.status().code(), messages.status().message());

  chat::ChatOptions opt;
  opt.add_generation_prompt = args.has("--add-generation-prompt");
  opt.env.now_unix = now;
  std::string tmpl;
  if (args.has("--template-file")) {
    auto t = read_file(args.get("--template-file"));
    if (!t.is_ok()) return report(t.status().code(), t.status().message());
    tmpl = std::move(t).value();
  } else if (args.has("--template")) {
    const char* b = chat::builtin_chat_template(args.get("--template"));
    if (!b) {
      std::string names;
      for (const auto& n : chat::builtin_chat_template_names()) names += (names.empty() ? "" : ", ") + n;
      return report(EMBER_ERR_INVALID_ARGUMENT,
                    "--template '" + args.get("--template") + "' is not a built-in template (" + names + ")");
    }
    tmpl = b;
  } else {
    auto v = model_vocab(args.get("-m"));
    if (!v.is_ok()) return report(v.status().code(), v.status().message());
    if (v->chat_template.empty())
      return report(EMBER_ERR_UNSUPPORTED, args.get("-m") + " has no chat template; use --template NAME");
    tmpl = v->chat_template;
    auto piece = [&](int32_t id) {
      return id >= 0 && size_t(id) < v->pieces.size() ? v->pieces[size_t(id)] : std::string();
    };
    opt.bos_token = piece(v->bos_id);
    opt.eos_token = piece(v->eos_id);
  }
  // The JSON's own bos/eos/add_generation_prompt, then the flags, win over defaults.
  if (const chat::Value* b = extra.find("bos_token"); b && b->is_string()) opt.bos_token = b->s;
  if (const chat::Value* e = extra.find("eos_token"); e && e->is_string()) opt.eos_token = e->s;
  if (const chat::Value* g = extra.find("add_generation_prompt"); g && !args.has("--add-generation-prompt"))
    opt.add_generation_prompt = chat::truthy(*g);
  if (args.has("--bos-token")) opt.bos_token = args.get("--bos-token");
  if (args.has("--eos-token")) opt.eos_token = args.get("--eos-token");

  std::string out;
  const Status s = chat::render_chat(tmpl, messages.value(), opt, extra, &out);
  if (!s.is_ok()) return report(s.code(), s.message());
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : report(EMBER_ERR_IO, "writing the prompt to stdout failed");
}

}  // namespace ember::cli

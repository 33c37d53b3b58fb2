// Chat formatting on real templates: llama.cpp's chat-template test cases
// (exact outputs, tests/chat/llama_cpp_chat_cases.h), the built-in
// templates, every model template in llama.cpp's models/templates (render
// or refuse with EMBER_ERR_UNSUPPORTED), the template kept through
// conversion, and ember_chat_format under use and misuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/llama_cpp_chat_cases.h"
#include "ember.h"
#include "format/model_file.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

#ifndef EMBER_LLAMA_VOCAB_DIR
#define EMBER_LLAMA_VOCAB_DIR ""
#endif

namespace ember::chat {
namespace {

// llama.cpp's test conversation (tests/test-chat-template.cpp).
std::vector<ChatMessage> llama_cpp_conversation() {
  return {{"system", "You are a helpful assistant"},
          {"user", "Hello"},
          {"assistant", "Hi there"},
          {"user", "Who are you"},
          {"assistant", "   I am an assistant   "},
          {"user", "Another question"}};
}

const ember_test::LlamaCppChatCase* find_case(const char* name) {
  for (const auto& c : ember_test::kLlamaCppChatCases)
    if (std::strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

std::string render_or_error(const std::string& tmpl, const std::vector<ChatMessage>& msgs, const ChatOptions& opt) {
  std::string out;
  Status s = render_chat(tmpl, msgs, opt, &out);
  if (!s.is_ok()) return std::string("ERROR ") + ember_status_string(s.code()) + ": " + s.message();
  return out;
}

TEST_CASE("chat: llama.cpp's chat-template cases render exactly") {
  int n = 0;
  for (const auto& c : ember_test::kLlamaCppChatCases) {
    CAPTURE(c.name);
    std::vector<ChatMessage> msgs = llama_cpp_conversation();
    if (c.merge_system) {  // llama.cpp's own workaround, applied to the input (see the data file)
      msgs[1].content = msgs[0].content + "\n" + msgs[1].content;
      msgs.erase(msgs.begin());
    }
    for (const auto& e : c.extra)
      if (e[0]) msgs.push_back({e[0], e[1]});
    ChatOptions opt;
    opt.add_generation_prompt = true;
    opt.bos_token = c.bos;
    opt.eos_token = c.eos;
    CHECK(render_or_error(c.tmpl, msgs, opt) == std::string(c.expected));
    ++n;
  }
  CHECK(n == 35);
}

TEST_CASE("chat: built-in templates give the families' formats") {
  // Each built-in against the llama.cpp case of the same format.
  const std::pair<const char*, const char*> pairs[] = {
      {"chatml", "teknium/OpenHermes-2.5-Mistral-7B"},
      {"llama3", "Llama-3"},
      {"phi3", "Phi-3-vision"},
      {"mistral", "mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' template with a system prompt)"},
      {"deepseek", "DeepSeek-V2"},
      {"vicuna", "eachadea/vicuna-13b-1.1"},
  };
  for (const auto& p : pairs) {
    CAPTURE(p.first);
    const auto* c = find_case(p.second);
    REQUIRE(c != nullptr);
    const char* tmpl = builtin_chat_template(p.first);
    REQUIRE(tmpl != nullptr);
    ChatOptions opt;
    opt.add_generation_prompt = true;
    opt.bos_token = c->bos;
    opt.eos_token = c->eos;
    CHECK(render_or_error(tmpl, llama_cpp_conversation(), opt) == std::string(c->expected));
  }
  // Gemma has no system turn: the system text opens the first user turn.
  ChatOptions opt;
  opt.add_generation_prompt = true;
  CHECK(render_or_error(builtin_chat_template("gemma"), llama_cpp_conversation(), opt) ==
        "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi "
        "there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an "
        "assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n");
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  CHECK(render_or_error(builtin_chat_template("llama2"), llama_cpp_conversation(), opt) ==
        "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are "
        "you [/INST] I am an assistant </s><s>[INST] Another question [/INST]");
  CHECK(render_or_error(builtin_chat_template("zephyr"), {{"user", "Hi"}}, opt) ==
        "<|user|>\nHi</s>\n<|assistant|>\n");
  CHECK(render_or_error(builtin_chat_template("mistral-v7"), {{"system", "S"}, {"user", "Hi"}}, opt) ==
        "<s>[SYSTEM_PROMPT] S[/SYSTEM_PROMPT][INST] Hi[/INST]");
  // llama2 refuses a conversation that does not alternate, with the template's message.
  std::string out;
  Status s = render_chat(builtin_chat_template("llama2"), {{"user", "a"}, {"user", "b"}}, opt, &out);
  CHECK(s.code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(s.message().find("roles must alternate") != std::string::npos);
  CHECK(builtin_chat_template("no-such-template") == nullptr);
  for (const auto& name : builtin_chat_template_names()) {
    CAPTURE(name);
    std::string text;
    CHECK(render_chat(builtin_chat_template(name), {{"user", "x"}}, opt, &text).is_ok());
    CHECK(text.find('x') != std::string::npos);
  }
}

std::string templates_dir() {
  if (const char* d = std::getenv("EMBER_LLAMA_VOCAB_DIR"); d && *d) return std::string(d) + "/templates";
  return std::string(EMBER_LLAMA_VOCAB_DIR) + "/templates";
}

TEST_CASE("chat: llama.cpp's model templates render a conversation or are refused by name") {
  const std::string dir = templates_dir();
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".jinja") files.push_back(e.path());
  if (files.empty()) {
    if (test::test_data_required()) {
      FAIL("llama.cpp chat templates missing in '" << dir
           << "' (EMBER_REQUIRE_TEST_DATA=1): run tools/scripts/fetch_llama_vocabs.sh");
    } else {
      MESSAGE("skipped: llama.cpp chat templates not found in '" << dir << "'; run tools/scripts/fetch_llama_vocabs.sh");
    }
    return;
  }
  std::sort(files.begin(), files.end());
  const std::vector<ChatMessage> conv = {{"system", "You are a helpful assistant."},
                                         {"user", "Hello!"},
                                         {"assistant", "Hi, how can I help?"},
                                         {"user", "What is 2+2?"}};
  ChatOptions opt;
  opt.add_generation_prompt = true;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  opt.env.now_unix = 1700000000;
  // Outcomes: rendered; refused (EMBER_ERR_UNSUPPORTED naming the
  // construct); or the template's own refusal of this input, as Jinja2
  // gives it too (EMBER_ERR_INVALID_ARGUMENT: its raise_exception, or a
  // variable it needs and the caller did not pass). A template that
  // refuses the system message is retried without it.
  int rendered = 0, refused = 0, by_template = 0;
  std::map<std::string, std::string> refusals;
  const std::vector<ChatMessage> no_system(conv.begin() + 1, conv.end());
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    std::string out;
    const std::string text = test::read_text_file(f.string());
    Status s = render_chat(text, conv, opt, &out);
    if (s.code() == EMBER_ERR_INVALID_ARGUMENT && s.message().find("raise_exception") != std::string::npos)
      s = render_chat(text, no_system, opt, &out);
    if (s.code() == EMBER_ERR_INVALID_ARGUMENT &&
        (s.message().find("raise_exception") != std::string::npos ||
         s.message().find("is undefined") != std::string::npos)) {
      ++by_template;
      refusals[f.filename().string()] = s.message();
      continue;
    }
    if (s.is_ok()) {
      ++rendered;
      // The conversation's text is in the prompt, in order.
      size_t a = out.find("Hello!"), b = out.find("What is 2+2?");
      CHECK(a != std::string::npos);
      CHECK(b != std::string::npos);
      CHECK(a < b);
    } else {
      ++refused;
      CAPTURE(s.message());
      CHECK(s.code() == EMBER_ERR_UNSUPPORTED);
      CHECK(s.message().find("not supported") != std::string::npos);
      refusals[f.filename().string()] = s.message();
    }
  }
  MESSAGE("llama.cpp templates: " << rendered << " rendered, " << refused << " refused (unsupported), "
                                    << by_template << " refused by the template itself, of " << files.size());
  for (const auto& r : refusals) MESSAGE("  not rendered " << r.first << ": " << r.second);
  CHECK(rendered + refused + by_template == int(files.size()));
  CHECK(rendered >= refused);
}

TEST_CASE("chat: render_chat's context: tools and documents undefined unless given, content parts") {
  ChatOptions opt;
  std::string out;
  REQUIRE(render_chat("{{ tools is defined }} {{ documents is defined }} {{ add_generation_prompt }}", {}, opt, &out)
              .is_ok());
  CHECK(out == "False False False");
  Value extra = Value::make_dict({{"tools", Value::make_list({Value::string("t")})}});
  REQUIRE(render_chat("{{ tools | length }}", Value::make_list(), opt, extra, &out).is_ok());
  CHECK(out == "1");
  // Content as a list of typed parts, as some templates expect.
  Value parts = Value::make_list({Value::make_dict({{"type", Value::string("text")}, {"text", Value::string("hi")}})});
  Value msgs = Value::make_list({Value::make_dict({{"role", Value::string("user")}, {"content", parts}})});
  REQUIRE(render_chat("{% for m in messages %}{% for p in m.content %}{{ p.type }}:{{ p.text }}{% endfor %}{% endfor %}",
                      msgs, opt, Value::undefined(), &out)
              .is_ok());
  CHECK(out == "text:hi");
}

// A tiny model whose vocabulary carries `tmpl` as its chat template.
std::string write_model_with_template(const std::string& dir, const std::string& tmpl) {
  SynthShape shape;
  if (!synth_shape("tiny", &shape)) return "";
  auto model = make_synthetic(shape, DType::F32, 5, "");
  if (!model.is_ok()) return "";
  model.value()->spec.vocab.chat_template = tmpl;
  const std::string path = dir + "/chat.ember";
  return write_model(model.value()->spec, path).is_ok() ? path : "";
}

TEST_CASE("chat: the chat template survives conversion and ember_chat_format renders it") {
  const std::string dir = test::temp_dir("chat-format");
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                           "{% if add_generation_prompt %}<assistant>{% endif %}";
  const std::string path = write_model_with_template(dir, tmpl);
  REQUIRE(!path.empty());
  {
    std::string bytes = test::read_text_file(path);
    ModelContents contents;
    REQUIRE(verify_model(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &contents).is_ok());
    CHECK(contents.vocab.chat_template == tmpl);
  }
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  const ember_chat_message msgs[] = {{"system", "S"}, {"user", "U"}};
  size_t len = 0;
  // Ask for the size, then render.
  CHECK(ember_chat_format(model, nullptr, msgs, 2, 1, nullptr, 0, &len) == EMBER_ERR_BUFFER_TOO_SMALL);
  std::vector<char> buf(len);
  REQUIRE(ember_chat_format(model, nullptr, msgs, 2, 1, buf.data(), buf.size(), &len) == EMBER_OK);
  CHECK(std::string(buf.data(), len).find("<system>S<user>U<assistant>") != std::string::npos);
  CHECK(std::string(ember_last_error()).empty());
  // A built-in by name, and template text.
  char small[256];
  REQUIRE(ember_chat_format(model, "chatml", msgs + 1, 1, 0, small, sizeof small, &len) == EMBER_OK);
  CHECK(std::string(small, len) == "<|im_start|>user\nU<|im_end|>\n");
  REQUIRE(ember_chat_format(nullptr, "{{ messages[0].content }}!", msgs, 1, 0, small, sizeof small, &len) ==
          EMBER_OK);
  CHECK(std::string(small, len) == "S!");
  REQUIRE(ember_chat_format(nullptr, "{{ messages | length }}", nullptr, 0, 0, small, sizeof small, &len) == EMBER_OK);
  CHECK(std::string(small, len) == "0");
  ember_model_free(model);
  std::filesystem::remove_all(dir);
}

TEST_CASE("chat: ember_chat_format under misuse") {
  const std::string dir = test::temp_dir("chat-misuse");
  const std::string path = write_model_with_template(dir, "");
  REQUIRE(!path.empty());
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  const ember_chat_message ok[] = {{"user", "hi"}};
  char buf[64];
  size_t len = 77;
  auto expect = [&](ember_status got, ember_status want, const char* needle) {
    CHECK(got == want);
    CHECK(std::string(ember_last_error()).find(needle) != std::string::npos);
  };
  CHECK(ember_chat_format(model, "chatml", ok, 1, 0, buf, sizeof buf, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  expect(ember_chat_format(model, "chatml", ok, 1, 0, nullptr, 8, &len), EMBER_ERR_INVALID_ARGUMENT, "text is NULL");
  CHECK(len == 0);
  expect(ember_chat_format(model, "chatml", nullptr, 1, 0, buf, sizeof buf, &len), EMBER_ERR_INVALID_ARGUMENT,
         "messages is NULL");
  expect(ember_chat_format(nullptr, nullptr, ok, 1, 0, buf, sizeof buf, &len), EMBER_ERR_INVALID_ARGUMENT,
         "both NULL");
  const ember_chat_message no_role[] = {{"user", "a"}, {nullptr, "b"}};
  expect(ember_chat_format(model, "chatml", no_role, 2, 0, buf, sizeof buf, &len), EMBER_ERR_INVALID_ARGUMENT,
         "messages[1].role is NULL");
  const ember_chat_message no_content[] = {{"user", nullptr}};
  expect(ember_chat_format(model, "chatml", no_content, 1, 0, buf, sizeof buf, &len), EMBER_ERR_INVALID_ARGUMENT,
         "messages[0].content is NULL");
  expect(ember_chat_format(model, "nonesuch", ok, 1, 0, buf, sizeof buf, &len), EMBER_ERR_INVALID_ARGUMENT,
         "'nonesuch' is not a built-in");
  // The model has no template of its own: the family's built-in (a
  // SentencePiece llama vocabulary: llama2), the one a host is told about.
  REQUIRE(ember_chat_default_template(model) != nullptr);
  CHECK(std::string(ember_chat_default_template(model)) == "llama2");
  CHECK(ember_chat_default_template(nullptr) == nullptr);
  {
    char a[256], b[256];
    size_t la = 0, lb = 0;
    REQUIRE(ember_chat_format(model, nullptr, ok, 1, 1, a, sizeof a, &la) == EMBER_OK);
    REQUIRE(ember_chat_format(model, "llama2", ok, 1, 1, b, sizeof b, &lb) == EMBER_OK);
    CHECK(std::string(a, la) == std::string(b, lb));
  }
  // The end-of-generation set: EOS ends, an ordinary id and bad ids do not.
  ember_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(model, &info) == EMBER_OK);
  CHECK(ember_token_is_eog(model, info.eos_id) == 1);
  CHECK(ember_token_is_eog(model, 100) == 0);
  CHECK(ember_token_is_eog(model, -1) == 0);
  CHECK(ember_token_is_eog(model, info.vocab_size + 5) == 0);
  CHECK(ember_token_is_eog(nullptr, info.eos_id) == 0);
  // Template failures keep their statuses.
  expect(ember_chat_format(model, "{{ raise_exception('nope') }}", ok, 1, 0, buf, sizeof buf, &len),
         EMBER_ERR_INVALID_ARGUMENT, "raise_exception: nope");
  expect(ember_chat_format(model, "{% if %}", ok, 1, 0, buf, sizeof buf, &len), EMBER_ERR_FORMAT, "template 1:");
  expect(ember_chat_format(model, "{{ x | shuffle }}", ok, 1, 0, buf, sizeof buf, &len), EMBER_ERR_UNSUPPORTED,
         "shuffle");
  // Too small: nothing written, the size needed reported.
  std::memset(buf, '#', sizeof buf);
  expect(ember_chat_format(model, "chatml", ok, 1, 0, buf, 4, &len), EMBER_ERR_BUFFER_TOO_SMALL, "needs");
  CHECK(len == std::strlen("<|im_start|>user\nhi<|im_end|>\n"));
  CHECK(buf[0] == '#');
  ember_model_free(model);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember::chat

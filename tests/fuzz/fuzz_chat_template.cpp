// libFuzzer: the chat-template language over arbitrary template text,
// rendered against a small fixed conversation with tight bounds. Any input
// must end in output or a Status (never a crash, hang or unbounded
// allocation); the statuses must be the documented ones, and a success must
// respect the output bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::chat;
  const std::string tmpl(reinterpret_cast<const char*>(data), size);
  const std::vector<ChatMessage> conv = {
      {"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "2+2?"}};
  ChatOptions opt;
  opt.add_generation_prompt = size % 2 == 0;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  opt.env.now_unix = 1700000000;
  opt.env.limits.max_output_bytes = 1 << 16;
  opt.env.limits.max_iterations = 20000;
  opt.env.limits.max_list_items = 1 << 14;
  opt.env.limits.max_call_depth = 32;
  opt.env.limits.max_nodes = 20000;
  std::string out;
  const ember::Status s = render_chat(tmpl, conv, opt, &out);
  if (s.is_ok()) {
    if (out.size() > opt.env.limits.max_output_bytes) std::abort();
    return 0;
  }
  switch (s.code()) {
    case EMBER_ERR_INVALID_ARGUMENT: case EMBER_ERR_UNSUPPORTED: case EMBER_ERR_FORMAT: case EMBER_ERR_NO_MEMORY:
      break;
    default: std::abort();  // an internal error or an undocumented status
  }
  if (s.message().empty()) std::abort();
  return 0;
}

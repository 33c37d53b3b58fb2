// libFuzzer target: `ember serve`'s request parsing and JSON fields. The
// input is split by its first byte into HTTP bytes fed in two pieces (so
// every split point of a request is reached), then the body of a complete
// request (or the raw input) goes to the completion and chat field readers
// and the streamed text's stop strings. Nothing may crash, leak or read out of bounds;
// every refusal carries a status and a message.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "tools/serve/http_request.h"
#include "tools/serve/openai_api.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/text_stream.h"

using namespace ember::serve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;
  const size_t split = n ? data[0] % (n + 1) : 0;
  HttpLimits limits;
  limits.max_body = 4096;
  limits.max_header_bytes = 2048;
  limits.max_headers = 16;
  RequestParser parser(limits);
  size_t used = 0, at = 0;
  RequestParser::State st = parser.feed(bytes, split, &used);
  at = used;
  while (st == RequestParser::State::kComplete && at < n) {  // pipelined requests
    parser.reset();
    st = parser.feed(bytes + at, n - at, &used);
    if (used == 0) break;
    at += used;
  }
  if (st == RequestParser::State::kNeedMore && at < n) {
    st = parser.feed(bytes + at, n - at, &used);
  }
  if (st == RequestParser::State::kNeedMore) st = parser.finish();
  if (st == RequestParser::State::kError) {
    if (parser.error_status() < 400 || parser.error_message().empty()) std::abort();
  }
  const std::string body =
      st == RequestParser::State::kComplete ? parser.request().body : std::string(bytes, n);
  std::string error;
  for (bool chat : {false, true}) {
    CompletionRequest r;
    if (!parse_completion_request(body, chat, &r, &error) && error.empty()) std::abort();
    if (!r.stop.empty()) {
      // The text as pieces of 1..3 bytes: what is streamed is a prefix of it.
      const std::string text = r.prompt.empty() && !r.messages.empty() ? r.messages[0].content : r.prompt;
      TextStream stream(r.stop);
      std::string out;
      bool stopped = false;
      for (size_t at = 0; at < text.size() && !stopped;) {
        const size_t len = std::min<size_t>(1 + at % 3, text.size() - at);
        stopped = stream.push(0, text.substr(at, len), &out);
        at += len;
      }
      if (!stopped) stream.flush(&out);
      if (out.size() > text.size() || text.compare(0, out.size(), out) != 0) std::abort();
      if (!stopped && out != text) std::abort();
    }
  }
  (void)error_body(400, body);
  return 0;
}

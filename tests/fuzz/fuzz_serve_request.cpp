// libFuzzer target: `ember serve`'s request parsing and JSON fields. The
// input is split by its first byte into HTTP bytes fed in two pieces (so
// every split point of a request is reached), then the body of a complete
// request (or the raw input) goes to the completion and chat readers and the
// generator's text cutter (engine/text_out.h, stop strings). Nothing may crash, leak or read out of
// bounds; every refusal carries a status and a short message.
//
// Nested and huge JSON (issue 43): when the first byte's top bit is set the
// input is a recipe instead: the second byte picks a shape and a count, and
// the rest is a fragment that is nested that many levels deep or repeated
// that many times inside a field. Small inputs so reach 100,000-deep and
// megabyte bodies. On every body: the JSON scan agrees with nlohmann's
// verdict (where its own limits do not decide), and what a successful read
// keeps stays within the reader's budget.
//
// Every body is also read as a POST /v1/embeddings request.
//
// Tool calls: every body, and every message's content of a body read, is
// also read as a model's reply in each family's call form (tool_syntax.h),
// whole and streamed as required and as auto, and from its first '{' as
// Gemma 4's arguments; the tools read are made into each form's grammar.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/serve/embeddings.h"
#include "tools/serve/http_request.h"
#include "tools/serve/json_check.h"
#include "tools/serve/openai_api.h"
#include "tools/serve/request_reader.h"
#include "tools/serve/tool_args_gemma.h"
#include "tools/serve/tool_calls.h"
#include "engine/text_out.h"

using namespace ember::serve;

namespace {

// A recipe: shape (low 3 bits of b) and count (the rest, x a scale): up to
// ~100,000 levels deep, ~3,000 repetitions, ~200 KB strings.
std::string expand(uint8_t b, const std::string& fragment) {
  const size_t levels = 1 + static_cast<size_t>(b >> 3) * 3125;
  const size_t count = 1 + static_cast<size_t>(b >> 3) * 100;
  std::string out;
  switch (b & 7) {
    case 0: return std::string(levels, '[') + fragment + std::string(levels, ']');
    case 1: {
      for (size_t i = 0; i < levels; ++i) out += "{\"a\":";
      out += fragment.empty() ? "1" : fragment;
      return out + std::string(levels, '}');
    }
    case 2: out = "{\"prompt\":\"x\",\"junk\":["; break;
    case 3: out = "{\"messages\":["; break;
    case 4: out = "{\"prompt\":["; break;
    case 5: out = "{\"prompt\":\"x\",\"stop\":["; break;
    case 6: return "{\"prompt\":\"" + std::string(count * 64, 'a') + fragment + "\"}";
    default: return "{\"prompt\":\"x\",\"" + fragment + "\":" + std::string(levels, '[') + std::string(levels, ']') + "}";
  }
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ',';
    out += fragment.empty() ? "[]" : fragment;
  }
  return out + "]}";
}

const int kSyntaxes[] = {EMBER_TOOL_SYNTAX_HERMES,       EMBER_TOOL_SYNTAX_LLAMA3, EMBER_TOOL_SYNTAX_MISTRAL,
                         EMBER_TOOL_SYNTAX_MISTRAL_ARGS, EMBER_TOOL_SYNTAX_PHI4,   EMBER_TOOL_SYNTAX_GEMMA4};

// Calls read back out of any text, whole and streamed, in every form:
// nothing may crash, and every call has an id of its form and object
// arguments as JSON text.
void read_calls(const std::string& text, const std::vector<std::string>& names) {
  if (text.size() > (16 << 10)) return;
  for (int syntax : kSyntaxes) {
    const bool mistral = syntax == EMBER_TOOL_SYNTAX_MISTRAL || syntax == EMBER_TOOL_SYNTAX_MISTRAL_ARGS;
    for (const ToolCall& c : parse_tool_calls(text, syntax, names).calls) {
      if (c.id.size() != (mistral ? 9u : 29u)) std::abort();
      const auto args = nlohmann::json::parse(c.arguments, nullptr, false);
      if (!args.is_object()) std::abort();
    }
    // Streamed a few bytes at a time (a token's worth): short texts only,
    // a stream rescans what it holds back (as a reply's pieces are short).
    if (text.size() > 2048) continue;
    ToolCallStream as_auto(syntax, false, names), as_required(syntax, true, names);
    std::string released;
    for (size_t at = 0; at < text.size(); at += 1 + at % 4) {
      released += as_auto.add(text.substr(at, 1 + at % 4));
      as_required.add(text.substr(at, 1 + at % 4));
      (void)as_required.deltas();
    }
    const ParsedReply rest = as_auto.finish();
    // Released text is the text's beginning.
    if (text.compare(0, released.size(), released) != 0) std::abort();
    (void)rest;
    (void)as_required.finish();
  }
  std::string json;
  size_t used = 0;
  const size_t brace = text.find('{');
  if (brace != std::string::npos && gemma_args_to_json(std::string_view(text).substr(brace), &json, &used)) {
    if (!nlohmann::json::parse(json, nullptr, false).is_object() || used > text.size() - brace) std::abort();
  }
}

void read_body(const std::string& body) {
  read_calls(body, {"get_weather", "now"});
  // The scan against nlohmann: where neither of the scan's own limits
  // decided, the verdicts agree (but nlohmann's lexer takes a NUL byte for
  // the end of the text, which the scan refuses: such bodies never reach it).
  const JsonCheck check = check_json(body, JsonLimits());
  const bool own_limit = !check.ok && (check.what.find("deeper than") != std::string::npos ||
                                       check.what.find("longer than") != std::string::npos);
  const bool nul = body.find('\0') != std::string::npos;
  if (nul && check.ok) std::abort();
  if (!own_limit && !nul && check.ok != nlohmann::json::accept(body)) std::abort();

  {
    // POST /v1/embeddings' reader: a 4xx with a message, or inputs within
    // its cap, each kept once (ids at 4 bytes, texts as read).
    EmbeddingLimits limits;
    limits.max_inputs = 64;
    EmbeddingRequest er;
    RequestError e;
    if (!read_embedding_request(body, limits, &er, &e)) {
      if (e.status < 400 || e.status > 499 || e.message.empty() || e.message.size() > 1024) std::abort();
    } else {
      size_t kept = er.model.size();
      for (const auto& t : er.texts) kept += t.size();
      for (const auto& ids : er.token_inputs) kept += ids.size() * sizeof(int32_t);
      if (er.texts.size() + er.token_inputs.size() > limits.max_inputs) std::abort();
      if (er.texts.empty() && er.token_inputs.empty()) std::abort();
      if (kept > 2 * body.size() + 64) std::abort();
    }
    // POST /v1/rerank's reader: a 4xx with a message, or a query and 1..cap
    // documents without NUL, top_n >= 1 or unset.
    RerankRequest rr;
    if (!read_rerank_request(body, limits, &rr, &e)) {
      if (e.status < 400 || e.status > 499 || e.message.empty() || e.message.size() > 1024) std::abort();
    } else {
      if (rr.documents.empty() || rr.documents.size() > limits.max_inputs) std::abort();
      if (rr.top_n == 0 || rr.top_n < -1) std::abort();
      if (rr.query.find('\0') != std::string::npos) std::abort();
      for (const auto& d : rr.documents) {
        if (d.find('\0') != std::string::npos) std::abort();
      }
    }
  }
  for (bool chat : {false, true}) {
    ReadLimits limits;
    limits.max_prompt_tokens = 4096;
    limits.max_messages = 4096;
    CompletionRequest r;
    RequestError e;
    if (!read_completion_request(body, chat, limits, &r, &e)) {
      if (e.status < 400 || e.status > 499 || e.message.empty() || e.message.size() > 1024) std::abort();
      continue;
    }
    // What was kept is within the budget (a lower bound of what the reader
    // charged: the strings' bytes, each message and id).
    size_t kept = r.prompt.size() + r.model.size() + r.prompt_tokens.size() * sizeof(int32_t);
    for (const auto& m : r.messages) kept += sizeof(ChatMessage) + m.content.size();
    for (const auto& s : r.stop) kept += s.size();
    for (const auto& t : r.tools) kept += t.name.size() + t.description.size() + t.parameters.size();
    for (const auto& m : r.messages) {
      kept += m.tool_call_id.size();
      for (const auto& c : m.tool_calls) kept += c.name.size() + c.arguments.size();
      read_calls(m.content, tool_names(r));
    }
    // The call grammar of what was read, in every form: made, or refused
    // naming a function.
    if (!r.tools.empty()) {
      for (int syntax : kSyntaxes) {
        std::string gbnf, why;
        if (!tool_call_grammar(r, syntax, &gbnf, &why) && why.find("'tools' function") != 0) std::abort();
      }
    }
    if (kept > limits.kept_per_body_byte * body.size() + limits.kept_slack) std::abort();
    if (r.prompt_tokens.size() > limits.max_prompt_tokens || r.messages.size() > limits.max_messages) std::abort();
    if (r.stop.size() > 16 || !(r.top_p > 0.0f && r.top_p <= 1.0f)) std::abort();
    if (!r.stop.empty() && r.prompt.size() + (r.messages.empty() ? 0 : r.messages[0].content.size()) < (64 << 10)) {
      // The text as pieces of 1..3 bytes: what is streamed is a prefix of it.
      const std::string text = r.prompt.empty() && !r.messages.empty() ? r.messages[0].content : r.prompt;
      ember::TextOut stream;
      stream.start(r.stop);
      std::string out;
      auto sink = [](void* user, int32_t, std::string_view t) {
        static_cast<std::string*>(user)->append(t);
        return false;
      };
      bool stopped = false;
      for (size_t at = 0; at < text.size() && !stopped;) {
        const size_t len = std::min<size_t>(1 + at % 3, text.size() - at);
        stopped = stream.push(0, text.substr(at, len), sink, &out) == ember::TextOut::Step::Matched;
        at += len;
      }
      if (!stopped) stream.flush(sink, &out);
      out.append(stream.take_rest());
      if (out.size() > text.size() || text.compare(0, out.size(), out) != 0) std::abort();
      if (!stopped && out != text) std::abort();
    }
  }
  (void)error_body(400, body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 0x80) {
    if (size < 2) return 0;
    read_body(expand(data[1], std::string(reinterpret_cast<const char*>(data + 2), size - 2)));
    return 0;
  }
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;
  const size_t split = n ? data[0] % (n + 1) : 0;
  HttpLimits limits;
  limits.max_body = 4096;
  limits.max_header_bytes = 2048;
  limits.max_headers = 16;
  RequestParser parser(limits);
  // Fed as the server does: what a state leaves unused is fed again.
  size_t at = 0, used = 0;
  RequestParser::State st = parser.feed(bytes, split, &used);
  at = used;
  for (int rounds = 0; rounds < 4096 && at < n; ++rounds) {
    if (st == RequestParser::State::kComplete) {
      parser.reset();  // pipelined requests
    } else if (st == RequestParser::State::kError) {
      break;
    }
    st = parser.feed(bytes + at, n - at, &used);
    at += used;
    if (used == 0 && st == RequestParser::State::kNeedMore) break;
  }
  if (st == RequestParser::State::kNeedMore || st == RequestParser::State::kHeaders) st = parser.finish();
  if (st == RequestParser::State::kError) {
    if (parser.error_status() < 400 || parser.error_message().empty()) std::abort();
  }
  read_body(st == RequestParser::State::kComplete ? parser.request().body : std::string(bytes, n));
  return 0;
}

#include "tools/serve/tool_calls.h"

namespace ember::serve {

bool tool_call_grammar(const CompletionRequest& r, int syntax, std::string* gbnf, std::string* error) {
  const std::string only = r.tool_choice == ToolChoice::kNamed ? r.tool_choice_name : std::string();
  return tool_call_grammar(r.tools, only, r.parallel_tool_calls, syntax, gbnf, error);
}

std::vector<std::string> tool_names(const CompletionRequest& r) {
  std::vector<std::string> names;
  names.reserve(r.tools.size());
  for (const ToolFunction& t : r.tools) names.push_back(t.name);
  return names;
}

std::string tool_completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                                 const std::string& model, const std::string& text, int syntax, Finish finish,
                                 const Usage& usage, const std::vector<TokenLogprobs>* logprobs) {
  ParsedReply parsed = parse_tool_calls(text, syntax, tool_names(r));
  if (parsed.calls.empty()) return completion_body(r, id, created, model, text, finish, usage, logprobs);
  if (finish == Finish::kStop) finish = Finish::kToolCalls;
  return completion_body(r, id, created, model, parsed.content, finish, usage, logprobs, &parsed.calls);
}

std::string tool_stream_deltas(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, ToolCallStream* calls) {
  std::string out;
  for (const ToolCallStream::Delta& d : calls->deltas()) {
    if (d.first) {
      ToolCall call{d.id, d.name, ""};
      out += stream_tool_call_start(r, id, created, model, call, d.index);
    }
    if (!d.arguments.empty()) out += stream_tool_call_arguments(r, id, created, model, d.arguments, d.index);
  }
  return out;
}

std::string tool_stream_tail(const CompletionRequest& r, const std::string& id, int64_t created,
                             const std::string& model, ToolCallStream* calls, Finish* finish) {
  std::string out = tool_stream_deltas(r, id, created, model, calls);
  const ParsedReply rest = calls->finish();
  if (!rest.content.empty()) out += stream_chunk(r, id, created, model, rest.content, nullptr, false);
  for (size_t i = 0; i < rest.calls.size(); ++i) out += stream_tool_call_chunks(r, id, created, model, rest.calls[i], i);
  const bool called = !rest.calls.empty() || calls->streamed_calls() > 0;
  if (called && *finish == Finish::kStop) *finish = Finish::kToolCalls;
  return out;
}

}  // namespace ember::serve

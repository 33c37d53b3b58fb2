// Tool calls in `ember serve`: a request's call grammar, and the response
// bodies and stream chunks of calls read out of generated text. The forms
// themselves (grammars, readers, the stream, call ids) are
// tools/serve/tool_syntax.h, shared with `ember chat`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ember.h"
#include "tools/serve/openai_api.h"
#include "tools/serve/tool_syntax.h"

namespace ember::serve {

// The GBNF (root rule "root") that admits only the calls `r` asks for:
// tool_choice kNamed that function, kRequired any of r.tools; one call, or
// one or more when r.parallel_tool_calls (tool_syntax.h's tool_call_grammar).
bool tool_call_grammar(const CompletionRequest& r, int syntax, std::string* gbnf, std::string* error);

// The names of r.tools (parse_tool_calls and ToolCallStream take them).
std::vector<std::string> tool_names(const CompletionRequest& r);

// A chat response body with the calls read out of `text` (tools on): calls
// found make finish kToolCalls (when it was kStop) and the content what is
// around them; else the text as it is.
std::string tool_completion_body(const CompletionRequest& r, const std::string& id, int64_t created,
                                 const std::string& model, const std::string& text, int syntax, Finish finish,
                                 const Usage& usage, const std::vector<TokenLogprobs>* logprobs);

// The chunks of the calls' deltas since the last call (delta.tool_calls:
// a call's start, then pieces of its arguments); "" when there are none.
std::string tool_stream_deltas(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, ToolCallStream* calls);

// The chunks that end a stream with tools on: the held-back text's content
// and its calls (delta.tool_calls), or the last deltas of streamed calls;
// *finish becomes kToolCalls when there are calls and it was kStop.
std::string tool_stream_tail(const CompletionRequest& r, const std::string& id, int64_t created,
                             const std::string& model, ToolCallStream* calls, Finish* finish);

}  // namespace ember::serve

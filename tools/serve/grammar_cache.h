// The compiled grammars of `ember serve`: response_format's, kept by the
// exact schema text, and the tool-call grammars of tool_choice "required" or
// a named function (tool_calls.h), kept by a digest of what they are made
// of. A grammar computes each state's token mask the first time a
// generation reaches it and keeps it, so a schema or a set of tools that
// comes again (clients send the same ones with every request) skips the
// compilation and finds its masks made.
//
// Compiled on the connection thread that read the request (never the
// scheduler's, which would stall every slot). At most `capacity` grammars
// are kept, the least recently used dropped first; a request holds its own
// reference, so a grammar evicted while generations use it lives until they
// end (and the runtime's generator keeps one of its own).
//
// Memory: a byte budget, which the serve plan counts. Every grammar is
// capped at budget / capacity (ember_grammar_set_max_bytes: its rules, its
// copy of the vocabulary's text, its states, transitions and masks), and
// at most `capacity` grammars are alive at once, kept or not: a new one
// first drops kept grammars no request holds; when every one is held by a
// request, the new request is refused with a 503 (Retry-After) rather than
// the budget passed. A schema the translator refuses is its 400 before any
// place is taken; a grammar whose compiled rules and vocabulary text alone
// pass the cap is refused with a 400.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember.h"
#include "tools/serve/openai_api.h"

namespace ember::serve {

using GrammarRef = std::shared_ptr<const ember_grammar>;

class GrammarCache {
 public:
  static constexpr uint64_t kDefaultBudget = uint64_t{512} << 20;
  // model: not owned, outlives the cache. budget_bytes: all grammars'
  // memory at most (0: kDefaultBudget).
  explicit GrammarCache(const ember_model* model, size_t capacity = 16, uint64_t budget_bytes = 0);

  // The most one grammar may hold (budget / capacity), and all of them
  // (what the serve plan counts).
  uint64_t per_grammar_bytes() const { return per_grammar_; }
  uint64_t budget_bytes() const { return per_grammar_ * capacity_; }
  size_t capacity() const { return capacity_; }
  // Grammars alive now (kept, or held by requests after being dropped).
  size_t alive() const { return alive_->load(); }

  // The grammar a request's response_format asks for: nullptr for text (no
  // constraint), any JSON object for json_object, the schema for
  // json_schema. *hit (may be NULL) says whether it was kept already. On a
  // refusal returns nullptr with *error set: 400, param "response_format",
  // code "unsupported_schema" for a keyword ember cannot honour (the
  // runtime's message, naming it and where), "invalid_schema" for a
  // malformed schema or one past the grammar's size limits,
  // "schema_too_complex" past its matcher's budget (EMBER_ERR_TOO_COMPLEX); 500 otherwise.
  // Thread-safe.
  GrammarRef get(const CompletionRequest& request, bool* hit, RequestError* error);

  // The call grammar of a request whose tool_choice demands a call
  // (tool_call_grammar in `syntax`), kept under "tools:" and the SHA-256 of
  // the tools' names and parameters schemas, tool_choice (and its name),
  // parallel_tool_calls and the syntax: what the grammar is made of. *hit
  // as for get. Refusals: 400, param "tools", naming the function whose
  // schema is refused or the grammar's limit. Thread-safe.
  GrammarRef get_tool_calls(const CompletionRequest& request, int syntax, bool* hit, RequestError* error);

  size_t size() const;
  // Grammars compiled so far, of both kinds (a request that finds its
  // grammar kept compiles none).
  uint64_t compiled() const { return compiled_.load(); }

 private:
  struct Entry {
    std::string key;  // the schema's compact text ("" for any JSON object), or "tools:" and a digest
    GrammarRef grammar;
    uint64_t used = 0;  // tick of the last use
  };
  GrammarRef compile(const std::string& key, RequestError* error);
  // A place for one more grammar alive, dropping kept ones no request holds
  // (the least recently used first); false with a 503 in *error when every
  // grammar alive is held. The place is the new grammar's (its deleter
  // gives it back), or given back with release() when compiling fails.
  bool reserve(const char* param, RequestError* error);
  void release() { --*alive_; }
  // A compiled grammar, capped and counted (its deleter gives its place
  // back); nullptr with a 400 naming `param` when its fixed part passes the cap.
  GrammarRef adopt(ember_grammar* g, const char* param, RequestError* error);
  GrammarRef compile_tool_calls(const CompletionRequest& request, int syntax, RequestError* error);
  // The grammar kept under key (its use noted), or null.
  GrammarRef find(const std::string& key);
  // Keeps g under key, dropping the least recently used past capacity;
  // returns the grammar kept (another request's, when it got there first).
  GrammarRef keep(const std::string& key, GrammarRef g);

  const ember_model* model_;
  size_t capacity_;
  uint64_t per_grammar_;
  // Shared with the grammars' deleters, which may run after the cache is gone.
  std::shared_ptr<std::atomic<size_t>> alive_ = std::make_shared<std::atomic<size_t>>(0);
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  uint64_t tick_ = 0;
  std::atomic<uint64_t> compiled_{0};
  // Schemas past kGateBytes compile one at a time (their compilation's
  // memory and CPU are bounded across connections, as long prompts'
  // tokenization is).
  static constexpr size_t kGateBytes = 16 << 10;
  std::mutex gate_;
};

}  // namespace ember::serve

// The compiled grammars of `ember serve`'s response_format, kept by the
// exact schema text: a grammar computes each state's token mask the first
// time a generation reaches it and keeps it, so a schema that comes again
// (clients send the same one with every request) skips the compilation and
// finds its masks made.
//
// Compiled on the connection thread that read the request (never the
// scheduler's, which would stall every slot). At most `capacity` grammars
// are kept, the least recently used dropped first; a request holds its own
// reference, so a grammar evicted while generations use it lives until they
// end (and the runtime's generator keeps one of its own).
#pragma once

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
  // model: not owned, outlives the cache.
  explicit GrammarCache(const ember_model* model, size_t capacity = 16);

  // The grammar a request's response_format asks for: nullptr for text (no
  // constraint), any JSON object for json_object, the schema for
  // json_schema. *hit (may be NULL) says whether it was kept already. On a
  // refusal returns nullptr with *error set: 400, param "response_format",
  // code "unsupported_schema" for a keyword ember cannot honour (the
  // runtime's message, naming it and where), "invalid_schema" for a
  // malformed schema or one past the grammar's size limits,
  // "schema_too_complex" past its matcher's budget; 500 otherwise.
  // Thread-safe.
  GrammarRef get(const CompletionRequest& request, bool* hit, RequestError* error);

  size_t size() const;

 private:
  struct Entry {
    std::string key;  // the schema's compact text; "" for any JSON object
    GrammarRef grammar;
    uint64_t used = 0;  // tick of the last use
  };
  GrammarRef compile(const std::string& key, RequestError* error);

  const ember_model* model_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  uint64_t tick_ = 0;
  // Schemas past kGateBytes compile one at a time (their compilation's
  // memory and CPU are bounded across connections, as long prompts'
  // tokenization is).
  static constexpr size_t kGateBytes = 16 << 10;
  std::mutex gate_;
};

}  // namespace ember::serve

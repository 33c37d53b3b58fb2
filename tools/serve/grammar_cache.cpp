#include "tools/serve/grammar_cache.h"

namespace ember::serve {

GrammarCache::GrammarCache(const ember_model* model, size_t capacity)
    : model_(model), capacity_(capacity ? capacity : 1) {}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

GrammarRef GrammarCache::compile(const std::string& key, RequestError* error) {
  std::unique_lock<std::mutex> gate(gate_, std::defer_lock);
  if (key.size() > kGateBytes) gate.lock();
  ember_grammar* g = nullptr;
  const ember_status st = ember_grammar_create_json_schema(model_, key.c_str(), &g);
  if (st == EMBER_OK) return GrammarRef(g, [](const ember_grammar* p) { ember_grammar_free(const_cast<ember_grammar*>(p)); });
  // EMBER_ERR_NO_MEMORY: the grammar's own budget (parse stacks, states),
  // not the process's: the schema is too complex, the request's doing.
  const bool client = st == EMBER_ERR_UNSUPPORTED || st == EMBER_ERR_INVALID_ARGUMENT || st == EMBER_ERR_NO_MEMORY;
  error->status = client ? 400 : 500;
  error->message = std::string("'response_format.json_schema.schema': ") + ember_last_error();
  error->param = "response_format";
  error->code = st == EMBER_ERR_UNSUPPORTED      ? "unsupported_schema"
                : st == EMBER_ERR_INVALID_ARGUMENT ? "invalid_schema"
                : st == EMBER_ERR_NO_MEMORY        ? "schema_too_complex"
                                                   : "";
  return nullptr;
}

GrammarRef GrammarCache::get(const CompletionRequest& request, bool* hit, RequestError* error) {
  if (hit) *hit = false;
  using Format = CompletionRequest::Format;
  if (request.format == Format::kText) return nullptr;
  // Schema text is a JSON object or boolean, never "": "" is json_object's key.
  static const std::string kAnyObject;
  const std::string& key = request.format == Format::kJsonSchema ? request.json_schema : kAnyObject;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& e : entries_) {
      if (e.key == key) {
        e.used = ++tick_;
        if (hit) *hit = true;
        return e.grammar;
      }
    }
  }
  // Compiled outside the lock: other schemas' requests do not wait for it.
  // Two requests with the same new schema may both compile it; the second
  // one kept replaces nothing (the first is found below).
  GrammarRef g = compile(key, error);
  if (!g) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.used = ++tick_;
      return e.grammar;
    }
  }
  if (entries_.size() < capacity_) {
    entries_.push_back(Entry{key, g, ++tick_});
  } else {
    Entry* oldest = &entries_[0];
    for (Entry& e : entries_) {
      if (e.used < oldest->used) oldest = &e;
    }
    // The evicted grammar is freed when the last request using it ends.
    *oldest = Entry{key, g, ++tick_};
  }
  return g;
}

}  // namespace ember::serve

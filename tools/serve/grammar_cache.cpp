#include "tools/serve/grammar_cache.h"

#include "tools/serve/tool_calls.h"

namespace ember::serve {

GrammarCache::GrammarCache(const ember_model* model, size_t capacity, uint64_t budget_bytes)
    : model_(model), capacity_(capacity ? capacity : 1),
      per_grammar_((budget_bytes ? budget_bytes : kDefaultBudget) / capacity_) {}

bool GrammarCache::reserve(const char* param, RequestError* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (alive_->load() >= capacity_) {
    // Under the lock nobody else can take a kept grammar: use_count 1 is
    // the cache's own reference.
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->grammar.use_count() == 1 && (victim == entries_.end() || it->used < victim->used)) victim = it;
    }
    if (victim == entries_.end()) {
      error->status = 503;
      error->message = "every one of the " + std::to_string(capacity_) +
                       " compiled grammars the server keeps (each at most " + std::to_string(per_grammar_ >> 20) +
                       " MiB) is in use by a running request: try again";
      error->param = param;
      error->code = "grammar_cache_busy";
      return false;
    }
    entries_.erase(victim);  // freed: its deleter gives its place back
  }
  ++*alive_;
  return true;
}

GrammarRef GrammarCache::adopt(ember_grammar* g, const char* param, RequestError* error) {
  if (ember_grammar_set_max_bytes(g, per_grammar_) != EMBER_OK) {
    error->status = 400;
    error->message = std::string("'") + param + "': its grammar takes " + std::to_string(ember_grammar_memory(g) >> 20) +
                     " MiB compiled, over the " + std::to_string(per_grammar_ >> 20) +
                     " MiB one grammar may hold (--grammar-cache-mib over " + std::to_string(capacity_) +
                     " grammars)";
    error->param = param;
    error->code = "grammar_too_large";
    ember_grammar_free(g);
    release();
    return nullptr;
  }
  ++compiled_;
  std::shared_ptr<std::atomic<size_t>> alive = alive_;
  return GrammarRef(g, [alive](const ember_grammar* p) {
    ember_grammar_free(const_cast<ember_grammar*>(p));
    --*alive;
  });
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

GrammarRef GrammarCache::compile(const std::string& key, RequestError* error) {
  std::unique_lock<std::mutex> gate(gate_, std::defer_lock);
  if (key.size() > kGateBytes) gate.lock();
  // Translated first, so that a schema the runtime refuses is its 400
  // whatever the cache holds; then a place, then the compilation.
  const char* schema = key.empty() ? nullptr : key.c_str();
  std::string gbnf;
  size_t needed = 0;
  ember_status st = ember_json_schema_to_gbnf(schema, nullptr, 0, &needed);
  if (st == EMBER_ERR_BUFFER_TOO_SMALL || st == EMBER_OK) {
    gbnf.resize(needed);
    st = ember_json_schema_to_gbnf(schema, gbnf.data(), gbnf.size(), &needed);
  }
  ember_grammar* g = nullptr;
  if (st == EMBER_OK) {
    if (!reserve("response_format", error)) return nullptr;
    st = ember_grammar_create(model_, gbnf.c_str(), "root", &g);
    if (st == EMBER_OK) return adopt(g, "response_format", error);
    release();
  }
  // EMBER_ERR_TOO_COMPLEX: the grammar's own budget (parse stacks, states,
  // compile work), not the process's memory: the request's doing.
  const bool client = st == EMBER_ERR_UNSUPPORTED || st == EMBER_ERR_INVALID_ARGUMENT || st == EMBER_ERR_TOO_COMPLEX;
  error->status = client ? 400 : 500;
  error->message = std::string("'response_format.json_schema.schema': ") + ember_last_error();
  error->param = "response_format";
  error->code = st == EMBER_ERR_UNSUPPORTED      ? "unsupported_schema"
                : st == EMBER_ERR_INVALID_ARGUMENT ? "invalid_schema"
                : st == EMBER_ERR_TOO_COMPLEX      ? "schema_too_complex"
                                                   : "";
  return nullptr;
}

GrammarRef GrammarCache::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.used = ++tick_;
      return e.grammar;
    }
  }
  return nullptr;
}

GrammarRef GrammarCache::keep(const std::string& key, GrammarRef g) {
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

GrammarRef GrammarCache::get(const CompletionRequest& request, bool* hit, RequestError* error) {
  if (hit) *hit = false;
  using Format = CompletionRequest::Format;
  if (request.format == Format::kText) return nullptr;
  // Schema text is a JSON object or boolean, never "": "" is json_object's key.
  static const std::string kAnyObject;
  const std::string& key = request.format == Format::kJsonSchema ? request.json_schema : kAnyObject;
  if (GrammarRef g = find(key)) {
    if (hit) *hit = true;
    return g;
  }
  // Compiled outside the lock: other schemas' requests do not wait for it.
  // Two requests with the same new schema may both compile it; the second
  // one kept replaces nothing (the first is found by keep).
  GrammarRef g = compile(key, error);
  return g ? keep(key, std::move(g)) : nullptr;
}

namespace {

// What a call grammar is made of, each part length-prefixed (so no two
// requests that differ spell the same text), as a SHA-256.
std::string tool_calls_key(const CompletionRequest& r, int syntax) {
  std::string text;
  auto add = [&text](const std::string& s) { text += std::to_string(s.size()) + ":" + s; };
  add(std::to_string(syntax));
  add(std::to_string(static_cast<int>(r.tool_choice)));
  add(r.tool_choice == ToolChoice::kNamed ? r.tool_choice_name : "");
  add(r.parallel_tool_calls ? "1" : "0");
  for (const ToolFunction& t : r.tools) {
    add(t.name);
    add(t.parameters);
  }
  char hex[65] = {};
  ember_sha256_hex(text.data(), text.size(), hex);
  return std::string("tools:") + hex;
}

}  // namespace

GrammarRef GrammarCache::compile_tool_calls(const CompletionRequest& request, int syntax, RequestError* error) {
  std::string gbnf, why;
  error->status = 400;
  error->param = "tools";
  if (!tool_call_grammar(request, syntax, &gbnf, &why)) {
    error->message = why;
    return nullptr;
  }
  if (!reserve("tools", error)) return nullptr;
  std::unique_lock<std::mutex> gate(gate_, std::defer_lock);
  if (gbnf.size() > kGateBytes) gate.lock();
  ember_grammar* g = nullptr;
  const ember_status st = ember_grammar_create(model_, gbnf.c_str(), "root", &g);
  if (st != EMBER_OK) {
    release();
    error->status = st == EMBER_ERR_INTERNAL ? 500 : 400;
    error->message = std::string("'tools': the call grammar: ") + ember_last_error();
    return nullptr;
  }
  return adopt(g, "tools", error);
}

GrammarRef GrammarCache::get_tool_calls(const CompletionRequest& request, int syntax, bool* hit, RequestError* error) {
  if (hit) *hit = false;
  const std::string key = tool_calls_key(request, syntax);
  if (GrammarRef g = find(key)) {
    if (hit) *hit = true;
    return g;
  }
  GrammarRef g = compile_tool_calls(request, syntax, error);
  return g ? keep(key, std::move(g)) : nullptr;
}

}  // namespace ember::serve

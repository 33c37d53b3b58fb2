#include "tools/serve/metrics.h"

#include <cstdio>

namespace ember::serve {

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::write(std::string* out, const std::string& name) const {
  char line[256];
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), bounds_[i],
                  static_cast<unsigned long long>(cumulative));
    out->append(line);
  }
  std::snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name.c_str(),
                static_cast<unsigned long long>(count_), name.c_str(), sum_, name.c_str(),
                static_cast<unsigned long long>(count_));
  out->append(line);
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void Metrics::on_first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::on_inter_token(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  itl_.observe(seconds);
}

void Metrics::on_tokens(int32_t prompt, int32_t generated) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(prompt);
  generated_tokens_ += static_cast<uint64_t>(generated);
}

void Metrics::on_grammar_cache(bool hit) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++(hit ? grammar_hits_ : grammar_misses_);
}

void Metrics::on_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
}

std::string Metrics::render(const SchedulerStats& s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  char line[2048];
  out += "# HELP ember_requests_total HTTP requests answered, by route and status.\n"
         "# TYPE ember_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    std::snprintf(line, sizeof line, "ember_requests_total{route=\"%s\",status=\"%d\"} %llu\n", key.first.c_str(),
                  key.second, static_cast<unsigned long long>(n));
    out += line;
  }
  std::snprintf(line, sizeof line,
                "# HELP ember_prompt_tokens_total Prompt tokens run (prefilled).\n"
                "# TYPE ember_prompt_tokens_total counter\nember_prompt_tokens_total %llu\n"
                "# HELP ember_generated_tokens_total Tokens generated.\n"
                "# TYPE ember_generated_tokens_total counter\nember_generated_tokens_total %llu\n",
                static_cast<unsigned long long>(prompt_tokens_), static_cast<unsigned long long>(generated_tokens_));
  out += line;
  out += "# HELP ember_time_to_first_token_seconds From a request's acceptance to its first generated token.\n"
         "# TYPE ember_time_to_first_token_seconds histogram\n";
  ttft_.write(&out, "ember_time_to_first_token_seconds");
  out += "# HELP ember_inter_token_latency_seconds Between a request's consecutive tokens. Batched: one step "
         "decodes every active slot (and chunks of prompts being prefilled), every weight read once for all.\n";
  out += "# TYPE ember_inter_token_latency_seconds histogram\n";
  itl_.write(&out, "ember_inter_token_latency_seconds");
  std::snprintf(line, sizeof line,
                "# HELP ember_queue_depth Requests waiting for a slot.\n# TYPE ember_queue_depth gauge\n"
                "ember_queue_depth %d\n"
                "# HELP ember_slots_active Slots running a request (%s).\n"
                "# TYPE ember_slots_active gauge\nember_slots_active %d\n"
                "# HELP ember_slots Slots (--parallel).\n# TYPE ember_slots gauge\nember_slots %d\n"
                "# HELP ember_prefix_cache_slots Sequences beyond the slots that keep cached prefixes (--cache-slots).\n"
                "# TYPE ember_prefix_cache_slots gauge\nember_prefix_cache_slots %d\n"
                "# HELP ember_kv_bytes_in_use KV cache bytes holding positions (running requests and cached "
                "prefixes).\n"
                "# TYPE ember_kv_bytes_in_use gauge\nember_kv_bytes_in_use %llu\n"
                "# HELP ember_kv_bytes_planned KV cache bytes of all sequences, as planned.\n"
                "# TYPE ember_kv_bytes_planned gauge\nember_kv_bytes_planned %llu\n"
                "# HELP ember_prefix_cache_hits_total Requests whose prompt began with positions the prefix cache "
                "held (reused, not run again).\n"
                "# TYPE ember_prefix_cache_hits_total counter\nember_prefix_cache_hits_total %llu\n"
                "# HELP ember_prefix_cache_tokens_total Prompt tokens reused from the prefix cache.\n"
                "# TYPE ember_prefix_cache_tokens_total counter\nember_prefix_cache_tokens_total %llu\n"
                "# HELP ember_prefix_cache_evictions_total Cached sequences overwritten, least recently used first.\n"
                "# TYPE ember_prefix_cache_evictions_total counter\nember_prefix_cache_evictions_total %llu\n",
                s.queued, "batched", s.active, s.slots, s.cache_slots,
                static_cast<unsigned long long>(s.kv_bytes_in_use), static_cast<unsigned long long>(s.kv_bytes_planned),
                static_cast<unsigned long long>(s.prefix_cache_hits),
                static_cast<unsigned long long>(s.prefix_cache_tokens),
                static_cast<unsigned long long>(s.prefix_cache_evictions));
  out += line;
  std::snprintf(line, sizeof line,
                "# HELP ember_grammar_cache_hits_total response_format requests whose grammar was compiled "
                "already (kept by schema text).\n"
                "# TYPE ember_grammar_cache_hits_total counter\nember_grammar_cache_hits_total %llu\n"
                "# HELP ember_grammar_cache_misses_total response_format requests whose grammar was compiled for "
                "them.\n"
                "# TYPE ember_grammar_cache_misses_total counter\nember_grammar_cache_misses_total %llu\n",
                static_cast<unsigned long long>(grammar_hits_), static_cast<unsigned long long>(grammar_misses_));
  out += line;
  return out;
}

}  // namespace ember::serve

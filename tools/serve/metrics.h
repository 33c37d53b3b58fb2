// /metrics for `ember serve`: Prometheus text exposition, names prefixed
// ember_. Thread-safe: the connection threads count requests, the scheduler
// thread reports tokens and latencies.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tools/serve/scheduler.h"

namespace ember::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  void write(std::string* out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics final : public SchedulerObserver {
 public:
  Metrics();
  void on_first_token(double seconds) override;
  void on_inter_token(double seconds) override;
  void on_tokens(int32_t prompt, int32_t generated) override;
  void on_request(const std::string& route, int status);
  // A request's response_format grammar: found in the cache, or compiled.
  void on_grammar_cache(bool hit);
  std::string render(const SchedulerStats& s) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  uint64_t grammar_hits_ = 0, grammar_misses_ = 0;
  Histogram ttft_, itl_;
};

}  // namespace ember::serve

// What `ember bench` measures besides the model: the machine (CPU, cores,
// memory, a read-bandwidth probe), the process (peak RSS), summary
// statistics, and a small JSON writer. Linux only (reads /proc and /sys);
// elsewhere fields read as unknown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cli {

struct HardwareInfo {
  std::string cpu_model = "unknown";
  int physical_cores = 0;
  int logical_threads = 0;
  double memory_capacity_gb = 0;   // MemTotal, 10^9 bytes
  std::string cpu_features;        // the SIMD features kernels care about
  int numa_nodes = 1;
  std::string cpu_affinity;        // this process's allowed CPUs, "0-1"
  std::string mems_allowed;        // this process's allowed NUMA nodes
};

HardwareInfo probe_hardware();

// Multi-threaded read bandwidth: `threads` threads sum disjoint slices of a
// `buffer_bytes` buffer (much larger than the caches; 2 MiB pages where the
// kernel gives them, as the weights are mapped), `passes` times; the best
// pass wins (the least disturbed by neighbours). GB/s, 10^9 bytes; 0 when
// the buffer cannot be mapped.
double probe_read_bandwidth_gbs(int threads, uint64_t buffer_bytes, int passes);

// Resets the process's peak RSS (VmHWM) to its current RSS; false where the
// kernel does not allow it.
bool reset_peak_rss();

// Peak resident set size of this process (VmHWM), bytes; 0 if unknown.
uint64_t peak_rss_bytes();

struct Stats {
  double mean = 0, sd = 0;  // sample standard deviation (n - 1); 0 for n < 2
};
Stats stats_of(const std::vector<double>& v);
// The q-quantile (0..1) by linear interpolation; 0 for an empty vector.
double percentile(std::vector<double> v, double q);

// A JSON object writer: keys in insertion order, numbers printed with enough
// digits, strings escaped.
class Json {
 public:
  Json& begin_object(const char* key = nullptr);
  Json& end_object();
  Json& begin_array(const char* key);
  Json& end_array();
  Json& num(const char* key, double v, int decimals = 3);
  Json& integer(const char* key, int64_t v);
  Json& str(const char* key, const std::string& v);
  Json& boolean(const char* key, bool v);
  std::string text() const { return out_ + "\n"; }

 private:
  void sep(const char* key);
  std::string out_;
  std::vector<bool> first_{true};
  int depth_ = 0;
};

}  // namespace ember::cli

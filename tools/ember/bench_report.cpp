#include "tools/ember/bench_report.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

namespace ember::cli {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  const size_t b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "key : value" lines of /proc files.
std::string field_value(const std::string& line) {
  const size_t colon = line.find(':');
  return colon == std::string::npos ? "" : trim(line.substr(colon + 1));
}

std::string status_field(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0 && line.size() > std::strlen(key) && line[std::strlen(key)] == ':') {
      return field_value(line);
    }
  }
  return "";
}

// Sums a slice as 64-bit words with independent accumulators, so the loop is
// bound by memory, not by the add chain. Cloned per ISA on x86-64 so the
// probe reads with the widest loads the CPU has (the kernels will too).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a0 += p[i]; a1 += p[i + 1]; a2 += p[i + 2]; a3 += p[i + 3];
    a4 += p[i + 4]; a5 += p[i + 5]; a6 += p[i + 6]; a7 += p[i + 7];
  }
  for (; i < n; ++i) a0 += p[i];
  return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

}  // namespace

HardwareInfo probe_hardware() {
  HardwareInfo h;
  std::ifstream in("/proc/cpuinfo");
  std::string line, phys = "0";
  std::set<std::string> cores;
  std::string flags;
  while (std::getline(in, line)) {
    if (line.rfind("processor", 0) == 0) {
      h.logical_threads++;
    } else if (line.rfind("model name", 0) == 0 && h.cpu_model == "unknown") {
      h.cpu_model = field_value(line);
    } else if (line.rfind("physical id", 0) == 0) {
      phys = field_value(line);
    } else if (line.rfind("core id", 0) == 0) {
      cores.insert(phys + ":" + field_value(line));
    } else if ((line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) && flags.empty()) {
      flags = " " + field_value(line) + " ";
    } else if (line.rfind("CPU part", 0) == 0 && h.cpu_model == "unknown") {
      h.cpu_model = "ARM part " + field_value(line);  // ARM kernels name no model
    }
  }
  h.physical_cores = cores.empty() ? h.logical_threads : static_cast<int>(cores.size());
  if (h.logical_threads == 0) {
    h.logical_threads = static_cast<int>(std::thread::hardware_concurrency());
    h.physical_cores = h.logical_threads;
  }
  for (const char* f : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
                        "avx512_vnni", "avx512_bf16", "amx_int8", "asimd", "asimddp", "asimdhp", "fphp", "i8mm",
                        "sve"}) {
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) {
      if (!h.cpu_features.empty()) h.cpu_features += " ";
      h.cpu_features += f;
    }
  }
  std::ifstream mem("/proc/meminfo");
  while (std::getline(mem, line)) {
    if (line.rfind("MemTotal:", 0) == 0) h.memory_capacity_gb = std::atof(field_value(line).c_str()) * 1024 / 1e9;
  }
  int nodes = 0;
  for (int n = 0; n < 1024; ++n) {
    struct stat st;
    const std::string p = "/sys/devices/system/node/node" + std::to_string(n);
    if (::stat(p.c_str(), &st) != 0) break;
    ++nodes;
  }
  h.numa_nodes = nodes > 0 ? nodes : 1;
  h.cpu_affinity = status_field("Cpus_allowed_list");
  h.mems_allowed = status_field("Mems_allowed_list");
  return h;
}

namespace {

// The probe's buffer, mapped as the weights are (platforms/linux/
// mapped_file.cpp): at a 2 MiB boundary with MADV_HUGEPAGE, so the probe
// reads through the same page size as decode does (on 4 KiB pages it read
// ~25% slower here, and decode appeared to beat it).
class ProbeBuffer {
 public:
  explicit ProbeBuffer(size_t bytes) : span_bytes_(bytes + kHuge) {
    void* p = mmap(nullptr, span_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    span_ = p;
    const uintptr_t at = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t{kHuge - 1};
    data_ = reinterpret_cast<uint64_t*>(at);
#ifdef MADV_HUGEPAGE
    madvise(data_, bytes, MADV_HUGEPAGE);
#endif
  }
  ~ProbeBuffer() {
    if (span_) munmap(span_, span_bytes_);
  }
  ProbeBuffer(const ProbeBuffer&) = delete;
  ProbeBuffer& operator=(const ProbeBuffer&) = delete;
  uint64_t* data() const { return data_; }

 private:
  static constexpr size_t kHuge = size_t{2} << 20;
  size_t span_bytes_;
  void* span_ = nullptr;
  uint64_t* data_ = nullptr;
};

}  // namespace

double probe_read_bandwidth_gbs(int threads, uint64_t buffer_bytes, int passes) {
  threads = std::max(1, threads);
  const size_t words = static_cast<size_t>(buffer_bytes / 8 / threads / 64 * 64) * threads;
  if (words == 0) return 0;
  const ProbeBuffer buf(words * 8);
  if (!buf.data()) return 0;
  const size_t slice = words / threads;
  std::vector<double> pass_s(passes, 0);
  std::barrier sync(threads);
  volatile uint64_t sink = 0;
  auto worker = [&](int t) {
    uint64_t* p = buf.data() + t * slice;
    for (size_t i = 0; i < slice; ++i) p[i] = i ^ t;  // first touch by the reader (its NUMA node)
    uint64_t acc = 0;
    for (int pass = 0; pass < passes; ++pass) {
      sync.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      acc += sum_words(p, slice);
      sync.arrive_and_wait();
      if (t == 0) pass_s[pass] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    sink = sink + acc;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  const double best = *std::min_element(pass_s.begin(), pass_s.end());
  return best > 0 ? static_cast<double>(words * 8) / best / 1e9 : 0;
}

bool reset_peak_rss() {
  // Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

uint64_t peak_rss_bytes() {
  const std::string v = status_field("VmHWM");  // "123456 kB"
  return v.empty() ? 0 : static_cast<uint64_t>(std::strtoull(v.c_str(), nullptr, 10)) * 1024;
}

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

void Json::sep(const char* key) {
  if (!first_.back()) out_ += ",";
  first_.back() = false;
  out_ += "\n" + std::string(2 * depth_, ' ');
  if (key) {
    out_ += "\"";
    out_ += key;
    out_ += "\": ";
  }
}

Json& Json::begin_object(const char* key) {
  if (depth_ > 0 || !out_.empty()) sep(key);
  out_ += "{";
  first_.push_back(true);
  ++depth_;
  return *this;
}

Json& Json::end_object() {
  --depth_;
  first_.pop_back();
  out_ += "\n" + std::string(2 * depth_, ' ') + "}";
  return *this;
}

Json& Json::begin_array(const char* key) {
  sep(key);
  out_ += "[";
  first_.push_back(true);
  ++depth_;
  return *this;
}

Json& Json::end_array() {
  --depth_;
  first_.pop_back();
  out_ += "\n" + std::string(2 * depth_, ' ') + "]";
  return *this;
}

Json& Json::num(const char* key, double v, int decimals) {
  sep(key);
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    out_ += buf;
  }
  return *this;
}

Json& Json::integer(const char* key, int64_t v) {
  sep(key);
  out_ += std::to_string(v);
  return *this;
}

Json& Json::str(const char* key, const std::string& v) {
  sep(key);
  out_ += "\"";
  for (const unsigned char c : v) {
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out_ += buf;
    } else {
      out_ += static_cast<char>(c);
    }
  }
  out_ += "\"";
  return *this;
}

Json& Json::boolean(const char* key, bool v) {
  sep(key);
  out_ += v ? "true" : "false";
  return *this;
}

}  // namespace ember::cli

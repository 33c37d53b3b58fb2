#include "tools/ember/args.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ember.h"

namespace ember::cli {

Args::Args(int argc, char** argv, std::vector<std::string> with_value) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1]))))) {
      std::string value;
      const size_t eq = a.find('=');
      if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        flags_.emplace_back(a, value);
        continue;
      }
      if (std::find(with_value.begin(), with_value.end(), a) != with_value.end()) {
        if (i + 1 >= argc) {
          error_ = "option " + a + " needs a value";
          return;
        }
        value = argv[++i];
      }
      flags_.emplace_back(a, value);
    } else {
      positionals_.push_back(a);
    }
  }
}

std::vector<std::string> Args::get_all(const std::string& flag) const {
  std::vector<std::string> out;
  for (const auto& f : flags_) {
    if (f.first == flag) out.push_back(f.second);
  }
  return out;
}

bool Args::has(const std::string& flag) const {
  for (const auto& f : flags_) {
    if (f.first == flag) return true;
  }
  return false;
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  std::string v = fallback;
  for (const auto& f : flags_) {
    if (f.first == flag) v = f.second;  // the last one wins
  }
  return v;
}

int64_t Args::get_int(const std::string& flag, int64_t fallback, int64_t min, int64_t max) {
  if (!has(flag)) return fallback;
  const std::string s = get(flag);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    if (error_.empty()) {
      error_ = "option " + flag + " = '" + s + "': expected an integer in " + std::to_string(min) + ".." +
               std::to_string(max);
    }
    return fallback;
  }
  return v;
}

double Args::get_float(const std::string& flag, double fallback, double min, double max) {
  if (!has(flag)) return fallback;
  const std::string s = get(flag);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < min || v > max) {
    if (error_.empty()) {
      char range[96];
      std::snprintf(range, sizeof range, "%g..%g", min, max);
      error_ = "option " + flag + " = '" + s + "': expected a number in " + range;
    }
    return fallback;
  }
  return v;
}

bool Args::check_known(const std::vector<std::string>& known) {
  for (const auto& f : flags_) {
    if (std::find(known.begin(), known.end(), f.first) == known.end()) {
      if (error_.empty()) error_ = "unknown option " + f.first;
      return false;
    }
  }
  return ok();
}

int report(int status, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", ember_status_string(static_cast<ember_status>(status)), message.c_str());
  return 1;
}

int report_last(int status) { return report(status, ember_last_error()); }

}  // namespace ember::cli

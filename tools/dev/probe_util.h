// Helpers shared by the developer probes in tools/dev (not part of ember).
#pragma once

#include <chrono>
#include <cstring>

namespace ember::probe {

inline double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The value after `name` on the command line, or `def`.
inline const char* arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return def;
}

}  // namespace ember::probe

// The one way tests reach ../shared: EMBER_TEST_DATA names the directory
// (default: ../shared beside the checkout). When a file is missing the test
// is skipped with a message — unless EMBER_REQUIRE_TEST_DATA=1 (CI), where a
// missing file fails the test loudly.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

namespace ember::test {

inline std::string test_data_dir() {
  if (const char* dir = std::getenv("EMBER_TEST_DATA"); dir && *dir) return dir;
  return std::string(EMBER_SOURCE_DIR) + "/../shared";
}

inline bool test_data_required() {
  const char* v = std::getenv("EMBER_REQUIRE_TEST_DATA");
  return v && std::string(v) == "1";
}

// Full path of `relative` under the test data directory, or "" when it is
// missing and not required (the caller returns early).
inline std::string test_data(const std::string& relative) {
  std::string path = test_data_dir() + "/" + relative;
  if (std::filesystem::exists(path)) return path;
  if (test_data_required()) {
    FAIL("test data missing: " << path << " (EMBER_REQUIRE_TEST_DATA=1)");
  } else {
    MESSAGE("skipped: test data missing: " << path);
  }
  return "";
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh scratch directory for a test's files.
// The directories temp_dir made in this process: removed when it exits
// (ctest runs every case as its own process; left behind, a full run's
// directories came to gigabytes and filled the disk).
inline std::vector<std::string>& temp_dirs_made() {
  static std::vector<std::string>* made = [] {
    auto* v = new std::vector<std::string>();
    static const pid_t owner = ::getpid();
    std::atexit([] {
      if (::getpid() != owner) return;  // a forked child's exit leaves them to its parent
      for (const std::string& d : temp_dirs_made()) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    });
    return v;
  }();
  return *made;
}

inline std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ember-test-" + name + "-" +
                                                       std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<std::string>& made = temp_dirs_made();
  if (std::find(made.begin(), made.end(), dir.string()) == made.end()) made.push_back(dir.string());
  return dir.string();
}

}  // namespace ember::test

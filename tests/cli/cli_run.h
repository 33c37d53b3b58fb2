// Runs the `ember` binary as a user would, through the shell, and captures
// its exit code, stdout and stderr.
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "test_data.h"

namespace ember::test {

struct CliRun {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `env`: assignments put before the command ("EMBER_CACHE_DIR=/tmp/x").
inline CliRun run_ember(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const std::string err_path = temp_dir("cli") + "/stderr-" + std::to_string(counter++);
  CliRun r;
  const std::string cmd = (env.empty() ? "" : env + " ") + EMBER_CLI_PATH + " " + args + " 2>" + err_path;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_text_file(err_path);
  return r;
}

}  // namespace ember::test

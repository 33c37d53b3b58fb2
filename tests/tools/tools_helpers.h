// Shared by the tools suites: running the `ember` CLI and small model
// fixtures made in a scratch directory.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "format/model_file.h"
#include "test_data.h"
#include "tools/convert/synthetic.h"

namespace ember::test {

struct CliResult {
  int rc = -1;
  std::string out;  // stdout (stderr goes to the test's stderr unless redirected)
};

// Runs `ember ARGS` (the binary this build made) through the shell.
inline CliResult run_cli(const std::string& args) {
  CliResult r;
  const std::string cmd = std::string(EMBER_CLI_PATH) + " " + args;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  r.rc = pclose(p);
  return r;
}

// A synthetic model of `shape` written as .ember (built-in vocabulary).
inline std::string synth_ember(const std::string& dir, const SynthShape& shape, DType dtype, uint64_t seed,
                               const std::string& name) {
  auto m = make_synthetic(shape, dtype, seed, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const std::string path = dir + "/" + name;
  const Status s = write_model(m.value()->spec, path);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  return path;
}

inline std::string data_digest(const std::string& ember_path) {
  auto f = ModelFile::open(ember_path, ModelFile::Options{});
  REQUIRE_MESSAGE(f.is_ok(), f.status().message());
  return to_hex(f.value()->contents().data_sha256.data(), 32);
}

}  // namespace ember::test

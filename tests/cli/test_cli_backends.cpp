// `ember backends --json | --markdown`: the backend tracking table, one row
// per backend with the device its probe found.
#include <doctest/doctest.h>

#include <string>

#include "backend/backend.h"
#include "cli/cli_run.h"

TEST_SUITE("cli") {

TEST_CASE("backends --json and --markdown: a row per backend, every column of the tracking table") {
  const auto j = ember::test::run_ember("backends --json");
  REQUIRE_MESSAGE(j.code == 0, j.err);
  for (const char* key : {"backend", "support_status", "device_type", "device", "memory_bytes", "quantizations",
                          "kv_types", "families", "continuous_batching", "readiness", "why_not"}) {
    CHECK_MESSAGE(j.out.find(std::string("\"") + key + "\":") != std::string::npos, key);
  }
  CHECK(j.out.find("\"backend\": \"cpu\"") != std::string::npos);
  CHECK(j.out.find("\"backend\": \"vulkan\"") != std::string::npos);  // built in, or listed as not built
  // Both backends run batched sequences (their entries' capabilities); a
  // vulkan that is not built says no.
  CHECK(j.out.find("\"continuous_batching\": \"yes") != std::string::npos);  // cpu
#if EMBER_VULKAN
  CHECK(j.out.find("\"continuous_batching\": \"no") == std::string::npos);
  const auto text = ember::test::run_ember("backends");
  CHECK(text.out.find("vulkan: weight types") != std::string::npos);
  CHECK(text.out.find("batched sequences yes\n") != std::string::npos);
  CHECK(text.out.find("batched sequences no") == std::string::npos);
#else
  CHECK(j.out.find("\"continuous_batching\": \"no") != std::string::npos);
#endif
  CHECK(j.out.find("q4_k") != std::string::npos);
  // The cpu row says what the probe found: this machine's memory.
  const ember::DeviceInfo cpu = ember::find_backend(ember::BackendKind::Cpu)->probe();
  CHECK(j.out.find("\"memory_bytes\": " + std::to_string(cpu.memory_bytes)) != std::string::npos);

  const auto md = ember::test::run_ember("backends --markdown");
  REQUIRE(md.code == 0);
  CHECK(md.out.rfind("| Backend | Device | Support status | Available quantization | Model families | "
                     "Continuous batching | Production readiness |\n|---|", 0) == 0);
  CHECK(md.out.find("\n| cpu | ") != std::string::npos);
  CHECK(md.out.find("\n| vulkan | ") != std::string::npos);

  const auto both = ember::test::run_ember("backends --json --markdown");
  CHECK(both.code != 0);
  CHECK(both.err.rfind("EMBER_ERR_INVALID_ARGUMENT: ", 0) == 0);
}

}  // TEST_SUITE

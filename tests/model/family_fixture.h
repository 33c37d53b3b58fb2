// Shared by the model-family tests (llama3, qwen2, qwen3, phi3): the logits
// of one prefill through the C API, and Vulkan (lavapipe) against the CPU on
// the same graph.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ember.h"
#include "model/llama_graph.h"
#include "model/model.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "vulkan/vulkan_fixture.h"

namespace ember::test {

// Logits of `tokens` as one prefill, from an .ember file on the CPU (2 threads).
inline std::vector<float> prefill_logits(const std::string& path, const std::vector<int32_t>& tokens) {
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_threads = 2;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  std::vector<float> out(info.vocab_size);
  REQUIRE(ember_session_prefill(s, tokens.data(), static_cast<int32_t>(tokens.size()), out.data()) == EMBER_OK);
  ember_session_free(s);
  ember_model_free(m);
  return out;
}

#if EMBER_VULKAN
// `spec` written to an .ember file, its graph (context 32, batch 8) run on
// the CPU and on Vulkan: a 5-token prefill then one decode step, logits
// within 1e-4. Returns quietly without a Vulkan device (as the other
// lavapipe tests do).
inline void check_vulkan_matches_cpu(const ModelSpec& spec, const std::string& dir_name) {
  auto vk = open_vulkan();
  if (!vk) return;
  const std::string path = temp_dir(dir_name) + "/m.ember";
  REQUIRE(write_model(spec, path).is_ok());
  auto opened = Model::open(path, Model::Options{});
  REQUIRE(opened.is_ok());
  auto g = build_llama_graph(opened.value()->file().contents(), 32, 8);
  REQUIRE(g.is_ok());
  Runner cpu, gpu;
  REQUIRE(cpu.init(g.value(), cpu_backend()).is_ok());
  REQUIRE(gpu.init(g.value(), std::move(vk)).is_ok());
  std::vector<float> lc, lg;
  int32_t pos = 0;
  for (const std::vector<int32_t>& t : {std::vector<int32_t>{1, 40, 41, 42, 43}, std::vector<int32_t>{44}}) {
    REQUIRE(cpu.step(t, pos, &lc).is_ok());
    REQUIRE(gpu.step(t, pos, &lg).is_ok());
    CHECK(max_abs_diff(lc, lg) < 1e-4);
    pos += static_cast<int32_t>(t.size());
  }
}
#endif

}  // namespace ember::test

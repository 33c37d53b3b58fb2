// libFuzzer: ember_session_load_buffer on hostile bytes. The first byte picks
// the mode: raw input as the state; or a valid state saved in
// LLVMFuzzerInitialize with input-chosen bytes overwritten, with its SHA-256
// recomputed (so the checks after the checksum are reached too: the
// compatibility fields, token ids, payload sizes); or a valid state cut
// short. Every load must return a status, never crash; after a failure the
// session must be as it was.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "security/sha256.h"
#include "tools/convert/synthetic.h"

namespace {

ember_model* g_model = nullptr;
ember_session* g_session = nullptr;
std::vector<uint8_t> g_state;  // a valid state of g_session's shape
int32_t g_saved_pos = 0;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ember::SynthShape shape;
  if (!ember::synth_shape("tiny", &shape)) std::abort();
  auto m = ember::make_synthetic(shape, ember::DType::F32, 5, "");
  if (!m.is_ok()) std::abort();
  const std::string path = "/tmp/ember-fuzz-session-state-" + std::to_string(getpid()) + ".ember";
  if (!ember::write_model(m.value()->spec, path).is_ok()) std::abort();
  if (ember_model_open(path.c_str(), nullptr, &g_model) != EMBER_OK) std::abort();
  std::remove(path.c_str());  // the mapping keeps the inode
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 16;
  so.n_threads = 1;
  if (ember_session_create(g_model, &so, &g_session) != EMBER_OK) std::abort();
  const int32_t prompt[] = {1, 2, 3, 4, 5};
  if (ember_session_prefill(g_session, prompt, 5, nullptr) != EMBER_OK) std::abort();
  size_t n = 0;
  ember_session_save_buffer(g_session, nullptr, 0, &n);
  g_state.resize(n);
  if (ember_session_save_buffer(g_session, g_state.data(), n, &n) != EMBER_OK) std::abort();
  g_saved_pos = ember_session_position(g_session);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> state;
  FuzzedDataProvider in(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: state.assign(data + 1, data + size); break;
    case 1: {
      state = g_state;
      while (in.remaining_bytes() >= 2) {
        const size_t at = in.ConsumeIntegralInRange<size_t>(0, state.size() - 33);
        state[at] = in.ConsumeIntegral<uint8_t>();
      }
      const ember::Sha256Digest d = ember::sha256(state.data(), state.size() - 32);
      std::memcpy(state.data() + state.size() - 32, d.data(), 32);
      break;
    }
    default: state.assign(g_state.begin(), g_state.begin() + in.ConsumeIntegralInRange<size_t>(0, g_state.size()));
  }
  const ember_status st = ember_session_load_buffer(g_session, state.data(), state.size());
  if (st != EMBER_OK) {
    if (ember_last_error()[0] == '\0') std::abort();
    if (ember_session_position(g_session) != g_saved_pos) std::abort();  // a failed load changed the session
  } else if (ember_session_load_buffer(g_session, g_state.data(), g_state.size()) != EMBER_OK) {
    std::abort();  // back to the saved state for the next input
  }
  return 0;
}

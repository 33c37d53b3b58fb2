// libFuzzer: the C API's numeric parameters on a tiny synthetic model:
// session options (context, batch, threads, KV types, backend, arena size,
// memory cap), token ids (negative, huge, outside the vocabulary), removal
// ranges, generate and sampler options (negative, zero, huge, NaN, inf),
// buffer capacities. Every call must return a status, never crash.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "ember.h"
#include "format/model_file.h"
#include "tools/convert/synthetic.h"

namespace {

ember_model* g_model = nullptr;
int32_t g_vocab = 0;

float fuzz_float(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -std::numeric_limits<float>::infinity();
    case 3: return in.ConsumeFloatingPointInRange<float>(-2.0f, 2.0f);
    default: return in.ConsumeFloatingPoint<float>();
  }
}

int32_t fuzz_int(FuzzedDataProvider& in, int32_t lo, int32_t hi) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return in.ConsumeIntegral<int32_t>();
    case 1: return in.PickValueInArray({0, -1, 1, INT32_MAX, INT32_MIN});
    default: return in.ConsumeIntegralInRange<int32_t>(lo, hi);
  }
}

int generate_cb(void* user, int32_t, const char*, size_t) {
  int* budget = static_cast<int*>(user);
  return --*budget <= 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ember::SynthShape shape;
  if (!ember::synth_shape("tiny", &shape)) std::abort();
  auto m = ember::make_synthetic(shape, ember::DType::F32, 5, "");
  if (!m.is_ok()) std::abort();
  const std::string path = "/tmp/ember-fuzz-c-api-" + std::to_string(getpid()) + ".ember";
  if (!ember::write_model(m.value()->spec, path).is_ok()) std::abort();
  if (ember_model_open(path.c_str(), nullptr, &g_model) != EMBER_OK) std::abort();
  std::remove(path.c_str());  // the mapping keeps the inode
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(g_model, &info);
  g_vocab = info.vocab_size;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = fuzz_int(in, -4, 300);
  so.max_batch = fuzz_int(in, -4, 600);
  so.n_threads = fuzz_int(in, -2, 3);
  // Valid counts above 4 would start that many threads per input: too slow to fuzz;
  // counts outside 0..1024 stay (they must be refused).
  if (so.n_threads > 4 && so.n_threads <= 1024) so.n_threads = 1;
  so.kv_type_k = fuzz_int(in, -1, 3);
  so.kv_type_v = fuzz_int(in, -1, 3);
  so.backend = in.ConsumeBool() ? EMBER_BACKEND_CPU : fuzz_int(in, -1, 3);
  so.max_bytes = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint64_t>();
  if (in.ConsumeBool()) so.struct_size = in.ConsumeIntegralInRange<size_t>(0, sizeof so + 16);
  std::vector<uint8_t> arena_storage;
  if (in.ConsumeBool()) {
    // A caller arena of a fuzzed size (at most 8 MiB actually backed).
    const size_t want = in.ConsumeIntegralInRange<size_t>(0, size_t(8) << 20);
    arena_storage.resize(want + 64);
    uintptr_t p = reinterpret_cast<uintptr_t>(arena_storage.data());
    so.arena = reinterpret_cast<void*>((p + 63) / 64 * 64 + (in.ConsumeBool() ? 0 : 1));
    so.arena_size = want;
  }
  ember_memory_plan plan;
  plan.struct_size = in.ConsumeBool() ? sizeof plan : in.ConsumeIntegralInRange<size_t>(0, sizeof plan + 8);
  (void)ember_plan(g_model, &so, &plan);

  ember_session* s = nullptr;
  if (ember_session_create(g_model, &so, &s) == EMBER_OK) {
    std::vector<float> logits(static_cast<size_t>(g_vocab));
    for (int step = 0; step < 4 && in.remaining_bytes() > 0; ++step) {
      const size_t n = in.ConsumeIntegralInRange<size_t>(0, 40);
      std::vector<int32_t> ids(n);
      for (auto& id : ids) id = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, g_vocab - 1) : fuzz_int(in, -2, g_vocab + 2);
      switch (in.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: (void)ember_session_prefill(s, n ? ids.data() : nullptr, n, in.ConsumeBool() ? logits.data() : nullptr); break;
        case 1: (void)ember_session_decode(s, n ? ids[0] : fuzz_int(in, -1, g_vocab), logits.data()); break;
        case 2: (void)ember_session_remove(s, fuzz_int(in, -1, 40), fuzz_int(in, -1, 40)); break;
        default: (void)ember_session_reset(s); break;
      }
    }
    ember_generate_options g;
    ember_generate_options_default(&g);
    g.max_new_tokens = in.ConsumeIntegralInRange<int32_t>(-2, 6);
    g.temperature = fuzz_float(in);
    g.top_k = fuzz_int(in, -1, g_vocab + 1);
    g.top_p = fuzz_float(in);
    g.min_p = fuzz_float(in);
    g.repeat_penalty = fuzz_float(in);
    g.repeat_last_n = fuzz_int(in, -1, 100);
    g.seed = in.ConsumeIntegral<uint64_t>();
    g.add_bos = in.ConsumeBool();
    g.context_shift = in.ConsumeBool();
    int budget = 8;
    const std::string prompt = in.ConsumeRandomLengthString(32);
    (void)ember_generate(s, prompt.c_str(), &g, generate_cb, &budget);

    ember_sampler* sampler = nullptr;
    if (ember_sampler_create(g_model, &g, &sampler) == EMBER_OK) {
      for (auto& v : logits) v = in.ConsumeBool() ? fuzz_float(in) : 0.0f;
      std::vector<int32_t> hist(in.ConsumeIntegralInRange<size_t>(0, 8));
      for (auto& h : hist) h = fuzz_int(in, -1, g_vocab + 1);
      int32_t tok = 0;
      (void)ember_sampler_sample(sampler, logits.data(), hist.empty() ? nullptr : hist.data(), hist.size(), &tok);
      if (tok < 0 || tok >= g_vocab) std::abort();  // a sampled token outside the vocabulary
      ember_sampler_free(sampler);
    }
    ember_session_free(s);
  }
  // Tokenizer entry points: capacities and ids.
  const std::string text = in.ConsumeRandomLengthString(64);
  std::vector<int32_t> toks(in.ConsumeIntegralInRange<size_t>(0, 80));
  size_t count = 0;
  (void)ember_tokenize(g_model, text.data(), text.size(), in.ConsumeBool(), toks.empty() ? nullptr : toks.data(),
                       toks.size(), &count);
  for (auto& t : toks) t = fuzz_int(in, -1, g_vocab + 1);
  std::vector<char> buf(in.ConsumeIntegralInRange<size_t>(0, 256));
  size_t len = 0;
  (void)ember_detokenize(g_model, toks.empty() ? nullptr : toks.data(), toks.size(), buf.empty() ? nullptr : buf.data(),
                         buf.size(), &len);
  (void)ember_token_to_piece(g_model, fuzz_int(in, -1, g_vocab), fuzz_int(in, -1, g_vocab + 1),
                             buf.empty() ? nullptr : buf.data(), buf.size(), &len);
  return 0;
}

// Batched decoding (issue 15): several sequences of one session run as one
// step through ember_session_decode_batch. Each sequence's logits must be
// exactly those the same tokens give in a session of its own, whatever the
// other sequences do, where a step's rows are cut, and when a sequence
// joins, leaves, or starts from a copied prefix.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "model/stories_fixture.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"
#include "tools/tools_helpers.h"

namespace {

struct Model {
  ember_model* m = nullptr;
  int32_t vocab = 0;
  explicit Model(const std::string& path) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
    vocab = info.vocab_size;
  }
  ~Model() { ember_model_free(m); }
};

ember_session* make_session(const Model& model, int32_t n_seqs, int32_t context, int32_t max_batch,
                            int32_t n_threads = 2, int32_t kv = EMBER_KV_F32) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.n_seqs = n_seqs;
  so.context_length = context;
  so.max_batch = max_batch;
  so.n_threads = n_threads;
  so.kv_type_k = kv;
  so.kv_type_v = kv;
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(model.m, &so, &s) == EMBER_OK, ember_last_error());
  return s;
}

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

// A sequence's greedy run: the prompt's logits, then each generated token's.
struct Run {
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> tokens;
};

// The reference: the prompt alone in a one-sequence session, then n_new
// greedy decode steps.
Run alone(const Model& model, const std::vector<int32_t>& prompt, int n_new, int32_t context, int32_t kv) {
  ember_session* s = make_session(model, 1, context, 512, 2, kv);
  Run r;
  std::vector<float> l(model.vocab);
  REQUIRE(ember_session_prefill(s, prompt.data(), prompt.size(), l.data()) == EMBER_OK);
  r.logits.push_back(l);
  for (int i = 0; i < n_new; ++i) {
    const int32_t t = argmax(l);
    r.tokens.push_back(t);
    REQUIRE(ember_session_decode(s, t, l.data()) == EMBER_OK);
    r.logits.push_back(l);
  }
  ember_session_free(s);
  return r;
}

// Every prompt through one batched session: sequence i joins at step
// join[i] (its whole prompt is an item beside the others' decode tokens),
// then decodes greedily until it has n_new tokens.
std::vector<Run> batched(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                         const std::vector<int>& join, int n_new, int32_t context, int32_t max_batch, int32_t kv) {
  const size_t n = prompts.size();
  ember_session* s = make_session(model, static_cast<int32_t>(n), context, max_batch, 2, kv);
  std::vector<Run> runs(n);
  std::vector<std::vector<float>> out(n, std::vector<float>(model.vocab));
  std::vector<int32_t> next(n, -1);
  for (int step = 0;; ++step) {
    std::vector<ember_batch_item> items;
    for (size_t i = 0; i < n; ++i) {
      ember_batch_item it{};
      it.seq = static_cast<int32_t>(i);
      it.logits = out[i].data();
      if (step == join[i]) {
        it.tokens = prompts[i].data();
        it.n_tokens = prompts[i].size();
      } else if (step > join[i] && static_cast<int>(runs[i].tokens.size()) < n_new) {
        next[i] = argmax(runs[i].logits.back());
        runs[i].tokens.push_back(next[i]);
        it.tokens = &next[i];
        it.n_tokens = 1;
      } else {
        continue;
      }
      items.push_back(it);
    }
    if (items.empty() && step > *std::max_element(join.begin(), join.end())) break;
    if (items.empty()) continue;
    REQUIRE_MESSAGE(ember_session_decode_batch(s, items.data(), items.size()) == EMBER_OK, ember_last_error());
    for (const ember_batch_item& it : items) runs[it.seq].logits.push_back(out[it.seq]);
  }
  for (size_t i = 0; i < n; ++i) {
    CHECK(ember_session_seq_position(s, static_cast<int32_t>(i)) ==
          static_cast<int32_t>(prompts[i].size()) + n_new);
  }
  ember_session_free(s);
  return runs;
}

void check_same(const Run& want, const Run& got) {
  REQUIRE(got.logits.size() == want.logits.size());
  CHECK(got.tokens == want.tokens);
  for (size_t k = 0; k < want.logits.size(); ++k) {
    INFO("step ", k);
    CHECK(std::memcmp(got.logits[k].data(), want.logits[k].data(), want.logits[k].size() * sizeof(float)) == 0);
  }
}

std::string synth_model(const std::string& arch, ember::DType dtype, const std::string& name) {
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  shape.arch = arch;
  if (dtype == ember::DType::Q4_K) {  // whole 256-blocks
    shape.dim = 256;
    shape.hidden_dim = 512;
  }
  auto m = ember::make_synthetic(shape, dtype, 7, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const std::string path = ember::test::temp_dir("batched") + "/" + name;
  REQUIRE(ember::write_model(m.value()->spec, path).is_ok());
  return path;
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 40, 41, 42, 43, 44, 45},
    {1, 50},
    {1, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77},
    {1, 80, 81, 82},
};

void check_model(const std::string& path, int32_t kv, int32_t max_batch) {
  Model model(path);
  const int n_new = 6;
  const int32_t context = 48;
  std::vector<Run> want;
  for (const auto& p : kPrompts) want.push_back(alone(model, p, n_new, context, kv));
  // Everyone at once, then staggered joins (a prompt beside decode steps).
  for (const std::vector<int>& join : {std::vector<int>{0, 0, 0, 0}, std::vector<int>{0, 2, 3, 5}}) {
    std::vector<Run> got = batched(model, kPrompts, join, n_new, context, max_batch, kv);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      INFO("sequence ", i, " joining at step ", join[i], ", max_batch ", max_batch);
      check_same(want[i], got[i]);
    }
  }
}

}  // namespace

TEST_CASE("batched decoding: each sequence's logits are its own session's, bit for bit (stories260K, f32)") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  // max_batch 512: one step per call; 5: prompts cut across steps.
  check_model(path, EMBER_KV_F32, 512);
  check_model(path, EMBER_KV_F32, 5);
}

TEST_CASE("batched decoding: int8 paths, quantized KV and a sliding window give each sequence its own logits") {
  check_model(synth_model("llama", ember::DType::Q8_0, "q8.ember"), EMBER_KV_Q8_0, 512);
  check_model(synth_model("llama", ember::DType::Q4_K, "q4k.ember"), EMBER_KV_F16, 7);
  // gemma2: window of 8 on even layers, soft-capped scores and logits.
  check_model(synth_model("gemma2", ember::DType::Q8_0, "gemma2.ember"), EMBER_KV_F32, 512);
}

TEST_CASE("batched decoding: a copied prefix, a removed tail and a reset sequence continue as a fresh one") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session* s = make_session(model, 3, 64, 512);
  const std::vector<int32_t> prefix = {1, 40, 41, 42, 43, 44, 45, 46};
  std::vector<float> l(model.vocab);
  ember_batch_item it{0, prefix.data(), prefix.size(), l.data()};
  REQUIRE(ember_session_decode_batch(s, &it, 1) == EMBER_OK);

  // Sequence 1 takes 6 positions of sequence 0, then its own suffix.
  REQUIRE(ember_session_seq_copy(s, 0, 1, 6) == EMBER_OK);
  CHECK(ember_session_seq_position(s, 1) == 6);
  CHECK(ember_session_seq_position(s, 0) == 8);
  const std::vector<int32_t> suffix = {90, 91};
  std::vector<float> got(model.vocab);
  ember_batch_item it1{1, suffix.data(), suffix.size(), got.data()};
  REQUIRE(ember_session_decode_batch(s, &it1, 1) == EMBER_OK);
  std::vector<int32_t> full(prefix.begin(), prefix.begin() + 6);
  full.insert(full.end(), suffix.begin(), suffix.end());
  Run want = alone(model, full, 0, 64, EMBER_KV_F32);
  CHECK(std::memcmp(got.data(), want.logits[0].data(), got.size() * sizeof(float)) == 0);
  size_t n = 0;
  std::vector<int32_t> held(16);
  REQUIRE(ember_session_seq_tokens(s, 1, held.data(), held.size(), &n) == EMBER_OK);
  held.resize(n);
  CHECK(held == full);

  // Sequence 0 drops its last 3 positions and continues differently.
  REQUIRE(ember_session_seq_remove(s, 0, 5, 8) == EMBER_OK);
  const std::vector<int32_t> other = {70};
  ember_batch_item it0{0, other.data(), other.size(), got.data()};
  REQUIRE(ember_session_decode_batch(s, &it0, 1) == EMBER_OK);
  std::vector<int32_t> full0(prefix.begin(), prefix.begin() + 5);
  full0.push_back(70);
  want = alone(model, full0, 0, 64, EMBER_KV_F32);
  CHECK(std::memcmp(got.data(), want.logits[0].data(), got.size() * sizeof(float)) == 0);

  // Sequence 2 (never used) and a reset sequence 1 start afresh.
  REQUIRE(ember_session_seq_remove(s, 1, 0, ember_session_seq_position(s, 1)) == EMBER_OK);
  CHECK(ember_session_seq_position(s, 1) == 0);
  // ember_session_reset forgets every sequence, not only sequence 0.
  REQUIRE(ember_session_decode_batch(s, &it1, 1) == EMBER_OK);
  REQUIRE(ember_session_seq_position(s, 1) == 2);
  REQUIRE(ember_session_reset(s) == EMBER_OK);
  for (int32_t q = 0; q < 3; ++q) CHECK(ember_session_seq_position(s, q) == 0);
  ember_session_free(s);
}

TEST_CASE("batched decoding: bad batches are refused with a status and change nothing") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session* s = make_session(model, 2, 8, 512);
  const std::vector<int32_t> a = {1, 40, 41};
  std::vector<float> l(model.vocab);
  ember_batch_item ok{0, a.data(), a.size(), l.data()};
  REQUIRE(ember_session_decode_batch(s, &ok, 1) == EMBER_OK);

  ember_batch_item two[2] = {{1, a.data(), a.size(), nullptr}, {1, a.data(), a.size(), nullptr}};
  CHECK(ember_session_decode_batch(s, two, 2) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("both sequence 1") != std::string::npos);
  ember_batch_item out_of_range{2, a.data(), a.size(), nullptr};
  CHECK(ember_session_decode_batch(s, &out_of_range, 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("seq = 2") != std::string::npos);
  ember_batch_item three[3] = {ok, ok, ok};
  CHECK(ember_session_decode_batch(s, three, 3) == EMBER_ERR_INVALID_ARGUMENT);
  const int32_t bad_token = model.vocab;
  ember_batch_item bad[2] = {{1, a.data(), a.size(), nullptr}, {0, &bad_token, 1, nullptr}};
  CHECK(ember_session_decode_batch(s, bad, 2) == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  const std::vector<int32_t> long_prompt(6, 40);
  ember_batch_item full[2] = {{1, a.data(), a.size(), nullptr}, {0, long_prompt.data(), long_prompt.size(), nullptr}};
  CHECK(ember_session_decode_batch(s, full, 2) == EMBER_ERR_CONTEXT_FULL);
  CHECK(std::string(ember_last_error()).find("sequence 0") != std::string::npos);
  ember_batch_item empty{1, a.data(), 0, nullptr};
  CHECK(ember_session_decode_batch(s, &empty, 1) == EMBER_ERR_INVALID_ARGUMENT);
  ember_batch_item null_tokens{1, nullptr, 1, nullptr};
  CHECK(ember_session_decode_batch(s, &null_tokens, 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_batch(s, nullptr, 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_decode_batch(nullptr, &ok, 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_seq_copy(s, 0, 1, 4) == EMBER_ERR_INVALID_ARGUMENT);  // sequence 0 holds 3
  CHECK(ember_session_seq_copy(s, 0, 5, 1) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_seq_remove(s, -1, 0, 0) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_session_seq_position(s, 2) == -1);
  // Nothing changed: sequence 0 holds its 3 tokens, sequence 1 none.
  CHECK(ember_session_seq_position(s, 0) == 3);
  CHECK(ember_session_seq_position(s, 1) == 0);
  CHECK(ember_session_n_seqs(s) == 2);
  ember_session_free(s);

  ember_session_options so;
  ember_session_options_default(&so);
  so.n_seqs = 0;
  ember_session* none = nullptr;
  CHECK(ember_session_create(model.m, &so, &none) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("n_seqs = 0") != std::string::npos);
  so.n_seqs = 257;
  CHECK(ember_session_create(model.m, &so, &none) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(none == nullptr);
}

TEST_CASE("batched decoding: the plan holds n_seqs caches and the session fits it") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 64;
  ember_memory_plan one, four;
  one.struct_size = four.struct_size = sizeof one;
  REQUIRE(ember_plan(model.m, &so, &one) == EMBER_OK);
  so.n_seqs = 4;
  REQUIRE(ember_plan(model.m, &so, &four) == EMBER_OK);
  CHECK(one.n_seqs == 1);
  CHECK(four.n_seqs == 4);
  CHECK(four.kv_bytes == 4 * one.kv_bytes);
  CHECK(four.estimate_kv_bytes == 4 * one.estimate_kv_bytes);
  CHECK(four.runtime_bytes > one.runtime_bytes);
  // A caller's arena of exactly the plan's size runs a full batch.
  std::vector<uint8_t> storage(four.arena_bytes + 64);
  void* arena = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  so.arena = arena;
  so.arena_size = four.arena_bytes;
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(model.m, &so, &s) == EMBER_OK, ember_last_error());
  std::vector<int32_t> p(64, 40);
  p[0] = 1;
  std::vector<ember_batch_item> items;
  for (int32_t i = 0; i < 4; ++i) items.push_back({i, p.data(), p.size(), nullptr});
  CHECK(ember_session_decode_batch(s, items.data(), items.size()) == EMBER_OK);
  for (int32_t i = 0; i < 4; ++i) CHECK(ember_session_seq_position(s, i) == 64);
  ember_session_free(s);
}

TEST_CASE("batched decoding: ember plan --seqs N shows N caches, as the C API plans them") {
  const std::string path = synth_model("llama", ember::DType::Q8_0, "plan-q8.ember");
  auto kv_of = [&](const std::string& extra) {
    auto r = ember::test::run_cli("plan -m " + path + " --ctx 64 --json" + extra);
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    const size_t at = r.out.find("\"kv_bytes\": ");
    REQUIRE(at != std::string::npos);
    return std::stoull(r.out.substr(at + 12));
  };
  const unsigned long long one = kv_of(""), five = kv_of(" --seqs 5");
  CHECK(one > 0);
  CHECK(five == 5 * one);
  auto r = ember::test::run_cli("plan -m " + path + " --ctx 64 --seqs 5");
  CHECK(r.out.find("context 64 x 5 sequences (batched)") != std::string::npos);
  CHECK(ember::test::run_cli("plan -m " + path + " --seqs 0 2>&1").rc != 0);
}

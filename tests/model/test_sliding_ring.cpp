// Sliding-window layers as rings (issue 13, item 4): on the CPU a layer that
// sees only the last `window` positions keeps window + max_batch rows per
// sequence instead of the whole context. The plan shows the saving, and the
// logits are those of a session that keeps every position, bit for bit,
// through chunked prefill, decode, context shifting, saved states and
// batched sequences; what a ring can no longer do is refused by name.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ember.h"
#include "test_data.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace {

constexpr int32_t kContext = 64;
constexpr int32_t kBatch = 4;  // ring: window 8 + 4 = 12 rows on the sliding layers

std::string gemma_model(const std::string& arch) {
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  shape.arch = arch;  // window 8 on even layers
  auto m = ember::make_synthetic(shape, ember::DType::F32, 11, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const std::string path = ember::test::temp_dir("sliding-ring") + "/" + arch + ".ember";
  REQUIRE(ember::write_model(m.value()->spec, path).is_ok());
  return path;
}

ember_session_options options(bool full, int32_t n_seqs = 1) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = kContext;
  so.max_batch = kBatch;
  so.n_threads = 2;
  so.n_seqs = n_seqs;
  so.sliding_window_full = full ? 1 : 0;
  return so;
}

struct Pair {
  ember_model* m = nullptr;
  ember_session* ring = nullptr;
  ember_session* full = nullptr;
  int32_t vocab = 0;
  explicit Pair(const std::string& path, int32_t n_seqs = 1) {
    REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
    ember_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(ember_model_get_info(m, &info) == EMBER_OK);
    vocab = info.vocab_size;
    ember_session_options r = options(false, n_seqs), f = options(true, n_seqs);
    REQUIRE_MESSAGE(ember_session_create(m, &r, &ring) == EMBER_OK, ember_last_error());
    REQUIRE_MESSAGE(ember_session_create(m, &f, &full) == EMBER_OK, ember_last_error());
  }
  ~Pair() {
    ember_session_free(ring);
    ember_session_free(full);
    ember_model_free(m);
  }
  // The same tokens into both; their logits must be identical.
  void feed(const std::vector<int32_t>& tokens) {
    std::vector<float> a(vocab), b(vocab);
    REQUIRE(ember_session_prefill(ring, tokens.data(), tokens.size(), a.data()) == EMBER_OK);
    REQUIRE(ember_session_prefill(full, tokens.data(), tokens.size(), b.data()) == EMBER_OK);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    last = a;
  }
  std::vector<float> last;
};

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

std::vector<int32_t> prompt(int32_t n, int32_t first) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = 40 + (first + 7 * i) % 60;
  t[0] = 1;
  return t;
}

}  // namespace

TEST_CASE("sliding-window rings: the plan keeps window + max_batch rows on the sliding layers") {
  const std::string path = gemma_model("gemma2");
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK);
  ember_memory_plan ring, full;
  ring.struct_size = full.struct_size = sizeof ring;
  ember_session_options r = options(false), f = options(true);
  REQUIRE(ember_plan(m, &r, &ring) == EMBER_OK);
  REQUIRE(ember_plan(m, &f, &full) == EMBER_OK);
  // tiny: 2 layers, layer 0 sliding; its rows are 256 bytes (64-aligned).
  CHECK(ring.kv_bytes == full.kv_bytes / 2 + full.kv_bytes / 2 * (8 + kBatch) / kContext);
  CHECK(ring.arena_bytes == full.arena_bytes - (full.kv_bytes - ring.kv_bytes));
  // Without a ring's advantage (a context within window + batch) nothing changes.
  r.context_length = 12;
  f.context_length = 12;
  REQUIRE(ember_plan(m, &r, &ring) == EMBER_OK);
  REQUIRE(ember_plan(m, &f, &full) == EMBER_OK);
  CHECK(ring.kv_bytes == full.kv_bytes);
  ember_model_free(m);
}

TEST_CASE("sliding-window rings: logits equal a full cache through prefill chunks, decode and context shifting") {
  for (const char* arch : {"gemma2", "gemma3"}) {
    INFO(arch);
    Pair p(gemma_model(arch));
    p.feed(prompt(30, 3));  // 8 steps of 4 rows: the ring wraps twice
    for (int i = 0; i < 12; ++i) p.feed({argmax(p.last)});
    REQUIRE(ember_session_position(p.ring) == 42);
    // Drop [4, 20): later positions move down by 16 (more than max_batch);
    // the window then reads only moved positions.
    REQUIRE(ember_session_remove(p.ring, 4, 20) == EMBER_OK);
    REQUIRE(ember_session_remove(p.full, 4, 20) == EMBER_OK);
    for (int i = 0; i < 6; ++i) p.feed({argmax(p.last)});
    // A small removal near the end (its window reads kept positions below it).
    REQUIRE(ember_session_remove(p.ring, 29, 31) == EMBER_OK);
    REQUIRE(ember_session_remove(p.full, 29, 31) == EMBER_OK);
    p.feed(prompt(9, 5));
    for (int i = 0; i < 4; ++i) p.feed({argmax(p.last)});
    // Rewinding the tail (the prompt cache's move) where the window stays in the ring.
    const int32_t pos = ember_session_position(p.ring);
    REQUIRE(ember_session_remove(p.ring, pos - 3, pos) == EMBER_OK);
    REQUIRE(ember_session_remove(p.full, pos - 3, pos) == EMBER_OK);
    p.feed({50, 51});
  }
}

TEST_CASE("sliding-window rings: what the ring no longer holds is refused by name, and nothing changes") {
  Pair p(gemma_model("gemma2"));
  p.feed(prompt(44, 1));
  // Removing [4, 40) of 44 leaves 8 positions: the window would read
  // positions 1..3, older than the ring's last 12.
  CHECK(ember_session_remove(p.ring, 4, 40) == EMBER_ERR_UNSUPPORTED);
  const std::string err = ember_last_error();
  CHECK_MESSAGE(err.find("sliding-window layer 0 keeps only the last 12 positions") != std::string::npos, err);
  CHECK(ember_session_position(p.ring) == 44);
  // The full cache does it; the ring session still runs on.
  CHECK(ember_session_remove(p.full, 4, 40) == EMBER_OK);
  std::vector<float> l(p.vocab);
  CHECK(ember_session_decode(p.ring, 50, l.data()) == EMBER_OK);
  // Rewinding a tail is refused too where the window would reach below it
  // into positions the ring dropped (45 positions now; keep 30: the window
  // reads 23..29, the ring holds 33..44).
  CHECK(ember_session_remove(p.ring, 30, 45) == EMBER_ERR_UNSUPPORTED);
  CHECK(ember_session_position(p.ring) == 45);
  // Starting over always works.
  CHECK(ember_session_remove(p.ring, 0, ember_session_position(p.ring)) == EMBER_OK);
  CHECK(ember_session_position(p.ring) == 0);
}

TEST_CASE("sliding-window rings: a saved state moves between ring and full sessions") {
  Pair p(gemma_model("gemma3"));
  p.feed(prompt(37, 2));
  size_t size = 0;
  REQUIRE(ember_session_save_buffer(p.ring, nullptr, 0, &size) == EMBER_ERR_BUFFER_TOO_SMALL);
  std::vector<uint8_t> from_ring(size), from_full(size);
  REQUIRE(ember_session_save_buffer(p.ring, from_ring.data(), size, &size) == EMBER_OK);
  REQUIRE(ember_session_save_buffer(p.full, from_full.data(), from_full.size(), &size) == EMBER_OK);
  // Swapped: the ring loads the full cache's state and the other way round.
  REQUIRE(ember_session_load_buffer(p.ring, from_full.data(), from_full.size()) == EMBER_OK);
  REQUIRE(ember_session_load_buffer(p.full, from_ring.data(), from_ring.size()) == EMBER_OK);
  for (int i = 0; i < 8; ++i) p.feed({argmax(p.last)});
}

TEST_CASE("sliding-window rings: batched sequences and a copied prefix equal full caches") {
  Pair p(gemma_model("gemma2"), 2);
  const std::vector<int32_t> a = prompt(26, 4), b = prompt(5, 9);
  std::vector<float> ra(p.vocab), rb(p.vocab), fa(p.vocab), fb(p.vocab);
  ember_batch_item ring_items[2] = {{0, a.data(), a.size(), ra.data()}, {1, b.data(), b.size(), rb.data()}};
  ember_batch_item full_items[2] = {{0, a.data(), a.size(), fa.data()}, {1, b.data(), b.size(), fb.data()}};
  REQUIRE(ember_session_decode_batch(p.ring, ring_items, 2) == EMBER_OK);
  REQUIRE(ember_session_decode_batch(p.full, full_items, 2) == EMBER_OK);
  CHECK(std::memcmp(ra.data(), fa.data(), ra.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(rb.data(), fb.data(), rb.size() * sizeof(float)) == 0);
  // Sequence 0's ring holds its last 12 positions, 14..25. A copy of its
  // first 20 would next read 13..19 through the window: refused. Its first
  // 24 (the window reads 17..23): copied.
  CHECK(ember_session_seq_copy(p.ring, 0, 1, 20) == EMBER_ERR_UNSUPPORTED);
  REQUIRE(ember_session_seq_copy(p.ring, 0, 1, 24) == EMBER_OK);
  REQUIRE(ember_session_seq_copy(p.full, 0, 1, 24) == EMBER_OK);
  const std::vector<int32_t> c = {70, 71, 72};
  ember_batch_item r1{1, c.data(), c.size(), rb.data()}, f1{1, c.data(), c.size(), fb.data()};
  REQUIRE(ember_session_decode_batch(p.ring, &r1, 1) == EMBER_OK);
  REQUIRE(ember_session_decode_batch(p.full, &f1, 1) == EMBER_OK);
  CHECK(std::memcmp(rb.data(), fb.data(), rb.size() * sizeof(float)) == 0);
}

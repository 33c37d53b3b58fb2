// Embeddings (issue 46): an embedding session's rows are the final hidden
// states (the logits head applied to the last one gives the logits), mean
// pooling is the mean of every prefix's last row (causal attention), inputs
// batched over sequences and split over steps give the vectors they give
// alone, each normalization does what it says, the file's pooling is the
// default, and every bad argument has its own status.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ember.h"
#include "format/model_file.h"
#include "model/stories_fixture.h"
#include "test_data.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/importers.h"
#include "tools/convert/model_writer.h"

namespace {

struct Model {
  ember_model* m = nullptr;
  explicit Model(const std::string& path) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
  }
  ~Model() { ember_model_free(m); }
};

struct Session {
  ember_session* s = nullptr;
  Session(const Model& model, bool embeddings, int32_t n_seqs = 1, int32_t max_batch = 512, int32_t context = 128,
          int32_t backend = EMBER_BACKEND_CPU) {
    ember_session_options so;
    ember_session_options_default(&so);
    so.context_length = context;
    so.max_batch = max_batch;
    so.n_seqs = n_seqs;
    so.n_threads = 2;
    so.embeddings = embeddings ? 1 : 0;
    so.backend = backend;
    so.vulkan_pipeline_cache_dir = "";
    const ember_status st = ember_session_create(model.m, &so, &s);
    REQUIRE_MESSAGE(st == EMBER_OK, ember_last_error());
  }
  ~Session() { ember_session_free(s); }
};

std::vector<int32_t> tokens_of(const Model& model, const char* text) {
  std::vector<int32_t> ids(256);
  size_t n = 0;
  REQUIRE(ember_embed_tokenize(model.m, text, std::strlen(text), ids.data(), ids.size(), &n) == EMBER_OK);
  ids.resize(n);
  return ids;
}

ember_embed_options options(int32_t pooling, int32_t normalize = 2) {
  ember_embed_options o;
  ember_embed_options_default(&o);
  o.pooling = pooling;
  o.normalize = normalize;
  return o;
}

// One input's vector (or rows, pooling none).
std::vector<float> embed_one(const Session& s, const std::vector<int32_t>& ids, int32_t pooling,
                             int32_t normalize = 2) {
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(s.s));
  std::vector<float> out(dim * (pooling == EMBER_POOLING_NONE ? ids.size() : 1));
  const int32_t* p = ids.data();
  const size_t n = ids.size();
  const ember_embed_options o = options(pooling, normalize);
  REQUIRE_MESSAGE(ember_embed_tokens(s.s, &p, &n, 1, &o, out.data(), out.size()) == EMBER_OK, ember_last_error());
  return out;
}

void check_close(const float* a, const float* b, size_t n, double tol) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  CHECK(worst <= tol);
}

const char* const kTexts[] = {"Once upon a time there was a little girl named Lily.", "The cat sat.",
                              "Ben and Lily went to the park to play with a big red ball, and then they went home.",
                              "Hi", "She was happy."};

}  // namespace

TEST_CASE("embeddings: the last row times the output matrix is the logits") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  Model model(path);
  Session emb(model, true), gen(model, false);
  const std::vector<int32_t> ids = tokens_of(model, kTexts[0]);
  const std::vector<float> h = embed_one(emb, ids, EMBER_POOLING_LAST, -1);
  ember_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(ember_model_get_info(model.m, &info) == EMBER_OK);
  REQUIRE(h.size() == static_cast<size_t>(info.dim));
  std::vector<float> logits(static_cast<size_t>(info.vocab_size));
  REQUIRE(ember_session_prefill(gen.s, ids.data(), ids.size(), logits.data()) == EMBER_OK);
  // The head: output.weight, or the tied embeddings (f32 in this file).
  auto file = ember::ModelFile::open(path, ember::ModelFile::Options{});
  REQUIRE(file.is_ok());
  const ember::TensorView* w = file.value()->find("output.weight");
  if (!w) w = file.value()->find("token_embd.weight");
  REQUIRE(w);
  REQUIRE(w->dtype == ember::DType::F32);
  double worst = 0, scale = 0;
  std::vector<float> row(static_cast<size_t>(info.dim));
  for (int32_t t = 0; t < info.vocab_size; ++t) {
    // Row t as stored (row-major or rows16: core/layout.h).
    const float* wf = reinterpret_cast<const float*>(
        ember::layout_row(w->layout, w->dtype, w->data, info.dim, t, reinterpret_cast<uint8_t*>(row.data())));
    double dot = 0;
    for (int32_t c = 0; c < info.dim; ++c) dot += static_cast<double>(wf[c]) * h[c];
    worst = std::max(worst, std::fabs(dot - logits[t]));
    scale = std::max(scale, std::fabs(static_cast<double>(logits[t])));
  }
  CHECK(worst <= 1e-4 * std::max(scale, 1.0));
}

TEST_CASE("embeddings: mean, cls and none pool the rows each prefix ends with") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  Model model(path);
  Session emb(model, true);
  const std::vector<int32_t> ids = tokens_of(model, kTexts[2]);
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(emb.s));
  REQUIRE(dim > 0);
  // Each prefix's last row (unnormalized): with causal attention, row i of
  // the whole input.
  std::vector<double> mean(dim, 0.0);
  std::vector<std::vector<float>> rows;
  for (size_t i = 1; i <= ids.size(); ++i) {
    rows.push_back(embed_one(emb, std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(i)),
                             EMBER_POOLING_LAST, -1));
    for (size_t c = 0; c < dim; ++c) mean[c] += rows.back()[c] / static_cast<double>(ids.size());
  }
  const std::vector<float> got_mean = embed_one(emb, ids, EMBER_POOLING_MEAN, -1);
  for (size_t c = 0; c < dim; ++c) CHECK(std::fabs(got_mean[c] - mean[c]) <= 1e-4);
  const std::vector<float> cls = embed_one(emb, ids, EMBER_POOLING_CLS, -1);
  check_close(cls.data(), rows[0].data(), dim, 1e-5);
  const std::vector<float> none = embed_one(emb, ids, EMBER_POOLING_NONE, -1);
  REQUIRE(none.size() == dim * ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(i);
    check_close(none.data() + i * dim, rows[i].data(), dim, 1e-4);
  }
}

TEST_CASE("embeddings: inputs batched over sequences and split over steps give what they give alone") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  Model model(path);
  std::vector<std::vector<int32_t>> ids;
  for (const char* t : kTexts) ids.push_back(tokens_of(model, t));
  Session alone(model, true);
  // 3 sequences, steps of 8 rows: the long inputs run in chunks beside others.
  Session batched(model, true, 3, 8);
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(alone.s));
  for (int32_t pooling : {EMBER_POOLING_MEAN, EMBER_POOLING_CLS, EMBER_POOLING_LAST}) {
    CAPTURE(pooling);
    std::vector<const int32_t*> ptrs;
    std::vector<size_t> counts;
    for (const auto& v : ids) {
      ptrs.push_back(v.data());
      counts.push_back(v.size());
    }
    std::vector<float> all(dim * ids.size());
    const ember_embed_options o = options(pooling);
    REQUIRE_MESSAGE(ember_embed_tokens(batched.s, ptrs.data(), counts.data(), ptrs.size(), &o, all.data(), all.size()) ==
                        EMBER_OK,
                    ember_last_error());
    for (size_t i = 0; i < ids.size(); ++i) {
      CAPTURE(i);
      const std::vector<float> one = embed_one(alone, ids[i], pooling);
      check_close(all.data() + i * dim, one.data(), dim, 1e-5);
    }
  }
}

TEST_CASE("embeddings: each normalization") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  Model model(path);
  Session emb(model, true);
  const std::vector<int32_t> ids = tokens_of(model, kTexts[0]);
  const std::vector<float> raw = embed_one(emb, ids, EMBER_POOLING_MEAN, -1);
  double l2 = 0, l1 = 0, mx = 0, l3 = 0;
  for (float v : raw) {
    l2 += static_cast<double>(v) * v;
    l1 += std::fabs(v);
    mx = std::max(mx, std::fabs(static_cast<double>(v)));
    l3 += std::pow(std::fabs(static_cast<double>(v)), 3);
  }
  REQUIRE(l2 > 0);
  const struct {
    int32_t mode;
    double divisor;
  } cases[] = {{2, std::sqrt(l2)}, {1, l1}, {0, mx / 32760.0}, {3, std::cbrt(l3)}};
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    const std::vector<float> got = embed_one(emb, ids, EMBER_POOLING_MEAN, c.mode);
    for (size_t i = 0; i < raw.size(); ++i) {
      const double want = raw[i] / c.divisor;
      CHECK(std::fabs(got[i] - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
    }
  }
}

TEST_CASE("embeddings: the texts call tokenizes as ember_embed_tokenize and pools by the file's pooling") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  {
    Model model(path);
    CHECK(ember_model_pooling(model.m) == EMBER_POOLING_UNSPECIFIED);
    Session emb(model, true, 2);
    const size_t dim = static_cast<size_t>(ember_session_embedding_size(emb.s));
    std::vector<float> out(dim * 2);
    const char* texts[] = {kTexts[0], kTexts[1]};
    REQUIRE(ember_embed_texts(emb.s, texts, nullptr, 2, nullptr, out.data(), out.size()) == EMBER_OK);
    // Unspecified: the mean.
    check_close(out.data() + dim, embed_one(emb, tokens_of(model, kTexts[1]), EMBER_POOLING_MEAN).data(), dim, 1e-6);
    const ember_embed_options none = options(EMBER_POOLING_NONE);
    CHECK(ember_embed_texts(emb.s, texts, nullptr, 2, &none, out.data(), out.size()) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(std::string(ember_last_error()).find("ember_embed_tokens") != std::string::npos);
  }
  // A file that says "last" (as Qwen3-Embedding's does) pools by the last row.
  auto imported = ember::import_gguf(ember::test::test_data("models/stories260K-f32.gguf"));
  REQUIRE(imported.is_ok());
  imported.value()->spec.hparams.pooling = EMBER_POOLING_LAST;
  const std::string last_path = ember::test::temp_dir("embed") + "/stories-last.ember";
  REQUIRE(ember::write_model(imported.value()->spec, last_path).is_ok());
  Model model(last_path);
  CHECK(ember_model_pooling(model.m) == EMBER_POOLING_LAST);
  Session emb(model, true);
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(emb.s));
  std::vector<float> out(dim);
  const char* text = kTexts[2];
  REQUIRE(ember_embed_texts(emb.s, &text, nullptr, 1, nullptr, out.data(), out.size()) == EMBER_OK);
  check_close(out.data(), embed_one(emb, tokens_of(model, text), EMBER_POOLING_LAST).data(), dim, 1e-6);
  // The GGUF key (pooling_type) both ways.
  const std::string gguf_path = ember::test::temp_dir("embed") + "/stories-last.gguf";
  REQUIRE(ember::write_gguf(imported.value()->spec, gguf_path).is_ok());
  auto reread = ember::import_gguf(gguf_path);
  REQUIRE_MESSAGE(reread.is_ok(), reread.status().message());
  CHECK(reread.value()->spec.hparams.pooling == EMBER_POOLING_LAST);
  // A pooling outside -1..4 fails the loader's checks (which the writer
  // runs before it writes).
  imported.value()->spec.hparams.pooling = 9;
  const ember::Status written =
      ember::write_model(imported.value()->spec, ember::test::temp_dir("embed") + "/stories-bad-pooling.ember");
  CHECK(written.code() == EMBER_ERR_BAD_HPARAMS);
  CHECK(written.message().find("hparams.pooling = 9") != std::string::npos);
}

TEST_CASE("embeddings: bad arguments each get their status") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  Model model(path);
  Session emb(model, true, 1, 512, 16), gen(model, false);
  CHECK(ember_session_embedding_size(gen.s) == 0);
  CHECK(ember_session_embedding_size(nullptr) == 0);
  const std::vector<int32_t> ids = tokens_of(model, kTexts[1]);
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(emb.s));
  std::vector<float> out(dim * 64);
  const int32_t* p = ids.data();
  size_t n = ids.size();
  auto call = [&](ember_session* s, const ember_embed_options* o, size_t floats) {
    return ember_embed_tokens(s, &p, &n, 1, o, out.data(), floats);
  };
  // A session that outputs logits.
  CHECK(call(gen.s, nullptr, out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("embeddings option") != std::string::npos);
  // Generation on an embedding session.
  ember_generate_options g;
  ember_generate_options_default(&g);
  CHECK(ember_generate(emb.s, "Hi", &g, nullptr, nullptr) == EMBER_ERR_UNSUPPORTED);
  // Rank pooling without a classifier head; an unknown pooling; a bad normalization; struct_size.
  ember_embed_options o = options(EMBER_POOLING_RANK);
  CHECK(call(emb.s, &o, out.size()) == EMBER_ERR_UNSUPPORTED);
  o = options(7);
  CHECK(call(emb.s, &o, out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  o = options(EMBER_POOLING_MEAN, -2);
  CHECK(call(emb.s, &o, out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  o = options(EMBER_POOLING_MEAN);
  o.struct_size = 3;
  CHECK(call(emb.s, &o, out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  // Too small a buffer, NULL out, an empty input, a token outside the vocabulary, too long an input.
  CHECK(call(emb.s, nullptr, dim - 1) == EMBER_ERR_BUFFER_TOO_SMALL);
  CHECK(ember_embed_tokens(emb.s, &p, &n, 1, nullptr, nullptr, dim) == EMBER_ERR_INVALID_ARGUMENT);
  n = 0;
  CHECK(call(emb.s, nullptr, out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  const std::vector<int32_t> bad = {1, 100000};
  p = bad.data();
  n = bad.size();
  CHECK(call(emb.s, nullptr, out.size()) == EMBER_ERR_TOKEN_OUT_OF_RANGE);
  const std::vector<int32_t> long_input(17, 1);
  p = long_input.data();
  n = long_input.size();
  CHECK(call(emb.s, nullptr, out.size()) == EMBER_ERR_CONTEXT_FULL);
  CHECK(ember_embed_tokens(nullptr, &p, &n, 1, nullptr, out.data(), out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_embed_tokens(emb.s, nullptr, &n, 1, nullptr, out.data(), out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  const char* null_text = nullptr;
  CHECK(ember_embed_texts(emb.s, &null_text, nullptr, 1, nullptr, out.data(), out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  // Nothing to embed is not an error.
  CHECK(ember_embed_tokens(emb.s, nullptr, nullptr, 0, nullptr, nullptr, 0) == EMBER_OK);
  // After the errors the session still embeds.
  p = ids.data();
  n = ids.size();
  CHECK(call(emb.s, nullptr, out.size()) == EMBER_OK);
}

#if EMBER_VULKAN  // a build without the Vulkan backend (the aarch64 cross build) has no such device
TEST_CASE("embeddings: on Vulkan the vectors the CPU gives") {
  const std::string path = ember::test::stories_model("gguf");
  if (path.empty()) return;
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES") && std::filesystem::exists(lvp)) setenv("VK_ICD_FILENAMES", lvp, 1);
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  Model model(path);
  ember_session_options so;
  ember_session_options_default(&so);
  so.backend = EMBER_BACKEND_VULKAN;
  so.context_length = 64;
  so.embeddings = 1;
  so.n_seqs = 2;
  so.vulkan_pipeline_cache_dir = "";
  ember_session* vk = nullptr;
  if (ember_session_create(model.m, &so, &vk) != EMBER_OK) {
    if (ember::test::test_data_required()) FAIL("no Vulkan device: " << ember_last_error());
    MESSAGE("skipped: no Vulkan device: " << ember_last_error());
    return;
  }
  Session cpu(model, true, 2, 512, 64);
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(cpu.s));
  REQUIRE(ember_session_embedding_size(vk) == static_cast<int32_t>(dim));
  for (int32_t pooling : {EMBER_POOLING_MEAN, EMBER_POOLING_LAST}) {
    CAPTURE(pooling);
    std::vector<float> a(dim * 3), b(dim * 3);
    const char* texts[] = {kTexts[0], kTexts[1], kTexts[2]};
    const ember_embed_options o = options(pooling);
    REQUIRE(ember_embed_texts(cpu.s, texts, nullptr, 3, &o, a.data(), a.size()) == EMBER_OK);
    REQUIRE_MESSAGE(ember_embed_texts(vk, texts, nullptr, 3, &o, b.data(), b.size()) == EMBER_OK, ember_last_error());
    check_close(a.data(), b.data(), a.size(), 1e-4);
  }
  ember_session_free(vk);
}
#endif

// The BERT encoder (issue 46): a synthetic f32 bert's rows equal a plain
// double-precision forward pass written here from the architecture's
// definition (learned positions and token type 0, a layer norm, then per
// layer bidirectional attention and a GELU FFN, each added to its input and
// layer-normed); inputs batched as sequences of one step give what they give
// alone; the GGUF form round-trips; what an encoder cannot do is refused by
// name (a logits session, a context past its positions, an input longer than
// a step); on Vulkan the rows the CPU gives. nomic-bert (rotary positions,
// SwiGLU, no biases) likewise against its definition.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ember.h"
#include "test_data.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/importers.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

namespace {

using Mat = std::vector<double>;

// The synthetic tiny encoders (f32), written once per process.
struct TinyBert {
  std::unique_ptr<ember::ImportedModel> model;
  std::string path;
};

TinyBert& tiny_bert(const std::string& arch = "bert") {
  static std::map<std::string, TinyBert> made;
  TinyBert& t = made[arch];
  if (!t.path.empty()) return t;
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  shape.arch = arch;
  shape.context = 64;
  auto m = ember::make_synthetic(shape, ember::DType::F32, 5, "");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  t.model = std::move(m).value();
  t.path = ember::test::temp_dir("bert") + "/tiny-" + arch + ".ember";
  const ember::Status st = ember::write_model(t.model->spec, t.path);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return t;
}

// The tensor's floats (f32 in this model), or null (an absent bias).
const float* find_tensor(const ember::ModelSpec& spec, const std::string& name) {
  for (const auto& t : spec.tensors) {
    if (t.name == name) return static_cast<const float*>(t.data);
  }
  return nullptr;
}
const float* tensor(const ember::ModelSpec& spec, const std::string& name) {
  const float* f = find_tensor(spec, name);
  if (!f) FAIL("no tensor " << name);
  return f;
}

// x (n rows of cols) -> x W^T + b, W [rows, cols]; b may be null.
Mat linear(const Mat& x, int64_t n, int64_t cols, const float* w, const float* b, int64_t rows) {
  Mat y(static_cast<size_t>(n * rows));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      double s = b ? b[r] : 0.0;
      for (int64_t c = 0; c < cols; ++c) s += x[i * cols + c] * w[r * cols + c];
      y[i * rows + r] = s;
    }
  }
  return y;
}

void layernorm(Mat* x, int64_t n, int64_t cols, const float* w, const float* b, double eps) {
  for (int64_t i = 0; i < n; ++i) {
    double* row = x->data() + i * cols;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += row[c] / cols;
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean) / cols;
    for (int64_t c = 0; c < cols; ++c) row[c] = (row[c] - mean) / std::sqrt(var + eps) * w[c] + b[c];
  }
}

// Half-split RoPE (pairs c, c + hd/2 of each head) at position i, base theta.
void rope(Mat* x, int64_t n, int64_t d, int64_t hd, double theta) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h0 = 0; h0 < d; h0 += hd) {
      for (int64_t j = 0; j < hd / 2; ++j) {
        const double angle = i * std::pow(theta, -2.0 * j / hd);
        double& a = (*x)[i * d + h0 + j];
        double& b = (*x)[i * d + h0 + j + hd / 2];
        const double a0 = a, b0 = b;
        a = a0 * std::cos(angle) - b0 * std::sin(angle);
        b = a0 * std::sin(angle) + b0 * std::cos(angle);
      }
    }
  }
}

// Every token's final hidden state, by the definition (bert, or nomic-bert:
// rotary positions, a SwiGLU FFN, no biases).
Mat reference(const ember::ModelSpec& spec, const std::vector<int32_t>& ids) {
  const ember::HParams& hp = spec.hparams;
  const bool nomic = hp.arch == ember::ModelArch::NomicBert;
  const int64_t n = static_cast<int64_t>(ids.size()), d = hp.dim, h = hp.hidden_dim;
  const int64_t heads = hp.n_heads, hd = d / heads;
  auto w = [&](const std::string& name) { return tensor(spec, name); };
  auto maybe = [&](const std::string& name) { return find_tensor(spec, name); };
  Mat x(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < d; ++c) {
      x[i * d + c] = static_cast<double>(w("token_embd.weight")[ids[i] * d + c]) + w("token_types.weight")[c] +
                     (nomic ? 0.0 : w("position_embd.weight")[i * d + c]);
    }
  }
  layernorm(&x, n, d, w("token_embd_norm.weight"), w("token_embd_norm.bias"), hp.norm_eps);
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    Mat q = linear(x, n, d, w(b + "attn_q.weight"), maybe(b + "attn_q.bias"), d);
    Mat k = linear(x, n, d, w(b + "attn_k.weight"), maybe(b + "attn_k.bias"), d);
    const Mat v = linear(x, n, d, w(b + "attn_v.weight"), maybe(b + "attn_v.bias"), d);
    if (nomic) {
      rope(&q, n, d, hd, hp.rope_theta);
      rope(&k, n, d, hd, hp.rope_theta);
    }
    Mat att(static_cast<size_t>(n * d), 0.0);
    for (int64_t hh = 0; hh < heads; ++hh) {
      for (int64_t i = 0; i < n; ++i) {
        std::vector<double> s(static_cast<size_t>(n));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) {  // every position: both ways
          double dot = 0;
          for (int64_t c = 0; c < hd; ++c) dot += q[i * d + hh * hd + c] * k[j * d + hh * hd + c];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t c = 0; c < hd; ++c) att[i * d + hh * hd + c] += s[j] / sum * v[j * d + hh * hd + c];
        }
      }
    }
    Mat o = linear(att, n, d, w(b + "attn_output.weight"), maybe(b + "attn_output.bias"), d);
    for (size_t i = 0; i < o.size(); ++i) o[i] += x[i];
    layernorm(&o, n, d, w(b + "attn_output_norm.weight"), w(b + "attn_output_norm.bias"), hp.norm_eps);
    x = o;
    Mat up = linear(x, n, d, w(b + "ffn_up.weight"), maybe(b + "ffn_up.bias"), h);
    if (nomic) {
      const Mat gate = linear(x, n, d, w(b + "ffn_gate.weight"), nullptr, h);
      for (size_t i = 0; i < up.size(); ++i) up[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
    } else {
      for (double& u : up) u = 0.5 * u * (1.0 + std::tanh(0.7978845608028654 * u * (1.0 + 0.044715 * u * u)));
    }
    Mat down = linear(up, n, h, w(b + "ffn_down.weight"), maybe(b + "ffn_down.bias"), d);
    for (size_t i = 0; i < down.size(); ++i) down[i] += x[i];
    layernorm(&down, n, d, w(b + "layer_output_norm.weight"), w(b + "layer_output_norm.bias"), hp.norm_eps);
    x = down;
  }
  return x;
}

struct Opened {
  ember_model* m = nullptr;
  ember_session* s = nullptr;
  Opened(const std::string& path, int32_t n_seqs = 1, int32_t max_batch = 64) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
    ember_session_options so;
    ember_session_options_default(&so);
    so.embeddings = 1;
    so.n_seqs = n_seqs;
    so.max_batch = max_batch;
    so.n_threads = 2;
    REQUIRE_MESSAGE(ember_session_create(m, &so, &s) == EMBER_OK, ember_last_error());
  }
  ~Opened() {
    ember_session_free(s);
    ember_model_free(m);
  }
  std::vector<float> rows(const std::vector<int32_t>& ids, int32_t pooling = EMBER_POOLING_NONE) {
    const size_t dim = static_cast<size_t>(ember_session_embedding_size(s));
    std::vector<float> out(dim * (pooling == EMBER_POOLING_NONE ? ids.size() : 1));
    const int32_t* p = ids.data();
    const size_t n = ids.size();
    ember_embed_options o;
    ember_embed_options_default(&o);
    o.pooling = pooling;
    o.normalize = -1;
    REQUIRE_MESSAGE(ember_embed_tokens(s, &p, &n, 1, &o, out.data(), out.size()) == EMBER_OK, ember_last_error());
    return out;
  }
};

const std::vector<int32_t> kIds = {1, 300, 301, 77, 90, 260, 5, 2};

}  // namespace

TEST_CASE("nomic-bert: every row is the encoder's definition, computed in double") {
  TinyBert& t = tiny_bert("nomic-bert");
  Opened o(t.path);
  const std::vector<float> got = o.rows(kIds);
  const Mat want = reference(t.model->spec, kIds);
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  CHECK(worst < 2e-4);
  // Its GGUF form (llama.cpp's names and keys) round-trips.
  const std::string gguf = ember::test::temp_dir("bert") + "/tiny-nomic.gguf";
  REQUIRE(ember::write_gguf(t.model->spec, gguf).is_ok());
  auto back = ember::import_gguf(gguf);
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  CHECK(back.value()->spec.hparams.arch == ember::ModelArch::NomicBert);
  CHECK(back.value()->spec.hparams.rope_theta == 1000.0f);
}

TEST_CASE("bert: every row is the encoder's definition, computed in double") {
  TinyBert& t = tiny_bert();
  Opened o(t.path);
  const std::vector<float> got = o.rows(kIds);
  const Mat want = reference(t.model->spec, kIds);
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  CHECK(worst < 2e-4);
  // The first row sees the later ones (bidirectional): it differs from a
  // one-token input's row.
  const std::vector<float> alone = o.rows({kIds[0]});
  double diff = 0;
  for (size_t c = 0; c < alone.size(); ++c) diff = std::max(diff, static_cast<double>(std::fabs(alone[c] - got[c])));
  CHECK(diff > 1e-3);
  // The file's pooling (mean) is the default.
  CHECK(ember_model_pooling(o.m) == EMBER_POOLING_MEAN);
}

TEST_CASE("bert: inputs sharing a step as sequences give what they give alone") {
  TinyBert& t = tiny_bert();
  Opened alone(t.path);
  Opened batched(t.path, 3, 24);  // three inputs of 8 in one step of 24 rows
  const std::vector<std::vector<int32_t>> inputs = {kIds, {1, 40, 41, 42, 43, 44, 45, 2}, {1, 9, 2}, {1, 300, 2}};
  const size_t dim = static_cast<size_t>(ember_session_embedding_size(batched.s));
  std::vector<const int32_t*> ptrs;
  std::vector<size_t> counts;
  for (const auto& v : inputs) {
    ptrs.push_back(v.data());
    counts.push_back(v.size());
  }
  std::vector<float> all(dim * inputs.size());
  ember_embed_options eo;
  ember_embed_options_default(&eo);
  eo.pooling = EMBER_POOLING_CLS;
  REQUIRE_MESSAGE(ember_embed_tokens(batched.s, ptrs.data(), counts.data(), ptrs.size(), &eo, all.data(), all.size()) ==
                      EMBER_OK,
                  ember_last_error());
  for (size_t i = 0; i < inputs.size(); ++i) {
    CAPTURE(i);
    std::vector<float> one = alone.rows(inputs[i], EMBER_POOLING_CLS);
    double norm = 0;
    for (float f : one) norm += static_cast<double>(f) * f;
    for (float& f : one) f = static_cast<float>(f / std::sqrt(norm));
    double worst = 0;
    for (size_t c = 0; c < dim; ++c) worst = std::max(worst, static_cast<double>(std::fabs(one[c] - all[i * dim + c])));
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("bert: the GGUF form round-trips") {
  TinyBert& t = tiny_bert();
  const std::string gguf = ember::test::temp_dir("bert") + "/tiny-bert.gguf";
  REQUIRE(ember::write_gguf(t.model->spec, gguf).is_ok());
  auto back = ember::import_gguf(gguf);
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  CHECK(back.value()->spec.hparams.arch == ember::ModelArch::Bert);
  CHECK(back.value()->spec.hparams.norm_eps == t.model->spec.hparams.norm_eps);
  CHECK(back.value()->spec.hparams.pooling == 1);
  const std::string path = ember::test::temp_dir("bert") + "/tiny-bert-from-gguf.ember";
  REQUIRE(ember::write_model(back.value()->spec, path).is_ok());
  Opened a(t.path), b(path);
  const std::vector<float> x = a.rows(kIds), y = b.rows(kIds);
  REQUIRE(x.size() == y.size());
  CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

TEST_CASE("bert: what an encoder cannot do is refused by name") {
  TinyBert& t = tiny_bert();
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(t.path.c_str(), nullptr, &m) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  ember_session* s = nullptr;
  // A logits session.
  CHECK(ember_session_create(m, &so, &s) == EMBER_ERR_UNSUPPORTED);
  CHECK(std::string(ember_last_error()).find("embeddings") != std::string::npos);
  // A context past the learned positions (64).
  so.embeddings = 1;
  so.context_length = 65;
  CHECK(ember_session_create(m, &so, &s) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("learned positions") != std::string::npos);
  // An input longer than a step.
  so.context_length = 0;
  so.max_batch = 4;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  const int32_t* p = kIds.data();
  const size_t n = kIds.size();
  std::vector<float> out(1024);
  CHECK(ember_embed_tokens(s, &p, &n, 1, nullptr, out.data(), out.size()) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ember_last_error()).find("max_batch") != std::string::npos);
  ember_session_free(s);
  ember_model_free(m);
}

// A reranker: the tiny bert with a classifier head (cls: dim x dim, tanh;
// cls.output: 2 labels), its file's pooling rank; written once.
struct TinyReranker {
  ember::ModelSpec spec;
  std::vector<std::vector<float>> head;  // cls.weight, cls.bias, cls.output.weight, cls.output.bias
  std::string path;
};
TinyReranker& tiny_reranker() {
  static TinyReranker r;
  if (!r.path.empty()) return r;
  TinyBert& t = tiny_bert();
  r.spec = t.model->spec;
  r.spec.hparams.pooling = 4;
  const int64_t d = r.spec.hparams.dim;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-0.2f, 0.2f);
  const struct {
    const char* name;
    int64_t rows, cols;
  } parts[] = {{"cls.weight", d, d}, {"cls.bias", 0, d}, {"cls.output.weight", 2, d}, {"cls.output.bias", 0, 2}};
  r.head.clear();
  for (const auto& p : parts) {
    std::vector<float> v(static_cast<size_t>((p.rows ? p.rows : 1) * p.cols));
    for (float& f : v) f = u(rng);
    r.head.push_back(std::move(v));
  }
  for (size_t i = 0; i < 4; ++i) {
    ember::TensorSource ts;
    ts.name = parts[i].name;
    ts.dtype = ember::DType::F32;
    ts.shape = parts[i].rows ? std::vector<int64_t>{parts[i].rows, parts[i].cols} : std::vector<int64_t>{parts[i].cols};
    ts.data = r.head[i].data();
    ts.size = r.head[i].size() * sizeof(float);
    r.spec.tensors.push_back(ts);
  }
  r.path = ember::test::temp_dir("bert") + "/tiny-reranker.ember";
  const ember::Status st = ember::write_model(r.spec, r.path);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return r;
}

// The head on the encoder's first row, in double: tanh(W h + b), then W2 . + b2.
std::vector<double> reference_scores(const TinyReranker& r, const std::vector<int32_t>& ids) {
  const Mat rows = reference(r.spec, ids);
  const int64_t d = r.spec.hparams.dim;
  std::vector<double> mid(static_cast<size_t>(d)), out(2);
  for (int64_t i = 0; i < d; ++i) {
    double s = r.head[1][i];
    for (int64_t c = 0; c < d; ++c) s += static_cast<double>(r.head[0][i * d + c]) * rows[c];
    mid[i] = std::tanh(s);
  }
  for (int64_t i = 0; i < 2; ++i) {
    double s = r.head[3][i];
    for (int64_t c = 0; c < d; ++c) s += static_cast<double>(r.head[2][i * d + c]) * mid[c];
    out[i] = s;
  }
  return out;
}

TEST_CASE("bert reranker: rank pooling is the classifier head on the first row, computed in double, and ember_rerank joins query and document") {
  TinyReranker& r = tiny_reranker();
  Opened o(r.path, 2, 32);
  CHECK(ember_model_pooling(o.m) == EMBER_POOLING_RANK);
  const std::vector<std::vector<int32_t>> inputs = {kIds, {1, 40, 41, 42, 2, 43, 44, 2}, {1, 9, 2, 10, 2}};
  std::vector<const int32_t*> ptrs;
  std::vector<size_t> counts;
  for (const auto& v : inputs) {
    ptrs.push_back(v.data());
    counts.push_back(v.size());
  }
  ember_embed_options eo;
  ember_embed_options_default(&eo);
  eo.pooling = EMBER_POOLING_RANK;
  eo.normalize = -1;
  std::vector<float> got(2 * inputs.size());
  // One float short: the head's two scores per input are what it needs.
  CHECK(ember_embed_tokens(o.s, ptrs.data(), counts.data(), ptrs.size(), &eo, got.data(), got.size() - 1) ==
        EMBER_ERR_BUFFER_TOO_SMALL);
  REQUIRE_MESSAGE(ember_embed_tokens(o.s, ptrs.data(), counts.data(), ptrs.size(), &eo, got.data(), got.size()) == EMBER_OK,
                  ember_last_error());
  for (size_t i = 0; i < inputs.size(); ++i) {
    CAPTURE(i);
    const std::vector<double> want = reference_scores(r, inputs[i]);
    for (int j = 0; j < 2; ++j) CHECK(std::fabs(got[2 * i + j] - want[j]) <= 1e-4 * (1 + std::fabs(want[j])));
  }
  // ember_rerank: [CLS] query [SEP] document [SEP], the first label's score.
  const char* docs[] = {"a b", "hello there", "c"};
  std::vector<float> scores(3);
  REQUIRE_MESSAGE(ember_rerank(o.s, "hello", docs, 3, scores.data()) == EMBER_OK, ember_last_error());
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int32_t> q(64), d(64);
    size_t nq = 0, nd = 0;
    REQUIRE(ember_embed_tokenize(o.m, "hello", 5, q.data(), q.size(), &nq) == EMBER_OK);
    REQUIRE(ember_embed_tokenize(o.m, docs[i], std::strlen(docs[i]), d.data(), d.size(), &nd) == EMBER_OK);
    q.resize(nq);
    q.insert(q.end(), d.begin() + 1, d.begin() + static_cast<std::ptrdiff_t>(nd));  // the document without its BOS
    const std::vector<double> want = reference_scores(r, q);
    CHECK(std::fabs(scores[i] - want[0]) <= 1e-4 * (1 + std::fabs(want[0])));
  }
  // Refusals: NULLs, and a model without a head.
  CHECK(ember_rerank(o.s, nullptr, docs, 3, scores.data()) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_rerank(o.s, "q", nullptr, 3, scores.data()) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_rerank(o.s, "q", docs, 3, nullptr) == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(ember_rerank(o.s, "q", docs, 0, nullptr) == EMBER_OK);
  Opened plain(tiny_bert().path);
  CHECK(ember_rerank(plain.s, "q", docs, 3, scores.data()) == EMBER_ERR_UNSUPPORTED);
  CHECK(std::string(ember_last_error()).find("classifier head") != std::string::npos);
  // Its GGUF form keeps the head (llama.cpp's names) and the pooling.
  const std::string gguf = ember::test::temp_dir("bert") + "/tiny-reranker.gguf";
  REQUIRE(ember::write_gguf(r.spec, gguf).is_ok());
  auto back = ember::import_gguf(gguf);
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  CHECK(back.value()->spec.hparams.pooling == 4);
  const std::string again = ember::test::temp_dir("bert") + "/tiny-reranker-from-gguf.ember";
  REQUIRE(ember::write_model(back.value()->spec, again).is_ok());
  Opened b(again, 2, 32);
  std::vector<float> scores2(3);
  REQUIRE(ember_rerank(b.s, "hello", docs, 3, scores2.data()) == EMBER_OK);
  CHECK(scores2 == scores);
}

TEST_CASE("bert reranker: a classifier head whose pieces disagree is refused when the file opens") {
  TinyReranker& r = tiny_reranker();
  ember::ModelSpec bad = r.spec;
  for (auto& t : bad.tensors) {
    if (t.name == "cls.output.bias") {
      t.shape = {1};
      t.size = sizeof(float);
    }
  }
  const std::string path = ember::test::temp_dir("bert") + "/tiny-reranker-bad.ember";
  REQUIRE(ember::write_model(bad, path).is_ok());
  ember_model* m = nullptr;
  CHECK(ember_model_open(path.c_str(), nullptr, &m) == EMBER_ERR_BAD_TENSOR);
  CHECK(std::string(ember_last_error()).find("cls.output.bias") != std::string::npos);
}

#if EMBER_VULKAN  // a build without the Vulkan backend (the aarch64 cross build) has no such device
TEST_CASE("bert and nomic-bert: on Vulkan the rows the CPU gives, and a reranker its scores") {
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES") && std::filesystem::exists(lvp)) setenv("VK_ICD_FILENAMES", lvp, 1);
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  for (const char* arch : {"bert", "nomic-bert"}) {
    CAPTURE(arch);
    TinyBert& t = tiny_bert(arch);
    ember_model* m = nullptr;
    REQUIRE(ember_model_open(t.path.c_str(), nullptr, &m) == EMBER_OK);
    ember_session_options so;
    ember_session_options_default(&so);
    so.embeddings = 1;
    so.max_batch = 24;
    so.n_seqs = 3;
    so.backend = EMBER_BACKEND_VULKAN;
    so.vulkan_pipeline_cache_dir = "";
    ember_session* s = nullptr;
    if (ember_session_create(m, &so, &s) != EMBER_OK) {
      if (ember::test::test_data_required()) FAIL("no Vulkan device: " << ember_last_error());
      MESSAGE("skipped: no Vulkan device: " << ember_last_error());
      ember_model_free(m);
      return;
    }
    Opened cpu(t.path, 3, 24);
    const std::vector<std::vector<int32_t>> inputs = {kIds, {1, 40, 41, 42, 2}, {1, 9, 2}, {1, 300, 301, 2}};
    for (int32_t pooling : {EMBER_POOLING_NONE, EMBER_POOLING_MEAN, EMBER_POOLING_CLS}) {
      CAPTURE(pooling);
      std::vector<const int32_t*> ptrs;
      std::vector<size_t> counts;
      size_t rows = 0;
      for (const auto& v : inputs) {
        ptrs.push_back(v.data());
        counts.push_back(v.size());
        rows += pooling == EMBER_POOLING_NONE ? v.size() : 1;
      }
      const size_t dim = static_cast<size_t>(ember_session_embedding_size(s));
      std::vector<float> a(rows * dim), b(rows * dim);
      ember_embed_options eo;
      ember_embed_options_default(&eo);
      eo.pooling = pooling;
      REQUIRE(ember_embed_tokens(cpu.s, ptrs.data(), counts.data(), ptrs.size(), &eo, a.data(), a.size()) == EMBER_OK);
      REQUIRE_MESSAGE(ember_embed_tokens(s, ptrs.data(), counts.data(), ptrs.size(), &eo, b.data(), b.size()) == EMBER_OK,
                      ember_last_error());
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
      CHECK(worst < 1e-4);
    }
    ember_session_free(s);
    ember_model_free(m);
  }
  // A reranker's scores (the head runs on the host after the device's rows).
  TinyReranker& r = tiny_reranker();
  ember_model* m = nullptr;
  REQUIRE(ember_model_open(r.path.c_str(), nullptr, &m) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  so.embeddings = 1;
  so.max_batch = 32;
  so.n_seqs = 2;
  so.backend = EMBER_BACKEND_VULKAN;
  so.vulkan_pipeline_cache_dir = "";
  ember_session* s = nullptr;
  REQUIRE_MESSAGE(ember_session_create(m, &so, &s) == EMBER_OK, ember_last_error());
  Opened cpu(r.path, 2, 32);
  const char* docs[] = {"a b", "hello there", "c", "d e f"};
  std::vector<float> a(4), b(4);
  REQUIRE(ember_rerank(cpu.s, "hello", docs, 4, a.data()) == EMBER_OK);
  REQUIRE_MESSAGE(ember_rerank(s, "hello", docs, 4, b.data()) == EMBER_OK, ember_last_error());
  for (size_t i = 0; i < 4; ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-4 * (1 + std::fabs(a[i])));
  ember_session_free(s);
  ember_model_free(m);
}
#endif

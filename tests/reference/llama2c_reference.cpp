#include "reference/llama2c_reference.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace ember::test {
namespace {

// y[out] = W[out, in] · x[in], row-major W. Accumulates in double: the
// reference should be the more accurate side of any comparison.
void matmul(float* y, const float* w, const float* x, int32_t out, int32_t in) {
  for (int32_t i = 0; i < out; ++i) {
    const float* row = w + static_cast<size_t>(i) * in;
    double acc = 0.0;
    for (int32_t j = 0; j < in; ++j) acc += static_cast<double>(row[j]) * x[j];
    y[i] = static_cast<float>(acc);
  }
}

void rmsnorm(float* out, const float* x, const float* weight, int32_t n) {
  double ss = 0.0;
  for (int32_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
  for (int32_t i = 0; i < n; ++i) out[i] = static_cast<float>(weight[i] * (x[i] * scale));
}

void softmax(float* x, int32_t n) {
  float max = x[0];
  for (int32_t i = 1; i < n; ++i) max = std::max(max, x[i]);
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  for (int32_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] / sum);
}

// Rotates adjacent pairs (v[i], v[i+1]) of each head by pos * 10000^(-i/head_size),
// i being the pair's even offset within its head.
void rope(float* v, int32_t n, int32_t head_size, int32_t pos) {
  for (int32_t i = 0; i < n; i += 2) {
    const int32_t in_head = i % head_size;
    const double freq = 1.0 / std::pow(10000.0, static_cast<double>(in_head) / head_size);
    const double angle = pos * freq;
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = v[i], b = v[i + 1];
    v[i] = static_cast<float>(a * c - b * s);
    v[i + 1] = static_cast<float>(a * s + b * c);
  }
}

}  // namespace

bool ReferenceLlama::load(const std::string& path) {
  *this = ReferenceLlama();
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  int32_t header[7];
  bool ok = std::fread(header, sizeof header, 1, f) == 1;
  long file_size = -1;
  if (ok && std::fseek(f, 0, SEEK_END) == 0) file_size = std::ftell(f);
  if (!ok || file_size < 0) {
    std::fclose(f);
    return false;
  }

  ReferenceConfig c;
  c.dim = header[0];
  c.hidden_dim = header[1];
  c.n_layers = header[2];
  c.n_heads = header[3];
  c.n_kv_heads = header[4];
  c.shared_classifier = header[5] > 0;
  // A negative vocab_size flags an unshared classifier; INT32_MIN has no
  // positive counterpart and is rejected below as 0.
  c.vocab_size = header[5] == INT32_MIN ? 0 : (header[5] > 0 ? header[5] : -header[5]);
  c.seq_len = header[6];
  const int32_t limit = 1 << 20;  // far above any test model; keeps sizes small
  auto in_range = [&](int32_t v) { return v > 0 && v <= limit; };
  if (!in_range(c.dim) || !in_range(c.hidden_dim) || !in_range(c.n_layers) ||
      !in_range(c.n_heads) || !in_range(c.n_kv_heads) || !in_range(c.vocab_size) ||
      !in_range(c.seq_len) || c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 ||
      (c.dim / c.n_heads) % 2 != 0) {
    std::fclose(f);
    return false;
  }

  const size_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const size_t head_size = dim / c.n_heads;
  const size_t kv_dim = head_size * c.n_kv_heads;
  size_t offset = 0;
  auto take = [&](size_t count) {
    const size_t at = offset;
    offset += count;
    return at;
  };
  token_embedding_ = take(vocab * dim);
  rms_att_ = take(layers * dim);
  wq_ = take(layers * dim * dim);
  wk_ = take(layers * kv_dim * dim);
  wv_ = take(layers * kv_dim * dim);
  wo_ = take(layers * dim * dim);
  rms_ffn_ = take(layers * dim);
  w1_ = take(layers * hidden * dim);
  w2_ = take(layers * dim * hidden);
  w3_ = take(layers * hidden * dim);
  rms_final_ = take(dim);
  take(static_cast<size_t>(c.seq_len) * head_size / 2);  // freq_cis_real (unused: computed)
  take(static_cast<size_t>(c.seq_len) * head_size / 2);  // freq_cis_imag
  wcls_ = c.shared_classifier ? token_embedding_ : take(vocab * dim);

  if (static_cast<size_t>(file_size) != sizeof header + offset * sizeof(float)) {
    std::fclose(f);
    return false;
  }
  data_.resize(offset);
  ok = std::fseek(f, sizeof header, SEEK_SET) == 0 &&
       std::fread(data_.data(), sizeof(float), offset, f) == offset;
  std::fclose(f);
  if (!ok) {
    data_.clear();
    return false;
  }
  config_ = c;
  key_cache_.assign(layers * c.seq_len * kv_dim, 0.0f);
  value_cache_.assign(layers * c.seq_len * kv_dim, 0.0f);
  return true;
}

std::vector<float> ReferenceLlama::forward(int32_t token, int32_t pos) {
  const ReferenceConfig& c = config_;
  if (data_.empty() || token < 0 || token >= c.vocab_size || pos < 0 || pos >= c.seq_len) {
    return {};
  }
  const int32_t dim = c.dim, hidden = c.hidden_dim;
  const int32_t head_size = dim / c.n_heads;
  const int32_t kv_dim = head_size * c.n_kv_heads;
  const int32_t kv_mul = c.n_heads / c.n_kv_heads;  // query heads per kv head
  const float* w = data_.data();

  std::vector<float> x(w + token_embedding_ + static_cast<size_t>(token) * dim,
                       w + token_embedding_ + static_cast<size_t>(token + 1) * dim);
  std::vector<float> xb(dim), q(dim), attn_out(dim), proj(dim);
  std::vector<float> h1(hidden), h3(hidden), scores(pos + 1);

  for (int32_t l = 0; l < c.n_layers; ++l) {
    const size_t L = l;
    // Attention block.
    rmsnorm(xb.data(), x.data(), w + rms_att_ + L * dim, dim);
    const size_t cache_row = (L * c.seq_len + pos) * kv_dim;
    float* k = key_cache_.data() + cache_row;
    float* v = value_cache_.data() + cache_row;
    matmul(q.data(), w + wq_ + L * dim * dim, xb.data(), dim, dim);
    matmul(k, w + wk_ + L * kv_dim * dim, xb.data(), kv_dim, dim);
    matmul(v, w + wv_ + L * kv_dim * dim, xb.data(), kv_dim, dim);
    rope(q.data(), dim, head_size, pos);
    rope(k, kv_dim, head_size, pos);

    for (int32_t h = 0; h < c.n_heads; ++h) {
      const float* qh = q.data() + h * head_size;
      const int32_t kv_head = h / kv_mul;
      for (int32_t t = 0; t <= pos; ++t) {
        const float* kt = key_cache_.data() + (L * c.seq_len + t) * kv_dim + kv_head * head_size;
        double dot = 0.0;
        for (int32_t i = 0; i < head_size; ++i) dot += static_cast<double>(qh[i]) * kt[i];
        scores[t] = static_cast<float>(dot / std::sqrt(static_cast<double>(head_size)));
      }
      softmax(scores.data(), pos + 1);
      float* out = attn_out.data() + h * head_size;
      for (int32_t i = 0; i < head_size; ++i) {
        double acc = 0.0;
        for (int32_t t = 0; t <= pos; ++t) {
          const float* vt =
              value_cache_.data() + (L * c.seq_len + t) * kv_dim + kv_head * head_size;
          acc += static_cast<double>(scores[t]) * vt[i];
        }
        out[i] = static_cast<float>(acc);
      }
    }
    matmul(proj.data(), w + wo_ + L * dim * dim, attn_out.data(), dim, dim);
    for (int32_t i = 0; i < dim; ++i) x[i] += proj[i];

    // Feed-forward block: w2(silu(w1 x) * w3 x).
    rmsnorm(xb.data(), x.data(), w + rms_ffn_ + L * dim, dim);
    matmul(h1.data(), w + w1_ + L * hidden * dim, xb.data(), hidden, dim);
    matmul(h3.data(), w + w3_ + L * hidden * dim, xb.data(), hidden, dim);
    for (int32_t i = 0; i < hidden; ++i) {
      const double a = h1[i];
      h1[i] = static_cast<float>(a / (1.0 + std::exp(-a)) * h3[i]);
    }
    matmul(proj.data(), w + w2_ + L * dim * hidden, h1.data(), dim, hidden);
    for (int32_t i = 0; i < dim; ++i) x[i] += proj[i];
  }

  rmsnorm(xb.data(), x.data(), w + rms_final_, dim);
  std::vector<float> logits(c.vocab_size);
  matmul(logits.data(), w + wcls_, xb.data(), c.vocab_size, dim);
  return logits;
}

}  // namespace ember::test

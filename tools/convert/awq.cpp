#include "tools/convert/awq.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

namespace ember {

namespace {

constexpr int kSampleRows = 128;  // rows of each consumer the search quantizes
constexpr int kAlphaSteps = 20;   // α = 0, 1/20, .., 1
constexpr double kMinGain = 0.02; // the least relative fall of the sampled error that scales a group

int find_tensor(const ModelSpec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    if (spec.tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int64_t tensor_cols(const TensorSource& t) { return t.shape.empty() ? 0 : t.shape.back(); }
int64_t tensor_rows(const TensorSource& t) {
  int64_t r = 1;
  for (size_t d = 0; d + 1 < t.shape.size(); ++d) r *= t.shape[d];
  return r;
}

// The tensor's elements as f32 (its bytes checked against its shape).
Result<std::vector<float>> read_f32(const TensorSource& t) {
  const int64_t rows = tensor_rows(t), cols = tensor_cols(t);
  uint64_t row_bytes = 0;
  if (cols <= 0 || !dtype_bytes(t.dtype, static_cast<uint64_t>(cols), &row_bytes) ||
      row_bytes * static_cast<uint64_t>(rows) != t.size) {
    return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': %llu bytes do not hold its shape as %s", t.name.c_str(),
                         static_cast<unsigned long long>(t.size), dtype_name(t.dtype));
  }
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const uint8_t* src = static_cast<const uint8_t*>(t.data);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(t.dtype, src + r * row_bytes, out.data() + r * cols, cols);
  return out;
}

void store_f32(ImportedModel* model, TensorSource* t, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t->dtype = DType::F32;
  t->layout = Layout::RowMajor;
  t->data = bytes.data();
  t->size = bytes.size();
  model->owned.push_back(std::move(bytes));
}

struct Consumer {
  int index = -1;
  std::vector<float> w;       // rows x cols, f32
  int64_t rows = 0, cols = 0;
  DType type = DType::F32;
  std::vector<float> act;     // the mean square of each input column (the error's weights)
  std::vector<float> weigh;   // the quantization's importance before scaling (empty: unweighted)
};

// The group's sampled product error with column scales s (empty: none).
double group_error(const std::vector<Consumer>& cs, const std::vector<float>& s) {
  double total = 0.0;
  for (const Consumer& c : cs) {
    const int64_t n = c.cols;
    uint64_t qbytes = 0;
    dtype_bytes(c.type, static_cast<uint64_t>(n), &qbytes);
    std::vector<uint8_t> q(qbytes);
    std::vector<float> row(static_cast<size_t>(n)), back(static_cast<size_t>(n)), imp;
    if (!c.weigh.empty()) imp.resize(static_cast<size_t>(n));
    const int64_t samples = std::min<int64_t>(c.rows, kSampleRows);
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t r = i * c.rows / samples;
      const float* w = c.w.data() + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const float sj = s.empty() ? 1.0f : s[j];
        row[j] = w[j] * sj;
        if (!imp.empty()) imp[j] = c.weigh[j] / (sj * sj);
      }
      quantize_row_weighted(c.type, row.data(), q.data(), n, imp.empty() ? nullptr : imp.data());
      dequantize_row(c.type, q.data(), back.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        const float sj = s.empty() ? 1.0f : s[j];
        const double d = static_cast<double>(back[j]) / sj - w[j];
        total += c.act[j] * d * d;
      }
    }
  }
  return total;
}

// Column scales for α: key[j] names column j's scale (columns sharing a
// key/value channel share it), pooled[k] that scale's mean square.
std::vector<float> scales_for(float alpha, const std::vector<int>& key, const std::vector<double>& pooled) {
  std::vector<double> sk(pooled.size());
  double lo = 0, hi = 0;
  for (size_t k = 0; k < pooled.size(); ++k) {
    sk[k] = std::pow(std::max(pooled[k], 1e-30), 0.5 * alpha);
    lo = k == 0 ? sk[k] : std::min(lo, sk[k]);
    hi = k == 0 ? sk[k] : std::max(hi, sk[k]);
  }
  const double norm = std::sqrt(hi * lo);
  std::vector<float> s(key.size());
  for (size_t j = 0; j < key.size(); ++j) {
    s[j] = static_cast<float>(std::clamp(sk[key[j]] / norm, 1e-4, 1e4));
  }
  return s;
}

struct GroupPlan {
  std::string layer, prev, stats_of;
  std::vector<std::string> consumers;
  uint32_t kv_group = 1;  // query heads per key/value head (attn_v -> attn_output)
  uint32_t head_dim = 0;
};

}  // namespace

namespace {
// "blk.4.attn_q.weight" as "attn_q" in blk.4's line.
std::string short_name(const std::string& layer, const std::string& name) {
  std::string s = name;
  if (s.compare(0, layer.size() + 1, layer + ".") == 0) s = s.substr(layer.size() + 1);
  const std::string w = ".weight";
  if (s.size() > w.size() && s.compare(s.size() - w.size(), w.size(), w) == 0) s.resize(s.size() - w.size());
  return s;
}
}  // namespace

std::string describe_awq_group(const AwqGroup& g) {
  std::string s = "awq: " + g.layer + " " + short_name(g.layer, g.prev) + " ->";
  for (const std::string& c : g.consumers) s += " " + short_name(g.layer, c);
  char buf[160];
  if (!g.skipped.empty()) {
    s += ": not scaled, " + g.skipped;
  } else if (g.alpha == 0.0f) {
    s += ": α 0 (scaling did not lower the error)";
  } else {
    const double ratio = g.error_plain > 0 ? g.error_scaled / g.error_plain : 1.0;
    std::snprintf(buf, sizeof buf, ": α %.2f, product error %.3fx the unscaled", g.alpha, ratio);
    s += buf;
  }
  return s + "\n";
}

namespace {

// The groups of a pre-norm decoder (awq.h), in file order.
std::vector<GroupPlan> plan_groups(const ModelSpec& spec) {
  const HParams& hp = spec.hparams;
  std::vector<GroupPlan> plans;
  const uint32_t hd = hp.head_dim();
  const uint32_t kv_group = hp.n_kv_heads ? hp.n_heads / hp.n_kv_heads : 1;
  for (uint32_t l = 0; l < hp.n_layers; ++l) {
    const std::string layer = "blk." + std::to_string(l), b = layer + ".";
    plans.push_back({layer, b + "attn_norm.weight", b + "attn_q.weight",
                     {b + "attn_q.weight", b + "attn_k.weight", b + "attn_v.weight"}});
    plans.push_back({layer, b + "ffn_norm.weight", b + "ffn_gate.weight", {b + "ffn_gate.weight", b + "ffn_up.weight"}});
    plans.push_back({layer, b + "attn_v.weight", b + "attn_output.weight", {b + "attn_output.weight"}, kv_group, hd});
    plans.push_back({layer, b + "ffn_up.weight", b + "ffn_down.weight", {b + "ffn_down.weight"}});
  }
  if (find_tensor(spec, "output.weight") >= 0) {
    plans.push_back({"head", "output_norm.weight", "output.weight", {"output.weight"}});
  }
  return plans;
}

// Why the group cannot be scaled ("" when it can be searched), before its
// matrices are read.
std::string precheck(const ModelSpec& spec, const GroupPlan& p, const Imatrix& stats) {
  const int prev_i = find_tensor(spec, p.prev);
  bool have_all = prev_i >= 0;
  for (const std::string& c : p.consumers) have_all = have_all && find_tensor(spec, c) >= 0;
  if (!have_all) return "the model has no " + (prev_i < 0 ? p.prev : std::string("such matrices"));
  // up -> down folds only through a gated product (act(gate) * up).
  if (p.prev.find("ffn_up") != std::string::npos && find_tensor(spec, p.layer + ".ffn_gate.weight") < 0) {
    return "the feed-forward is not gated";
  }
  if (stats.find(p.stats_of) == nullptr) return "no statistics for " + p.stats_of;
  return "";
}

// The group's consumers in f32, with their target types and statistics.
Result<std::vector<Consumer>> load_consumers(const ModelSpec& spec, const GroupPlan& p, const Imatrix& stats,
                                             const Imatrix* weighting, const AwqTarget& target) {
  const ImatrixEntry* e = stats.find(p.stats_of);
  std::vector<Consumer> cs;
  for (const std::string& name : p.consumers) {
    const int ti = find_tensor(spec, name);
    const TensorSource& t = spec.tensors[ti];
    Consumer c;
    c.index = ti;
    c.rows = tensor_rows(t);
    c.cols = tensor_cols(t);
    c.type = target(t);
    const ImatrixEntry* own = stats.find(name);
    const ImatrixEntry* use = own ? own : e;
    if (static_cast<int64_t>(use->sum_sq.size()) != c.cols) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "--awq: the statistics' entry '%s' has %zu columns, the tensor '%s' %lld (another "
                           "model's file?)",
                           use->name.c_str(), use->sum_sq.size(), name.c_str(), static_cast<long long>(c.cols));
    }
    c.act = imatrix_importance(*use);
    if (weighting != nullptr && dtype_is_quantized(c.type) && c.type != DType::Q8_0) {
      if (const ImatrixEntry* we = weighting->find(name)) {
        if (static_cast<int64_t>(we->sum_sq.size()) == c.cols) c.weigh = imatrix_importance(*we);
      }
    }
    EMBER_ASSIGN_OR_RETURN(c.w, read_f32(t));
    cs.push_back(std::move(c));
  }
  return cs;
}

// Which scale each column takes (its own, or with grouped queries its
// key/value channel's) and each scale's pooled mean square.
struct Keys {
  std::vector<int> key;
  std::vector<double> pooled;
};

// "" and the keys, or why the widths do not line up.
std::string make_keys(const ModelSpec& spec, const GroupPlan& p, const std::vector<Consumer>& cs, Keys* out) {
  const int64_t cols = cs[0].cols;
  bool same_width = true;
  for (const Consumer& c : cs) same_width = same_width && c.cols == cols;
  const TensorSource& prev = spec.tensors[find_tensor(spec, p.prev)];
  const int64_t prev_len = prev.shape.size() == 1 ? prev.shape[0] : tensor_rows(prev);
  const bool grouped = p.head_dim > 0 && p.kv_group > 1;
  const int64_t n_keys = grouped ? cols / p.kv_group : cols;
  if (!same_width || prev_len != n_keys || (grouped && cols % (static_cast<int64_t>(p.head_dim) * p.kv_group))) {
    return "the widths do not line up (" + p.prev + " " + std::to_string(prev_len) + ", columns " +
           std::to_string(cols) + ")";
  }
  out->key.resize(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t head = grouped ? j / p.head_dim : 0, d = grouped ? j % p.head_dim : j;
    out->key[j] = static_cast<int>(grouped ? (head / p.kv_group) * p.head_dim + d : j);
  }
  out->pooled.assign(static_cast<size_t>(n_keys), 0.0);
  std::vector<int> counts(static_cast<size_t>(n_keys), 0);
  for (int64_t j = 0; j < cols; ++j) {
    out->pooled[out->key[j]] += cs[0].act[j];
    counts[out->key[j]]++;
  }
  for (int64_t k = 0; k < n_keys; ++k) out->pooled[k] /= std::max(counts[k], 1);
  return "";
}

// Sets g's alpha and errors: fixed_alpha when in [0, 1], else the grid's best
// (split over two threads: the quantizations dominate), kept only for a
// gain of kMinGain or more.
void search_alpha(const std::vector<Consumer>& cs, const Keys& k, float fixed_alpha, AwqGroup* g) {
  if (fixed_alpha >= 0.0f) {
    g->alpha = std::min(fixed_alpha, 1.0f);
    g->error_plain = group_error(cs, {});
    g->error_scaled = g->alpha > 0.0f ? group_error(cs, scales_for(g->alpha, k.key, k.pooled)) : g->error_plain;
    return;
  }
  std::vector<double> err(kAlphaSteps + 1, 0.0);
  auto run = [&](int first, int step) {
    for (int a = first; a <= kAlphaSteps; a += step) {
      const float alpha = static_cast<float>(a) / kAlphaSteps;
      err[a] = a == 0 ? group_error(cs, {}) : group_error(cs, scales_for(alpha, k.key, k.pooled));
    }
  };
  std::thread other(run, 1, 2);
  run(0, 2);
  other.join();
  int best = 0;
  for (int a = 1; a <= kAlphaSteps; ++a) {
    if (err[a] < err[best]) best = a;
  }
  g->error_plain = err[0];
  // A gain under kMinGain is not taken: on the synthetic 110m such groups
  // (q/k/v, gate/up: 0.2-1% in the sampled error) made the KL worse as
  // often as better (docs/decisions.md "Activation-aware scaling").
  if (err[best] > (1.0 - kMinGain) * err[0]) best = 0;
  g->alpha = static_cast<float>(best) / kAlphaSteps;
  g->error_scaled = err[best];
}

// Folds the scales: consumers' columns times s, prev (norm weight, or
// matrix rows and bias) divided by it.
Status fold(ImportedModel* model, const GroupPlan& p, std::vector<Consumer>* cs, const Keys& k, float alpha,
            AwqReport* rep) {
  ModelSpec& spec = model->spec;
  const std::vector<float> s = scales_for(alpha, k.key, k.pooled);
  const int64_t cols = static_cast<int64_t>(k.key.size()), n_keys = static_cast<int64_t>(k.pooled.size());
  for (Consumer& c : *cs) {
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) c.w[r * cols + j] *= s[j];
    }
    store_f32(model, &spec.tensors[c.index], c.w);
    rep->column_scales.emplace_back(spec.tensors[c.index].name, s);
  }
  std::vector<float> by_key(static_cast<size_t>(n_keys));
  for (int64_t j = 0; j < cols; ++j) by_key[k.key[j]] = s[j];
  std::vector<std::string> divided = {p.prev};
  const std::string bias = p.prev.substr(0, p.prev.size() - std::strlen("weight")) + "bias";
  if (find_tensor(spec, bias) >= 0) divided.push_back(bias);
  for (const std::string& name : divided) {
    TensorSource& t = spec.tensors[find_tensor(spec, name)];
    EMBER_ASSIGN_OR_RETURN(std::vector<float> v, read_f32(t));
    const int64_t per = static_cast<int64_t>(v.size()) / n_keys;  // 1 (norm, bias) or a row
    if (per * n_keys != static_cast<int64_t>(v.size())) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "--awq: tensor '%s' has %zu elements, not a multiple of %lld",
                           name.c_str(), v.size(), static_cast<long long>(n_keys));
    }
    for (int64_t kk = 0; kk < n_keys; ++kk) {
      for (int64_t i = 0; i < per; ++i) v[kk * per + i] /= by_key[kk];
    }
    store_f32(model, &t, v);
  }
  return Status::ok();
}

}  // namespace

Status apply_awq(ImportedModel* model, const Imatrix& stats, const Imatrix* weighting, const AwqTarget& target,
                 AwqReport* report, const AwqProgress& progress, float fixed_alpha) {
  const ModelSpec& spec = model->spec;
  if (spec.hparams.arch == ModelArch::Bert || spec.hparams.arch == ModelArch::NomicBert) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "--awq: '%s' is an encoder whose norms follow the residual sum: no operation to fold the "
                         "scales into (decoders only: llama, qwen2, qwen3, phi3, gemma2, gemma3)",
                         model_arch_name(spec.hparams.arch));
  }
  const std::vector<GroupPlan> plans = plan_groups(spec);
  AwqReport rep;
  int with_stats = 0;
  const int n_groups = static_cast<int>(plans.size());
  for (int gi = 0; gi < n_groups; ++gi) {
    const GroupPlan& p = plans[gi];
    AwqGroup g;
    g.layer = p.layer;
    g.prev = p.prev;
    g.consumers = p.consumers;
    g.skipped = precheck(spec, p, stats);
    if (g.skipped.empty()) {
      EMBER_ASSIGN_OR_RETURN(std::vector<Consumer> cs, load_consumers(spec, p, stats, weighting, target));
      ++with_stats;
      bool any_quantized = false;
      for (const Consumer& c : cs) any_quantized = any_quantized || dtype_is_quantized(c.type);
      Keys keys;
      if (!any_quantized) {
        g.skipped = "its matrices stay float";
      } else {
        g.skipped = make_keys(spec, p, cs, &keys);
      }
      if (g.skipped.empty()) {
        search_alpha(cs, keys, fixed_alpha, &g);
        if (g.alpha > 0.0f) {
          EMBER_TRY(fold(model, p, &cs, keys, g.alpha, &rep));
          rep.scaled++;
        }
      }
    }
    if (progress) progress(gi, n_groups, g);
    rep.groups.push_back(std::move(g));
  }
  if (with_stats == 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "--awq: the statistics have no entry for any scaled group (blk.0.attn_q.weight, ...): "
                         "another model's file, or not an importance matrix of this model");
  }
  if (report) *report = std::move(rep);
  return Status::ok();
}

Imatrix scale_imatrix(const Imatrix& weighting, const AwqReport& report) {
  Imatrix out = weighting;
  for (const auto& [name, s] : report.column_scales) {
    for (ImatrixEntry& e : out.entries) {
      if (e.name != name || e.sum_sq.size() != s.size()) continue;
      for (size_t j = 0; j < s.size(); ++j) e.sum_sq[j] /= s[j] * s[j];
    }
  }
  return out;
}

}  // namespace ember

#include "tools/convert/quantize.h"

#include "tools/convert/awq.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ember {

Result<DType> parse_target_dtype(const std::string& name) {
  DType t;
  if (!dtype_from_name(name.c_str(), &t)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "--dtype '%s' is not a type (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 "
                         "q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs)",
                         name.c_str());
  }
  return t;
}

Result<Layout> parse_layout(const std::string& name) {
  Layout l;
  if (!layout_from_name(name.c_str(), &l)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "--layout '%s' is not a layout (rows16, row-major)", name.c_str());
  }
  return l;
}

Result<std::unique_ptr<ImportedModel>> import_ember(const std::string& path) {
  auto model = std::make_unique<ImportedModel>();
  EMBER_ASSIGN_OR_RETURN(model->source, MappedFile::open(path));
  ModelContents c;
  EMBER_TRY(verify_model(model->source.data(), model->source.size(), &c).with_context("'" + path + "'"));
  ModelSpec& spec = model->spec;
  spec.hparams = c.hparams;
  spec.vocab = std::move(c.vocab);
  spec.provenance = std::move(c.provenance);
  for (const TensorView& t : c.tensors) {
    TensorSource s;
    s.name = t.name;
    s.dtype = t.dtype;
    s.shape.assign(t.shape, t.shape + t.n_dims);
    s.data = t.data;
    s.size = t.size;
    if (t.layout != Layout::RowMajor) {
      // Everything downstream reads rows; the writer regroups again.
      model->owned.emplace_back(t.size);
      unpack_rows16(t.dtype, t.data, model->owned.back().data(), t.rows(), t.cols());
      s.data = model->owned.back().data();
    }
    spec.tensors.push_back(std::move(s));
  }
  return model;
}

namespace {

// What the importance matrix did, for stderr ("" without one).
std::string describe_weighting(bool used, int weighted, const std::vector<std::string>& unweighted) {
  if (!used) return "";
  std::string s = "quantize: importance matrix: " + std::to_string(weighted) + " matrices weighted";
  if (!unweighted.empty()) {
    s += "; " + std::to_string(unweighted.size()) + " without an entry (unweighted):";
    for (const std::string& n : unweighted) s += " " + n;
  }
  return s + "\n";
}

// Tensor t's column importance from the imatrix (empty: no imatrix, no
// entry, or a type without a scale search).
Result<std::vector<float>> tensor_importance(const Imatrix* m, const TensorSource& t, int64_t cols, DType to) {
  if (m == nullptr || t.shape.size() < 2 || !dtype_is_quantized(to) || to == DType::Q8_0) return std::vector<float>{};
  const ImatrixEntry* e = m->find(t.name);
  if (e == nullptr) return std::vector<float>{};
  if (static_cast<int64_t>(e->sum_sq.size()) != cols) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "the importance matrix's entry '%s' has %zu columns, the tensor %lld (another model's file?)",
                         t.name.c_str(), e->sum_sq.size(), static_cast<long long>(cols));
  }
  return imatrix_importance(*e);
}

// Rows of t re-typed to `to` into out (dst_row_bytes each), weighted by the
// importance when it is not empty.
void requantize_rows(const TensorSource& t, int64_t rows, int64_t cols, uint64_t src_row_bytes, DType to,
                     uint64_t dst_row_bytes, const std::vector<float>& importance, std::vector<float>* row,
                     uint8_t* out) {
  row->resize(static_cast<size_t>(cols));
  const uint8_t* src = static_cast<const uint8_t*>(t.data);
  const float* w = importance.empty() ? nullptr : importance.data();
  for (int64_t i = 0; i < rows; ++i) {
    dequantize_row(t.dtype, src + i * src_row_bytes, row->data(), cols);
    quantize_row_weighted(to, row->data(), out + i * dst_row_bytes, cols, w);
  }
}

std::string imatrix_recipe(const Imatrix* m, int weighted) {
  if (m == nullptr) return "";
  std::string s = "; importance matrix for " + std::to_string(weighted) + " matrices";
  if (!m->datasets.empty()) s += " (" + m->datasets.back() + ", " + std::to_string(m->chunk_count) + " chunks)";
  return s;
}

// The tensors' sizes before activation-aware scaling turns some into f32.
std::vector<uint64_t> source_sizes(const ModelSpec& spec) {
  std::vector<uint64_t> v;
  for (const TensorSource& t : spec.tensors) v.push_back(t.size);
  return v;
}

// AWQ (tools/convert/awq.h) before quantizing, when asked: the weighting
// imatrix, if any, then describes the scaled matrices' inputs.
Status run_awq(ImportedModel* model, const QuantizeOptions& o, const AwqTarget& target, AwqReport* report,
               Imatrix* scaled_weighting, const Imatrix** weighting) {
  *weighting = o.imatrix;
  if (o.awq == nullptr) return Status::ok();
  EMBER_TRY(apply_awq(model, *o.awq, o.imatrix, target, report, o.awq_progress));
  if (o.imatrix != nullptr) {
    *scaled_weighting = scale_imatrix(*o.imatrix, *report);
    *weighting = scaled_weighting;
  }
  return Status::ok();
}

// What --dtype makes of t: norms f32; a matrix whose rows are not whole
// blocks of the target keeps its float type (f32 for a quantized source,
// which cannot have such rows; the block cannot straddle rows); else the target.
DType retype_target(const TensorSource& t, DType target) {
  const int64_t cols = t.shape.empty() ? 0 : t.shape.back();
  if (t.shape.size() == 1) return DType::F32;
  if (cols % dtype_block_elements(target) != 0) return dtype_is_quantized(t.dtype) ? DType::F32 : t.dtype;
  return target;
}

std::string awq_recipe(const QuantizeOptions& o, const AwqReport& r) {
  if (o.awq == nullptr) return "";
  return "; activation-aware scales on " + std::to_string(r.scaled) + " of " + std::to_string(r.groups.size()) +
         " groups";
}

}  // namespace

Status quantize_model(ImportedModel* model, DType target, QuantizeReport* report, const Imatrix* imatrix) {
  QuantizeOptions o;
  o.imatrix = imatrix;
  return quantize_model(model, target, report, o);
}

Status quantize_model(ImportedModel* model, DType target, QuantizeReport* report, const QuantizeOptions& opts) {
  QuantizeReport r;
  r.target = target;
  ModelSpec& spec = model->spec;
  std::vector<float> row;
  const std::vector<uint64_t> sizes = source_sizes(spec);
  // Each tensor's type, decided on the source (before AWQ makes scaled ones f32).
  std::vector<DType> wants;
  for (const TensorSource& t : spec.tensors) wants.push_back(retype_target(t, target));
  Imatrix scaled_weighting;
  const Imatrix* imatrix = nullptr;
  EMBER_TRY(run_awq(model, opts, [target](const TensorSource& t) { return retype_target(t, target); }, &r.awq,
                    &scaled_weighting, &imatrix));
  for (size_t ti = 0; ti < spec.tensors.size(); ++ti) {
    TensorSource& t = spec.tensors[ti];
    r.bytes_before += sizes[ti];
    const int64_t cols = t.shape.empty() ? 0 : t.shape.back();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
    uint64_t src_row_bytes = 0;
    if (cols <= 0 || !dtype_bytes(t.dtype, static_cast<uint64_t>(cols), &src_row_bytes) ||
        src_row_bytes * static_cast<uint64_t>(rows) != t.size) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': %llu bytes do not hold its shape as %s",
                           t.name.c_str(), static_cast<unsigned long long>(t.size), dtype_name(t.dtype));
    }
    const DType want = wants[ti];
    if (t.shape.size() == 1) {
      r.norms++;  // norms: tiny, read as f32 by every kernel
    } else if (want != target) {
      char why[96];
      std::snprintf(why, sizeof why, "rows of %lld elements are not a multiple of %d", static_cast<long long>(cols),
                    dtype_block_elements(target));
      r.kept.push_back({t.name, want, why});
    }
    if (want == t.dtype) {
      if (t.shape.size() > 1 && want == target) r.unchanged++;
      r.bytes_after += t.size;
      continue;
    }
    uint64_t dst_row_bytes = 0;
    dtype_bytes(want, static_cast<uint64_t>(cols), &dst_row_bytes);
    std::vector<uint8_t> out(dst_row_bytes * static_cast<uint64_t>(rows));
    EMBER_ASSIGN_OR_RETURN(const std::vector<float> importance, tensor_importance(imatrix, t, cols, want));
    if (!importance.empty()) {
      r.weighted++;
    } else if (imatrix && t.shape.size() > 1 && dtype_is_quantized(want) && want != DType::Q8_0) {
      r.unweighted.push_back(t.name);
    }
    requantize_rows(t, rows, cols, src_row_bytes, want, dst_row_bytes, importance, &row, out.data());
    if (t.shape.size() > 1 && want == target) r.converted++;
    t.dtype = want;
    t.data = out.data();
    t.size = out.size();
    r.bytes_after += t.size;
    model->owned.push_back(std::move(out));
  }
  // The recipe, as `ember info` shows it: target, exceptions, source.
  std::string recipe = std::string(dtype_name(target)) + " (norms f32";
  if (!r.kept.empty()) {
    int counts[kDTypeCount] = {};
    for (const auto& k : r.kept) counts[static_cast<int>(k.kept)]++;
    for (int i = 0; i < kDTypeCount; ++i) {
      if (counts[i]) {
        recipe += "; " + std::to_string(counts[i]) + " matrices kept " + dtype_name(static_cast<DType>(i)) +
                  ", rows not a multiple of 32";
      }
    }
  }
  recipe += imatrix_recipe(imatrix, r.weighted);
  recipe += awq_recipe(opts, r.awq);
  recipe += ") by ember quantize " EMBER_VERSION_STRING;
  if (!spec.provenance.quantization.empty()) recipe += ", from " + spec.provenance.quantization;
  spec.provenance.quantization = recipe;
  if (report) *report = std::move(r);
  return Status::ok();
}

std::string describe_quantize_report(const QuantizeReport& r) {
  std::string s;
  for (const auto& k : r.kept) {
    s += "quantize: '" + k.tensor + "' kept " + dtype_name(k.kept) + ": " + k.reason + "\n";
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "quantize: %d matrices -> %s, %d already %s, %zu kept wider, %d norms f32; %.2f MB -> %.2f MB\n",
                r.converted, dtype_name(r.target), r.unchanged, dtype_name(r.target), r.kept.size(), r.norms,
                r.bytes_before / 1e6, r.bytes_after / 1e6);
  return s + describe_weighting(r.weighted > 0 || !r.unweighted.empty(), r.weighted, r.unweighted) + line;
}

namespace {

using D = DType;
// name, base, bumped, all_layers, output, token_embd, wide (attn_output; attn_v and ffn_down elsewhere),
// first_v (attn_v of layers 0 and 1), gqa_v (attn_v with 4+ query heads per key/value head),
// first_down (ffn_down of the first sixteenth of the layers), plain_down / weighted_down (ffn_down
// of the first eighth without / with an importance matrix); F32: no such rule. The last five are
// llama.cpp's rules, kept where they measured better (docs/decisions.md "Quantization presets").
constexpr QuantPreset kPresets[] = {
    {"q2_k", D::Q2_K, D::Q3_K, false, D::Q6_K, D::Q4_K, D::Q2_K, D::F32, D::Q4_K, D::F32, D::F32, D::F32},
    {"q3_k_s", D::Q3_K, D::Q3_K, false, D::Q6_K, D::Q4_K, D::Q3_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q3_k_m", D::Q3_K, D::Q4_K, false, D::Q6_K, D::Q3_K, D::Q4_K, D::Q5_K, D::F32, D::Q5_K, D::F32, D::F32},
    {"q3_k_l", D::Q3_K, D::Q5_K, true, D::Q6_K, D::Q4_K, D::Q3_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q4_k_s", D::Q4_K, D::Q4_K, false, D::Q6_K, D::Q4_K, D::Q4_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q4_k_m", D::Q4_K, D::Q6_K, false, D::Q6_K, D::Q4_K, D::Q4_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q5_k_s", D::Q5_K, D::Q5_K, false, D::Q6_K, D::Q5_K, D::Q5_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q5_k_m", D::Q5_K, D::Q6_K, false, D::Q6_K, D::Q5_K, D::Q5_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q6_k", D::Q6_K, D::Q6_K, false, D::Q6_K, D::Q6_K, D::Q6_K, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q8_0", D::Q8_0, D::Q8_0, false, D::Q8_0, D::Q8_0, D::Q8_0, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q4_0", D::Q4_0, D::Q4_0, false, D::Q6_K, D::Q4_0, D::Q4_0, D::F32, D::F32, D::F32, D::F32, D::Q4_1},
    {"q4_1", D::Q4_1, D::Q4_1, false, D::Q6_K, D::Q4_1, D::Q4_1, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"q5_0", D::Q5_0, D::Q5_0, false, D::Q6_K, D::Q5_0, D::Q5_0, D::F32, D::F32, D::F32, D::F32, D::Q5_1},
    {"q5_1", D::Q5_1, D::Q5_1, false, D::Q6_K, D::Q5_1, D::Q5_1, D::F32, D::F32, D::F32, D::F32, D::F32},
    {"iq4_nl", D::IQ4_NL, D::IQ4_NL, false, D::Q6_K, D::IQ4_NL, D::IQ4_NL, D::F32, D::Q5_K, D::F32, D::Q5_K, D::F32},
    {"iq4_xs", D::IQ4_XS, D::IQ4_XS, false, D::Q6_K, D::IQ4_XS, D::IQ4_XS, D::F32, D::Q5_K, D::F32, D::Q5_K, D::F32},
};

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// "blk.N.<role>.weight" -> N, else -1.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  char* end = nullptr;
  const long v = std::strtol(name.c_str() + 4, &end, 10);
  return end && *end == '.' ? static_cast<int>(v) : -1;
}

bool is_super_block(DType t) {
  return t == D::Q2_K || t == D::Q3_K || t == D::Q4_K || t == D::Q5_K || t == D::Q6_K || t == D::IQ4_XS;
}

}  // namespace

const char* quant_preset_names() {
  return "q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl iq4_xs";
}

Result<QuantPreset> parse_quant_preset(const std::string& name) {
  for (const QuantPreset& p : kPresets) {
    if (name == p.name) return p;
  }
  return Status::error(EMBER_ERR_INVALID_ARGUMENT, "--type '%s' is not a preset (%s)", name.c_str(),
                       quant_preset_names());
}

bool preset_bumped_layer(int layer, int n_layers) {
  if (n_layers <= 0 || layer < 0) return false;
  const int eighth = n_layers >= 8 ? n_layers / 8 : 1;
  return layer < eighth || layer >= n_layers - eighth || layer % 3 == 2;
}

DType preset_type(const QuantPreset& p, const std::string& name, int n_layers, bool tied, int gqa, bool weighted) {
  if (name == "output.weight") return p.output;
  // A tied embedding is the logits head too: it takes the head's type.
  if (name == "token_embd.weight") return tied ? p.output : p.embd;
  if (ends_with(name, ".attn_v.weight") || ends_with(name, ".ffn_down.weight")) {
    const int layer = layer_of(name);
    const bool v = ends_with(name, ".attn_v.weight");
    if (p.first_v != D::F32 && v && layer >= 0 && layer < 2) return p.first_v;
    // With grouped queries attn_v is a fraction of attn_q's size, and each of
    // its rows serves several heads: a wider type costs little.
    if (p.gqa_v != D::F32 && v && gqa >= 4) return p.gqa_v;
    if (p.first_down != D::F32 && !v && layer >= 0 && layer < n_layers / 16) return p.first_down;
    if (!v && layer >= 0 && layer < n_layers / 8) {
      const DType first = weighted ? p.weighted_down : p.plain_down;
      if (first != D::F32) return first;
    }
    if (p.all_layers || preset_bumped_layer(layer, n_layers)) return p.bumped;
    return p.wide;
  }
  if (ends_with(name, ".attn_output.weight")) return p.wide;
  return p.base;
}

DType preset_fallback(DType want, int64_t cols) {
  if (is_super_block(want) && cols % kSuperBlock != 0) {
    switch (want) {
      // Q4_0 measured closer to the float model than IQ4_NL in q3_k_m's
      // place on the 0.5b synthetic (docs/decisions.md "Quantization presets").
      case D::Q2_K: case D::Q3_K: want = D::Q4_0; break;
      case D::IQ4_XS: want = D::IQ4_NL; break;
      case D::Q4_K: want = D::Q5_0; break;
      case D::Q5_K: want = D::Q5_1; break;
      default: want = D::Q8_0; break;  // Q6_K
    }
  }
  if (dtype_is_quantized(want) && cols % kQuantBlock != 0) want = D::F16;
  return want;
}

Status quantize_model_preset(ImportedModel* model, const QuantPreset& preset, PresetReport* report,
                             void (*progress)(int, int, const PresetChoice&), const Imatrix* imatrix) {
  QuantizeOptions o;
  o.imatrix = imatrix;
  return quantize_model_preset(model, preset, report, progress, o);
}

Status quantize_model_preset(ImportedModel* model, const QuantPreset& preset, PresetReport* report,
                             void (*progress)(int, int, const PresetChoice&), const QuantizeOptions& opts) {
  PresetReport r;
  ModelSpec& spec = model->spec;
  const int n_layers = static_cast<int>(spec.hparams.n_layers);
  const int gqa = spec.hparams.n_kv_heads > 0 ? static_cast<int>(spec.hparams.n_heads / spec.hparams.n_kv_heads) : 1;
  std::vector<float> row;
  const int n = static_cast<int>(spec.tensors.size());
  bool tied = true;  // no output.weight: token_embd is the logits head too
  for (const TensorSource& t : spec.tensors) tied = tied && t.name != "output.weight";
  auto want_of = [&](const TensorSource& t) {
    return t.shape.size() == 1 ? D::F32 : preset_type(preset, t.name, n_layers, tied, gqa, opts.imatrix != nullptr);
  };
  auto chosen_of = [&](const TensorSource& t) {
    return t.shape.size() == 1 ? D::F32 : preset_fallback(want_of(t), t.shape.back());
  };
  const std::vector<uint64_t> sizes = source_sizes(spec);
  std::vector<DType> from;
  for (const TensorSource& t : spec.tensors) from.push_back(t.dtype);
  Imatrix scaled_weighting;
  const Imatrix* imatrix = nullptr;
  EMBER_TRY(run_awq(model, opts, chosen_of, &r.awq, &scaled_weighting, &imatrix));
  for (int ti = 0; ti < n; ++ti) {
    TensorSource& t = spec.tensors[ti];
    r.bytes_before += sizes[ti];
    const int64_t cols = t.shape.empty() ? 0 : t.shape.back();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
    uint64_t src_row_bytes = 0;
    if (cols <= 0 || !dtype_bytes(t.dtype, static_cast<uint64_t>(cols), &src_row_bytes) ||
        src_row_bytes * static_cast<uint64_t>(rows) != t.size) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': %llu bytes do not hold its shape as %s",
                           t.name.c_str(), static_cast<unsigned long long>(t.size), dtype_name(t.dtype));
    }
    PresetChoice c;
    c.tensor = t.name;
    c.shape = t.shape;
    c.from = from[ti];
    c.want = want_of(t);
    c.chosen = chosen_of(t);
    if (dtype_is_quantized(from[ti]) && c.chosen != from[ti]) r.dequantized++;
    std::vector<float> importance;
    if (c.chosen != t.dtype) {
      EMBER_ASSIGN_OR_RETURN(importance, tensor_importance(imatrix, t, cols, c.chosen));
      c.weighted = !importance.empty();
      if (c.weighted) {
        r.weighted++;
      } else if (imatrix && t.shape.size() > 1 && dtype_is_quantized(c.chosen) && c.chosen != D::Q8_0) {
        r.unweighted.push_back(t.name);
      }
    }
    if (progress) progress(ti, n, c);
    r.elements += static_cast<uint64_t>(rows * cols);
    if (c.chosen != t.dtype) {
      uint64_t dst_row_bytes = 0;
      dtype_bytes(c.chosen, static_cast<uint64_t>(cols), &dst_row_bytes);
      std::vector<uint8_t> out(dst_row_bytes * static_cast<uint64_t>(rows));
      requantize_rows(t, rows, cols, src_row_bytes, c.chosen, dst_row_bytes, importance, &row, out.data());
      t.dtype = c.chosen;
      t.data = out.data();
      t.size = out.size();
      model->owned.push_back(std::move(out));
    }
    r.bytes_after += t.size;
    r.choices.push_back(std::move(c));
  }
  int fallbacks = 0;
  for (const auto& c : r.choices) fallbacks += c.want != c.chosen;
  std::string recipe = std::string(preset.name) + " preset (norms f32";
  if (fallbacks) recipe += "; " + std::to_string(fallbacks) + " matrices fell back, rows not whole blocks";
  recipe += imatrix_recipe(imatrix, r.weighted);
  recipe += awq_recipe(opts, r.awq);
  recipe += ") by ember quantize " EMBER_VERSION_STRING;
  if (!spec.provenance.quantization.empty()) recipe += ", from " + spec.provenance.quantization;
  spec.provenance.quantization = recipe;
  if (report) *report = std::move(r);
  return Status::ok();
}

std::string describe_preset_report(const QuantPreset& preset, const PresetReport& r) {
  std::string s;
  char line[256];
  uint64_t elems[kDTypeCount] = {}, bytes[kDTypeCount] = {};
  int count[kDTypeCount] = {};
  for (const auto& c : r.choices) {
    uint64_t e = 1;
    for (int64_t d : c.shape) e *= static_cast<uint64_t>(d);
    uint64_t b = 0;
    dtype_bytes(c.chosen, e, &b);  // whole rows; the sum over rows is the same
    const int i = static_cast<int>(c.chosen);
    elems[i] += e;
    bytes[i] += b;
    count[i]++;
  }
  std::snprintf(line, sizeof line, "quantize: %s mixture:\n", preset.name);
  s += line;
  for (int i = 0; i < kDTypeCount; ++i) {
    if (!count[i]) continue;
    std::snprintf(line, sizeof line, "  %-7s %4d tensors %12llu weights (%5.1f%%) %6.3f bits/weight\n",
                  dtype_name(static_cast<DType>(i)), count[i], static_cast<unsigned long long>(elems[i]),
                  r.elements ? 100.0 * elems[i] / r.elements : 0.0, elems[i] ? 8.0 * bytes[i] / elems[i] : 0.0);
    s += line;
  }
  s += describe_weighting(r.weighted > 0 || !r.unweighted.empty(), r.weighted, r.unweighted);
  std::snprintf(line, sizeof line, "quantize: %.3f bits per weight overall; %.2f MB -> %.2f MB\n",
                r.elements ? 8.0 * r.bytes_after / r.elements : 0.0, r.bytes_before / 1e6, r.bytes_after / 1e6);
  return s + line;
}

}  // namespace ember

#include "tools/convert/quantize.h"

#include <cstdio>

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

Status quantize_model(ImportedModel* model, DType target, QuantizeReport* report) {
  QuantizeReport r;
  r.target = target;
  ModelSpec& spec = model->spec;
  std::vector<float> row;
  for (TensorSource& t : spec.tensors) {
    r.bytes_before += t.size;
    const int64_t cols = t.shape.empty() ? 0 : t.shape.back();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
    uint64_t src_row_bytes = 0;
    if (cols <= 0 || !dtype_bytes(t.dtype, static_cast<uint64_t>(cols), &src_row_bytes) ||
        src_row_bytes * static_cast<uint64_t>(rows) != t.size) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "tensor '%s': %llu bytes do not hold its shape as %s",
                           t.name.c_str(), static_cast<unsigned long long>(t.size), dtype_name(t.dtype));
    }
    DType want = target;
    if (t.shape.size() == 1) {
      want = DType::F32;  // norms: tiny, read as f32 by every kernel
      r.norms++;
    } else if (cols % dtype_block_elements(target) != 0) {
      // The block cannot straddle rows: keep the source type when it is a
      // float type, else (a quantized source, which cannot have such rows)
      // f32.
      want = dtype_is_quantized(t.dtype) ? DType::F32 : t.dtype;
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
    row.resize(static_cast<size_t>(cols));
    const uint8_t* src = static_cast<const uint8_t*>(t.data);
    for (int64_t i = 0; i < rows; ++i) {
      dequantize_row(t.dtype, src + i * src_row_bytes, row.data(), cols);
      quantize_row(want, row.data(), out.data() + i * dst_row_bytes, cols);
    }
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
  return s + line;
}

}  // namespace ember

// Re-typing a model's weights: `ember quantize` and `ember convert --dtype`.
// Matrices become the target type; norms (1-D tensors) stay f32; a matrix
// whose rows are not a whole number of the target's blocks (32 elements, 256
// for the K-quants and IQ4_XS) keeps its own (wider) float type, which is
// reported. The per-tensor presets of issue 12 (q4_k_m, ...) are below.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/convert/awq.h"
#include "tools/convert/imatrix.h"
#include "tools/convert/importers.h"

namespace ember {

// A tensor that did not become the target type, and why.
struct QuantizeNote {
  std::string tensor;
  DType kept = DType::F32;
  std::string reason;
};

struct QuantizeReport {
  DType target = DType::F32;
  int converted = 0;                // matrices now of the target type
  int unchanged = 0;                // already of the target type (bytes copied)
  int norms = 0;                    // 1-D tensors kept f32
  std::vector<QuantizeNote> kept;   // matrices kept wider, with the reason
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
  // With an importance matrix: matrices whose scale searches it weighted,
  // and the quantized ones it has no entry for (searched unweighted).
  int weighted = 0;
  std::vector<std::string> unweighted;
  AwqReport awq;  // with --awq: each group's scaling
};

// The targets `ember quantize --dtype` accepts: f32, f16, bf16, q8_0, q4_0.
// Errors: EMBER_ERR_INVALID_ARGUMENT naming the value and the choices.
Result<DType> parse_target_dtype(const std::string& name);
// `--layout rows16|row-major`: how the writer stores the matrices layout_fits allows (quantized and float)
// (core/layout.h); rows16 unless told.
Result<Layout> parse_layout(const std::string& name);
constexpr const char* kLayoutHelp =
    "  --layout L   matrices stored as rows16 (default: 16 rows interleaved for the CPU kernels; quantized and\n"
    "               f32/f16/bf16 matrices whose rows are a multiple of 16) or row-major (the GGUF order)\n";

// Opens an .ember file (verified) as an ImportedModel whose spec points into
// the mapping, so it can be re-typed and written again.
Result<std::unique_ptr<ImportedModel>> import_ember(const std::string& path);

// Re-types model->spec's tensors to `target` in place. New bytes are owned
// by model->owned; provenance.quantization records the recipe. A float
// source is converted through f32 (a quantized source is dequantized first,
// so re-quantizing Q8_0 to Q4_0 loses what both lose). Errors:
// EMBER_ERR_BAD_TENSOR for a tensor whose size does not match its shape.
// imatrix (may be null): each matrix it has an entry for is quantized with
// its columns' importance (core/dtype.h quantize_row_weighted); an entry
// whose width is not the matrix's is EMBER_ERR_INVALID_ARGUMENT (another
// model's file).
Status quantize_model(ImportedModel* model, DType target, QuantizeReport* report, const Imatrix* imatrix = nullptr);

// What quantizing may use beside the type: an importance matrix weighing
// the scale searches, and activation statistics for AWQ-style scaling
// (tools/convert/awq.h: the matrices are scaled, the preceding norms or
// matrices divided, before quantizing). Either may be null.
struct QuantizeOptions {
  const Imatrix* imatrix = nullptr;
  const Imatrix* awq = nullptr;
  AwqProgress awq_progress;  // may be empty
};
Status quantize_model(ImportedModel* model, DType target, QuantizeReport* report, const QuantizeOptions& opts);

// One line per kept tensor plus a summary, for stderr.
std::string describe_quantize_report(const QuantizeReport& report);

// Presets (`ember quantize --type q4_k_m`): a base type plus rules by tensor
// role and layer (docs/decisions.md "Quantization presets").
struct QuantPreset {
  const char* name;
  DType base;
  DType bumped;   // attn_v / ffn_down of the bumped layers (== base: none)
  bool all_layers;  // bumped applies to every layer (the _l presets)
  DType output;   // output.weight
  DType embd;     // token_embd.weight (untied; a tied one is the head: `output`)
  DType wide;     // attn_output, and attn_v / ffn_down outside the bumped layers (== base: none)
  DType first_v;  // attn_v of layers 0 and 1 (F32: no such rule; q3_k_m: q5_k)
  DType gqa_v;    // attn_v when 4 or more query heads share each key/value head (F32: no such rule)
  DType first_down;  // ffn_down of the first sixteenth of the layers (F32: no such rule; q3_k_m: q5_k)
  DType plain_down;  // ffn_down of the first eighth of the layers without an importance matrix (F32: none)
  DType weighted_down;  // ffn_down of the first eighth of the layers with an importance matrix (F32: none)
};
// The valid names, space-separated (for errors and --help).
const char* quant_preset_names();
// Errors: EMBER_ERR_INVALID_ARGUMENT naming the value and listing the presets.
Result<QuantPreset> parse_quant_preset(const std::string& name);
// Whether layer `layer` of `n_layers` gets the bumped type in an _m preset:
// the first and last eighth (at least one layer each) and every third layer.
bool preset_bumped_layer(int layer, int n_layers);
// The type a preset wants for a matrix, before the fallback; tied: the
// model has no output.weight (token_embd is the logits head too); gqa:
// query heads per key/value head; weighted: quantized with an importance
// matrix.
DType preset_type(const QuantPreset& p, const std::string& tensor, int n_layers, bool tied = false, int gqa = 1,
                  bool weighted = false);
// The fallback for rows of `cols` elements: K-quants / iq4_xs need 256,
// the rest 32 (Q2_K, Q3_K -> Q4_0; IQ4_XS -> IQ4_NL; Q4_K -> Q5_0; Q5_K ->
// Q5_1; Q6_K -> Q8_0); what cannot be whole blocks becomes f16.
DType preset_fallback(DType want, int64_t cols);

struct PresetChoice {
  std::string tensor;
  std::vector<int64_t> shape;
  DType from = DType::F32, want = DType::F32, chosen = DType::F32;
  bool weighted = false;  // quantized with the importance matrix's entry
};
struct PresetReport {
  std::vector<PresetChoice> choices;  // every tensor, in file order
  uint64_t bytes_before = 0, bytes_after = 0;
  uint64_t elements = 0;
  int dequantized = 0;  // tensors whose source was quantized
  int weighted = 0;     // with an importance matrix: as QuantizeReport's
  std::vector<std::string> unweighted;
  AwqReport awq;        // as QuantizeReport's
};
// progress(i, n, choice) is called before each tensor is converted (may be
// empty). Norms (1-D) stay f32.
Status quantize_model_preset(ImportedModel* model, const QuantPreset& preset, PresetReport* report,
                             void (*progress)(int i, int n, const PresetChoice& c) = nullptr,
                             const Imatrix* imatrix = nullptr);
Status quantize_model_preset(ImportedModel* model, const QuantPreset& preset, PresetReport* report,
                             void (*progress)(int i, int n, const PresetChoice& c), const QuantizeOptions& opts);
// The mixture: per type, tensors, elements and share; the bits per weight.
std::string describe_preset_report(const QuantPreset& preset, const PresetReport& report);

}  // namespace ember

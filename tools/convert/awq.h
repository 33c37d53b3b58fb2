// Activation-aware scaling (AWQ-style, issue 45 item 3): before a model is
// quantized, each input column j of a group of matrices is multiplied by a
// scale s_j and the operation producing that input is divided by it, so the
// float model computes the same function while the columns that carry large
// activations take more of each block's precision.
//
// The groups, per layer of a pre-norm decoder (llama, qwen2/3, phi3, gemma2/3):
//   attn_norm  -> attn_q, attn_k, attn_v     (the norm's weight / s)
//   ffn_norm   -> ffn_gate, ffn_up           (the norm's weight / s)
//   attn_v     -> attn_output                (attn_v's rows and bias / s; with
//                                             grouped queries one scale per
//                                             key/value channel, shared by the
//                                             query heads that read it)
//   ffn_up     -> ffn_down                   (ffn_up's rows and bias / s: the
//                                             gated product is linear in up)
// and output_norm -> output when the head is its own matrix (not tied) and
// the statistics have its entry (ember imatrix --process-output).
//
// The statistics are an importance matrix's (tools/convert/imatrix.h: per
// column the mean square m_j of the matrix's inputs). For α on a grid of 0,
// 0.05 .. 1, s_j = m_j^(α/2), normalized to a geometric mean of max and min
// of 1; each consumer's sampled rows (at most 128) are quantized to the type
// it will get (weighted as it will be) and the error of the product,
// sum_j m_j (W'_ij / s_j - W_ij)^2, is summed over the group. The α with the
// least error is kept; α = 0 is no scaling, so no group gets worse by this
// measure. The model stays a plain model: scaled matrices and norms become
// f32 tensors, quantized afterwards like any other.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/convert/imatrix.h"
#include "tools/convert/importers.h"

namespace ember {

struct AwqGroup {
  std::string layer;                   // "blk.3", or "head" (output_norm -> output)
  std::string prev;                    // the tensor divided by the scales
  std::vector<std::string> consumers;  // the matrices whose columns are multiplied
  float alpha = 0.0f;                  // 0: left unscaled
  double error_plain = 0.0;            // the group's sampled product error without scaling
  double error_scaled = 0.0;           // ... with the chosen α (== plain when α is 0)
  std::string skipped;                 // why the group was not searched ("" when it was)
};

struct AwqReport {
  std::vector<AwqGroup> groups;
  int scaled = 0;  // groups with α > 0
  // Per consumer, the scales its columns were multiplied by: an importance
  // matrix weighing the scaled matrix must divide its column j by s_j^2.
  std::vector<std::pair<std::string, std::vector<float>>> column_scales;
};

// The type each tensor will be quantized to (its preset or --dtype choice).
using AwqTarget = std::function<DType(const TensorSource&)>;

// Scales model's matrices in place (new f32 bytes owned by model->owned).
// stats: the activation statistics; weighting (may be null): the importance
// matrix the quantization will weigh with, before scaling (the search
// weighs as that quantization will). progress (may be null) is called after
// each group. Errors: EMBER_ERR_INVALID_ARGUMENT when stats has no entry for
// any group or an entry of another width (another model's file),
// EMBER_ERR_UNSUPPORTED for an encoder (post-norm: no operation to fold into).
// fixed_alpha in [0, 1] skips the search and scales every group with it
// (the tests' way to scale groups the search would leave alone).
using AwqProgress = std::function<void(int i, int n, const AwqGroup& g)>;
Status apply_awq(ImportedModel* model, const Imatrix& stats, const Imatrix* weighting, const AwqTarget& target,
                 AwqReport* report, const AwqProgress& progress = nullptr, float fixed_alpha = -1.0f);

// weighting with each scaled consumer's column j divided by s_j^2 (the
// scaled matrix's inputs are x_j / s_j).
Imatrix scale_imatrix(const Imatrix& weighting, const AwqReport& report);

// One line per group, for stderr.
std::string describe_awq_group(const AwqGroup& g);

}  // namespace ember

// The block codecs of the types beyond Q8_0/Q4_0 (see dtype.h for each
// layout), behind dequantize_row and quantize_row. Internal to core.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ember {

// `nb` blocks each; dst/src hold nb * (32 or 256) floats.
void dequantize_q4_1(const BlockQ4_1* b, float* y, int64_t nb);
void dequantize_q5_0(const BlockQ5_0* b, float* y, int64_t nb);
void dequantize_q5_1(const BlockQ5_1* b, float* y, int64_t nb);
void dequantize_q2_k(const BlockQ2_K* b, float* y, int64_t nb);
void dequantize_q3_k(const BlockQ3_K* b, float* y, int64_t nb);
void dequantize_q4_k(const BlockQ4_K* b, float* y, int64_t nb);
void dequantize_q5_k(const BlockQ5_K* b, float* y, int64_t nb);
void dequantize_q6_k(const BlockQ6_K* b, float* y, int64_t nb);
void dequantize_iq4_nl(const BlockIQ4_NL* b, float* y, int64_t nb);
void dequantize_iq4_xs(const BlockIQ4_XS* b, float* y, int64_t nb);

// w: nb * (32 or 256) weights, one per element (quantize_row_weighted), or
// null: every element alike.
void quantize_q4_1(const float* x, BlockQ4_1* b, int64_t nb, const float* w = nullptr);
void quantize_q5_0(const float* x, BlockQ5_0* b, int64_t nb, const float* w = nullptr);
void quantize_q5_1(const float* x, BlockQ5_1* b, int64_t nb, const float* w = nullptr);
void quantize_q2_k(const float* x, BlockQ2_K* b, int64_t nb, const float* w = nullptr);
void quantize_q3_k(const float* x, BlockQ3_K* b, int64_t nb, const float* w = nullptr);
void quantize_q4_k(const float* x, BlockQ4_K* b, int64_t nb, const float* w = nullptr);
void quantize_q5_k(const float* x, BlockQ5_K* b, int64_t nb, const float* w = nullptr);
void quantize_q6_k(const float* x, BlockQ6_K* b, int64_t nb, const float* w = nullptr);
void quantize_iq4_nl(const float* x, BlockIQ4_NL* b, int64_t nb, const float* w = nullptr);
void quantize_iq4_xs(const float* x, BlockIQ4_XS* b, int64_t nb, const float* w = nullptr);

// The scale s minimizing sum w (x - s q)^2, q = round(x / s) in qmin..qmax
// (Q4_0 with weights).
float fit_symmetric_weighted(const float* x, int n, int qmin, int qmax, const float* w);

}  // namespace ember

// The graph description (DESIGN.md "Execution"): the model emits its forward
// pass once per session as a list of ops over weights (in the mapped file),
// KV caches and activations; the memory plan gives every activation an
// offset; a backend prepares the list once and executes it each step.
// Written by runtime/model (llama_graph.cpp), read by runtime/memory and
// every backend, so it lives in core.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/hparams.h"
#include "core/kv_type.h"
#include "core/layout.h"

namespace ember {

// A weight as stored in the mapped file: [rows, cols], rows contiguous.
struct WeightRef {
  const char* name = "";
  DType dtype = DType::F32;
  Layout layout = Layout::RowMajor;  // Rows16: see core/layout.h
  const uint8_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t size = 0;
};

enum class OpKind : uint8_t {
  Embed,      // out[i] = weight row tokens[i]
  RmsNorm,    // out[i] = a[i] / rms(a[i]) * weight
  MatMul,     // out[i] = weight · a[i]   (weight [rows, cols]: out has rows cols)
  Rope,       // a[i] rotated in place for position pos + i
  Attention,  // k = b, v = c stored at pos + i in the layer's cache, then
              // out[i] = causal grouped-query attention of query a[i]
  Add,        // out[i] = a[i] + b[i] (out may be a)
  SwiGLU,     // out[i] = silu(a[i]) * b[i] (out may be a)
};

const char* op_name(OpKind kind);

struct Op {
  OpKind kind = OpKind::Add;
  int32_t out = -1;      // activation ids
  int32_t a = -1;
  int32_t b = -1;
  int32_t c = -1;
  int32_t weight = -1;   // index into Graph::weights
  int32_t layer = -1;    // Attention: which KV cache
  bool last_row = false; // read only the step's last row of `a` (the logits head)
};

struct ActivationDesc {
  const char* name = "";
  int64_t cols = 0;      // f32 elements per row
  int32_t rows = 0;      // rows at most: the session's max batch, or 1
};

// One session's forward pass. Built by the model (model/llama_graph.cpp).
struct Graph {
  HParams hparams;
  int32_t max_batch = 0;   // most tokens one step processes
  int32_t context = 0;     // positions the KV cache holds
  KvType kv_type_k = KvType::F32;
  KvType kv_type_v = KvType::F32;
  std::vector<WeightRef> weights;
  std::vector<ActivationDesc> activations;
  std::vector<Op> ops;
  int32_t logits = -1;     // activation holding [1, vocab_size] after a step
};

// One step: n_tokens tokens at positions pos .. pos + n_tokens - 1.
struct StepArgs {
  const int32_t* tokens = nullptr;
  int32_t n_tokens = 0;
  int32_t pos = 0;
  float* logits = nullptr;  // vocab_size floats for the last token, or null
};

}  // namespace ember

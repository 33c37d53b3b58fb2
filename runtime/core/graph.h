// The graph description (ARCHITECTURE.md "Execution: a graph, prepared
// once"): the model emits its forward
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
#include "core/status.h"

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
  Embed,      // out[i] = weight row tokens[i] (* params.embed.scale when set)
  RmsNorm,    // out[i] = a[i] / rms(a[i]) * weight, or per group-wide chunk
              // of a[i] with a group-long weight (out may be a)
  MatMul,     // out[i] = weight · a[i]   (weight [rows, cols]: out has rows cols)
  Rope,       // a[i] rotated in place for position pos + i
  Attention,  // k = b, v = c stored at pos + i in the layer's cache, then
              // out[i] = causal grouped-query attention of query a[i]
  Add,        // out[i] = a[i] + b[i] (out may be a)
  SwiGLU,     // out[i] = silu(a[i]) * b[i] (out may be a)
  BiasAdd,    // out[i] = a[i] + weight (an f32 vector of a's cols; out may be a)
  GeGLU,      // out[i] = gelu_tanh(a[i]) * b[i] (out may be a; Gemma's FFN)
  Softcap,    // out[i] = cap * tanh(a[i] / cap) (out may be a; Gemma's logits)
  // The encoders' (BERT's) ops:
  LayerNorm,  // out[i] = (a[i] - mean) / sqrt(var + eps) * weight + bias (f32 vectors;
              // out may be a; last_row: the output rows gathered, as RmsNorm)
  Gelu,       // out[i] = gelu_tanh(a[i]) (out may be a)
  AddRows,    // out[i] = a[i] + weight row (position of row i, or row 0): BERT's
              // learned positions and token type 0 (out may be a)
};

const char* op_name(OpKind kind);

// What an op needs beyond its operands, filled by the model when it builds
// the graph (model/llama_graph.cpp); backends read these, not the hparams,
// when they run an op. A struct rather than a union: each op reads its own
// member and the others stay zero, so reading never touches an inactive
// member (a few bytes per op).
struct RmsNormParams {
  float eps = 0.0f;
  // 0: normalize the whole row with a row-long weight. Otherwise each
  // `group`-wide chunk of the row on its own, every chunk with the same
  // group-long weight: Qwen3's and Gemma 3's per-head Q/K norm (group = head_dim).
  uint32_t group = 0;
};
struct EmbedParams {
  float scale = 0.0f;  // 0: rows as stored; else multiplied by it (Gemma: sqrt(dim))
};
struct SoftcapParams {
  float cap = 0.0f;
};
struct LayerNormParams {
  float eps = 0.0f;
};
struct AddRowsParams {
  // true: row i adds the weight's row at its position (which must be below
  // the weight's rows: check_op_params holds the context to it); false: row 0.
  bool by_position = false;
};
struct RopeParams {
  uint32_t head_dim = 0;
  uint32_t n_heads = 0;   // heads in the rotated row: n_heads for q, n_kv_heads for k
  float theta = 0.0f;
  RopeStyle style = RopeStyle::Adjacent;
  // Llama 3.x frequency factors (the file's rope_freqs tensor, head_dim / 2
  // floats in the mapped file), or null: pair j's angle is divided by
  // freq_factors[j].
  const float* freq_factors = nullptr;
  // Linear scaling: angles multiplied by it (1 / the GGUF factor); 1 = none.
  float freq_scale = 1.0f;
  // Partial rotary: only the first n_rot elements of each head rotate (pairs
  // by `style` within them: (2j, 2j+1), or (j, j + n_rot/2)); the rest pass
  // through. Even, <= head_dim; 0 = head_dim. The angle of pair j is
  // theta^(-2j / n_rot) (ggml's rope with n_dims = n_rot).
  uint32_t n_rot = 0;
  // cos and sin are multiplied by it (LongRoPE's attention factor, GGUF
  // rope.scaling.attn_factor); 1 = none. Context shifting does not apply it
  // again: moving a stored key is a pure rotation.
  float mscale = 1.0f;
};
// The elements of each head a rope rotates (n_rot, or head_dim when 0).
inline uint32_t rope_rotated_dims(const RopeParams& p) { return p.n_rot ? p.n_rot : p.head_dim; }
struct AttentionParams {
  uint32_t n_heads = 0;     // query heads
  uint32_t n_kv_heads = 0;  // key/value heads (grouped-query: n_heads % n_kv_heads == 0)
  uint32_t head_dim = 0;
  float scale = 0.0f;       // applied to q·k: 1 / sqrt(head_dim)
  // Scores = softcap * tanh(scores / softcap) before the softmax; 0: none.
  float softcap = 0.0f;
  // Sliding window: the query at position p sees keys in (p - window, p];
  // 0: all of 0..p.
  uint32_t window = 0;
  // false (encoders): a row sees every position its sequence has after the
  // step, later ones included; the whole input must be in one step.
  bool causal = true;
};
struct OpParams {
  EmbedParams embed;          // Embed
  SoftcapParams softcap;      // Softcap
  RmsNormParams rmsnorm;      // RmsNorm
  RopeParams rope;            // Rope
  AttentionParams attention;  // Attention
  LayerNormParams layernorm;  // LayerNorm
  AddRowsParams add_rows;     // AddRows
};

struct Op {
  OpKind kind = OpKind::Add;
  int32_t out = -1;      // activation ids
  int32_t a = -1;
  int32_t b = -1;
  int32_t c = -1;
  int32_t weight = -1;   // index into Graph::weights
  int32_t bias = -1;     // LayerNorm: its bias (index into Graph::weights)
  int32_t layer = -1;    // Attention: which KV cache
  // The logits head: read only the step's output rows of `a` (StepArgs
  // out_rows; by default its last row) and write them as rows 0, 1, ...
  bool last_row = false;
  OpParams params;       // Embed, MatMul, Add, SwiGLU: none
};

struct ActivationDesc {
  const char* name = "";
  int64_t cols = 0;      // f32 elements per row
  int32_t rows = 0;      // rows at most: the session's max batch, or 1
  // Rows are the step's output rows (the logits head: graph_max_outputs), not
  // its tokens; an activation of one row is read so too.
  bool per_output = false;
};

// One session's forward pass. Built by the model (model/llama_graph.cpp).
struct Graph {
  // Per model, not per op: vocab_size (the logits row) and n_layers with
  // kv_dim (the KV cache layout: plan, kv store and context shifting).
  // What an op needs is in its params.
  HParams hparams;
  int32_t max_batch = 0;   // most tokens one step processes
  int32_t context = 0;     // positions the KV cache holds, per sequence
  // Sequences the KV cache holds (batched decoding: each its own positions
  // 0 .. context - 1; layer l's keys of sequence s, position t are cache row
  // s * context + t).
  int32_t n_seqs = 1;
  // Rows the logits head computes in one step at most: n_seqs, or n_seqs x
  // (1 + max_draft) where sequences verify drafted tokens (speculative
  // decoding: every drafted row's logits in the step that runs it). 0: n_seqs.
  int32_t max_outputs = 0;
  // Cache rows each sequence holds per layer: empty (every layer holds
  // `context`), or one entry per layer. A sliding-window layer may hold
  // fewer (set_sliding_kv_rings): a ring where position p lives in slot
  // (p + shift) % rows, shift kept by the backend per sequence (0 until
  // context shifting moves it).
  std::vector<int32_t> kv_rows;
  KvType kv_type_k = KvType::F32;
  KvType kv_type_v = KvType::F32;
  std::vector<WeightRef> weights;
  std::vector<ActivationDesc> activations;
  std::vector<Op> ops;
  // The activation a step's output rows are copied from: [n_out, vocab_size]
  // logits, or (an embedding graph) [n_out, dim] final hidden states, the
  // output norm applied and no logits head (graph_output_cols).
  int32_t logits = -1;
  bool embeddings = false;
};

// Floats per output row: the logits activation's columns (vocab_size, or
// dim in an embedding graph). Every backend copies this many per row.
inline int64_t graph_output_cols(const Graph& g) { return g.activations[static_cast<size_t>(g.logits)].cols; }

// Graph::max_outputs, with 0 read as n_seqs.
inline int32_t graph_max_outputs(const Graph& g) { return g.max_outputs > 0 ? g.max_outputs : g.n_seqs; }

// Positions layer `layer` holds per sequence (graph.kv_rows, else context).
int32_t kv_layer_rows(const Graph& graph, int32_t layer);
// Whether the layer's cache is a ring (fewer rows than the context).
inline bool kv_layer_ring(const Graph& graph, int32_t layer) { return kv_layer_rows(graph, layer) < graph.context; }
// Gives every sliding-window layer (the Attention op's window) a ring of
// window + max_batch rows when that is less than the context: a step's
// first row still sees its window after the step's last row is stored. For
// backends that run rings (the cpu); others keep the full context.
void set_sliding_kv_rings(Graph* graph);

// Every op's params against its operands: a Rope op's heads fill its row
// (head_dim even), an Attention op's heads match q, k, v and the cache's
// kv_dim (n_heads a multiple of n_kv_heads). EMBER_ERR_BAD_TENSOR names the
// op. Backends check it in supports(): bad params must not read out of bounds.
Status check_op_params(const Graph& graph);

// The first Rope op, or null: backends build one angle table for every Rope
// op from its head_dim and theta.
const Op* rope_table_op(const Graph& graph);
// Whether every Rope op has the first one's head_dim, theta and frequency
// factors (what one shared angle table needs).
bool rope_ops_share_table(const Graph& graph);
// Angle tables: Rope ops with the same head_dim, theta, frequency factors,
// freq_scale, n_rot and mscale share one (Gemma's sliding and global layers need two).
// rope_tables lists one op per distinct table, in the order first met;
// rope_table_index gives an op's table in that list (-1 when not a Rope).
std::vector<const Op*> rope_tables(const Graph& graph);
int rope_table_index(const Graph& graph, const Op& op);
// The table of a rope's parameters (key_rope's, for context shifting), or -1.
int rope_table_of(const Graph& graph, const RopeParams& rope);
constexpr int kMaxRopeTables = 4;
// The angle per position of pair j (0 <= j < n_rot / 2) of a rope:
// theta^(-2j / n_rot) (float powf, as the reference computes it), divided
// by freq_factors[j] when the rope has them, times freq_scale when not 1. Every backend's table and
// context shift use this one function.
float rope_inv_freq(const RopeParams& rope, int64_t j);
// The RoPE applied to the keys layer `layer`'s Attention op stores (the Rope
// op on its `b`): context shifting re-rotates those keys. head_dim 0 when
// the keys are not rotated (nothing to re-rotate).
RopeParams key_rope(const Graph& graph, int32_t layer);

// One step: n_tokens tokens at positions pos .. pos + n_tokens - 1 of
// sequence 0, or (batched decoding) row i at positions[i] of sequence
// seqs[i]. Rows of one sequence come in order of position, and a row sees
// its sequence's keys up to its own position (those stored by earlier rows
// of the step included).
struct StepArgs {
  const int32_t* tokens = nullptr;
  int32_t n_tokens = 0;
  int32_t pos = 0;
  const int32_t* seqs = nullptr;       // per row, in 0 .. n_seqs - 1; null: all 0
  const int32_t* positions = nullptr;  // per row, in 0 .. context - 1; null: pos + i
  // The rows whose logits the step computes (n_out <= graph_max_outputs), in this
  // order; null: the last row alone (n_out 1).
  const int32_t* out_rows = nullptr;
  int32_t n_out = 1;
  float* logits = nullptr;  // n_out x graph_output_cols floats, or null
};

// Whether a step's rows are within the graph: tokens, sequences, positions
// and output rows in range (EMBER_ERR_INTERNAL naming the first that is
// not: callers check user input before it becomes a step).
Status check_step(const Graph& graph, const StepArgs& step);

}  // namespace ember

// Embeddings: a sequence's rows pooled into one vector (ARCHITECTURE.md,
// "Embeddings"). An embedding session (SessionOptions::embeddings) outputs
// each row's final hidden state (the output norm applied, no logits head);
// embed() runs many inputs through the session's sequences, as many inputs
// in one step as its rows and sequences allow, and pools each input's rows
// as it goes, so nothing larger than one step's rows is held.
//
// Pooling as llama.cpp names it (the values of ember.h's ember_pooling):
// mean over the input's rows, the first row (cls), the last row, or none
// (every row is an output). Normalization as llama-embedding's
// --embd-normalize: -1 none, 0 scaled to a maximum of 32760 in absolute
// value, 1 taxicab, 2 Euclidean (the default), p > 2 the p-norm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/session.h"

namespace ember {

enum class Pooling : int8_t { Unspecified = -1, None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

const char* pooling_name(Pooling p);
// "none", "mean", "cls", "last", "rank" -> the pooling; false for another name.
bool parse_pooling(std::string_view name, Pooling* out);
// What a session of `hp` pools by when asked for Unspecified: the file's
// pooling_type, else mean (any decoder model embeds by its mean).
Pooling model_pooling(const HParams& hp);

struct EmbedInput {
  const int32_t* tokens = nullptr;
  int32_t n_tokens = 0;
};

struct EmbedOptions {
  Pooling pooling = Pooling::Unspecified;
  int32_t normalize = 2;
};

// A reranker's classifier head (llama.cpp's rank pooling, BERT's
// sequence-classification head): the input's first row h, then
// tanh(cls h + cls.bias) where the file has `cls`, then cls.output x +
// cls.output.bias where it has `cls.output` (n_out scores; llama.cpp's
// rerank reads the first). In f32 on the host: two small matrices per input.
struct RankHead {
  const TensorView* dense = nullptr;
  const TensorView* dense_bias = nullptr;
  const TensorView* out = nullptr;
  const TensorView* out_bias = nullptr;
  int64_t dim = 0;
  int64_t n_out = 0;  // floats per input
  void apply(const float* cls_row, float* scores) const;
};
// The model's head, or EMBER_ERR_UNSUPPORTED naming what is missing.
Result<RankHead> rank_head(const Model& model);

// Floats embed() writes for `inputs`: n_inputs x dim, (rank) n_inputs x the
// head's outputs, or (pooling none) every input's tokens x dim.
uint64_t embed_output_floats(const Session& session, const EmbedInput* inputs, size_t n_inputs, Pooling pooling);

// Runs every input from position 0 of a free sequence (each sequence is
// reset before an input starts on it; nothing the session held before is
// kept) and writes its pooled, normalized embedding to out, input after
// input (out_floats >= embed_output_floats, else EMBER_ERR_BUFFER_TOO_SMALL).
// Everything is checked before anything runs: an embedding session
// (EMBER_ERR_INVALID_ARGUMENT otherwise), inputs with at least one token, ids
// in the vocabulary (EMBER_ERR_TOKEN_OUT_OF_RANGE), at most the context
// (EMBER_ERR_CONTEXT_FULL), a pooling the model has (rank needs a classifier
// head: EMBER_ERR_UNSUPPORTED), a normalization of -1 or more. Rank: each
// input is a query and a document already joined (rerank_tokens), its
// scores normalized as the other poolings' vectors are (-1 for raw scores).
Status embed(Session& session, const EmbedInput* inputs, size_t n_inputs, const EmbedOptions& options, float* out,
             uint64_t out_floats);

// The tokens llama-embedding runs for a text: BOS as the vocabulary says,
// control-token text parsed, EOS appended when the vocabulary says so
// (tokenizer.ggml.add_eos_token: Qwen3-Embedding's last-token pooling reads it).
Status embed_tokenize(const Tokenizer& tokenizer, std::string_view text, std::vector<int32_t>* out);

// A query and a document as one reranker input, as llama.cpp joins them for
// a WordPiece vocabulary: the query's tokens (embed_tokenize: [CLS] query
// [SEP]), then the document's without their BOS (document [SEP]).
Status rerank_tokens(const Tokenizer& tokenizer, std::string_view query, std::string_view document,
                     std::vector<int32_t>* out);

}  // namespace ember

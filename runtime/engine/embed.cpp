#include "engine/embed.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/layout.h"

namespace ember {
namespace {

// y = W x (+ b) for a [rows, cols] weight of any type and layout, in f32
// (sums in double): the classifier head's two small matrices, per input.
void head_matvec(const TensorView& w, const TensorView* b, const float* x, float* y) {
  const int64_t rows = w.shape[0], cols = w.shape[1];
  std::vector<uint8_t> gathered(w.size / static_cast<uint64_t>(rows) + 64);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(w.dtype, layout_row(w.layout, w.dtype, w.data, cols, r, gathered.data()), row.data(), cols);
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(row[c]) * x[c];
    y[r] = static_cast<float>(s + (b ? reinterpret_cast<const float*>(b->data)[r] : 0.0f));
  }
}

// Scales a row as llama-embedding's --embd-normalize does (in double).
void normalize_row(float* v, int64_t n, int32_t mode) {
  if (mode < 0) return;
  double sum = 0.0;
  if (mode == 0) {
    for (int64_t i = 0; i < n; ++i) sum = std::max(sum, std::fabs(static_cast<double>(v[i])));
    sum /= 32760.0;
  } else if (mode == 2) {
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
    sum = std::sqrt(sum);
  } else {
    for (int64_t i = 0; i < n; ++i) sum += std::pow(std::fabs(static_cast<double>(v[i])), mode);
    sum = std::pow(sum, 1.0 / mode);
  }
  const double scale = sum > 0.0 ? 1.0 / sum : 0.0;
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(v[i] * scale);
}

Status check_inputs(const Session& session, const EmbedInput* inputs, size_t n_inputs) {
  const int32_t vocab = static_cast<int32_t>(session.model().hparams().vocab_size);
  for (size_t i = 0; i < n_inputs; ++i) {
    const EmbedInput& in = inputs[i];
    if (in.n_tokens <= 0) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "inputs[%zu]: %d tokens (an input needs at least one)", i,
                           in.n_tokens);
    }
    if (!in.tokens) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "inputs[%zu].tokens is NULL", i);
    if (in.n_tokens > session.context()) {
      return Status::error(EMBER_ERR_CONTEXT_FULL, "inputs[%zu]: %d tokens exceed the session's context of %d", i,
                           in.n_tokens, session.context());
    }
    // An encoder attends both ways: an input is one step.
    if (model_arch_is_encoder(session.model().hparams().arch) && in.n_tokens > session.max_batch()) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "inputs[%zu]: %d tokens exceed the session's max_batch of %d (an encoder runs an input "
                           "in one step)",
                           i, in.n_tokens, session.max_batch());
    }
    for (int32_t t = 0; t < in.n_tokens; ++t) {
      if (in.tokens[t] < 0 || in.tokens[t] >= vocab) {
        return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE, "inputs[%zu].tokens[%d] = %d is outside the vocabulary (0..%d)",
                             i, t, in.tokens[t], vocab - 1);
      }
    }
  }
  return Status::ok();
}

// An input running on a sequence: its next token, and where its output goes.
struct Slot {
  size_t input = 0;
  int32_t done = 0;
  bool busy = false;
};

}  // namespace

Result<RankHead> rank_head(const Model& model) {
  RankHead h;
  const ModelFile& f = model.file();
  h.dense = f.find("cls.weight");
  h.dense_bias = f.find("cls.bias");
  h.out = f.find("cls.output.weight");
  h.out_bias = f.find("cls.output.bias");
  if (!h.dense && !h.out) {
    return Status::error(EMBER_ERR_UNSUPPORTED,
                         "rank pooling scores a query and a document with a classifier head (cls, cls.output), which "
                         "this model does not have");
  }
  h.dim = static_cast<int64_t>(model.hparams().dim);
  h.n_out = h.out ? h.out->shape[0] : h.dim;
  return h;
}

void RankHead::apply(const float* cls_row, float* scores) const {
  std::vector<float> mid(cls_row, cls_row + dim);
  if (dense) {
    std::vector<float> t(static_cast<size_t>(dim));
    head_matvec(*dense, dense_bias, cls_row, t.data());
    for (int64_t i = 0; i < dim; ++i) mid[i] = std::tanh(t[i]);
  }
  if (out) {
    head_matvec(*out, out_bias, mid.data(), scores);
  } else {
    std::memcpy(scores, mid.data(), static_cast<size_t>(dim) * sizeof(float));
  }
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Unspecified: return "unspecified";
    case Pooling::None: return "none";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Rank: return "rank";
  }
  return "?";
}

bool parse_pooling(std::string_view name, Pooling* out) {
  for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Rank}) {
    if (name == pooling_name(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

Pooling model_pooling(const HParams& hp) {
  return hp.pooling >= 0 && hp.pooling <= 4 ? static_cast<Pooling>(hp.pooling) : Pooling::Mean;
}

uint64_t embed_output_floats(const Session& session, const EmbedInput* inputs, size_t n_inputs, Pooling pooling) {
  uint64_t dim = static_cast<uint64_t>(session.output_cols());
  if (pooling == Pooling::Unspecified) pooling = model_pooling(session.model().hparams());
  if (pooling == Pooling::Rank) {
    Result<RankHead> h = rank_head(session.model());
    dim = h.is_ok() ? static_cast<uint64_t>(h.value().n_out) : dim;
  }
  if (pooling != Pooling::None) return dim * n_inputs;
  uint64_t rows = 0;
  for (size_t i = 0; i < n_inputs; ++i) rows += static_cast<uint64_t>(std::max(inputs[i].n_tokens, 0));
  return rows * dim;
}

Status embed(Session& session, const EmbedInput* inputs, size_t n_inputs, const EmbedOptions& options, float* out,
             uint64_t out_floats) {
  if (!session.embeddings()) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "the session outputs logits: embeddings need a session made with the embeddings option");
  }
  const Pooling pooling =
      options.pooling == Pooling::Unspecified ? model_pooling(session.model().hparams()) : options.pooling;
  if (static_cast<int>(pooling) < 0 || static_cast<int>(pooling) > 4) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "pooling = %d is not a known pooling (0 none .. 4 rank)",
                         static_cast<int>(pooling));
  }
  RankHead head;
  if (pooling == Pooling::Rank) {
    EMBER_ASSIGN_OR_RETURN(head, rank_head(session.model()));
    if (head.dim != session.output_cols()) {
      return Status::error(EMBER_ERR_BAD_TENSOR, "the classifier head reads %lld floats; the session outputs %lld",
                           static_cast<long long>(head.dim), static_cast<long long>(session.output_cols()));
    }
  }
  if (options.normalize < -1) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "normalize = %d: must be -1 (none), 0 (max 32760), 1 (taxicab), 2 (Euclidean) or a p > 2",
                         options.normalize);
  }
  if (n_inputs == 0) return Status::ok();
  if (!inputs) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "inputs is NULL");
  if (!out) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "out is NULL");
  EMBER_TRY(check_inputs(session, inputs, n_inputs));
  const uint64_t needed = embed_output_floats(session, inputs, n_inputs, pooling);
  if (out_floats < needed) {
    return Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "out holds %llu floats; the embeddings need %llu",
                         static_cast<unsigned long long>(out_floats), static_cast<unsigned long long>(needed));
  }
  const int64_t dim = session.output_cols();
  // Floats per output row: dim, or the head's scores.
  const int64_t width = pooling == Pooling::Rank ? head.n_out : dim;
  // Where each input's first output row goes (rows of `width` floats).
  std::vector<uint64_t> first_row(n_inputs);
  uint64_t row = 0;
  for (size_t i = 0; i < n_inputs; ++i) {
    first_row[i] = row;
    row += pooling == Pooling::None ? static_cast<uint64_t>(inputs[i].n_tokens) : 1;
  }
  std::memset(out, 0, needed * sizeof(float));

  const bool whole = model_arch_is_encoder(session.model().hparams().arch);
  std::vector<Slot> slots(static_cast<size_t>(session.n_seqs()));
  // Rank: each sequence's first row, until its input completes.
  std::vector<float> cls_rows(pooling == Pooling::Rank ? slots.size() * static_cast<size_t>(dim) : 0);
  std::vector<Session::BatchItem> items;
  std::vector<size_t> item_slot;
  items.reserve(slots.size());
  item_slot.reserve(slots.size());
  size_t next = 0, finished = 0;
  while (finished < n_inputs) {
    // Free sequences take the next inputs, from position 0.
    for (size_t q = 0; q < slots.size() && next < n_inputs; ++q) {
      if (slots[q].busy) continue;
      EMBER_TRY(session.reset_seq(static_cast<int32_t>(q)));
      slots[q] = Slot{next++, 0, true};
    }
    // As many of their rows as one step holds, every row an output (an
    // encoder's inputs whole: a later step takes one that does not fit).
    items.clear();
    item_slot.clear();
    int32_t rows = 0;
    for (size_t q = 0; q < slots.size() && rows < session.max_batch(); ++q) {
      if (!slots[q].busy) continue;
      const EmbedInput& in = inputs[slots[q].input];
      if (whole && in.n_tokens > session.max_batch() - rows) continue;
      const int32_t take = std::min(in.n_tokens - slots[q].done, session.max_batch() - rows);
      Session::BatchItem it;
      it.seq = static_cast<int32_t>(q);
      it.tokens = in.tokens + slots[q].done;
      it.n_tokens = take;
      it.n_logits = take;
      items.push_back(it);
      item_slot.push_back(q);
      rows += take;
    }
    EMBER_TRY(session.decode_batch(items.data(), items.size()));
    // The step's output rows, item after item, in the session's buffer.
    const float* step_rows = session.logits();
    for (size_t k = 0; k < items.size(); ++k) {
      Slot& slot = slots[item_slot[k]];
      const EmbedInput& in = inputs[slot.input];
      float* pooled = out + first_row[slot.input] * width;
      for (int32_t r = 0; r < items[k].n_tokens; ++r, step_rows += dim) {
        const int32_t t = slot.done + r;
        if (pooling == Pooling::Mean) {
          for (int64_t c = 0; c < dim; ++c) pooled[c] += step_rows[c];
        } else if (pooling == Pooling::None) {
          std::memcpy(pooled + static_cast<int64_t>(t) * dim, step_rows, static_cast<size_t>(dim) * sizeof(float));
        } else if ((pooling == Pooling::Cls && t == 0) || (pooling == Pooling::Last && t == in.n_tokens - 1)) {
          std::memcpy(pooled, step_rows, static_cast<size_t>(dim) * sizeof(float));
        } else if (pooling == Pooling::Rank && t == 0) {
          std::memcpy(cls_rows.data() + item_slot[k] * static_cast<size_t>(dim), step_rows,
                      static_cast<size_t>(dim) * sizeof(float));
        }
      }
      slot.done += items[k].n_tokens;
      if (slot.done < in.n_tokens) continue;
      // The input is complete: pooled and normalized, its sequence free.
      if (pooling == Pooling::Mean) {
        const float inv = 1.0f / static_cast<float>(in.n_tokens);
        for (int64_t c = 0; c < dim; ++c) pooled[c] *= inv;
      }
      if (pooling == Pooling::Rank) head.apply(cls_rows.data() + item_slot[k] * static_cast<size_t>(dim), pooled);
      const int32_t out_rows = pooling == Pooling::None ? in.n_tokens : 1;
      for (int32_t r = 0; r < out_rows; ++r) {
        normalize_row(pooled + static_cast<int64_t>(r) * width, width, options.normalize);
      }
      slot.busy = false;
      ++finished;
    }
  }
  return Status::ok();
}

Status rerank_tokens(const Tokenizer& tokenizer, std::string_view query, std::string_view document,
                     std::vector<int32_t>* out) {
  std::vector<int32_t> doc;
  EMBER_TRY(embed_tokenize(tokenizer, query, out));
  EMBER_TRY(embed_tokenize(tokenizer, document, &doc));
  const Vocab& vocab = tokenizer.vocab();
  const size_t skip = vocab.add_bos && vocab.bos_id >= 0 && !doc.empty() && doc.front() == vocab.bos_id ? 1 : 0;
  out->insert(out->end(), doc.begin() + static_cast<std::ptrdiff_t>(skip), doc.end());
  return Status::ok();
}

Status embed_tokenize(const Tokenizer& tokenizer, std::string_view text, std::vector<int32_t>* out) {
  out->clear();
  const Vocab& vocab = tokenizer.vocab();
  EncodeOptions eo;
  eo.parse_special = true;
  eo.add_bos = vocab.add_bos && vocab.bos_id >= 0;
  eo.add_eos = vocab.add_eos && vocab.eos_id >= 0;
  return tokenizer.encode(text, eo, out);
}

}  // namespace ember

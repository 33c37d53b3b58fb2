// The C API's embeddings (ember.h "Embeddings"): engine/embed.h behind the
// handles.
#include <new>
#include <string_view>
#include <vector>

#include "api/c_api_internal.h"
#include "engine/embed.h"

using ember::done;
using ember::fail;

namespace {

// The options as the engine takes them, or false (the last error set).
bool embed_options(const ember_embed_options* given, ember::EmbedOptions* out) {
  ember_embed_options o;
  ember_embed_options_default(&o);
  if (!ember::read_options(given, &o, "ember_embed_options")) return false;
  if (o.pooling < EMBER_POOLING_UNSPECIFIED || o.pooling > EMBER_POOLING_RANK) {
    ember::set_last_error(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT,
                                               "pooling = %d is not an ember_pooling (-1 .. 4)", o.pooling));
    return false;
  }
  out->pooling = static_cast<ember::Pooling>(o.pooling);
  out->normalize = o.normalize;
  return true;
}

}  // namespace

void ember_embed_options_default(ember_embed_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->pooling = EMBER_POOLING_UNSPECIFIED;
  o->normalize = 2;
}

int32_t ember_model_pooling(const ember_model* model) {
  if (!model) return EMBER_POOLING_UNSPECIFIED;
  return model->model->hparams().pooling;
}

int32_t ember_session_embedding_size(const ember_session* session) {
  if (!session || !session->session->embeddings()) return 0;
  return session->session->output_cols();
}

ember_status ember_embed_tokens(ember_session* session, const int32_t* const* tokens, const size_t* n_tokens,
                                size_t n_inputs, const ember_embed_options* options, float* out, size_t out_floats) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (n_inputs && (!tokens || !n_tokens)) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens or n_tokens is NULL");
  ember::EmbedOptions eo;
  if (!embed_options(options, &eo)) return EMBER_ERR_INVALID_ARGUMENT;
  std::vector<ember::EmbedInput> inputs(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    if (n_tokens[i] > static_cast<size_t>(INT32_MAX)) {
      return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_tokens[%zu] = %zu is too large", i, n_tokens[i]));
    }
    inputs[i].tokens = tokens[i];
    inputs[i].n_tokens = static_cast<int32_t>(n_tokens[i]);
  }
  return done(ember::embed(*session->session, inputs.data(), n_inputs, eo, out, out_floats));
}

ember_status ember_embed_texts(ember_session* session, const char* const* texts, const size_t* text_lens,
                               size_t n_texts, const ember_embed_options* options, float* out, size_t out_floats) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (n_texts && !texts) return fail(EMBER_ERR_INVALID_ARGUMENT, "texts is NULL");
  ember::EmbedOptions eo;
  if (!embed_options(options, &eo)) return EMBER_ERR_INVALID_ARGUMENT;
  const ember::Session& s = *session->session;
  const ember::Pooling pooling =
      eo.pooling == ember::Pooling::Unspecified ? ember::model_pooling(s.model().hparams()) : eo.pooling;
  if (pooling == ember::Pooling::None) {
    return fail(EMBER_ERR_INVALID_ARGUMENT,
                "pooling none gives a row per token: tokenize the texts and call ember_embed_tokens");
  }
  std::vector<std::vector<int32_t>> ids(n_texts);
  std::vector<ember::EmbedInput> inputs(n_texts);
  for (size_t i = 0; i < n_texts; ++i) {
    if (!texts[i]) return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "texts[%zu] is NULL", i));
    const std::string_view text(texts[i], text_lens ? text_lens[i] : std::strlen(texts[i]));
    const ember::Status st = ember::embed_tokenize(s.model().tokenizer(), text, &ids[i]);
    if (!st.is_ok()) return done(ember::Status::error(st.code(), "texts[%zu]: %s", i, st.message().c_str()));
    if (ids[i].size() > static_cast<size_t>(INT32_MAX)) {
      return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "texts[%zu] is too long", i));
    }
    inputs[i].tokens = ids[i].data();
    inputs[i].n_tokens = static_cast<int32_t>(ids[i].size());
  }
  return done(ember::embed(*session->session, inputs.data(), n_texts, eo, out, out_floats));
}

ember_status ember_rerank(ember_session* session, const char* query, const char* const* documents, size_t n_documents,
                          float* scores) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!query) return fail(EMBER_ERR_INVALID_ARGUMENT, "query is NULL");
  if (n_documents && !documents) return fail(EMBER_ERR_INVALID_ARGUMENT, "documents is NULL");
  if (n_documents && !scores) return fail(EMBER_ERR_INVALID_ARGUMENT, "scores is NULL");
  const ember::Session& s = *session->session;
  ember::Result<ember::RankHead> head = ember::rank_head(s.model());
  if (!head.is_ok()) return done(head.status());
  std::vector<std::vector<int32_t>> ids(n_documents);
  std::vector<ember::EmbedInput> inputs(n_documents);
  for (size_t i = 0; i < n_documents; ++i) {
    if (!documents[i]) return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "documents[%zu] is NULL", i));
    const ember::Status st = ember::rerank_tokens(s.model().tokenizer(), query, documents[i], &ids[i]);
    if (!st.is_ok()) return done(ember::Status::error(st.code(), "documents[%zu]: %s", i, st.message().c_str()));
    if (ids[i].size() > static_cast<size_t>(INT32_MAX)) {
      return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "documents[%zu] is too long", i));
    }
    inputs[i].tokens = ids[i].data();
    inputs[i].n_tokens = static_cast<int32_t>(ids[i].size());
  }
  ember::EmbedOptions eo;
  eo.pooling = ember::Pooling::Rank;
  eo.normalize = -1;
  const size_t width = static_cast<size_t>(head.value().n_out);
  std::vector<float> all(n_documents * width);
  const ember::Status st = ember::embed(*session->session, inputs.data(), n_documents, eo, all.data(), all.size());
  if (!st.is_ok()) return done(st);
  for (size_t i = 0; i < n_documents; ++i) scores[i] = all[i * width];
  return done(ember::Status::ok());
}

ember_status ember_embed_tokenize(const ember_model* model, const char* text, size_t text_len, int32_t* tokens,
                                  size_t capacity, size_t* out_count) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!out_count) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  if (!text && text_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "text is NULL but text_len > 0");
  if (!tokens && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL but capacity > 0");
  std::vector<int32_t> ids;
  const ember::Status s =
      ember::embed_tokenize(model->model->tokenizer(), std::string_view(text ? text : "", text_len), &ids);
  if (!s.is_ok()) return done(s);
  return ember::tokens_out(ids, tokens, capacity, out_count, "the text");
}

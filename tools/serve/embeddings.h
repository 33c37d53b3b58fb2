// POST /v1/embeddings (`ember serve --embeddings` or `--pooling P`): the
// OpenAI request read by a bounded SAX reader (input as a string, an array
// of strings, an array of token ids or an array of such arrays; model;
// encoding_format float or base64; dimensions refused: no GGUF key declares
// how a model's vectors may be truncated), run on one embedding session
// beside the generation session (ember.h "Embeddings"), answered in
// OpenAI's shape (data[].embedding, usage.prompt_tokens).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ember.h"
#include "tools/serve/openai_api.h"

namespace ember::serve {

struct EmbeddingRequest {
  std::string model;
  // The inputs: texts, or token arrays (ids as given, nothing added).
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_inputs;  // an id outside int32: -1 (refused when run)
  bool base64 = false;  // encoding_format "base64": each vector's float32 bytes (little-endian)
};

struct EmbeddingLimits {
  size_t max_depth = 64;
  size_t max_inputs = 2048;  // OpenAI's cap on an input array
};

// Reads and checks a body: 400 naming the field (not JSON, not an object,
// input missing or of another shape, an empty input, more than max_inputs,
// encoding_format not float/base64, dimensions given).
bool read_embedding_request(std::string_view body, const EmbeddingLimits& limits, EmbeddingRequest* out,
                            RequestError* error);

// POST /v1/rerank (`ember serve --pooling rank` with a reranker, or its
// file's pooling rank), the shape llama.cpp's server and Jina use: query (a
// string), documents (strings, or objects with a "text" string), top_n (at
// least 1; default all), return_documents, model.
struct RerankRequest {
  std::string model;
  std::string query;
  std::vector<std::string> documents;
  int64_t top_n = -1;  // -1: every document
  bool return_documents = false;
};

// Reads and checks a body: 400 naming the field (not JSON, not an object,
// query missing or not a string, documents missing, empty, more than
// max_inputs or not strings / {"text": string}, top_n not an integer >= 1,
// return_documents not a boolean).
bool read_rerank_request(std::string_view body, const EmbeddingLimits& limits, RerankRequest* out,
                         RequestError* error);

// The embedding session and what it answers. One request runs at a time
// (the session's sequences batch one request's inputs).
class EmbedService {
 public:
  // session: an embedding session (ember_session_options.embeddings) of
  // `context` positions per sequence, not owned. pooling: an ember_pooling
  // other than unspecified.
  EmbedService(ember_model* model, ember_session* session, int32_t pooling, int32_t context);
  int32_t pooling() const { return pooling_; }
  int32_t context() const { return context_; }
  // The response body for a request read by read_embedding_request, or an
  // error (400: an input with no tokens, longer than the context, a token
  // outside the vocabulary; 500: the session failed).
  bool run(const EmbeddingRequest& request, const std::string& model_name, std::string* body, RequestError* error);
  // Rank pooling only: every document's score against the query
  // (ember_rerank), answered as results[] sorted by relevance_score, best
  // first, top_n of them (400: a pair longer than the context; 500: the
  // session failed).
  bool rerank(const RerankRequest& request, const std::string& model_name, std::string* body, RequestError* error);

 private:
  ember_model* model_;
  ember_session* session_;
  int32_t pooling_;
  int32_t context_;
  std::mutex mutex_;
};

}  // namespace ember::serve

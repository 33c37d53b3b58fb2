#include "tools/serve/embeddings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <mbedtls/base64.h>
#include <nlohmann/json.hpp>

#include "tools/serve/json_check.h"

namespace ember::serve {
namespace {

using json = nlohmann::json;

// A token id as the session takes it: one outside int32 becomes -1, which
// the session refuses as outside the vocabulary.
int32_t as_id(int64_t v) { return v < INT32_MIN || v > INT32_MAX ? -1 : static_cast<int32_t>(v); }

const char* const kInputShapes =
    "input: must be a string, an array of strings, an array of token ids, or an array of arrays of token ids";

// The SAX events of an embeddings body straight into an EmbeddingRequest:
// the root object's input, model, encoding_format and dimensions; any other
// field's value is skipped.
class EmbeddingReader final : public nlohmann::json_sax<json> {
 public:
  EmbeddingReader(const EmbeddingLimits& limits, EmbeddingRequest* out, RequestError* error)
      : limits_(limits), out_(out), error_(error) {}
  bool failed() const { return failed_; }
  bool saw_input() const { return saw_input_; }

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t i) override { return id(i); }
  bool number_unsigned(number_unsigned_t u) override {
    return id(u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u));
  }
  bool number_float(number_float_t, const string_t&) override {
    if (where_ == Where::kDimensions) return dimensions();
    return scalar("a number with a fraction");
  }
  bool string(string_t& s) override;
  bool binary(binary_t&) override { return fail("the request body is not JSON text"); }
  bool start_object(std::size_t) override;
  bool key(string_t& k) override;
  bool end_object() override { return end(); }
  bool start_array(std::size_t) override;
  bool end_array() override { return end(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return fail("the request body is not valid JSON");
  }

 private:
  // What the value being read belongs to.
  enum class Where { kRoot, kField, kInput, kInputArray, kTokenArray, kModel, kFormat, kDimensions, kSkip };
  enum class Shape { kUnknown, kTexts, kIds, kIdArrays };

  bool fail(std::string message, std::string param = {}) {
    if (!failed_) {
      failed_ = true;
      error_->status = 400;
      error_->message = std::move(message);
      error_->param = std::move(param);
    }
    return false;
  }
  bool dimensions() {
    return fail("dimensions: this model's vectors have one size (no GGUF key says how they may be shortened)",
                "dimensions");
  }
  // A value other than a string or an integer where it lands.
  bool scalar(const char* what) {
    switch (where_) {
      case Where::kSkip: return true;
      case Where::kField: where_ = Where::kRoot; return true;  // another field's value
      case Where::kDimensions: return dimensions();
      case Where::kModel: return fail(std::string("model: must be a string, not ") + what, "model");
      case Where::kFormat: return fail(std::string("encoding_format: must be a string, not ") + what, "encoding_format");
      default: return fail(kInputShapes, "input");
    }
  }
  bool shape(Shape s) {
    if (shape_ != Shape::kUnknown && shape_ != s) return fail(std::string(kInputShapes) + " (not a mix)", "input");
    shape_ = s;
    return true;
  }
  bool count_input() {
    if (out_->texts.size() + out_->token_inputs.size() >= limits_.max_inputs) {
      return fail("input: more than " + std::to_string(limits_.max_inputs) + " inputs", "input");
    }
    return true;
  }
  bool id(int64_t v);
  bool end();

  const EmbeddingLimits& limits_;
  EmbeddingRequest* out_;
  RequestError* error_;
  bool failed_ = false, saw_input_ = false;
  Where where_ = Where::kRoot;
  Shape shape_ = Shape::kUnknown;
  size_t depth_ = 0;       // containers open
  size_t skip_depth_ = 0;  // containers open inside a skipped value
};

bool EmbeddingReader::id(int64_t v) {
  if (where_ == Where::kDimensions) return dimensions();
  if (where_ == Where::kInputArray) {
    if (!shape(Shape::kIds)) return false;
    if (out_->token_inputs.empty()) {
      if (!count_input()) return false;
      out_->token_inputs.emplace_back();
    }
    out_->token_inputs.back().push_back(as_id(v));
    return true;
  }
  if (where_ == Where::kTokenArray) {
    out_->token_inputs.back().push_back(as_id(v));
    return true;
  }
  return scalar("a number");
}

bool EmbeddingReader::string(string_t& s) {
  switch (where_) {
    case Where::kSkip: return true;
    case Where::kField: where_ = Where::kRoot; return true;
    case Where::kModel: out_->model = std::move(s); where_ = Where::kRoot; return true;
    case Where::kFormat:
      if (s != "float" && s != "base64") {
        return fail("encoding_format: must be \"float\" or \"base64\"", "encoding_format");
      }
      out_->base64 = s == "base64";
      where_ = Where::kRoot;
      return true;
    case Where::kInput:
      if (!count_input()) return false;
      out_->texts.push_back(std::move(s));
      where_ = Where::kRoot;
      return true;
    case Where::kInputArray:
      if (!shape(Shape::kTexts) || !count_input()) return false;
      out_->texts.push_back(std::move(s));
      return true;
    case Where::kDimensions: return dimensions();
    default: return fail(kInputShapes, "input");
  }
}

bool EmbeddingReader::key(string_t& k) {
  if (where_ == Where::kSkip) return true;
  if (k == "input") {
    saw_input_ = true;
    where_ = Where::kInput;
  } else if (k == "model") {
    where_ = Where::kModel;
  } else if (k == "encoding_format") {
    where_ = Where::kFormat;
  } else if (k == "dimensions") {
    where_ = Where::kDimensions;
  } else {
    where_ = Where::kField;  // user and the like: read past
  }
  return true;
}

bool EmbeddingReader::start_object(std::size_t) {
  ++depth_;
  if (depth_ == 1) return true;  // the root
  if (where_ == Where::kSkip || where_ == Where::kField) {
    where_ = Where::kSkip;
    ++skip_depth_;
    return true;
  }
  if (where_ == Where::kDimensions) return dimensions();
  if (where_ == Where::kModel || where_ == Where::kFormat) return scalar("an object");
  return fail(kInputShapes, "input");
}

bool EmbeddingReader::start_array(std::size_t) {
  ++depth_;
  if (depth_ == 1) return fail("the request body must be a JSON object");
  switch (where_) {
    case Where::kSkip: ++skip_depth_; return true;
    case Where::kField: where_ = Where::kSkip; ++skip_depth_; return true;
    case Where::kInput: where_ = Where::kInputArray; return true;
    case Where::kInputArray:
      if (!shape(Shape::kIdArrays) || !count_input()) return false;
      out_->token_inputs.emplace_back();
      where_ = Where::kTokenArray;
      return true;
    case Where::kDimensions: return dimensions();
    case Where::kModel:
    case Where::kFormat: return scalar("an array");
    default: return fail(kInputShapes, "input");
  }
}

bool EmbeddingReader::end() {
  --depth_;
  if (where_ == Where::kSkip) {
    if (--skip_depth_ == 0) where_ = Where::kRoot;
    return true;
  }
  if (where_ == Where::kTokenArray) {
    where_ = Where::kInputArray;
  } else if (where_ == Where::kInputArray) {
    where_ = Where::kRoot;
  }
  return true;
}

void append_float_array(std::string* body, const float* v, int32_t n) {
  char buf[32];
  body->push_back('[');
  for (int32_t i = 0; i < n; ++i) {
    const int len = std::snprintf(buf, sizeof buf, i ? ",%.8g" : "%.8g", static_cast<double>(v[i]));
    body->append(buf, static_cast<size_t>(len));
  }
  body->push_back(']');
}

// A vector's float32 bytes (little-endian, as the host stores them on every
// target ember builds for), base64 encoded in quotes.
void append_base64(std::string* body, const float* v, int32_t n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::string out(4 * ((bytes + 2) / 3) + 1, '\0');
  size_t written = 0;
  mbedtls_base64_encode(reinterpret_cast<unsigned char*>(out.data()), out.size(), &written,
                        reinterpret_cast<const unsigned char*>(v), bytes);
  out.resize(written);
  body->push_back('"');
  body->append(out);
  body->push_back('"');
}

// check_json's bounds (depth, size) on a body, before either reader parses
// it: false with the 400's message where it fails them.
bool json_within_limits(std::string_view body, size_t max_depth, RequestError* error) {
  JsonLimits jl;
  jl.max_depth = max_depth;
  const JsonCheck check = check_json(body, jl);
  if (check.ok) return true;
  error->message = "the request body is not valid JSON: " + check.what + " (at byte " + std::to_string(check.offset) + ")";
  return false;
}

}  // namespace

bool read_embedding_request(std::string_view body, const EmbeddingLimits& limits, EmbeddingRequest* out,
                            RequestError* error) {
  *out = EmbeddingRequest();
  *error = RequestError();
  if (!json_within_limits(body, limits.max_depth, error)) return false;
  EmbeddingReader reader(limits, out, error);
  const bool ok = json::sax_parse(body.begin(), body.end(), &reader, json::input_format_t::json, true, false);
  if (!ok || reader.failed()) {
    if (!reader.failed()) error->message = "the request body is not valid JSON";
    *out = EmbeddingRequest();
    return false;
  }
  if (!reader.saw_input() || (out->texts.empty() && out->token_inputs.empty())) {
    error->status = 400;
    error->param = "input";
    error->message = reader.saw_input() ? "input: empty (give at least one input)" : "input: required";
    return false;
  }
  return true;
}

bool read_rerank_request(std::string_view body, const EmbeddingLimits& limits, RerankRequest* out,
                         RequestError* error) {
  *out = RerankRequest();
  *error = RequestError();
  if (!json_within_limits(body, limits.max_depth, error)) return false;
  // Bounded by check_json (size and depth): a document tree is fine here.
  const json j = json::parse(body.begin(), body.end(), nullptr, false);
  auto fail = [&](std::string message, const char* param) {
    error->status = 400;
    error->message = std::move(message);
    error->param = param;
    *out = RerankRequest();
    return false;
  };
  if (j.is_discarded()) return fail("the request body is not valid JSON", "");
  if (!j.is_object()) return fail("the request body must be a JSON object", "");
  if (auto m = j.find("model"); m != j.end()) {
    if (!m->is_string()) return fail("model: must be a string", "model");
    out->model = m->get<std::string>();
  }
  const auto q = j.find("query");
  if (q == j.end()) return fail("query: required", "query");
  if (!q->is_string()) return fail("query: must be a string", "query");
  out->query = q->get<std::string>();
  const auto d = j.find("documents");
  if (d == j.end()) return fail("documents: required", "documents");
  if (!d->is_array()) return fail("documents: must be an array of strings", "documents");
  if (d->empty()) return fail("documents: empty (give at least one document)", "documents");
  if (d->size() > limits.max_inputs) {
    return fail("documents: more than " + std::to_string(limits.max_inputs) + " documents", "documents");
  }
  for (size_t i = 0; i < d->size(); ++i) {
    const json& e = (*d)[i];
    if (e.is_string()) {
      out->documents.push_back(e.get<std::string>());
    } else if (e.is_object() && e.contains("text") && e["text"].is_string()) {
      out->documents.push_back(e["text"].get<std::string>());
    } else {
      return fail("documents[" + std::to_string(i) + "]: must be a string or an object with a \"text\" string",
                  "documents");
    }
    if (out->documents.back().find('\0') != std::string::npos) {
      return fail("documents[" + std::to_string(i) + "]: holds a NUL character", "documents");
    }
  }
  if (out->query.find('\0') != std::string::npos) return fail("query: holds a NUL character", "query");
  if (auto t = j.find("top_n"); t != j.end()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 1) return fail("top_n: must be an integer of at least 1", "top_n");
    out->top_n = t->get<int64_t>();
  }
  if (auto r = j.find("return_documents"); r != j.end()) {
    if (!r->is_boolean()) return fail("return_documents: must be a boolean", "return_documents");
    out->return_documents = r->get<bool>();
  }
  return true;
}

EmbedService::EmbedService(ember_model* model, ember_session* session, int32_t pooling, int32_t context)
    : model_(model), session_(session), pooling_(pooling), context_(context) {}

bool EmbedService::run(const EmbeddingRequest& request, const std::string& model_name, std::string* body,
                       RequestError* error) {
  *error = RequestError();
  error->status = 400;
  error->param = "input";
  // Every input's ids: the texts tokenized as llama-embedding does, or as given.
  const size_t n = request.texts.size() + request.token_inputs.size();
  std::vector<std::vector<int32_t>> ids(n);
  int64_t tokens = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t>& v = ids[i];
    if (i < request.texts.size()) {
      const std::string& text = request.texts[i];
      size_t count = 0;
      v.resize(text.size() + 8);
      ember_status st = ember_embed_tokenize(model_, text.data(), text.size(), v.data(), v.size(), &count);
      if (st == EMBER_ERR_BUFFER_TOO_SMALL) {
        v.resize(count);
        st = ember_embed_tokenize(model_, text.data(), text.size(), v.data(), v.size(), &count);
      }
      if (st != EMBER_OK) {
        error->message = "input[" + std::to_string(i) + "]: " + ember_last_error();
        return false;
      }
      v.resize(count);
    } else {
      v = request.token_inputs[i - request.texts.size()];
    }
    if (v.empty()) {
      error->message = "input[" + std::to_string(i) + "]: no tokens";
      return false;
    }
    if (v.size() > static_cast<size_t>(context_)) {
      error->message = "input[" + std::to_string(i) + "]: " + std::to_string(v.size()) +
                       " tokens, more than the embedding context of " + std::to_string(context_) + " (--embed-ctx)";
      return false;
    }
    tokens += static_cast<int64_t>(v.size());
  }
  std::vector<const int32_t*> ptrs(n);
  std::vector<size_t> counts(n);
  for (size_t i = 0; i < n; ++i) {
    ptrs[i] = ids[i].data();
    counts[i] = ids[i].size();
  }
  const int32_t dim = ember_session_embedding_size(session_);
  std::vector<float> vectors(n * static_cast<size_t>(dim));
  ember_embed_options eo;
  ember_embed_options_default(&eo);
  eo.pooling = pooling_;
  ember_status st;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    st = ember_embed_tokens(session_, ptrs.data(), counts.data(), n, &eo, vectors.data(), vectors.size());
  }
  if (st != EMBER_OK) {
    const std::string why = ember_last_error();
    if (st == EMBER_ERR_TOKEN_OUT_OF_RANGE) {
      error->message = why;
    } else {
      error->status = 500;
      error->param.clear();
      error->message = "embedding failed: " + why;
    }
    return false;
  }
  body->clear();
  body->reserve(n * static_cast<size_t>(dim) * 12 + 256);
  body->append("{\"object\":\"list\",\"data\":[");
  for (size_t i = 0; i < n; ++i) {
    if (i) body->push_back(',');
    body->append("{\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":");
    const float* v = vectors.data() + i * static_cast<size_t>(dim);
    if (request.base64) {
      append_base64(body, v, dim);
    } else {
      append_float_array(body, v, dim);
    }
    body->push_back('}');
  }
  body->append("],\"model\":" + json(model_name).dump(-1, ' ', false, json::error_handler_t::replace) +
               ",\"usage\":{\"prompt_tokens\":" + std::to_string(tokens) +
               ",\"total_tokens\":" + std::to_string(tokens) + "}}");
  return true;
}

bool EmbedService::rerank(const RerankRequest& request, const std::string& model_name, std::string* body,
                          RequestError* error) {
  *error = RequestError();
  const size_t n = request.documents.size();
  std::vector<const char*> docs(n);
  for (size_t i = 0; i < n; ++i) docs[i] = request.documents[i].c_str();
  std::vector<float> scores(n);
  ember_status st;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    st = ember_rerank(session_, request.query.c_str(), docs.data(), n, scores.data());
  }
  if (st != EMBER_OK) {
    const std::string why = ember_last_error();
    if (st == EMBER_ERR_CONTEXT_FULL || st == EMBER_ERR_INVALID_ARGUMENT || st == EMBER_ERR_TOKEN_OUT_OF_RANGE) {
      error->status = 400;
      error->param = "documents";
      error->message = why + " (the query and a document together: at most --embed-ctx tokens)";
    } else {
      error->status = 500;
      error->message = "reranking failed: " + why;
    }
    return false;
  }
  // Tokens: the query and each document as ember_embed_tokenize counts them.
  auto count = [&](const std::string& text) {
    size_t c = 0;
    std::vector<int32_t> ids(text.size() + 8);
    if (ember_embed_tokenize(model_, text.data(), text.size(), ids.data(), ids.size(), &c) != EMBER_OK) c = 0;
    return static_cast<int64_t>(c);
  };
  const int64_t q_tokens = count(request.query);
  int64_t tokens = 0;
  for (const std::string& d : request.documents) tokens += q_tokens + count(d);
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  const size_t keep = request.top_n > 0 ? std::min(n, static_cast<size_t>(request.top_n)) : n;
  auto text = [](const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); };
  body->clear();
  body->append("{\"model\":" + text(model_name) + ",\"object\":\"list\",\"results\":[");
  for (size_t k = 0; k < keep; ++k) {
    const size_t i = order[k];
    if (k) body->push_back(',');
    char score[32] = "null";  // JSON has no NaN
    if (std::isfinite(scores[i])) std::snprintf(score, sizeof score, "%.8g", static_cast<double>(scores[i]));
    body->append("{\"index\":" + std::to_string(i) + ",\"relevance_score\":" + score);
    if (request.return_documents) body->append(",\"document\":{\"text\":" + text(request.documents[i]) + "}");
    body->push_back('}');
  }
  body->append("],\"usage\":{\"prompt_tokens\":" + std::to_string(tokens) + ",\"total_tokens\":" +
               std::to_string(tokens) + "}}");
  return true;
}

}  // namespace ember::serve

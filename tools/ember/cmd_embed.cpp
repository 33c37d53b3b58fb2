// `ember embed -m MODEL -f FILE`: one embedding per line of FILE (or per -p
// text), through an embedding session (ember.h "Embeddings"): the inputs
// run together in batched steps over several sequences, each pooled (the
// file's pooling, else mean; --pooling) and normalized (Euclidean;
// --normalize) as llama-embedding does. Prints one line of floats per input,
// or with --json OpenAI's embeddings response ({"object": "list", "data":
// [{"object": "embedding", "index": i, "embedding": [...]}], "usage": ...}).
// On stderr: the throughput and, for 2..16 inputs, their cosine similarities.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/ember/args.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"
#include "tools/ember/model_cache.h"

namespace ember::cli {
namespace {

const char* kEmbedHelp =
    "usage: ember embed -m MODEL (-f FILE | -p TEXT [-p TEXT ...]) [--pooling none|mean|cls|last|rank]\n"
    "                   [--normalize N] [--json] [--seqs N] [--ctx N] [--batch B] [--threads T] [--backend B]\n"
    "  MODEL is an .ember file or a GGUF file (converted once into the cache: ember cache --help); any\n"
    "  decoder model embeds, an embedding model's file says its pooling (Qwen3-Embedding: last)\n"
    "  -f FILE         one input per line (empty lines skipped)\n"
    "  -p TEXT         an input (repeatable)\n"
    "  --pooling P     how an input's rows become one vector: mean, cls (first token), last, or none\n"
    "                  (a vector per token); default: the file's pooling_type, else mean. rank (a\n"
    "                  reranker: GGUF cls / cls.output): each input is query<TAB>document, one raw score\n"
    "                  per line, --json in /v1/rerank's shape (results[].relevance_score)\n"
    "  --normalize N   -1 none, 0 max 32760, 1 taxicab, 2 Euclidean (default), p > 2 the p-norm\n"
    "                  (as llama-embedding --embd-normalize)\n"
    "  --json          OpenAI's embeddings response shape (data[].embedding, usage)\n"
    "  --seqs N        inputs run together as sequences of one session (default: as many as one step\n"
    "                  of --batch rows holds, at most 64)\n"
    "  --ctx N         positions per sequence (default: the longest input)\n"
    "  texts are tokenized as llama-embedding does: BOS and EOS as the vocabulary says, special tokens parsed\n";

struct EmbedRequest {
  std::string model;
  std::vector<std::string> texts;
  ember_session_options so{};
  ember_embed_options eo{};
  int64_t seqs = 0;
  bool ctx_given = false, json = false;
};

int parse_embed(int argc, char** argv, EmbedRequest* r) {
  std::vector<std::string> with_value = {"-m", "-f", "-p", "--pooling", "--normalize", "--seqs"};
  std::vector<std::string> known = with_value;
  known.push_back("--json");
  for (int i = 0; kSessionFlags[i]; ++i) {
    with_value.push_back(kSessionFlags[i]);
    known.push_back(kSessionFlags[i]);
  }
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kEmbedHelp, stdout);
    return 0;
  }
  args.check_known(known);
  session_options_from_args(args, &r->so);
  ember_embed_options_default(&r->eo);
  r->eo.normalize = static_cast<int32_t>(args.get_int("--normalize", 2, -1, 64));
  r->seqs = args.get_int("--seqs", 0, 1, 256);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember embed --help)");
  if (r->so.kv_type_k < 0 || r->so.kv_type_v < 0) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--kv-type must be f32, f16 or q8_0");
  }
  if (r->so.backend < 0) return report(EMBER_ERR_INVALID_ARGUMENT, "--backend must be cpu, vulkan or auto");
  if (args.has("--pooling")) {
    r->eo.pooling = pooling_from_name(args.get("--pooling"));
    if (r->eo.pooling == -2) {
      return report(EMBER_ERR_INVALID_ARGUMENT,
                    "--pooling '" + args.get("--pooling") + "': must be none, mean, cls, last or rank");
    }
  }
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember embed --help)");
  if (args.has("-f") == args.has("-p")) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "give the inputs as -f FILE or as -p TEXT (see ember embed --help)");
  }
  r->model = args.get("-m");
  r->json = args.has("--json");
  r->ctx_given = args.has("--ctx");
  if (args.has("-p")) {
    r->texts = args.get_all("-p");
  } else if (const int code = read_input_lines(args.get("-f"), &r->texts)) {
    return code;
  }
  return kRun;
}

// ---- run -----------------------------------------------------------------------------

struct EmbedResult {
  std::vector<std::vector<int32_t>> ids;
  std::vector<float> vectors;
  int32_t dim = 0;
  int32_t pooling = EMBER_POOLING_MEAN;
  int64_t tokens = 0;
  double secs = 0;
  std::string backend;
};

// Rank pooling: each input line is "query<TAB>document" (llama-embedding's
// --cls-separator); consecutive lines with the same query are scored in one
// ember_rerank call. One score per line (the head's first output, raw).
int run_rerank(const EmbedRequest& r, ember_model* model, ember_session_options so, ember_session** session,
               EmbedResult* res) {
  std::vector<std::string> queries, docs;
  for (size_t i = 0; i < r.texts.size(); ++i) {
    const size_t tab = r.texts[i].find('\t');
    if (tab == std::string::npos) {
      return report(EMBER_ERR_INVALID_ARGUMENT,
                    "input " + std::to_string(i + 1) + ": rank pooling scores lines of the form query<TAB>document");
    }
    queries.push_back(r.texts[i].substr(0, tab));
    docs.push_back(r.texts[i].substr(tab + 1));
  }
  // The context: the longest query and document together.
  std::vector<std::vector<int32_t>> q_ids, d_ids;
  int64_t q_tokens = 0, d_tokens = 0;
  if (const int code = embed_tokenize_all(model, queries, &q_ids, &q_tokens)) return code;
  if (const int code = embed_tokenize_all(model, docs, &d_ids, &d_tokens)) return code;
  size_t longest = 1;
  for (size_t i = 0; i < docs.size(); ++i) longest = std::max(longest, q_ids[i].size() + d_ids[i].size());
  res->tokens = q_tokens + d_tokens;
  so.embeddings = 1;
  if (!r.ctx_given) so.context_length = static_cast<int32_t>(longest);
  const int64_t per_step = std::max<int64_t>(1, so.max_batch / static_cast<int64_t>(longest));
  so.n_seqs = static_cast<int32_t>(r.seqs ? r.seqs : std::min<int64_t>({per_step, 64, static_cast<int64_t>(docs.size())}));
  if (const ember_status st = ember_session_create(model, &so, session); st != EMBER_OK) return report_last(st);
  res->backend = ember_session_backend(*session);
  res->dim = 1;
  res->pooling = EMBER_POOLING_RANK;
  res->vectors.assign(docs.size(), 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < docs.size();) {
    size_t j = i;
    std::vector<const char*> group;
    for (; j < docs.size() && queries[j] == queries[i]; ++j) group.push_back(docs[j].c_str());
    const ember_status st = ember_rerank(*session, queries[i].c_str(), group.data(), group.size(), &res->vectors[i]);
    if (st != EMBER_OK) return report_last(st);
    i = j;
  }
  res->secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 0;
}

int run_embed(const EmbedRequest& r, EmbedResult* res) {
  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(r.model, nullptr, &model)) return code;
  struct Free {
    ember_model* m;
    ember_session* s = nullptr;
    ~Free() {
      ember_session_free(s);
      ember_model_free(m);
    }
  } handles{model};
  if ((r.eo.pooling != EMBER_POOLING_UNSPECIFIED ? r.eo.pooling : ember_model_pooling(model)) == EMBER_POOLING_RANK) {
    return run_rerank(r, model, r.so, &handles.s, res);
  }
  if (const int code = embed_tokenize_all(model, r.texts, &res->ids, &res->tokens)) return code;
  size_t longest = 1;
  for (const auto& ids : res->ids) longest = std::max(longest, ids.size());
  ember_session_options so = r.so;
  so.embeddings = 1;
  if (!r.ctx_given) so.context_length = static_cast<int32_t>(longest);
  const int64_t per_step = std::max<int64_t>(1, so.max_batch / static_cast<int64_t>(longest));
  so.n_seqs = static_cast<int32_t>(
      r.seqs ? r.seqs : std::min<int64_t>({per_step, 64, static_cast<int64_t>(r.texts.size())}));
  if (const ember_status st = ember_session_create(model, &so, &handles.s); st != EMBER_OK) return report_last(st);
  res->backend = ember_session_backend(handles.s);
  res->dim = ember_session_embedding_size(handles.s);
  res->pooling = r.eo.pooling != EMBER_POOLING_UNSPECIFIED ? r.eo.pooling : ember_model_pooling(model);
  if (res->pooling == EMBER_POOLING_UNSPECIFIED) res->pooling = EMBER_POOLING_MEAN;
  std::vector<const int32_t*> ptrs;
  std::vector<size_t> counts;
  for (const auto& ids : res->ids) {
    ptrs.push_back(ids.data());
    counts.push_back(ids.size());
  }
  const size_t rows = res->pooling == EMBER_POOLING_NONE ? static_cast<size_t>(res->tokens) : r.texts.size();
  res->vectors.resize(rows * static_cast<size_t>(res->dim));
  const auto t0 = std::chrono::steady_clock::now();
  const ember_status st = ember_embed_tokens(handles.s, ptrs.data(), counts.data(), ptrs.size(), &r.eo,
                                             res->vectors.data(), res->vectors.size());
  res->secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st != EMBER_OK) return report_last(st);
  return 0;
}

// ---- report --------------------------------------------------------------------------

void print_vector(const float* v, int32_t dim) {
  for (int32_t c = 0; c < dim; ++c) std::printf(c ? " %.7g" : "%.7g", static_cast<double>(v[c]));
}

void report_json(const EmbedRequest& r, const EmbedResult& res) {
  std::printf("{\"object\": \"list\", \"data\": [");
  const size_t rows = res.vectors.size() / static_cast<size_t>(std::max(res.dim, 1));
  for (size_t i = 0; i < rows; ++i) {
    std::printf("%s\n  {\"object\": \"embedding\", \"index\": %zu, \"embedding\": [", i ? "," : "", i);
    const float* v = res.vectors.data() + i * static_cast<size_t>(res.dim);
    for (int32_t c = 0; c < res.dim; ++c) std::printf(c ? ", %.7g" : "%.7g", static_cast<double>(v[c]));
    std::printf("]}");
  }
  std::string model = r.model;
  for (size_t at = 0; (at = model.find_first_of("\"\\", at)) != std::string::npos; at += 2) model.insert(at, "\\");
  std::printf("\n], \"model\": \"%s\", \"usage\": {\"prompt_tokens\": %lld, \"total_tokens\": %lld}}\n", model.c_str(),
              static_cast<long long>(res.tokens), static_cast<long long>(res.tokens));
}

void report_similarity(const EmbedResult& res, size_t n) {
  std::fprintf(stderr, "cosine similarity:\n");
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const float* a = res.vectors.data() + i * static_cast<size_t>(res.dim);
      const float* b = res.vectors.data() + j * static_cast<size_t>(res.dim);
      double ab = 0, aa = 0, bb = 0;
      for (int32_t c = 0; c < res.dim; ++c) {
        ab += static_cast<double>(a[c]) * b[c];
        aa += static_cast<double>(a[c]) * a[c];
        bb += static_cast<double>(b[c]) * b[c];
      }
      std::fprintf(stderr, "%7.4f%s", aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0, j + 1 < n ? " " : "\n");
    }
  }
}

void report_embed(const EmbedRequest& r, const EmbedResult& res) {
  std::fprintf(stderr, "embedded %zu inputs (%lld tokens, %s pooling, %d floats each) in %.1f ms: %.1f inputs/s, %.0f "
               "tokens/s on %s\n",
               r.texts.size(), static_cast<long long>(res.tokens), pooling_name(res.pooling), res.dim, res.secs * 1e3,
               static_cast<double>(r.texts.size()) / std::max(res.secs, 1e-9),
               static_cast<double>(res.tokens) / std::max(res.secs, 1e-9), res.backend.c_str());
  if (res.pooling == EMBER_POOLING_RANK && r.json) {
    // /v1/rerank's shape: each line's index and score.
    std::printf("{\"results\": [");
    for (size_t i = 0; i < res.vectors.size(); ++i) {
      std::printf("%s\n  {\"index\": %zu, \"relevance_score\": %.7g}", i ? "," : "", i,
                  static_cast<double>(res.vectors[i]));
    }
    std::printf("\n]}\n");
    return;
  }
  if (r.json) {
    report_json(r, res);
  } else {
    const size_t rows = res.vectors.size() / static_cast<size_t>(std::max(res.dim, 1));
    for (size_t i = 0; i < rows; ++i) {
      print_vector(res.vectors.data() + i * static_cast<size_t>(res.dim), res.dim);
      std::printf("\n");
    }
  }
  if (res.pooling != EMBER_POOLING_NONE && res.pooling != EMBER_POOLING_RANK && r.texts.size() >= 2 &&
      r.texts.size() <= 16) {
    report_similarity(res, r.texts.size());
  }
}

}  // namespace

int32_t pooling_from_name(const std::string& name) {
  for (int32_t p = EMBER_POOLING_NONE; p <= EMBER_POOLING_RANK; ++p) {
    if (name == pooling_name(p)) return p;
  }
  return -2;
}

const char* pooling_name(int32_t pooling) {
  const char* const names[] = {"none", "mean", "cls", "last", "rank"};
  return pooling >= 0 && pooling <= 4 ? names[pooling] : "unspecified";
}

int read_input_lines(const std::string& path, std::vector<std::string>* lines) {
  std::string text, error;
  if (const ember_status st = read_file(path, &text, &error); st != EMBER_OK) return report(st, "-f: " + error);
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines->push_back(line);
    at = end + 1;
  }
  if (lines->empty()) return report(EMBER_ERR_INVALID_ARGUMENT, "-f '" + path + "' has no non-empty line");
  return 0;
}

int embed_tokenize_all(ember_model* model, const std::vector<std::string>& texts,
                       std::vector<std::vector<int32_t>>* ids, int64_t* tokens) {
  ids->resize(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t>& v = (*ids)[i];
    v.resize(texts[i].size() + 8);
    size_t n = 0;
    ember_status st = ember_embed_tokenize(model, texts[i].data(), texts[i].size(), v.data(), v.size(), &n);
    if (st == EMBER_ERR_BUFFER_TOO_SMALL) {
      v.resize(n);
      st = ember_embed_tokenize(model, texts[i].data(), texts[i].size(), v.data(), v.size(), &n);
    }
    if (st != EMBER_OK) return report(st, "input " + std::to_string(i + 1) + ": " + ember_last_error());
    if (n == 0) return report(EMBER_ERR_INVALID_ARGUMENT, "input " + std::to_string(i + 1) + " has no tokens");
    v.resize(n);
    *tokens += static_cast<int64_t>(n);
  }
  return 0;
}

int cmd_embed(int argc, char** argv) {
  EmbedRequest r;
  if (const int code = parse_embed(argc, argv, &r); code != kRun) return code;
  EmbedResult res;
  if (const int code = run_embed(r, &res)) return code;
  report_embed(r, res);
  return 0;
}

}  // namespace ember::cli

// `ember perplexity -m M -f TEXT [--ctx N]`: how well a model predicts a
// text, for judging quantization (the same text, F32 vs Q8_0). The text is
// tokenized once and cut into windows of N-1 tokens; each window runs from
// a fresh session as BOS + window, and every token of it is scored from the
// positions before it. PPL = exp(mean negative log-likelihood).
// --llama-chunks scores what llama.cpp's llama-perplexity scores (same -c):
// BOS + the text's tokens cut into whole chunks of N tokens (a partial last
// chunk is dropped), each chunk's first token replaced by BOS, and only the
// second half of each chunk scored (the N/2 - 1 tokens after position N/2),
// so the two programs' figures are comparable on the same file.
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

// -log softmax(logits)[target], in double with the maximum subtracted.
double nll_of(const std::vector<float>& logits, int32_t target) {
  float mx = logits[0];
  for (float v : logits) mx = v > mx ? v : mx;
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  return std::log(sum) - (static_cast<double>(logits[target]) - mx);
}

const char* kPerplexityHelp =
    "usage: ember perplexity -m MODEL -f TEXT_FILE [--ctx N] [--threads T] [--max-tokens K] [--llama-chunks]\n"
    "  MODEL is an .ember file or a GGUF file (converted once into the cache: ember cache --help)\n"
    "  --ctx N         positions per window, BOS included (default: the model's context, at most 512)\n"
    "  --threads T     CPU threads (default 0: all cores)\n"
    "  --max-tokens K  score at most the first K tokens of the text (default: all)\n"
    "  --llama-chunks  score as llama-perplexity -c N does: BOS + text cut into whole chunks of N tokens,\n"
    "                  each chunk's first token replaced by BOS, only its last N/2 - 1 tokens scored\n"
    "  prints the perplexity and the number of tokens scored.\n";

}  // namespace

int cmd_perplexity(int argc, char** argv) {
  Args args(argc, argv, {"-m", "-f", "--ctx", "--threads", "--max-tokens"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kPerplexityHelp, stdout);
    return 0;
  }
  args.check_known({"-m", "-f", "--ctx", "--threads", "--max-tokens", "--llama-chunks"});
  const bool llama_chunks = args.has("--llama-chunks");
  const int64_t ctx_arg = args.get_int("--ctx", 0, 2, 1 << 20);
  const int64_t threads = args.get_int("--threads", 0, 0, 1024);
  const int64_t max_tokens = args.get_int("--max-tokens", 0, 1, INT64_MAX);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember perplexity --help)");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember perplexity --help)");
  if (!args.has("-f")) return report(EMBER_ERR_INVALID_ARGUMENT, "-f TEXT_FILE is required (see ember perplexity --help)");
  std::string text, error;
  if (const ember_status rst = read_file(args.get("-f"), &text, &error); rst != EMBER_OK) {
    return report(rst, "-f: " + error);
  }

  ember_model* model = nullptr;
  if (const int code = open_model_for_cli(args.get("-m"), nullptr, &model)) return code;
  ember_status st = EMBER_OK;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(model, &info);
  const int64_t ctx = ctx_arg ? ctx_arg : std::min<int64_t>(info.max_context, 512);
  if (ctx > info.max_context) {
    ember_model_free(model);
    return report(EMBER_ERR_INVALID_ARGUMENT, "--ctx " + std::to_string(ctx) + " is more than the model's context (" +
                                                  std::to_string(info.max_context) + ")");
  }

  std::vector<int32_t> ids(text.size() + 16);
  size_t n_ids = 0;
  st = ember_tokenize(model, text.data(), text.size(), 0, ids.data(), ids.size(), &n_ids);
  if (st == EMBER_ERR_INVALID_ARGUMENT && n_ids > ids.size()) {
    ids.resize(n_ids);
    st = ember_tokenize(model, text.data(), text.size(), 0, ids.data(), ids.size(), &n_ids);
  }
  if (st != EMBER_OK) {
    const int code = report_last(st);
    ember_model_free(model);
    return code;
  }
  ids.resize(n_ids);
  if (max_tokens > 0 && static_cast<int64_t>(ids.size()) > max_tokens) ids.resize(static_cast<size_t>(max_tokens));
  // Without BOS a window's first token has no context and is not scored.
  const bool has_bos = info.bos_id >= 0;
  if (ids.size() < (has_bos ? 1u : 2u)) {
    ember_model_free(model);
    return report(EMBER_ERR_INVALID_ARGUMENT, "-f '" + args.get("-f") + "' has too few tokens to score (" +
                                                  std::to_string(ids.size()) + ")");
  }

  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = static_cast<int32_t>(ctx);
  so.n_threads = static_cast<int32_t>(threads);
  so.max_batch = 1;  // one token at a time: every position's logits are needed
  ember_session* session = nullptr;
  st = ember_session_create(model, &so, &session);
  if (st != EMBER_OK) {
    const int code = report_last(st);
    ember_model_free(model);
    return code;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits(info.vocab_size);
  const size_t window = static_cast<size_t>(has_bos ? ctx - 1 : ctx);
  double nll = 0;
  int64_t scored = 0, windows = 0;
  if (llama_chunks) {
    // llama-perplexity's tokens: BOS (when the vocabulary has one) + text.
    std::vector<int32_t> all;
    all.reserve(ids.size() + 1);
    if (has_bos) all.push_back(info.bos_id);
    all.insert(all.end(), ids.begin(), ids.end());
    const size_t n = static_cast<size_t>(ctx), first = n / 2;
    if (n < 3) {
      ember_session_free(session);
      ember_model_free(model);
      return report(EMBER_ERR_INVALID_ARGUMENT, "--ctx " + std::to_string(ctx) +
                                                    ": --llama-chunks scores the last N/2 - 1 of N positions; N >= 3");
    }
    if (all.size() < n) {
      ember_session_free(session);
      ember_model_free(model);
      return report(EMBER_ERR_INVALID_ARGUMENT, "--llama-chunks: -f '" + args.get("-f") + "' has " +
                                                    std::to_string(all.size()) + " tokens, less than one chunk of " +
                                                    std::to_string(n));
    }
    for (size_t c = 0; st == EMBER_OK && c < all.size() / n; ++c) {
      const int32_t* chunk = all.data() + c * n;
      st = ember_session_reset(session);
      for (size_t p = 0; st == EMBER_OK && p + 1 < n; ++p) {
        st = ember_session_decode(session, p == 0 && has_bos ? info.bos_id : chunk[p], logits.data());
        if (st == EMBER_OK && p >= first) {
          nll += nll_of(logits, chunk[p + 1]);
          ++scored;
        }
      }
      ++windows;
    }
  }
  for (size_t start = 0; !llama_chunks && st == EMBER_OK && start < ids.size(); start += window) {
    const size_t end = std::min(ids.size(), start + window);
    st = ember_session_reset(session);
    if (st == EMBER_OK && has_bos) st = ember_session_decode(session, info.bos_id, logits.data());
    for (size_t i = start; st == EMBER_OK && i < end; ++i) {
      if (has_bos || i > start) {
        nll += nll_of(logits, ids[i]);
        ++scored;
      }
      if (i + 1 < end) st = ember_session_decode(session, ids[i], logits.data());
    }
    ++windows;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ember_session_free(session);
  if (st != EMBER_OK) {
    const int code = report_last(st);
    ember_model_free(model);
    return code;
  }
  ember_model_free(model);
  const double mean = nll / static_cast<double>(scored);
  std::printf("perplexity %.6f\n", std::exp(mean));
  std::printf("tokens_scored %lld\n", static_cast<long long>(scored));
  std::printf("mean_nll %.6f\n", mean);
  if (llama_chunks) {
    std::fprintf(stderr, "perplexity: %lld tokens in %lld chunks of %lld (llama-perplexity's: last %lld of each), "
                 "%.1f tok/s\n", static_cast<long long>(scored), static_cast<long long>(windows),
                 static_cast<long long>(ctx), static_cast<long long>(ctx - ctx / 2 - 1), scored / (secs > 0 ? secs : 1));
  } else {
    std::fprintf(stderr, "perplexity: %lld tokens in %lld windows of up to %lld positions (BOS + %zu), %.1f tok/s\n",
                 static_cast<long long>(scored), static_cast<long long>(windows), static_cast<long long>(ctx), window,
                 scored / (secs > 0 ? secs : 1));
  }
  return 0;
}

}  // namespace ember::cli

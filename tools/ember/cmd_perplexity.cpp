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
// --kl-base BASE runs a second model (the unquantized baseline, the same
// vocabulary) over the same tokens and reports the per-token
// KL(base || model): its mean with a 95% confidence interval, median, p99
// and maximum, the top-1 agreement, and both perplexities — with
// --llama-chunks what llama-perplexity --kl-divergence reports.
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
    "  --kl-base BASE  also run BASE (e.g. the f32 model MODEL was quantized from; the same vocabulary)\n"
    "                  on the same tokens: KL(BASE || MODEL) per token (mean ± 95% interval, median,\n"
    "                  p99, max), top-1 agreement, BASE's perplexity and the difference\n"
    "  prints the perplexity and the number of tokens scored.\n";

// ---- parse ---------------------------------------------------------------------------

struct PerplexityRequest {
  std::string model, text_path, text, kl_base;
  bool llama_chunks = false;
  int64_t ctx_arg = 0, threads = 0, max_tokens = 0;
};

int parse_perplexity(int argc, char** argv, PerplexityRequest* r) {
  Args args(argc, argv, {"-m", "-f", "--ctx", "--threads", "--max-tokens", "--kl-base"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kPerplexityHelp, stdout);
    return 0;
  }
  args.check_known({"-m", "-f", "--ctx", "--threads", "--max-tokens", "--llama-chunks", "--kl-base"});
  r->kl_base = args.get("--kl-base");
  if (args.has("--kl-base") && r->kl_base.empty()) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--kl-base needs a model file (see ember perplexity --help)");
  }
  r->llama_chunks = args.has("--llama-chunks");
  r->ctx_arg = args.get_int("--ctx", 0, 2, 1 << 20);
  r->threads = args.get_int("--threads", 0, 0, 1024);
  r->max_tokens = args.get_int("--max-tokens", 0, 1, INT64_MAX);
  if (!args.ok()) return report(EMBER_ERR_INVALID_ARGUMENT, args.error() + " (see ember perplexity --help)");
  if (!args.has("-m")) return report(EMBER_ERR_INVALID_ARGUMENT, "-m MODEL is required (see ember perplexity --help)");
  if (!args.has("-f")) return report(EMBER_ERR_INVALID_ARGUMENT, "-f TEXT_FILE is required (see ember perplexity --help)");
  r->model = args.get("-m");
  r->text_path = args.get("-f");
  std::string error;
  if (const ember_status st = read_file(r->text_path, &r->text, &error); st != EMBER_OK) {
    return report(st, "-f: " + error);
  }
  return kRun;
}

// ---- run -----------------------------------------------------------------------------

struct Score {
  int64_t ctx = 0;    // positions per window or chunk
  size_t window = 0;  // text tokens per window (after BOS)
  double nll = 0;
  int64_t scored = 0, windows = 0;
  double secs = 0;
  // --kl-base: the baseline's NLL, KL(base || model) per scored token, and
  // how often both rank the same token first.
  double nll_base = 0;
  std::vector<double> kl;
  int64_t same_top1 = 0;
};

// The model and its session, and the baseline's under --kl-base, freed on
// every path. Every step runs the same token through both.
struct Handles {
  ember_model* model = nullptr;
  ember_session* session = nullptr;
  ember_model* base = nullptr;
  ember_session* base_session = nullptr;
  std::vector<float> logits, base_logits;
  ~Handles() {
    ember_session_free(base_session);
    ember_model_free(base);
    ember_session_free(session);
    ember_model_free(model);
  }
  ember_status reset() {
    ember_status st = ember_session_reset(session);
    if (st == EMBER_OK && base_session) st = ember_session_reset(base_session);
    return st;
  }
  // Feeds `n` tokens and takes every one's logits (both models'): steps of
  // up to kScoreRows rows, each row bitwise what decoding it alone gives.
  ember_status feed(const int32_t* tokens, int32_t n) {
    ember_status st = ember_session_decode_logits(session, tokens, static_cast<size_t>(n), logits.data(), n);
    if (st == EMBER_OK && base_session) {
      st = ember_session_decode_logits(base_session, tokens, static_cast<size_t>(n), base_logits.data(), n);
    }
    return st;
  }
  ember_status prefill(const int32_t* tokens, size_t n) {
    ember_status st = ember_session_prefill(session, tokens, n, nullptr);
    if (st == EMBER_OK && base_session) st = ember_session_prefill(base_session, tokens, n, nullptr);
    return st;
  }
  size_t vocab = 0;
  int32_t rows = 1;  // logits rows one feed returns: 1 + the sessions' max_draft
};

// The most logits rows one step returns (1 + ember's largest max_draft).
constexpr int32_t kScoreRows = 17;

// log softmax of `logits` into `out` (double).
void log_softmax(const std::vector<float>& logits, std::vector<double>* out) {
  float mx = logits[0];
  for (float v : logits) mx = v > mx ? v : mx;
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  const double log_sum = std::log(sum);
  out->resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) (*out)[i] = static_cast<double>(logits[i]) - mx - log_sum;
}

// Scores `target` from row `row` of the last feed's logits (both models'
// under --kl-base).
void score_token(const Handles& h, size_t row, int32_t target, Score* sc) {
  ++sc->scored;
  static thread_local std::vector<float> model_row, base_row;
  model_row.assign(h.logits.begin() + row * h.vocab, h.logits.begin() + (row + 1) * h.vocab);
  if (!h.base_session) {
    sc->nll += nll_of(model_row, target);
    return;
  }
  base_row.assign(h.base_logits.begin() + row * h.vocab, h.base_logits.begin() + (row + 1) * h.vocab);
  // Both models' log-probabilities, once: the NLLs and the KL read them.
  static thread_local std::vector<double> lp, lq;
  log_softmax(base_row, &lp);
  log_softmax(model_row, &lq);
  sc->nll -= lq[static_cast<size_t>(target)];
  sc->nll_base -= lp[static_cast<size_t>(target)];
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  sc->kl.push_back(std::max(kl, 0.0));
  const auto top = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
  sc->same_top1 += top(model_row) == top(base_row);
}

// Feeds feed[0 .. n) from the session's current position; row j's logits
// (after feed[j]) score targets[j] for every j >= first. The rows before
// `first` run as one prefill, the rest in steps of h.rows.
ember_status feed_and_score(Handles& h, const int32_t* feed, size_t n, size_t first, const int32_t* targets, Score* sc) {
  ember_status st = first > 0 ? h.prefill(feed, first) : EMBER_OK;
  for (size_t j = first; st == EMBER_OK && j < n; j += static_cast<size_t>(h.rows)) {
    const int32_t g = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(h.rows), n - j));
    st = h.feed(feed + j, g);
    for (int32_t r = 0; st == EMBER_OK && r < g; ++r) score_token(h, static_cast<size_t>(r), targets[j + r], sc);
  }
  return st;
}

// The text's ids (no BOS), at most --max-tokens of them. 0, or the exit code
// of the error reported.
int text_ids(const PerplexityRequest& r, ember_model* model, const ember_model_info& info, std::vector<int32_t>* ids) {
  ids->resize(r.text.size() + 16);
  size_t n_ids = 0;
  ember_status st = ember_tokenize(model, r.text.data(), r.text.size(), 0, ids->data(), ids->size(), &n_ids);
  if (st == EMBER_ERR_INVALID_ARGUMENT && n_ids > ids->size()) {
    ids->resize(n_ids);
    st = ember_tokenize(model, r.text.data(), r.text.size(), 0, ids->data(), ids->size(), &n_ids);
  }
  if (st != EMBER_OK) return report_last(st);
  ids->resize(n_ids);
  if (r.max_tokens > 0 && static_cast<int64_t>(ids->size()) > r.max_tokens) {
    ids->resize(static_cast<size_t>(r.max_tokens));
  }
  // Without BOS a window's first token has no context and is not scored.
  if (ids->size() < (info.bos_id >= 0 ? 1u : 2u)) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "-f '" + r.text_path + "' has too few tokens to score (" +
                                                  std::to_string(ids->size()) + ")");
  }
  return 0;
}

// Windows of ctx - 1 tokens after BOS, each from a fresh session; every
// token scored from the positions before it.
ember_status score_windows(Handles& h, const ember_model_info& info, const std::vector<int32_t>& ids, Score* sc) {
  const bool has_bos = info.bos_id >= 0;
  ember_status st = EMBER_OK;
  std::vector<int32_t> feed;
  for (size_t start = 0; st == EMBER_OK && start < ids.size(); start += sc->window) {
    const size_t end = std::min(ids.size(), start + sc->window);
    st = h.reset();
    // BOS + ids[start .. end - 1) scores ids[start .. end); without BOS the
    // first token has no context: ids[start .. end - 1) scores the rest.
    feed.clear();
    if (has_bos) feed.push_back(info.bos_id);
    feed.insert(feed.end(), ids.begin() + static_cast<std::ptrdiff_t>(start), ids.begin() + static_cast<std::ptrdiff_t>(end - 1));
    const int32_t* targets = ids.data() + start + (has_bos ? 0 : 1);
    if (st == EMBER_OK && !feed.empty()) st = feed_and_score(h, feed.data(), feed.size(), 0, targets, sc);
    ++sc->windows;
  }
  return st;
}

// llama-perplexity's: BOS + the text cut into whole chunks of ctx tokens,
// each chunk's first token replaced by BOS, its second half scored. 0, or
// the exit code of the error reported.
int score_llama_chunks(const PerplexityRequest& r, Handles& h, const ember_model_info& info,
                       const std::vector<int32_t>& ids, Score* sc) {
  const bool has_bos = info.bos_id >= 0;
  std::vector<int32_t> all;
  all.reserve(ids.size() + 1);
  if (has_bos) all.push_back(info.bos_id);
  all.insert(all.end(), ids.begin(), ids.end());
  const size_t n = static_cast<size_t>(sc->ctx), first = n / 2;
  if (n < 3) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--ctx " + std::to_string(sc->ctx) +
                                                  ": --llama-chunks scores the last N/2 - 1 of N positions; N >= 3");
  }
  if (all.size() < n) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--llama-chunks: -f '" + r.text_path + "' has " +
                                                  std::to_string(all.size()) + " tokens, less than one chunk of " +
                                                  std::to_string(n));
  }
  ember_status st = EMBER_OK;
  std::vector<int32_t> feed(n - 1);
  for (size_t c = 0; st == EMBER_OK && c < all.size() / n; ++c) {
    const int32_t* chunk = all.data() + c * n;
    st = h.reset();
    // Positions 0 .. n - 2 (the first BOS); the row after position p scores chunk[p + 1], for p >= first.
    std::copy(chunk, chunk + n - 1, feed.begin());
    if (has_bos) feed[0] = info.bos_id;
    if (st == EMBER_OK) st = feed_and_score(h, feed.data(), n - 1, first, chunk + 1, sc);
    ++sc->windows;
  }
  return st == EMBER_OK ? 0 : report_last(st);
}

// --kl-base: the baseline and its session. Its vocabulary must be the
// model's: the same size, BOS and EOS, and the same ids for the text.
int open_base(const PerplexityRequest& r, const ember_model_info& info, const std::vector<int32_t>& ids,
              const ember_session_options& so, Handles* h) {
  if (const int code = open_model_for_cli(r.kl_base, nullptr, &h->base)) return code;
  ember_model_info bi;
  bi.struct_size = sizeof bi;
  ember_model_get_info(h->base, &bi);
  std::vector<int32_t> base_ids;
  if (bi.vocab_size == info.vocab_size && bi.bos_id == info.bos_id && bi.eos_id == info.eos_id) {
    if (const int code = text_ids(r, h->base, bi, &base_ids)) return code;
  }
  if (base_ids != ids) {
    return report(EMBER_ERR_INVALID_ARGUMENT,
                  "--kl-base '" + r.kl_base + "': its vocabulary is not the model's (" + std::to_string(bi.vocab_size) +
                      " pieces, BOS " + std::to_string(bi.bos_id) + ", EOS " + std::to_string(bi.eos_id) + " against " +
                      std::to_string(info.vocab_size) + ", " + std::to_string(info.bos_id) + ", " +
                      std::to_string(info.eos_id) + (bi.vocab_size == info.vocab_size ? "; or the text's ids differ)" : ")"));
  }
  if (const ember_status st = ember_session_create(h->base, &so, &h->base_session); st != EMBER_OK) {
    return report_last(st);
  }
  h->base_logits.resize(static_cast<size_t>(bi.vocab_size) * kScoreRows);
  return 0;
}

int run_perplexity(const PerplexityRequest& r, Score* sc) {
  Handles h;
  if (const int code = open_model_for_cli(r.model, nullptr, &h.model)) return code;
  ember_model_info info;
  info.struct_size = sizeof info;
  ember_model_get_info(h.model, &info);
  sc->ctx = r.ctx_arg ? r.ctx_arg : std::min<int64_t>(info.max_context, 512);
  if (sc->ctx > info.max_context) {
    return report(EMBER_ERR_INVALID_ARGUMENT, "--ctx " + std::to_string(sc->ctx) +
                                                  " is more than the model's context (" +
                                                  std::to_string(info.max_context) + ")");
  }
  std::vector<int32_t> ids;
  if (const int code = text_ids(r, h.model, info, &ids)) return code;
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = static_cast<int32_t>(sc->ctx);
  so.n_threads = static_cast<int32_t>(r.threads);
  // Every scored position's logits: steps of up to kScoreRows rows, each
  // row's logits returned (max_draft), prefill in steps of up to 64.
  so.max_batch = static_cast<int32_t>(std::min<int64_t>(64, sc->ctx));
  so.max_draft = std::min(kScoreRows, so.max_batch) - 1;
  h.rows = so.max_draft + 1;
  if (const ember_status st = ember_session_create(h.model, &so, &h.session); st != EMBER_OK) return report_last(st);
  h.vocab = static_cast<size_t>(info.vocab_size);
  h.logits.resize(h.vocab * kScoreRows);
  if (!r.kl_base.empty()) {
    if (const int code = open_base(r, info, ids, so, &h)) return code;
  }
  const auto t0 = std::chrono::steady_clock::now();
  sc->window = static_cast<size_t>(info.bos_id >= 0 ? sc->ctx - 1 : sc->ctx);
  int code = 0;
  if (r.llama_chunks) {
    code = score_llama_chunks(r, h, info, ids, sc);
  } else if (const ember_status st = score_windows(h, info, ids, sc); st != EMBER_OK) {
    code = report_last(st);
  }
  sc->secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return code;
}

// ---- report --------------------------------------------------------------------------

// KL(base || model): mean ± the 95% interval of the mean (1.96 standard
// errors), median, p99, max; top-1 agreement ± its 95% interval; both
// perplexities and ln(PPL / PPL base).
void report_kl(const Score& sc) {
  const double n = static_cast<double>(sc.kl.size());
  double sum = 0, sq = 0;
  for (double k : sc.kl) {
    sum += k;
    sq += k * k;
  }
  const double mean = sum / n;
  const double sd = n > 1 ? std::sqrt(std::max(0.0, (sq - n * mean * mean) / (n - 1))) : 0;
  std::vector<double> sorted = sc.kl;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) { return sorted[static_cast<size_t>(q * (n - 1) + 0.5)]; };
  const double same = static_cast<double>(sc.same_top1) / n;
  const double base_ppl = std::exp(sc.nll_base / n), ppl = std::exp(sc.nll / n);
  std::printf("kl_divergence_mean %.6f\n", mean);
  std::printf("kl_divergence_ci95 %.6f\n", 1.96 * sd / std::sqrt(n));
  std::printf("kl_divergence_median %.6f\n", at(0.5));
  std::printf("kl_divergence_p99 %.6f\n", at(0.99));
  std::printf("kl_divergence_max %.6f\n", sorted.back());
  std::printf("same_top1_pct %.3f\n", 100 * same);
  std::printf("same_top1_ci95_pct %.3f\n", 100 * 1.96 * std::sqrt(same * (1 - same) / std::max(1.0, n - 1)));
  std::printf("base_perplexity %.6f\n", base_ppl);
  std::printf("perplexity_delta %.6f\n", ppl - base_ppl);
  std::printf("ln_ppl_ratio %.6f\n", (sc.nll - sc.nll_base) / n);
}

int report_perplexity(const PerplexityRequest& r, const Score& sc) {
  const double mean = sc.nll / static_cast<double>(sc.scored);
  std::printf("perplexity %.6f\n", std::exp(mean));
  std::printf("tokens_scored %lld\n", static_cast<long long>(sc.scored));
  std::printf("mean_nll %.6f\n", mean);
  if (!r.kl_base.empty()) report_kl(sc);
  const double tps = sc.scored / (sc.secs > 0 ? sc.secs : 1);
  if (r.llama_chunks) {
    std::fprintf(stderr, "perplexity: %lld tokens in %lld chunks of %lld (llama-perplexity's: last %lld of each), "
                 "%.1f tok/s\n", static_cast<long long>(sc.scored), static_cast<long long>(sc.windows),
                 static_cast<long long>(sc.ctx), static_cast<long long>(sc.ctx - sc.ctx / 2 - 1), tps);
  } else {
    std::fprintf(stderr, "perplexity: %lld tokens in %lld windows of up to %lld positions (BOS + %zu), %.1f tok/s\n",
                 static_cast<long long>(sc.scored), static_cast<long long>(sc.windows), static_cast<long long>(sc.ctx),
                 sc.window, tps);
  }
  return 0;
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
  PerplexityRequest r;
  if (const int code = parse_perplexity(argc, argv, &r); code != kRun) return code;
  Score sc;
  if (const int code = run_perplexity(r, &sc)) return code;
  return report_perplexity(r, sc);
}

}  // namespace ember::cli

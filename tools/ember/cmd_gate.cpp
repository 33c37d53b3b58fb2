// `ember gate --baseline B --candidate C [--tasks T]`: the quantization
// release gate. On the task texts it scores both models token by token
// (perplexity of each, the KL divergence of the candidate's next-token
// distribution from the baseline's, top-1 agreement); on optional prompts
// with expected answers (JSON lines) it counts each model's correct greedy
// answers; it measures both on this machine (TTFT, ITL p50/p95, prefill and
// decode tokens/s and peak RSS, each model in its own `ember bench --json`
// process; the plan's bytes), records hardware, runtime and the SHA-256 of
// both files, and compares with the criteria. Exit 0 when every criterion
// passes, 1 when one fails (stderr names each, with both figures), 2 on an
// error. docs/decisions.md ("Deployment decisions") gives the definitions
// and why the defaults are what they are.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/ember/args.h"
#include "tools/ember/bench_report.h"
#include "tools/ember/commands.h"
#include "tools/ember/files.h"
#include "tools/ember/gate_tasks.h"
#include "tools/ember/model_cache.h"
#include "tools/ember/model_facts.h"

#include "ember_git_hash.h"  // generated at build time: EMBER_GIT_HASH

namespace ember::cli {
namespace {

using nlohmann::json;

constexpr int kErrorExit = 2;

struct Criteria {
  double max_ppl_increase_pct = 3.0;
  double min_top1 = 0.90;
  double max_kl = 0.05;
  double max_slowdown_pct = 10.0;
  double max_memory_increase_pct = 0.0;
  double max_accuracy_drop_pct = 0.0;  // percentage points, only with prompts
};

struct Prompt {
  std::string source;  // file:line
  std::string prompt, expected, match;  // match: "exact" or "contains"
  int max_tokens = 32;
};

// One model's figures.
struct Side {
  std::string path, sha256, quantization;
  ember_model* model = nullptr;
  ember_model_info info{};
  double nll = 0;  // summed over the scored tokens
  int correct = 0;
  std::vector<std::string> answers;
  uint64_t plan_bytes = 0;  // mapped weights + private bytes
  json bench;               // its `ember bench --json` report
  double ttft = 0, itl_p50 = 0, itl_p95 = 0, prefill_tps = 0, decode_tps = 0, rss = 0;
};

struct Criterion {
  std::string name, unit;
  double baseline = 0, candidate = 0, measured = 0, limit = 0;
  bool upper = true;  // measured <= limit passes (else >=)
  bool pass = true;
  std::string rule;
};

int fail_arg(const std::string& message) {
  report(EMBER_ERR_INVALID_ARGUMENT, message);
  return kErrorExit;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Sha256Hash h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return h.hex();
}

// JSON lines: {"prompt": "...", "expected": "...", "match": "exact"|"contains", "max_tokens": N}.
bool read_prompts(const std::string& path, std::vector<Prompt>* out, std::string* error) {
  std::string text;
  if (read_file(path, &text, error) != EMBER_OK) {
    *error = "--tasks '" + path + "': " + *error;
    return false;
  }
  size_t at = 0;
  int line_no = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      *error = where + ": not a JSON object";
      return false;
    }
    Prompt p;
    p.source = where;
    const auto prompt = j.find("prompt"), expected = j.find("expected");
    if (prompt == j.end() || !prompt->is_string() || expected == j.end() || !expected->is_string()) {
      *error = where + ": needs \"prompt\" and \"expected\" strings";
      return false;
    }
    p.prompt = prompt->get<std::string>();
    p.expected = expected->get<std::string>();
    p.match = "contains";
    if (const auto m = j.find("match"); m != j.end()) {
      if (!m->is_string() || (*m != "exact" && *m != "contains")) {
        *error = where + ": \"match\" must be \"exact\" or \"contains\"";
        return false;
      }
      p.match = m->get<std::string>();
    }
    if (const auto n = j.find("max_tokens"); n != j.end()) {
      if (!n->is_number_integer() || n->get<int64_t>() < 1 || n->get<int64_t>() > 4096) {
        *error = where + ": \"max_tokens\" must be an integer in 1..4096";
        return false;
      }
      p.max_tokens = static_cast<int>(n->get<int64_t>());
    }
    out->push_back(p);
  }
  return true;
}

// --tasks: a text file, a .jsonl file of prompts, or a folder of both.
bool read_tasks(const std::string& path, std::vector<GateText>* texts, std::vector<Prompt>* prompts,
                std::string* error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    *error = "--tasks '" + path + "': no such file or folder";
    return false;
  }
  std::vector<std::string> files;
  if (S_ISDIR(st.st_mode)) {
    DIR* d = ::opendir(path.c_str());
    if (!d) {
      *error = "--tasks '" + path + "': cannot read the folder";
      return false;
    }
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (ends_with(name, ".txt") || ends_with(name, ".jsonl")) files.push_back(path + "/" + name);
    }
    ::closedir(d);
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      *error = "--tasks '" + path + "': the folder holds no .txt or .jsonl file";
      return false;
    }
  } else {
    files.push_back(path);
  }
  for (const std::string& f : files) {
    if (ends_with(f, ".jsonl")) {
      if (!read_prompts(f, prompts, error)) return false;
      continue;
    }
    std::string text;
    if (read_file(f, &text, error) != EMBER_OK) {
      *error = "--tasks '" + f + "': " + *error;
      return false;
    }
    texts->push_back({f, text});
  }
  return true;
}

bool read_criteria(const std::string& path, Criteria* c, std::string* error) {
  std::string text;
  if (read_file(path, &text, error) != EMBER_OK) {
    *error = "--criteria '" + path + "': " + *error;
    return false;
  }
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "--criteria '" + path + "': not a JSON object";
    return false;
  }
  const struct {
    const char* key;
    double* field;
  } keys[] = {{"max_ppl_increase_pct", &c->max_ppl_increase_pct}, {"min_top1", &c->min_top1},
              {"max_kl", &c->max_kl}, {"max_slowdown_pct", &c->max_slowdown_pct},
              {"max_memory_increase_pct", &c->max_memory_increase_pct},
              {"max_accuracy_drop_pct", &c->max_accuracy_drop_pct}};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool found = false;
    for (const auto& k : keys) {
      if (it.key() != k.key) continue;
      found = true;
      if (!it->is_number() || !std::isfinite(it->get<double>())) {
        *error = "--criteria '" + path + "': \"" + it.key() + "\" must be a number";
        return false;
      }
      *k.field = it->get<double>();
    }
    if (!found) {
      *error = "--criteria '" + path + "': unknown key \"" + it.key() +
               "\" (max_ppl_increase_pct, min_top1, max_kl, max_slowdown_pct, max_memory_increase_pct, "
               "max_accuracy_drop_pct)";
      return false;
    }
  }
  return true;
}

// log softmax of logits into out (double).
void log_softmax(const std::vector<float>& logits, std::vector<double>* out) {
  double mx = logits[0];
  for (float v : logits) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  const double lse = mx + std::log(sum);
  out->resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) (*out)[i] = static_cast<double>(logits[i]) - lse;
}

size_t argmax(const std::vector<float>& v) { return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

ember_status tokenize(const ember_model* model, const std::string& text, int add_bos, std::vector<int32_t>* ids) {
  size_t n = 0;
  ember_status st = ember_tokenize(model, text.data(), text.size(), add_bos, nullptr, 0, &n);
  if (st != EMBER_OK && st != EMBER_ERR_BUFFER_TOO_SMALL) return st;
  ids->resize(n);
  if (n == 0) return EMBER_OK;
  st = ember_tokenize(model, text.data(), text.size(), add_bos, ids->data(), ids->size(), &n);
  ids->resize(n);
  return st;
}

// Greedy answer to a prompt: stops at EOS, at a newline, or at max_tokens.
ember_status answer(ember_model* model, ember_session* session, const ember_model_info& info, const Prompt& p,
                    std::string* out) {
  std::vector<int32_t> ids;
  ember_status st = tokenize(model, p.prompt, info.bos_id >= 0, &ids);
  if (st != EMBER_OK) return st;
  if (ids.empty()) return EMBER_ERR_INVALID_ARGUMENT;
  std::vector<float> logits(info.vocab_size);
  if ((st = ember_session_reset(session)) != EMBER_OK) return st;
  if ((st = ember_session_prefill(session, ids.data(), ids.size(), logits.data())) != EMBER_OK) return st;
  out->clear();
  int32_t prev = ids.back();
  for (int i = 0; i < p.max_tokens; ++i) {
    const int32_t tok = static_cast<int32_t>(argmax(logits));
    if (tok == info.eos_id) break;
    char piece[256];
    size_t len = 0;
    if (ember_token_to_piece(model, prev, tok, piece, sizeof piece, &len) == EMBER_OK) out->append(piece, len);
    if (out->find('\n') != std::string::npos) break;
    prev = tok;
    if (i + 1 < p.max_tokens && (st = ember_session_decode(session, tok, logits.data())) != EMBER_OK) {
      if (st == EMBER_ERR_CONTEXT_FULL) break;
      return st;
    }
  }
  *out = out->substr(0, out->find('\n'));
  return EMBER_OK;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  const size_t b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Runs `ember bench --json` on one model in a child process (fork, no
// exec: it works where the binary runs under an emulator too), so the
// child's peak RSS, reset at its start, is that model's measurement alone.
// Called before the parent starts any thread.
bool measure(Side* s, int64_t prompt, int64_t tokens, int64_t reps, int64_t threads, std::string* error) {
  std::vector<std::string> av = {"bench", "-m", s->path, "-p", std::to_string(prompt), "-n", std::to_string(tokens),
                                 "-r", std::to_string(reps), "--threads", std::to_string(threads), "--probe-mb", "64",
                                 "--json"};
  int fds[2];
  if (::pipe(fds) != 0) {
    *error = "measuring '" + s->path + "': cannot make a pipe";
    return false;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    *error = "measuring '" + s->path + "': cannot fork";
    return false;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[1]);
    // Peak RSS back to the current RSS (Linux >= 4.0): what follows is the model's.
    if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", f);
      std::fclose(f);
    }
    std::vector<char*> argv;
    for (std::string& a : av) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = cmd_bench(static_cast<int>(argv.size() - 1), argv.data());
    std::fflush(nullptr);
    ::_exit(rc);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  s->bench = json::parse(out, nullptr, false);
  if (rc != 0 || s->bench.is_discarded() || !s->bench.is_object() || !s->bench.contains("runs") ||
      !s->bench["runs"].is_array() || s->bench["runs"].empty() || !s->bench["runs"][0].is_object() ||
      !s->bench["runs"][0].contains("metrics")) {
    *error = "measuring '" + s->path + "' with ember bench failed (exit " + std::to_string(rc) + ")";
    return false;
  }
  const json& m = s->bench["runs"][0]["metrics"];
  const struct {
    const char* key;
    double* field;
  } keys[] = {{"first_token_latency_ms", &s->ttft},        {"inter_token_latency_ms_p50", &s->itl_p50},
              {"inter_token_latency_ms_p95", &s->itl_p95}, {"prefill_tokens_per_second", &s->prefill_tps},
              {"tokens_per_second", &s->decode_tps},       {"peak_rss_bytes", &s->rss}};
  for (const auto& k : keys) {
    if (!m.is_object() || !m.contains(k.key) || !m[k.key].is_number()) {
      *error = "measuring '" + s->path + "': the report lacks metrics." + k.key;
      return false;
    }
    *k.field = m[k.key].get<double>();
  }
  return true;
}

bool write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && wrote;
}

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string signed_pct(double v) {
  std::string s = v >= 0 ? "+" : "";
  return s + num(v, 2) + "%";
}

const char* kGateHelp =
    "usage: ember gate --baseline B --candidate C [--tasks T] [--max-ppl-increase PCT] [--min-top1 F]\n"
    "                  [--max-kl F] [--max-slowdown PCT] [--max-memory-increase PCT] [--max-accuracy-drop PCT]\n"
    "                  [--criteria FILE] [--json OUT] [--markdown OUT] [--ctx N] [--threads T]\n"
    "                  [--bench-prompt P] [--bench-tokens N] [--bench-reps R]\n"
    "  B, C          .ember or GGUF files of the same model (the baseline: higher precision)\n"
    "  --tasks T     a text file, a .jsonl file of prompts ({\"prompt\", \"expected\", \"match\": exact|contains,\n"
    "                \"max_tokens\"}) or a folder of .txt and .jsonl files; default: ember's built-in texts\n"
    "  criteria (defaults): perplexity at most +3% over the baseline's; top-1 agreement >= 0.90;\n"
    "                mean KL(baseline || candidate) <= 0.05 nats; prefill and decode tokens/s at most 10% slower;\n"
    "                plan bytes (mapped weights + private) at most 0% larger; with prompts, correct answers\n"
    "                at most 0 points below the baseline's. --criteria FILE: a JSON object of max_ppl_increase_pct,\n"
    "                min_top1, max_kl, max_slowdown_pct, max_memory_increase_pct, max_accuracy_drop_pct\n"
    "                (flags override it)\n"
    "  --ctx N       positions per scoring window, BOS included (default: the model's, at most 256)\n"
    "  --bench-*     the speed measurement: input length (64), decoded tokens (32), repetitions (3)\n"
    "  exit 0: every criterion passes; 1: one fails (stderr names each, with both figures); 2: an error\n";

// ---- parse ---------------------------------------------------------------------------

struct GateRequest {
  std::string paths[2];  // baseline, candidate
  Criteria criteria;
  int64_t ctx_arg = 0, threads = 0, bench_prompt = 64, bench_tokens = 32, bench_reps = 3;
  std::vector<GateText> texts;
  std::vector<Prompt> prompts;
  bool write_json = false, write_markdown = false;  // --json OUT, --markdown OUT
  std::string json_path, markdown_path;
};

// --criteria FILE, then the flags over it.
bool parse_criteria(Args& args, Criteria* c, std::string* error) {
  if (args.has("--criteria") && !read_criteria(args.get("--criteria"), c, error)) return false;
  c->max_ppl_increase_pct = args.get_float("--max-ppl-increase", c->max_ppl_increase_pct, -100, 1e9);
  c->min_top1 = args.get_float("--min-top1", c->min_top1, 0, 1);
  c->max_kl = args.get_float("--max-kl", c->max_kl, 0, 1e9);
  c->max_slowdown_pct = args.get_float("--max-slowdown", c->max_slowdown_pct, -1e9, 1e9);
  c->max_memory_increase_pct = args.get_float("--max-memory-increase", c->max_memory_increase_pct, -100, 1e9);
  c->max_accuracy_drop_pct = args.get_float("--max-accuracy-drop", c->max_accuracy_drop_pct, 0, 100);
  return true;
}

int parse_gate(int argc, char** argv, GateRequest* r) {
  const std::vector<std::string> with_value = {
      "--baseline", "--candidate", "--tasks",  "--max-ppl-increase", "--min-top1", "--max-kl", "--max-slowdown",
      "--max-memory-increase", "--max-accuracy-drop", "--criteria", "--json", "--markdown", "--ctx", "--threads",
      "--bench-prompt", "--bench-tokens", "--bench-reps"};
  Args args(argc, argv, with_value);
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kGateHelp, stdout);
    return 0;
  }
  args.check_known(with_value);
  std::string error;
  if (!parse_criteria(args, &r->criteria, &error)) return fail_arg(error);
  r->ctx_arg = args.get_int("--ctx", 0, 3, 1 << 20);
  r->threads = args.get_int("--threads", 0, 0, 1024);
  r->bench_prompt = args.get_int("--bench-prompt", 64, 1, 1 << 20);
  r->bench_tokens = args.get_int("--bench-tokens", 32, 1, 1 << 20);
  r->bench_reps = args.get_int("--bench-reps", 3, 1, 1000);
  if (!args.ok()) return fail_arg(args.error() + " (see ember gate --help)");
  if (!args.has("--baseline") || !args.has("--candidate")) {
    return fail_arg("--baseline B and --candidate C are required (see ember gate --help)");
  }
  if (args.has("--tasks")) {
    if (!read_tasks(args.get("--tasks"), &r->texts, &r->prompts, &error)) return fail_arg(error);
  } else {
    r->texts = default_gate_texts();
  }
  if (r->texts.empty() && r->prompts.empty()) return fail_arg("--tasks '" + args.get("--tasks") + "': no tasks");
  r->paths[0] = args.get("--baseline");
  r->paths[1] = args.get("--candidate");
  r->write_json = args.has("--json");
  r->write_markdown = args.has("--markdown");
  r->json_path = args.get("--json");
  r->markdown_path = args.get("--markdown");
  return kRun;
}

// ---- run -----------------------------------------------------------------------------

// How the candidate's next-token distributions compare with the baseline's.
struct Quality {
  int64_t ctx = 0;  // positions per scoring window
  int64_t scored = 0, agree = 0;
  double kl_sum = 0, kl_max = 0;
};

struct GateResult {
  Side sides[2];  // baseline, candidate
  Quality quality;
  ~GateResult() {
    for (Side& s : sides) ember_model_free(s.model);
  }
};

// Both models, with their facts; the same vocabulary. 0 or kErrorExit.
int open_sides(const GateRequest& r, GateResult* res) {
  for (int i = 0; i < 2; ++i) {
    Side& s = res->sides[i];
    s.path = r.paths[i];
    if (open_model_for_cli(s.path, nullptr, &s.model) != 0) return kErrorExit;
    s.info.struct_size = sizeof s.info;
    ember_model_get_info(s.model, &s.info);
    ModelFacts facts;
    s.quantization = model_facts(s.model, &facts) == EMBER_OK ? facts.quantization : "?";
    s.sha256 = file_sha256(s.path);
  }
  const Side* sides = res->sides;
  if (sides[0].info.vocab_size != sides[1].info.vocab_size) {
    return fail_arg("the candidate's vocabulary has " + std::to_string(sides[1].info.vocab_size) +
                    " tokens, the baseline's " + std::to_string(sides[0].info.vocab_size) +
                    ": not two versions of one model");
  }
  return 0;
}

// The two sessions scoring one token at a time (every position's logits).
struct ScoringSessions {
  ember_session* s[2] = {nullptr, nullptr};
  ~ScoringSessions() {
    for (ember_session* x : s) ember_session_free(x);
  }
};

ember_session_options scoring_options(const GateRequest& r, int64_t ctx) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = static_cast<int32_t>(ctx);
  so.n_threads = static_cast<int32_t>(r.threads);
  so.max_batch = 1;
  return so;
}

// One position of a window: each model's log-probability of the token, the
// divergence of the candidate's distribution, whether their top-1 agree.
void score_position(const std::vector<float> (&logits)[2], std::vector<double> (&lp)[2], int32_t token,
                    GateResult* res) {
  Quality& q = res->quality;
  log_softmax(logits[0], &lp[0]);
  log_softmax(logits[1], &lp[1]);
  res->sides[0].nll -= lp[0][token];
  res->sides[1].nll -= lp[1][token];
  double kl = 0;
  for (size_t v = 0; v < lp[0].size(); ++v) kl += std::exp(lp[0][v]) * (lp[0][v] - lp[1][v]);
  kl = std::max(0.0, kl);  // rounding can make a zero divergence a tiny negative
  q.kl_sum += kl;
  q.kl_max = std::max(q.kl_max, kl);
  q.agree += argmax(logits[0]) == argmax(logits[1]);
  ++q.scored;
}

// Quality on the texts: windows of ctx - 1 tokens after BOS, as `ember
// perplexity` scores them; both models see the same ids.
ember_status score_texts(const GateRequest& r, const ScoringSessions& sessions, GateResult* res) {
  const ember_model_info& info = res->sides[0].info;
  std::vector<float> logits[2] = {std::vector<float>(info.vocab_size), std::vector<float>(info.vocab_size)};
  std::vector<double> lp[2];
  const bool has_bos = info.bos_id >= 0;
  const size_t window = static_cast<size_t>(has_bos ? res->quality.ctx - 1 : res->quality.ctx);
  for (const GateText& t : r.texts) {
    std::vector<int32_t> ids;
    ember_status st = tokenize(res->sides[0].model, t.text, 0, &ids);
    for (size_t start = 0; st == EMBER_OK && start < ids.size(); start += window) {
      const size_t end = std::min(ids.size(), start + window);
      for (int m = 0; m < 2 && st == EMBER_OK; ++m) {
        st = ember_session_reset(sessions.s[m]);
        if (st == EMBER_OK && has_bos) st = ember_session_decode(sessions.s[m], info.bos_id, logits[m].data());
      }
      for (size_t i = start; st == EMBER_OK && i < end; ++i) {
        if (has_bos || i > start) score_position(logits, lp, ids[i], res);
        for (int m = 0; m < 2 && st == EMBER_OK && i + 1 < end; ++m) {
          st = ember_session_decode(sessions.s[m], ids[i], logits[m].data());
        }
      }
    }
    if (st != EMBER_OK) return st;
  }
  return EMBER_OK;
}

// Prompts with expected answers, greedy; a prompt needs its own session
// size (prefill takes it in one batch).
ember_status score_prompts(const GateRequest& r, const ember_session_options& so, GateResult* res) {
  for (const Prompt& p : r.prompts) {
    for (Side& side : res->sides) {
      ember_session_options po = so;
      po.max_batch = 512;
      ember_session* s = nullptr;
      ember_status st = ember_session_create(side.model, &po, &s);
      std::string out;
      if (st == EMBER_OK) st = answer(side.model, s, res->sides[0].info, p, &out);
      ember_session_free(s);
      if (st != EMBER_OK) return st;
      const bool ok = p.match == "exact" ? trim(out) == trim(p.expected) : out.find(p.expected) != std::string::npos;
      side.correct += ok;
      side.answers.push_back(out);
    }
  }
  return EMBER_OK;
}

// Plan bytes at one shape for both: the baseline's context, batch 512.
int plan_sides(GateResult* res) {
  const int32_t context = res->sides[0].info.max_context;
  for (Side& s : res->sides) {
    ember_session_options po;
    ember_session_options_default(&po);
    po.context_length = context;
    ember_memory_plan p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    const ember_status ps = ember_plan(s.model, &po, &p);
    if (ps != EMBER_OK) {
      report(ps, "planning '" + s.path + "' at context " + std::to_string(context) + ": " + ember_last_error());
      return kErrorExit;
    }
    s.plan_bytes = p.weights_mapped_bytes + p.private_bytes;
  }
  return 0;
}

// Speed and RSS (each model in its own process), quality, answers, plan
// bytes. 0, or kErrorExit after reporting the error.
int run_gate(const GateRequest& r, GateResult* res) {
  if (const int code = open_sides(r, res)) return code;
  // Speed and peak RSS, each model in its own process; first, while this
  // process has no thread but its own (fork).
  std::string error;
  for (Side& s : res->sides) {
    if (!measure(&s, r.bench_prompt, r.bench_tokens, r.bench_reps, r.threads, &error)) {
      report(EMBER_ERR_IO, error);
      return kErrorExit;
    }
  }
  res->quality.ctx = r.ctx_arg ? r.ctx_arg : std::min<int64_t>(res->sides[0].info.max_context, 256);
  const ember_session_options so = scoring_options(r, res->quality.ctx);
  {
    ScoringSessions sessions;
    ember_status st = EMBER_OK;
    for (int i = 0; i < 2 && st == EMBER_OK; ++i) st = ember_session_create(res->sides[i].model, &so, &sessions.s[i]);
    if (st == EMBER_OK) st = score_texts(r, sessions, res);
    if (st == EMBER_OK) st = score_prompts(r, so, res);
    if (st != EMBER_OK) {
      report_last(st);
      return kErrorExit;
    }
  }
  if (!r.texts.empty() && res->quality.scored == 0) return fail_arg("the task texts have no tokens to score");
  if (const int code = plan_sides(res)) return code;
  for (Side& s : res->sides) {
    ember_model_free(s.model);
    s.model = nullptr;
  }
  return 0;
}

// ---- report --------------------------------------------------------------------------

double pct(double base, double cand) { return base != 0 ? (cand - base) / base * 100 : 0; }

// The criteria, each judged.
std::vector<Criterion> judge(const GateRequest& r, const GateResult& res, bool* pass) {
  std::vector<Criterion> crit;
  const Criteria& c = r.criteria;
  const Quality& q = res.quality;
  const Side &b = res.sides[0], &k = res.sides[1];
  if (q.scored > 0) {
    const double ppl_b = std::exp(b.nll / static_cast<double>(q.scored));
    const double ppl_c = std::exp(k.nll / static_cast<double>(q.scored));
    crit.push_back({"perplexity", "", ppl_b, ppl_c, pct(ppl_b, ppl_c), c.max_ppl_increase_pct, true, true,
                    "increase <= " + signed_pct(c.max_ppl_increase_pct)});
    const double top1 = static_cast<double>(q.agree) / static_cast<double>(q.scored);
    crit.push_back({"top-1 agreement", "", 1.0, top1, top1, c.min_top1, false, true, ">= " + num(c.min_top1, 3)});
    const double kl = q.kl_sum / static_cast<double>(q.scored);
    crit.push_back({"KL divergence", "nats/token", 0.0, kl, kl, c.max_kl, true, true, "<= " + num(c.max_kl, 4)});
  }
  if (!r.prompts.empty()) {
    const double n = static_cast<double>(r.prompts.size());
    const double ab = 100.0 * b.correct / n, ac = 100.0 * k.correct / n;
    crit.push_back({"answer accuracy", "%", ab, ac, ab - ac, c.max_accuracy_drop_pct, true, true,
                    "drop <= " + num(c.max_accuracy_drop_pct, 1) + " points"});
  }
  // Slowdown: how much lower the candidate's tokens/s is, in % of the baseline's.
  crit.push_back({"prefill speed", "tokens/s", b.prefill_tps, k.prefill_tps, -pct(b.prefill_tps, k.prefill_tps),
                  c.max_slowdown_pct, true, true, "slowdown <= " + num(c.max_slowdown_pct, 1) + "%"});
  crit.push_back({"decode speed", "tokens/s", b.decode_tps, k.decode_tps, -pct(b.decode_tps, k.decode_tps),
                  c.max_slowdown_pct, true, true, "slowdown <= " + num(c.max_slowdown_pct, 1) + "%"});
  crit.push_back({"memory (plan)", "bytes", static_cast<double>(b.plan_bytes), static_cast<double>(k.plan_bytes),
                  pct(static_cast<double>(b.plan_bytes), static_cast<double>(k.plan_bytes)),
                  c.max_memory_increase_pct, true, true, "increase <= " + signed_pct(c.max_memory_increase_pct)});
  *pass = true;
  for (Criterion& x : crit) {
    x.pass = x.upper ? x.measured <= x.limit : x.measured >= x.limit;
    *pass = *pass && x.pass;
  }
  return crit;
}

// A criterion's baseline or candidate figure, and what was measured.
std::string figure(const Criterion& x, double v) {
  if (x.unit == "bytes") return std::to_string(static_cast<long long>(v));
  if (x.unit == "%") return num(v, 1) + "%";
  return num(v, x.name == "KL divergence" ? 6 : 4);
}

std::string measured(const Criterion& x) {
  if (x.name == "top-1 agreement" || x.name == "KL divergence") {
    return num(x.measured, x.name == "KL divergence" ? 6 : 4);
  }
  if (x.name == "answer accuracy") return num(x.measured, 1) + " points";
  if (x.name == "prefill speed" || x.name == "decode speed") {
    return x.measured >= 0 ? num(x.measured, 2) + "% slower" : num(-x.measured, 2) + "% faster";
  }
  return signed_pct(x.measured);
}

// top-1 agreement and KL compare the two models: they have no baseline figure of their own.
bool paired(const Criterion& x) { return x.name != "top-1 agreement" && x.name != "KL divergence"; }

// Members of the baseline's bench report (hardware and runtime).
json member(const json& o, const char* key) {
  const auto it = o.is_object() ? o.find(key) : o.end();
  return o.is_object() && it != o.end() && it->is_object() ? *it : json::object();
}

std::string jstr(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double jnum(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string markdown_sides(const GateRequest& r, const GateResult& res) {
  const Side &b = res.sides[0], &k = res.sides[1];
  std::string md = "| | baseline | candidate |\n|---|---|---|\n";
  md += "| file | " + b.path + " | " + k.path + " |\n";
  md += "| SHA-256 | `" + b.sha256 + "` | `" + k.sha256 + "` |\n";
  md += "| quantization | " + b.quantization + " | " + k.quantization + " |\n";
  md += "| TTFT ms (prompt " + std::to_string(r.bench_prompt) + ") | " + num(b.ttft, 3) + " | " + num(k.ttft, 3) +
        " |\n";
  md += "| ITL p50 / p95 ms | " + num(b.itl_p50, 3) + " / " + num(b.itl_p95, 3) + " | " + num(k.itl_p50, 3) + " / " +
        num(k.itl_p95, 3) + " |\n";
  md += "| prefill / decode tokens/s | " + num(b.prefill_tps, 1) + " / " + num(b.decode_tps, 1) + " | " +
        num(k.prefill_tps, 1) + " / " + num(k.decode_tps, 1) + " |\n";
  md += "| peak RSS MiB | " + num(b.rss / 1048576.0, 1) + " | " + num(k.rss / 1048576.0, 1) + " |\n";
  md += "| plan MiB (mapped + private, context " + std::to_string(b.info.max_context) + ") | " +
        num(b.plan_bytes / 1048576.0, 2) + " | " + num(k.plan_bytes / 1048576.0, 2) + " |\n";
  if (!r.prompts.empty()) {
    md += "| correct answers | " + std::to_string(b.correct) + " / " + std::to_string(r.prompts.size()) + " | " +
          std::to_string(k.correct) + " / " + std::to_string(r.prompts.size()) + " |\n";
  }
  return md;
}

std::string markdown_report(const GateRequest& r, const GateResult& res, const std::vector<Criterion>& crit,
                            bool pass) {
  std::string md = "# Quantization release gate: " + std::string(pass ? "PASS" : "FAIL") + "\n\n";
  md += markdown_sides(r, res);
  md += "\n| criterion | baseline | candidate | measured | rule | result |\n|---|---:|---:|---:|---|---|\n";
  for (const Criterion& x : crit) {
    md += "| " + x.name + " | " + (paired(x) ? figure(x, x.baseline) : std::string("-")) + " | " +
          figure(x, x.candidate) + " | " + measured(x) + " | " + x.rule + " | " + (x.pass ? "pass" : "**FAIL**") +
          " |\n";
  }
  // Hardware and runtime, from the baseline's measurement.
  const json hw = member(res.sides[0].bench, "hardware"), sw = member(res.sides[0].bench, "software");
  const Quality& q = res.quality;
  md += "\n" + std::to_string(q.scored) + " tokens scored in " + std::to_string(r.texts.size()) +
        " text(s) (windows of " + std::to_string(q.ctx) + " positions)" +
        (r.prompts.empty() ? "" : ", " + std::to_string(r.prompts.size()) + " prompt(s)") + ". Hardware: " +
        jstr(hw, "cpu_model") + ", " + std::to_string(static_cast<int>(jnum(hw, "logical_threads"))) +
        " threads. Runtime: ember " + ember_version() + " (git " + EMBER_GIT_HASH + ", " + EMBER_BUILD_FLAVOR +
        "), backend " + jstr(sw, "backend") + ", kernels " + jstr(sw, "kernels") + ".\n";
  return md;
}

void json_side(const char* key, const Side& s, const GateRequest& r, const GateResult& res, Json* j) {
  const int64_t scored = res.quality.scored;
  j->begin_object(key)
      .str("file", s.path)
      .str("sha256", s.sha256)
      .str("quantization", s.quantization)
      .num("perplexity", scored ? std::exp(s.nll / static_cast<double>(scored)) : 0, 6)
      .num("first_token_latency_ms", s.ttft)
      .num("inter_token_latency_ms_p50", s.itl_p50)
      .num("inter_token_latency_ms_p95", s.itl_p95)
      .num("prefill_tokens_per_second", s.prefill_tps)
      .num("decode_tokens_per_second", s.decode_tps)
      .integer("peak_rss_bytes", static_cast<int64_t>(s.rss))
      .integer("plan_bytes", static_cast<int64_t>(s.plan_bytes));
  if (!r.prompts.empty()) {
    j->integer("correct_answers", s.correct);
    j->begin_array("answers");
    for (const std::string& a : s.answers) j->str(nullptr, a);
    j->end_array();
  }
  j->end_object();
}

void json_machine(const GateRequest& r, const GateResult& res, Json* j) {
  const json hw = member(res.sides[0].bench, "hardware"), sw = member(res.sides[0].bench, "software");
  j->begin_object("hardware")
      .str("cpu_model", jstr(hw, "cpu_model"))
      .integer("physical_cores", static_cast<int64_t>(jnum(hw, "physical_cores")))
      .integer("logical_threads", static_cast<int64_t>(jnum(hw, "logical_threads")))
      .num("memory_capacity_gb", jnum(hw, "memory_capacity_gb"), 1)
      .str("cpu_features", jstr(hw, "cpu_features"))
      .end_object();
  j->begin_object("runtime")
      .str("version", ember_version())
      .str("git_hash", EMBER_GIT_HASH)
      .str("build", EMBER_BUILD_FLAVOR)
      .str("backend", jstr(sw, "backend"))
      .str("kernels", jstr(sw, "kernels"))
      .integer("thread_count", static_cast<int64_t>(jnum(sw, "thread_count")))
      .end_object();
  j->begin_object("workload")
      .integer("bench_input_length", r.bench_prompt)
      .integer("bench_output_length", r.bench_tokens)
      .integer("bench_repetitions", r.bench_reps)
      .end_object();
}

std::string json_report(const GateRequest& r, const GateResult& res, const std::vector<Criterion>& crit, bool pass) {
  const Quality& q = res.quality;
  Json j;
  j.begin_object().str("result", pass ? "pass" : "fail");
  json_side("baseline", res.sides[0], r, res, &j);
  json_side("candidate", res.sides[1], r, res, &j);
  j.begin_object("quality")
      .integer("tokens_scored", q.scored)
      .integer("texts", static_cast<int64_t>(r.texts.size()))
      .integer("window", q.ctx)
      .num("top1_agreement", q.scored ? static_cast<double>(q.agree) / static_cast<double>(q.scored) : 0, 6)
      .num("kl_mean", q.scored ? q.kl_sum / static_cast<double>(q.scored) : 0, 8)
      .num("kl_max", q.kl_max, 8)
      .integer("prompts", static_cast<int64_t>(r.prompts.size()))
      .end_object();
  j.begin_array("criteria");
  for (const Criterion& x : crit) {
    j.begin_object()
        .str("name", x.name)
        .num("baseline", x.baseline, 6)
        .num("candidate", x.candidate, 6)
        .num("measured", x.measured, 6)
        .num("limit", x.limit, 6)
        .str("rule", x.rule)
        .boolean("pass", x.pass)
        .end_object();
  }
  j.end_array();
  json_machine(r, res, &j);
  j.end_object();
  return j.text();
}

// The files asked for, the Markdown on stdout, each failed criterion on
// stderr; exit 0 when every criterion passes, 1 when one fails.
int report_gate(const GateRequest& r, const GateResult& res) {
  bool pass = true;
  const std::vector<Criterion> crit = judge(r, res, &pass);
  const std::string md = markdown_report(r, res, crit, pass);
  const std::string js = json_report(r, res, crit, pass);
  for (const auto& [flag, asked, path, text] :
       {std::tuple<std::string, bool, std::string, std::string>{"--json", r.write_json, r.json_path, js},
        {"--markdown", r.write_markdown, r.markdown_path, md}}) {
    if (asked && !write_text(path, text)) {
      report(EMBER_ERR_IO, flag + " '" + path + "': cannot write the file");
      return kErrorExit;
    }
  }
  std::fputs(md.c_str(), stdout);
  for (const Criterion& x : crit) {
    if (x.pass) continue;
    if (paired(x)) {
      std::fprintf(stderr, "gate: FAIL %s: candidate %s vs baseline %s (%s; rule: %s)\n", x.name.c_str(),
                   figure(x, x.candidate).c_str(), figure(x, x.baseline).c_str(), measured(x).c_str(),
                   x.rule.c_str());
    } else {
      std::fprintf(stderr, "gate: FAIL %s: %s (rule: %s)\n", x.name.c_str(), measured(x).c_str(), x.rule.c_str());
    }
  }
  return pass ? 0 : 1;
}

}  // namespace

int cmd_gate(int argc, char** argv) {
  GateRequest r;
  if (const int code = parse_gate(argc, argv, &r); code != kRun) return code;
  GateResult res;
  if (const int code = run_gate(r, &res)) return code;
  return report_gate(r, res);
}

}  // namespace ember::cli

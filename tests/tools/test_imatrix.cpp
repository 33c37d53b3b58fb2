// Importance matrices (issue 45): the weighted scale searches of every
// quantized type, the imatrix files (llama.cpp's GGUF written and read, its
// legacy .dat read, hostile bytes refused), the sessions' activation
// statistics, and `ember imatrix` / `ember quantize --imatrix` end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "ember.h"
#include "tools/convert/imatrix.h"
#include "tools_helpers.h"

namespace ember {
namespace {

// sum w (x - dequantized)^2 over rows of `cols` quantized with `w` (or without: null).
double weighted_error(DType t, const std::vector<float>& x, int64_t cols, const std::vector<float>& w,
                      bool use_weights) {
  uint64_t row_bytes = 0;
  REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
  std::vector<uint8_t> q(row_bytes);
  std::vector<float> back(static_cast<size_t>(cols));
  double err = 0;
  for (size_t r = 0; r < x.size() / cols; ++r) {
    const float* row = x.data() + r * cols;
    quantize_row_weighted(t, row, q.data(), cols, use_weights ? w.data() : nullptr);
    dequantize_row(t, q.data(), back.data(), cols);
    for (int64_t c = 0; c < cols; ++c) err += w[c] * (row[c] - back[c]) * (row[c] - back[c]);
  }
  return err;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

template <typename T>
void put(std::vector<uint8_t>* b, T v) {
  const size_t at = b->size();
  b->resize(at + sizeof v);
  std::memcpy(b->data() + at, &v, sizeof v);
}

}  // namespace

TEST_SUITE("tools") {

TEST_CASE("weighted quantization: each searched type lowers the weighted error, and without weights is quantize_row") {
  const int64_t cols = 512;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(cols) * 64);
  for (float& v : x) v = normal(rng);
  // A few columns carry large activations (as real models' do): the rows'
  // errors there should shrink at the others' expense.
  std::vector<float> w(static_cast<size_t>(cols));
  std::uniform_real_distribution<float> uniform(0.05f, 1.0f);
  for (int64_t c = 0; c < cols; ++c) w[c] = c % 7 == 0 ? 50.0f * uniform(rng) : uniform(rng);
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS}) {
    const std::string name = dtype_name(t);
    CAPTURE(name);
    const double plain = weighted_error(t, x, cols, w, false);
    const double weighted = weighted_error(t, x, cols, w, true);
    MESSAGE(name << ": weighted error " << weighted / plain << " of the unweighted search's");
    CHECK(weighted < 0.8 * plain);
    // No weights: the same bytes as quantize_row.
    uint64_t row_bytes = 0;
    REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
    std::vector<uint8_t> a(row_bytes), b(row_bytes);
    quantize_row(t, x.data(), a.data(), cols);
    quantize_row_weighted(t, x.data(), b.data(), cols, nullptr);
    CHECK(a == b);
  }
  // Q8_0 and the float types have no search: weights change nothing.
  for (DType t : {DType::Q8_0, DType::F16, DType::BF16}) {
    uint64_t row_bytes = 0;
    REQUIRE(dtype_bytes(t, static_cast<uint64_t>(cols), &row_bytes));
    std::vector<uint8_t> a(row_bytes), b(row_bytes);
    quantize_row(t, x.data(), a.data(), cols);
    quantize_row_weighted(t, x.data(), b.data(), cols, w.data());
    CHECK(a == b);
  }
}

TEST_CASE("IQ4_NL: the scale search beats mapping the largest element onto the bottom level") {
  // Heavy-tailed blocks (a normal divided by a uniform: the outliers real
  // weights have). The reference is one scale, m / -127, with nearest
  // levels (the format's plainest quantizer); every searched candidate is
  // refit by least squares and the best kept (docs/decisions.md "IQ4_NL's
  // scale candidates"), so the error must be below it.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.2f, 1.0f);
  const int64_t cols = 256, rows = 64;
  std::vector<float> x(static_cast<size_t>(cols * rows));
  for (float& v : x) v = normal(rng) / uniform(rng);
  uint64_t row_bytes = 0;
  REQUIRE(dtype_bytes(DType::IQ4_NL, static_cast<uint64_t>(cols), &row_bytes));
  std::vector<uint8_t> q(row_bytes);
  std::vector<float> back(static_cast<size_t>(cols));
  double searched = 0, reference = 0;
  const std::vector<float> levels = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    quantize_row(DType::IQ4_NL, row, q.data(), cols);
    dequantize_row(DType::IQ4_NL, q.data(), back.data(), cols);
    for (int64_t c = 0; c < cols; ++c) searched += (row[c] - back[c]) * (row[c] - back[c]);
    for (int64_t b = 0; b < cols; b += 32) {
      float m = 0;
      for (int j = 0; j < 32; ++j) m = std::fabs(row[b + j]) > std::fabs(m) ? row[b + j] : m;
      const float d = m / -127.0f;
      for (int j = 0; j < 32; ++j) {
        float best = levels[0] * d;
        for (float l : levels) best = std::fabs(l * d - row[b + j]) < std::fabs(best - row[b + j]) ? l * d : best;
        reference += (row[b + j] - best) * (row[b + j] - best);
      }
    }
  }
  MESSAGE("IQ4_NL squared error: " << searched / reference << " of the reference's");
  CHECK(searched < 0.95 * reference);  // 0.907 when written
}

TEST_CASE("imatrix files: GGUF written and read back, legacy .dat read, hostile bytes refused") {
  const std::string dir = test::temp_dir("imatrix-files");
  Imatrix m;
  m.datasets = {"calibration.txt"};
  m.chunk_count = 3;
  m.chunk_size = 128;
  m.entries.push_back({"blk.1.ffn_down.weight", {1.0f, 4.0f, 0.0f, 9.0f}, 384});
  m.entries.push_back({"blk.0.attn_q.weight", {2.0f, 3.0f}, 384});
  const std::string path = dir + "/im.gguf";
  REQUIRE(write_imatrix(path, m).is_ok());
  auto back = read_imatrix(path);
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  const Imatrix& b = back.value();
  CHECK(b.datasets == m.datasets);
  CHECK(b.chunk_count == 3);
  CHECK(b.chunk_size == 128);
  REQUIRE(b.entries.size() == 2);
  CHECK(b.entries[0].name == "blk.0.attn_q.weight");  // sorted by name, as llama-imatrix writes
  const ImatrixEntry* down = b.find("blk.1.ffn_down.weight");
  REQUIRE(down != nullptr);
  CHECK(down->sum_sq == m.entries[0].sum_sq);
  CHECK(down->rows == 384);
  CHECK(b.find("blk.0.attn_k.weight") == nullptr);
  // llama.cpp's phi3 names: a fused matrix's entry serves the parts ember
  // splits it into (the same input).
  Imatrix fused;
  fused.entries.push_back({"blk.2.attn_qkv.weight", {1.0f, 2.0f}, 8});
  fused.entries.push_back({"blk.2.ffn_up.weight", {3.0f, 4.0f}, 8});
  for (const char* part : {"blk.2.attn_q.weight", "blk.2.attn_k.weight", "blk.2.attn_v.weight"}) {
    CHECK(fused.find(part) == &fused.entries[0]);
  }
  CHECK(fused.find("blk.2.ffn_gate.weight") == &fused.entries[1]);
  CHECK(fused.find("blk.2.ffn_up.weight") == &fused.entries[1]);
  CHECK(fused.find("blk.3.attn_q.weight") == nullptr);
  CHECK(fused.find("blk.2.attn_output.weight") == nullptr);
  // Importance: the mean square, no column weightless.
  const std::vector<float> imp = imatrix_importance(*down);
  REQUIRE(imp.size() == 4);
  CHECK(imp[1] == doctest::Approx(4.0 / 384));
  CHECK(imp[2] > 0.0f);
  CHECK(imp[2] < 1e-6f);

  // The legacy .dat: two entries (values = mean square x calls), the chunk
  // count and the dataset.
  std::vector<uint8_t> dat;
  put<int32_t>(&dat, 2);
  for (const char* name : {"blk.0.attn_k.weight", "output.weight"}) {
    put<int32_t>(&dat, static_cast<int32_t>(std::strlen(name)));
    dat.insert(dat.end(), name, name + std::strlen(name));
    put<int32_t>(&dat, 10);  // calls
    put<int32_t>(&dat, 3);   // values
    for (float v : {10.0f, 20.0f, 30.0f}) put<float>(&dat, v);
  }
  put<int32_t>(&dat, 10);
  put<int32_t>(&dat, 4);
  dat.insert(dat.end(), {'t', 'e', 'x', 't'});
  write_bytes(dir + "/im.dat", dat);
  auto legacy = read_imatrix(dir + "/im.dat");
  REQUIRE_MESSAGE(legacy.is_ok(), legacy.status().message());
  REQUIRE(legacy.value().entries.size() == 2);
  CHECK(legacy.value().entries[1].name == "output.weight");
  CHECK(legacy.value().chunk_count == 10);
  CHECK(legacy.value().datasets == std::vector<std::string>{"text"});
  CHECK(imatrix_importance(legacy.value().entries[0])[2] == doctest::Approx(3.0));

  // Every truncation of either file, and a few lies, give a status.
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> gguf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::vector<uint8_t>* file : {&gguf, static_cast<const std::vector<uint8_t>*>(&dat)}) {
    for (size_t n = 0; n + 1 < file->size(); n += file == &gguf ? 7 : 1) {
      // The .dat's trailer (12 bytes) is optional; the GGUF ends with its
      // last tensor (4 bytes) padded to 32.
      const size_t trailer = file == &dat ? 12 : 28;
      auto r = parse_imatrix(file->data(), n, "cut");
      if (n < file->size() - trailer) CHECK_MESSAGE(!r.is_ok(), "accepted " << n << " of " << file->size() << " bytes");
    }
  }
  std::vector<uint8_t> lie = dat;
  const int32_t huge = 1 << 30;
  std::memcpy(lie.data(), &huge, 4);
  auto r = parse_imatrix(lie.data(), lie.size(), "lie");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("entry count") != std::string::npos);
  lie = dat;
  std::memcpy(lie.data() + 4, &huge, 4);  // the first name's length
  r = parse_imatrix(lie.data(), lie.size(), "lie");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("name length") != std::string::npos);
}

TEST_CASE("activation statistics: a whole step and single tokens agree, and q, k and v share an input") {
  const std::string dir = test::temp_dir("imatrix-stats");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string path = test::synth_ember(dir, tiny, DType::F32, 3, "tiny.ember");
  ember_model* model = nullptr;
  REQUIRE(ember_model_open(path.c_str(), nullptr, &model) == EMBER_OK);
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = 64;
  so.n_threads = 2;
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(model, &so, &s) == EMBER_OK);
  CHECK(ember_session_activation_count(s) == 0);
  ember_activation_stats info{};
  CHECK(ember_session_activation_stats(s, 0, &info, nullptr, 0) == EMBER_ERR_INVALID_ARGUMENT);

  const std::vector<int32_t> tokens = {1, 20, 33, 47, 5, 80, 91, 12, 3, 60};
  // Every matrix's sums after the tokens run as one step, or one at a time.
  const auto collect = [&](bool one_step, bool output) {
    REQUIRE(ember_session_collect_activations(s, 1, output ? 1 : 0) == EMBER_OK);
    REQUIRE(ember_session_reset(s) == EMBER_OK);
    if (one_step) {
      REQUIRE(ember_session_prefill(s, tokens.data(), tokens.size(), nullptr) == EMBER_OK);
    } else {
      for (int32_t t : tokens) REQUIRE(ember_session_decode(s, t, nullptr) == EMBER_OK);
    }
    std::vector<std::pair<std::string, std::vector<float>>> out;
    for (size_t i = 0; i < ember_session_activation_count(s); ++i) {
      ember_activation_stats st{};
      REQUIRE(ember_session_activation_stats(s, i, &st, nullptr, 0) == EMBER_OK);
      // The logits head sees the step's output rows: the last one here.
      const bool head = std::string(st.weight) == "output.weight";
      CHECK(st.rows == (head ? (one_step ? 1 : static_cast<int64_t>(tokens.size())) : static_cast<int64_t>(tokens.size())));
      std::vector<float> sums(static_cast<size_t>(st.cols));
      CHECK(ember_session_activation_stats(s, i, &st, sums.data(), sums.size() - 1) == EMBER_ERR_BUFFER_TOO_SMALL);
      REQUIRE(ember_session_activation_stats(s, i, &st, sums.data(), sums.size()) == EMBER_OK);
      out.push_back({st.weight, sums});
    }
    return out;
  };
  const auto step = collect(true, false);
  const auto single = collect(false, false);
  REQUIRE(step.size() == single.size());
  REQUIRE(step.size() == 7u * tiny.n_layers);  // q k v o gate up down per layer; no logits head
  std::map<std::string, std::vector<float>> by_name;
  for (size_t i = 0; i < step.size(); ++i) {
    CHECK(step[i].first == single[i].first);
    for (size_t c = 0; c < step[i].second.size(); ++c) {
      CHECK(step[i].second[c] > 0.0f);
      CHECK(step[i].second[c] == doctest::Approx(single[i].second[c]).epsilon(1e-3));
    }
    by_name[step[i].first] = step[i].second;
  }
  CHECK(by_name.at("blk.0.attn_q.weight") == by_name.at("blk.0.attn_k.weight"));
  CHECK(by_name.at("blk.1.attn_v.weight") == by_name.at("blk.1.attn_q.weight"));
  CHECK(by_name.at("blk.0.ffn_gate.weight") == by_name.at("blk.0.ffn_up.weight"));
  CHECK(by_name.at("blk.0.attn_q.weight") != by_name.at("blk.1.attn_q.weight"));
  CHECK(by_name.count("output.weight") == 0);
  // The logits head when asked: the output rows only (one per step here).
  const auto with_output = collect(true, true);
  CHECK(with_output.size() == step.size() + 1);
  // Off: nothing to read.
  REQUIRE(ember_session_collect_activations(s, 0, 0) == EMBER_OK);
  CHECK(ember_session_activation_count(s) == 0);
  ember_session_free(s);
  ember_model_free(model);
  CHECK(ember_session_collect_activations(nullptr, 1, 0) == EMBER_ERR_INVALID_ARGUMENT);
}

TEST_CASE("ember imatrix and quantize --imatrix: the file, weighted matrices, another model's file refused") {
  const std::string dir = test::temp_dir("imatrix-cli");
  SynthShape tiny;
  REQUIRE(synth_shape("tiny", &tiny));
  const std::string f32 = test::synth_ember(dir, tiny, DType::F32, 4, "tiny.ember");
  const std::string text = dir + "/calib.txt";
  {
    std::ofstream t(text);
    for (int i = 0; i < 40; ++i) t << "Once upon a time a small robot counted " << i << " stars over the quiet hill.\n";
  }
  auto r = test::run_cli("imatrix -m " + f32 + " -f " + text + " -o " + dir + "/im.gguf --ctx 32 --threads 2 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("matrices") != std::string::npos);
  auto m = read_imatrix(dir + "/im.gguf");
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  CHECK(m.value().chunk_size == 32);
  CHECK(m.value().chunk_count > 2);
  CHECK(m.value().entries.size() == 7u * tiny.n_layers);
  for (const ImatrixEntry& e : m.value().entries) CHECK(e.rows == m.value().chunk_count * 32.0);

  r = test::run_cli("quantize " + f32 + " -o " + dir + "/q4.ember --type q4_k_m --imatrix " + dir + "/im.gguf 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  // Every matrix quantized to a type with a scale search is weighted (the
  // tiny shape's rows fall back to q5_0 and q8_0, which has none); each is
  // marked on its progress line, and counted.
  int marked = 0;
  for (size_t at = r.out.find("[imatrix]"); at != std::string::npos; at = r.out.find("[imatrix]", at + 1)) ++marked;
  CHECK(marked > 0);
  CHECK(r.out.find("importance matrix: " + std::to_string(marked) + " matrices weighted; 1 without an entry "
                   "(unweighted): token_embd.weight") != std::string::npos);
  r = test::run_cli("info " + dir + "/q4.ember 2>&1");
  CHECK(r.out.find("importance matrix for") != std::string::npos);
  r = test::run_cli("quantize " + f32 + " -o " + dir + "/q4d.ember --dtype q4_0 --imatrix " + dir + "/im.gguf 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("matrices weighted") != std::string::npos);

  // Another shape's statistics: the widths do not match.
  SynthShape other = tiny;
  other.dim *= 2;
  other.hidden_dim *= 2;
  const std::string wide = test::synth_ember(dir, other, DType::F32, 4, "wide.ember");
  r = test::run_cli("quantize " + wide + " -o " + dir + "/x.ember --type q4_k_m --imatrix " + dir + "/im.gguf 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("EMBER_ERR_INVALID_ARGUMENT") != std::string::npos);
  CHECK(r.out.find("columns") != std::string::npos);
  // Not an imatrix file, a missing one, a missing flag.
  r = test::run_cli("quantize " + f32 + " -o " + dir + "/x.ember --type q4_k_m --imatrix " + f32 + " 2>&1");
  CHECK(r.rc != 0);
  r = test::run_cli("quantize " + f32 + " -o " + dir + "/x.ember --type q4_k_m --imatrix " + dir + "/none.gguf 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("none.gguf") != std::string::npos);
  r = test::run_cli("imatrix -m " + f32 + " -f " + text + " 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("-o is required") != std::string::npos);
  r = test::run_cli("imatrix -m " + f32 + " -f " + text + " -o " + dir + "/y.gguf --ctx 100000 2>&1");
  CHECK(r.rc != 0);
  CHECK(r.out.find("--ctx") != std::string::npos);
}

TEST_CASE("imatrix on stories260K: weighting or scaling by its own activations lowers the KL of iq4_nl and q4_0") {
  const std::string gguf = test::test_data("models/stories260K-f32.gguf");
  if (gguf.empty()) return;
  const std::string dir = test::temp_dir("imatrix-stories");
  auto r = test::run_cli("convert " + gguf + " -o " + dir + "/s.ember 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  // Calibration and evaluation text: the model's own stories, sampled with
  // different seeds and openings (disjoint, and its own distribution),
  // generated in this process (one model load: cheap under qemu).
  ember_model* model = nullptr;
  REQUIRE(ember_model_open((dir + "/s.ember").c_str(), nullptr, &model) == EMBER_OK);
  ember_session* session = nullptr;
  REQUIRE(ember_session_create(model, nullptr, &session) == EMBER_OK);
  const auto stories = [&](const char* opening, uint64_t first_seed, int n, const std::string& path) {
    std::string text;
    for (uint64_t seed = first_seed; seed < first_seed + static_cast<uint64_t>(n); ++seed) {
      ember_generate_options g;
      ember_generate_options_default(&g);
      g.max_new_tokens = 300;
      g.temperature = 1.0f;
      g.seed = seed;
      REQUIRE(ember_session_reset(session) == EMBER_OK);
      text += opening;
      REQUIRE(ember_generate(session, opening, &g,
                             [](void* out, int32_t, const char* piece, size_t len) {
                               static_cast<std::string*>(out)->append(piece, len);
                               return 0;
                             },
                             &text) == EMBER_OK);
      text += "\n";
    }
    std::ofstream(path) << text;
  };
  stories("Once upon a time", 1, 20, dir + "/calib.txt");
  stories("One day", 1001, 24, dir + "/eval.txt");
  ember_session_free(session);
  ember_model_free(model);
  r = test::run_cli("imatrix -m " + dir + "/s.ember -f " + dir + "/calib.txt -o " + dir + "/im.gguf --ctx 128 2>&1");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const auto kl = [&](const std::string& type, const std::string& extra) {
    auto q = test::run_cli("quantize " + dir + "/s.ember -o " + dir + "/q.ember --type " + type + " " + extra + " 2>&1");
    REQUIRE_MESSAGE(q.rc == 0, q.out);
    auto p = test::run_cli("perplexity -m " + dir + "/q.ember --kl-base " + dir + "/s.ember -f " + dir +
                           "/eval.txt --ctx 128 --llama-chunks --threads 2 2>/dev/null");
    REQUIRE_MESSAGE(p.rc == 0, p.out);
    const size_t at = p.out.find("kl_divergence_mean ");
    REQUIRE(at != std::string::npos);
    return std::atof(p.out.c_str() + at + 19);
  };
  // iq4_nl gains (0.061 -> 0.059 on x86 with IQ4_NL's present scale
  // candidates; the texts differ a little on other CPUs, whose float
  // rounding samples other tokens); q4_0's change is small (0.078 -> 0.077
  // here, 0.081 -> 0.079 on a larger calibration text: docs/benchmarks.md),
  // and on a few thousand tokens of calibration it can lose, so it is held
  // to not losing much. The evaluation text is 24 stories: on 8 (about 300
  // scored tokens) one file's KL moved 18% with the scale candidates while
  // 22 KB texts moved 2%.
  // Activation-aware scaling (--awq, issue 45 item 3) from the same
  // statistics, alone and with the weighting. On x86: iq4_nl 0.061 -> 0.057
  // alone, 0.053 with both; q4_0 0.078 -> 0.078 alone (held to not losing
  // much), 0.069 with both.
  const std::string im = dir + "/im.gguf";
  for (const std::string type : {"iq4_nl", "q4_0"}) {
    const double plain = kl(type, ""), weighted = kl(type, "--imatrix " + im);
    const double scaled = kl(type, "--awq " + im), both = kl(type, "--awq " + im + " --imatrix " + im);
    MESSAGE("stories260K " << type << ": mean KL " << plain << " without, " << weighted << " with the importance "
            "matrix, " << scaled << " with --awq, " << both << " with both");
    CHECK(weighted < (type == "iq4_nl" ? 0.97 : 1.05) * plain);
    CHECK(scaled < (type == "iq4_nl" ? 0.95 : 1.02) * plain);
    CHECK(both < 0.97 * plain);
  }
}

}  // TEST_SUITE
}  // namespace ember

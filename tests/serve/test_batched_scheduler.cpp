// `ember serve`'s BatchedScheduler without a socket (issue 15): concurrent,
// staggered and chunked greedy requests each give exactly the text
// ember_generate gives the same prompt alone; the prefix cache reuses a
// finished (or running) request's positions and gives the same text;
// eviction is least recently used; a cancelled request frees its sequence.
// The HTTP server on top is driven by tests/serve/load_test.mjs and
// openai_client_test.mjs.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <condition_variable>
#include <memory>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember.h"
#include "cli/cli_run.h"
#include "model/stories_fixture.h"
#include "tools/serve/scheduler.h"
#include "tools/convert/model_writer.h"
#include "tools/convert/synthetic.h"

using namespace ember::serve;

namespace {

struct Model {
  ember_model* m = nullptr;
  explicit Model(const std::string& path) {
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), nullptr, &m) == EMBER_OK, ember_last_error());
  }
  ~Model() { ember_model_free(m); }
};

std::vector<int32_t> tokens_of(ember_model* m, const std::string& text) {
  std::vector<int32_t> ids(text.size() + 2);
  size_t n = 0;
  REQUIRE(ember_tokenize(m, text.data(), text.size(), EMBER_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n) ==
          EMBER_OK);
  ids.resize(n);
  return ids;
}

// What ember_generate gives the prompt alone, greedily, in a fresh session.
struct Alone {
  std::string text;
  int32_t generated = 0;
  int32_t stop_reason = 0;
};

Alone alone(ember_model* m, const std::vector<int32_t>& prompt, int32_t max_new,
            const std::vector<std::string>& stop = {}, int32_t context = 512, int32_t backend = EMBER_BACKEND_CPU) {
  ember_session_options so;
  ember_session_options_default(&so);
  so.context_length = context;
  so.n_threads = 1;
  so.backend = backend;
  so.vulkan_pipeline_cache_dir = "";
  ember_session* s = nullptr;
  REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
  ember_generate_options g;
  ember_generate_options_default(&g);
  g.max_new_tokens = max_new;
  g.prompt_tokens = prompt.data();
  g.n_prompt_tokens = prompt.size();
  std::vector<const char*> stops;
  for (const auto& x : stop) stops.push_back(x.c_str());
  g.stop_strings = stops.data();
  g.n_stop_strings = stops.size();
  Alone a;
  REQUIRE(ember_generate(s, nullptr, &g,
                         [](void* u, int32_t, const char* piece, size_t len) {
                           static_cast<Alone*>(u)->text.append(piece, len);
                           return 0;
                         },
                         &a) == EMBER_OK);
  ember_generate_stats st;
  st.struct_size = sizeof st;
  ember_generate_last_stats(s, &st);
  a.generated = st.generated_tokens;
  a.stop_reason = st.stop_reason;
  ember_session_free(s);
  return a;
}

// A request and what it gave, waited for.
struct Outcome {
  std::mutex mutex;
  std::condition_variable changed;
  std::string text;
  bool done = false;
  GenerationResult result;

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(60), [this] { return done; }));
  }
  // Waits until some text has come (or the request ended).
  void wait_text() {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(60), [this] { return done || !text.empty(); }));
  }
};

std::shared_ptr<GenerationRequest> request(const std::vector<int32_t>& prompt, int32_t max_new,
                                           std::shared_ptr<Outcome> out, const std::vector<std::string>& stop = {}) {
  auto r = std::make_shared<GenerationRequest>();
  r->prompt = prompt;
  ember_generate_options_default(&r->sampling);
  r->sampling.max_new_tokens = max_new;
  r->stop = stop;
  r->on_text = [out](std::string_view t) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->text.append(t);
    out->changed.notify_all();
  };
  r->on_done = [out](const GenerationResult& res) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->result = res;
    out->done = true;
    out->changed.notify_all();
  };
  return r;
}

std::unique_ptr<Scheduler> batched(ember_model* m, int32_t slots, int32_t cache_slots, int32_t max_batch = 512,
                                   int32_t context = 512) {
  BatchedConfig c;
  c.slots = slots;
  c.cache_slots = cache_slots;
  c.max_queue = 64;
  ember_session_options_default(&c.session);
  c.session.context_length = context;
  c.session.max_batch = max_batch;
  c.session.n_threads = 2;
  ember_status st = EMBER_OK;
  std::string error;
  auto s = make_batched_scheduler(m, c, nullptr, &st, &error);
  REQUIRE_MESSAGE(s != nullptr, error);
  return s;
}

// Submits, waits, and checks the text against ember_generate's.
GenerationResult run_checked(Scheduler& s, ember_model* m, const std::vector<int32_t>& prompt, int32_t max_new,
                             const std::vector<std::string>& stop = {}) {
  auto out = std::make_shared<Outcome>();
  REQUIRE(s.submit(request(prompt, max_new, out, stop)) == Scheduler::Submit::kAccepted);
  out->wait();
  const Alone a = alone(m, prompt, max_new, stop);
  CHECK(out->text == a.text);
  CHECK(out->result.completion_tokens == a.generated);
  CHECK(out->result.prompt_tokens == static_cast<int32_t>(prompt.size()));
  return out->result;
}

const char* kPrompts[] = {"Once upon a time", "The cat", "Lily and Ben", "One day", "The sun was", "Tom had a",
                          "In the park", "A little bird"};

const char* kSystem =
    "You are a kind helper who tells short stories to children. The stories are about animals, toys and the "
    "park, and they always end happily with a nap. ";

}  // namespace

TEST_CASE("serve scheduler: 8 concurrent greedy requests each give the text they give alone") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  auto s = batched(model.m, 8, 8);
  std::vector<std::shared_ptr<Outcome>> outs;
  std::vector<std::vector<int32_t>> prompts;
  for (const char* p : kPrompts) {
    prompts.push_back(tokens_of(model.m, p));
    outs.push_back(std::make_shared<Outcome>());
    REQUIRE(s->submit(request(prompts.back(), 40, outs.back())) == Scheduler::Submit::kAccepted);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i]->wait();
    CAPTURE(kPrompts[i]);
    const Alone a = alone(model.m, prompts[i], 40);
    CHECK(!a.text.empty());
    CHECK(outs[i]->text == a.text);
    CHECK(outs[i]->result.completion_tokens == a.generated);
    CHECK(outs[i]->result.finish == (a.stop_reason == EMBER_STOP_MAX_TOKENS ? Finish::kLength : Finish::kStop));
  }
  const SchedulerStats st = s->stats();
  CHECK(st.slots == 8);
  CHECK(st.active == 0);
  CHECK(st.kv_bytes_in_use > 0);  // the finished requests' positions stay cached
  CHECK(st.kv_bytes_in_use <= st.kv_bytes_planned);
}

TEST_CASE("serve scheduler: 4 concurrent greedy streams with prompt lookup give the text they give alone") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  BatchedConfig c;
  c.slots = 4;
  c.cache_slots = 0;
  ember_session_options_default(&c.session);
  c.session.context_length = 256;
  c.session.n_threads = 2;
  c.session.max_draft = 4;
  c.lookup = 1;
  c.draft_max = 4;
  ember_status st = EMBER_OK;
  std::string error;
  auto s = make_batched_scheduler(model.m, c, nullptr, &st, &error);
  REQUIRE_MESSAGE(s != nullptr, error);
  // Prompts that repeat themselves (lookup drafts from them) and plain ones.
  const std::string story = "Lily and Ben went to the park. They played on the swings. ";
  const std::vector<std::string> texts = {story + story + "Lily and Ben", "Once upon a time",
                                          "The cat sat. The cat sat. The cat", "One day"};
  std::vector<std::shared_ptr<Outcome>> outs;
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& t : texts) {
    prompts.push_back(tokens_of(model.m, t));
    outs.push_back(std::make_shared<Outcome>());
    REQUIRE(s->submit(request(prompts.back(), 48, outs.back())) == Scheduler::Submit::kAccepted);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i]->wait();
    CAPTURE(texts[i]);
    const Alone a = alone(model.m, prompts[i], 48);
    CHECK(!a.text.empty());
    CHECK(outs[i]->text == a.text);
    CHECK(outs[i]->result.completion_tokens == a.generated);
  }
}

TEST_CASE("serve scheduler: 4 concurrent greedy streams with a draft model give the text they give alone") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  // The draft: a Q8_0 copy of the model (another file, so its drafts are
  // sometimes rejected), its session made by the scheduler.
  Model draft(ember::test::stories_q8_0_model());
  BatchedConfig c;
  c.slots = 4;
  c.cache_slots = 2;  // prefixes copied between sequences of the target: the draft catches up by itself
  ember_session_options_default(&c.session);
  c.session.context_length = 256;
  c.session.n_threads = 2;
  c.session.max_draft = 4;
  c.draft_max = 4;
  c.draft_model = draft.m;
  ember_status st = EMBER_OK;
  std::string error;
  auto s = make_batched_scheduler(model.m, c, nullptr, &st, &error);
  REQUIRE_MESSAGE(s != nullptr, error);
  const std::vector<std::string> texts = {"Once upon a time", "Lily and Ben went to the park.", "One day", "The cat"};
  for (int round = 0; round < 2; ++round) {  // the second round reuses cached prefixes
    CAPTURE(round);
    std::vector<std::shared_ptr<Outcome>> outs;
    std::vector<std::vector<int32_t>> prompts;
    for (const std::string& t : texts) {
      prompts.push_back(tokens_of(model.m, t + (round ? " and then" : "")));
      outs.push_back(std::make_shared<Outcome>());
      REQUIRE(s->submit(request(prompts.back(), 40, outs.back())) == Scheduler::Submit::kAccepted);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      outs[i]->wait();
      CAPTURE(texts[i]);
      const Alone a = alone(model.m, prompts[i], 40);
      CHECK(!a.text.empty());
      CHECK(outs[i]->text == a.text);
      CHECK(outs[i]->result.completion_tokens == a.generated);
    }
  }
}

TEST_CASE("serve scheduler: a draft model of another vocabulary is refused when the scheduler starts") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  auto m = ember::make_synthetic(shape, ember::DType::F32, 3, "");
  REQUIRE(m.is_ok());
  const std::string synth = ember::test::temp_dir("scheduler-draft") + "/builtin-vocab.ember";
  REQUIRE(ember::write_model(m.value()->spec, synth).is_ok());
  Model foreign(synth);
  BatchedConfig c;
  c.slots = 2;
  ember_session_options_default(&c.session);
  c.session.context_length = 128;
  c.session.max_draft = 4;
  c.draft_max = 4;
  c.draft_model = foreign.m;
  ember_status st = EMBER_OK;
  std::string error;
  auto s = make_batched_scheduler(model.m, c, nullptr, &st, &error);
  CHECK(s == nullptr);
  CHECK(st == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(error.find("draft model") != std::string::npos);
  CHECK(error.find("vocabulary") != std::string::npos);
}

TEST_CASE("serve scheduler: staggered arrivals, a long prompt prefilled in chunks among the others' decoding") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  // Steps of 6 rows: with 4 slots decoding, a prompt gets 2 rows a step.
  auto s = batched(model.m, 4, 0, 6);
  std::string long_text;
  for (int i = 0; i < 6; ++i) long_text += kSystem;
  const std::vector<int32_t> long_prompt = tokens_of(model.m, long_text + "Once upon a time");
  REQUIRE(long_prompt.size() > 100);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) prompts.push_back(tokens_of(model.m, kPrompts[i]));
  prompts.push_back(long_prompt);
  for (int i = 3; i < 6; ++i) prompts.push_back(tokens_of(model.m, kPrompts[i]));
  std::vector<std::shared_ptr<Outcome>> outs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    outs.push_back(std::make_shared<Outcome>());
    REQUIRE(s->submit(request(prompts[i], 48, outs.back(), {"\n\n"})) == Scheduler::Submit::kAccepted);
    // The next arrives once this one is under way (some wait in the queue).
    if (i % 2 == 0) outs.back()->wait_text();
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i]->wait();
    CAPTURE(i);
    const Alone a = alone(model.m, prompts[i], 48, {"\n\n"});
    CHECK(outs[i]->text == a.text);
    CHECK(outs[i]->result.completion_tokens == a.generated);
  }
}

TEST_CASE("serve scheduler: the prefix cache reuses a shared system prompt, with the same text") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const std::vector<int32_t> sys = tokens_of(model.m, kSystem);
  const std::vector<int32_t> a = tokens_of(model.m, std::string(kSystem) + "Once upon a time");
  const std::vector<int32_t> b = tokens_of(model.m, std::string(kSystem) + "The little dog");
  REQUIRE(sys.size() > 30);
  auto s = batched(model.m, 2, 2);
  GenerationResult r = run_checked(*s, model.m, a, 32);
  CHECK(r.cached_tokens == 0);
  // B shares the system prompt with A's cache entry.
  r = run_checked(*s, model.m, b, 32);
  CHECK(r.cached_tokens >= static_cast<int32_t>(sys.size()) - 2);
  CHECK(r.cached_tokens < static_cast<int32_t>(b.size()));
  // The same prompt again: all of it but the last token.
  r = run_checked(*s, model.m, a, 32);
  CHECK(r.cached_tokens == static_cast<int32_t>(a.size()) - 1);
  // A second turn: the first turn's prompt, its reply and more. The reply's
  // positions are cached too.
  auto out = std::make_shared<Outcome>();
  REQUIRE(s->submit(request(b, 20, out)) == Scheduler::Submit::kAccepted);
  out->wait();
  std::vector<int32_t> turn2 = tokens_of(model.m, std::string(kSystem) + "The little dog" + out->text + " Then");
  r = run_checked(*s, model.m, turn2, 16);
  CHECK(r.cached_tokens > static_cast<int32_t>(b.size()));
  SchedulerStats st = s->stats();
  CHECK(st.prefix_cache_hits == 4);
  CHECK(st.prefix_cache_tokens > 3 * sys.size());
  CHECK(st.cache_slots == 2);

  // While A runs (its prompt done), C with the same system prompt copies
  // A's positions from its running sequence: A's first text waits until C
  // has been submitted, so C is admitted while A still runs.
  auto s2 = batched(model.m, 2, 1);
  auto first = std::make_shared<Outcome>();
  auto gate = std::make_shared<std::promise<void>>();
  auto entered = std::make_shared<std::promise<void>>();
  std::shared_future<void> opened = gate->get_future().share();
  std::future<void> in_text = entered->get_future();
  auto ra = request(a, 200, first);
  auto on_text = ra->on_text;
  ra->on_text = [on_text, opened, entered, once = std::make_shared<bool>(true)](std::string_view t) {
    if (*once) {
      *once = false;
      entered->set_value();
      opened.wait_for(std::chrono::seconds(30));
    }
    on_text(t);
  };
  REQUIRE(s2->submit(ra) == Scheduler::Submit::kAccepted);
  REQUIRE(in_text.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  const std::vector<int32_t> c = tokens_of(model.m, std::string(kSystem) + "A big red ball");
  auto second = std::make_shared<Outcome>();
  REQUIRE(s2->submit(request(c, 24, second)) == Scheduler::Submit::kAccepted);
  gate->set_value();
  second->wait();
  CHECK(second->text == alone(model.m, c, 24).text);
  CHECK(second->result.cached_tokens >= static_cast<int32_t>(sys.size()) - 2);
  first->wait();
  CHECK(first->text == alone(model.m, a, 200).text);
  CHECK(s2->stats().prefix_cache_hits == 1);
}

TEST_CASE("serve scheduler: the least recently used cache entry is evicted") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  std::string x_text = kSystem, y_text, z_text;
  for (int i = 0; i < 2; ++i) y_text += "The dog ran to the park and played with a red ball all day long. ";
  for (int i = 0; i < 2; ++i) z_text += "Mom made a big cake for the party and everyone was very happy. ";
  const std::vector<int32_t> x = tokens_of(model.m, x_text + "Once");
  const std::vector<int32_t> y = tokens_of(model.m, y_text + "Once");
  const std::vector<int32_t> z = tokens_of(model.m, z_text + "Once");
  // One slot and one cache sequence: two entries at most.
  auto s = batched(model.m, 1, 1);
  CHECK(run_checked(*s, model.m, x, 8).cached_tokens == 0);
  CHECK(run_checked(*s, model.m, y, 8).cached_tokens == 0);
  // x again: still cached (y took the empty sequence).
  CHECK(run_checked(*s, model.m, x, 8).cached_tokens == static_cast<int32_t>(x.size()) - 1);
  // z evicts the least recently used entry: y.
  CHECK(run_checked(*s, model.m, z, 8).cached_tokens <= 1);
  CHECK(s->stats().prefix_cache_evictions == 1);
  CHECK(run_checked(*s, model.m, x, 8).cached_tokens == static_cast<int32_t>(x.size()) - 1);
  CHECK(run_checked(*s, model.m, y, 8).cached_tokens <= 1);  // gone, recomputed (evicts z)
  CHECK(run_checked(*s, model.m, x, 8).cached_tokens == static_cast<int32_t>(x.size()) - 1);
  CHECK(s->stats().prefix_cache_evictions == 2);
}

TEST_CASE("serve scheduler: a cancelled or late request frees its sequence") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const std::vector<int32_t> p = tokens_of(model.m, "Once upon a time");
  auto s = batched(model.m, 1, 0);
  auto out = std::make_shared<Outcome>();
  auto req = request(p, 400, out);
  REQUIRE(s->submit(req) == Scheduler::Submit::kAccepted);
  out->wait_text();
  req->cancelled.store(true);
  out->wait();
  CHECK(out->result.finish == Finish::kCancelled);
  CHECK(out->result.completion_tokens < 400);
  // The one slot and its sequence are free again: a later request runs.
  run_checked(*s, model.m, tokens_of(model.m, "The cat"), 24);
  // A deadline already past: finished as a timeout, the slot freed.
  auto late = std::make_shared<Outcome>();
  auto lr = request(p, 400, late);
  lr->deadline = std::chrono::steady_clock::now();
  REQUIRE(s->submit(lr) == Scheduler::Submit::kAccepted);
  late->wait();
  CHECK(late->result.finish == Finish::kTimeout);
  run_checked(*s, model.m, p, 24);
  CHECK(s->stats().active == 0);
  // A bad token id fails that request alone; the scheduler goes on.
  auto bad = std::make_shared<Outcome>();
  REQUIRE(s->submit(request({1, 99999}, 4, bad)) == Scheduler::Submit::kAccepted);
  bad->wait();
  CHECK(bad->result.finish == Finish::kError);
  CHECK(!bad->result.error.empty());
  run_checked(*s, model.m, p, 8);
}

TEST_CASE("serve scheduler: a context filled by generation finishes with length") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  Model model(path);
  const std::vector<int32_t> p = tokens_of(model.m, "Once upon a time");
  auto s = batched(model.m, 2, 0, 512, 24);
  auto out = std::make_shared<Outcome>();
  REQUIRE(s->submit(request(p, 100, out)) == Scheduler::Submit::kAccepted);
  out->wait();
  CHECK(out->result.finish == Finish::kLength);
  // Every position of the context was used: the prompt and the generated
  // tokens but the last one sampled.
  CHECK(out->result.completion_tokens == 24 - static_cast<int32_t>(p.size()) + 1);
}

#if EMBER_VULKAN
TEST_CASE("serve scheduler on vulkan: batched slots give each request's text alone, stop strings included") {
  // The round-robin fallback is gone: the Vulkan backend runs a session's
  // sequences batched too (on lavapipe here).
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  const char* lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  if (!std::getenv("VK_ICD_FILENAMES") && std::filesystem::exists(lvp)) setenv("VK_ICD_FILENAMES", lvp, 1);
  setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
  Model model(path);
  BatchedConfig c;
  c.slots = 3;
  c.cache_slots = 1;
  ember_session_options_default(&c.session);
  c.session.context_length = 256;
  c.session.backend = EMBER_BACKEND_VULKAN;
  c.session.vulkan_pipeline_cache_dir = "";
  ember_status st = EMBER_OK;
  std::string error;
  auto s = make_batched_scheduler(model.m, c, nullptr, &st, &error);
  if (!s && !ember::test::test_data_required()) {
    MESSAGE("skipped: no Vulkan device: " << error);
    return;
  }
  REQUIRE_MESSAGE(s != nullptr, error);
  std::vector<std::shared_ptr<Outcome>> outs;
  std::vector<std::vector<int32_t>> prompts;
  const std::vector<std::string> stop = {"."};
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(tokens_of(model.m, kPrompts[i]));
    outs.push_back(std::make_shared<Outcome>());
    REQUIRE(s->submit(request(prompts.back(), 40, outs.back(), stop)) == Scheduler::Submit::kAccepted);
  }
  int stopped = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i]->wait();
    const Alone a = alone(model.m, prompts[i], 40, stop, 256, EMBER_BACKEND_VULKAN);
    CHECK(outs[i]->text == a.text);
    CHECK(outs[i]->text.find('.') == std::string::npos);
    stopped += a.stop_reason == EMBER_STOP_STRING;
  }
  CHECK(stopped > 0);  // the case is exercised
}
#endif

TEST_CASE("serve: the plan of every sequence must fit --max-bytes, and a refusal says what fits") {
  const std::string path = ember::test::stories_model("llama2c");
  if (path.empty()) return;
  // stories260K: one sequence at ctx 512 holds 0.62 MiB of KV, so eight
  // (4 slots + 4 cache) do not fit in ~2.9 MiB.
  auto r = ember::test::run_ember("serve -m " + path + " --port 0 --parallel 4 --ctx 512 --max-bytes 3000000");
  CHECK(r.code != 0);
  CHECK(r.err.find("plan: one session of 8 sequence(s) (4 slot(s) + 4 cache) x ctx 512") != std::string::npos);
  CHECK(r.err.find("EMBER_ERR_NO_MEMORY: 8 sequence(s) (4 slot(s) + 4 cache) at ctx 512 need") != std::string::npos);
  CHECK(r.err.find("sequence(s) fit at this ctx") != std::string::npos);
  CHECK(r.err.find("or all of them at --ctx ") != std::string::npos);
  r = ember::test::run_ember("serve -m " + path + " --port 0 --parallel 200 --cache-slots 100");
  CHECK(r.code != 0);
  CHECK(r.err.find("at most 256") != std::string::npos);
}

TEST_CASE("serve scheduler: a sliding-window ring that cannot keep a prefix runs the prompt instead") {
  // gemma2 tiny: window 8 on layer 0; max_batch 4 and context 64 make its
  // cache a ring of 12 rows, which can keep a prefix only when the window
  // after it stays within the ring.
  ember::SynthShape shape;
  REQUIRE(ember::synth_shape("tiny", &shape));
  shape.arch = "gemma2";
  auto made = ember::make_synthetic(shape, ember::DType::F32, 5, "");
  REQUIRE(made.is_ok());
  const std::string path = ember::test::temp_dir("serve-ring") + "/gemma2.ember";
  REQUIRE(ember::write_model(made.value()->spec, path).is_ok());
  Model model(path);
  std::vector<int32_t> a(30), b;
  for (int32_t i = 0; i < 30; ++i) a[i] = 40 + (i * 7) % 50;
  a[0] = 1;
  b.assign(a.begin(), a.begin() + 20);
  for (int32_t i = 0; i < 6; ++i) b.push_back(90 + i);
  auto s = batched(model.m, 1, 1, 4, 64);
  GenerationResult r = run_checked(*s, model.m, a, 4);
  CHECK(r.cached_tokens == 0);
  // A again: its last 5 positions go, the window stays in the ring.
  r = run_checked(*s, model.m, a, 4);
  CHECK(r.cached_tokens == 29);
  // B shares 20 tokens, but keeping them would need positions the ring
  // dropped: the sequence starts over, and the text is still B's own.
  r = run_checked(*s, model.m, b, 4);
  CHECK(r.cached_tokens == 0);
}

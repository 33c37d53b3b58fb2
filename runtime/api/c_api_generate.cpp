// The C API of generation: the generator (engine/generator.h) for hosts,
// ember_generate as its one-sequence client, the prompt rule, and the bare
// sampler for hosts that run their own loop.
#include <cmath>
#include <string>
#include <vector>

#include "api/c_api_internal.h"

struct ember_generator {
  ember_session* session = nullptr;
  std::unique_ptr<ember::Generator> generator;
};

namespace ember {
namespace {

SamplerParams sampler_params(const ember_generate_options& o) {
  SamplerParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.min_p = o.min_p;
  sp.repeat_penalty = o.repeat_penalty;
  sp.repeat_last_n = o.repeat_last_n;
  sp.presence_penalty = o.presence_penalty;
  sp.frequency_penalty = o.frequency_penalty;
  sp.seed = o.seed;
  return sp;
}

// ember_generate_options (already read over the defaults) as a prompt and a
// sequence's rules; the caller's arrays are checked and copied. On failure
// the last error is set.
bool sequence_from_c(const char* prompt, const ember_generate_options& o, PromptSpec* spec, SequenceParams* params) {
  if (o.prompt_tokens && prompt) {
    fail(EMBER_ERR_INVALID_ARGUMENT, "both prompt and prompt_tokens are set: pass one (prompt NULL for ids)");
    return false;
  }
  if (!o.prompt_tokens && o.n_prompt_tokens) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "prompt_tokens is NULL but n_prompt_tokens = %zu",
                       o.n_prompt_tokens));
    return false;
  }
  if (o.prompt_tokens && !o.n_prompt_tokens) {
    fail(EMBER_ERR_INVALID_ARGUMENT, "prompt_tokens is set but n_prompt_tokens is 0: nothing to run");
    return false;
  }
  if (!prompt && !o.prompt_tokens) {
    fail(EMBER_ERR_INVALID_ARGUMENT, "prompt is NULL (and no prompt_tokens)");
    return false;
  }
  if (!o.stop_strings && o.n_stop_strings) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop_strings is NULL but n_stop_strings = %zu", o.n_stop_strings));
    return false;
  }
  if (o.n_stop_strings > EMBER_MAX_STOP_STRINGS) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_stop_strings = %zu: at most %d", o.n_stop_strings,
                       EMBER_MAX_STOP_STRINGS));
    return false;
  }
  if (!o.logit_bias && o.n_logit_bias) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "logit_bias is NULL but n_logit_bias = %zu", o.n_logit_bias));
    return false;
  }
  constexpr size_t kMaxLogitBias = 1 << 16;
  if (o.n_logit_bias > kMaxLogitBias) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_logit_bias = %zu: at most %zu", o.n_logit_bias, kMaxLogitBias));
    return false;
  }
  if (o.add_bos < -1 || o.add_bos > 1) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "add_bos = %d: must be 1, 0 or -1 (as the model says)", o.add_bos));
    return false;
  }
  params->stop_strings.clear();
  for (size_t i = 0; i < o.n_stop_strings; ++i) {
    const char* stop = o.stop_strings[i];
    if (!stop) {
      done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop_strings[%zu] is NULL", i));
      return false;
    }
    const size_t len = strnlen(stop, EMBER_MAX_STOP_STRING_BYTES + 1);
    if (len == 0 || len > EMBER_MAX_STOP_STRING_BYTES) {
      done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "stop_strings[%zu] is %s: must be 1..%d bytes", i,
                         len ? "too long" : "empty", EMBER_MAX_STOP_STRING_BYTES));
      return false;
    }
    params->stop_strings.emplace_back(stop, len);
  }
  params->sampling = sampler_params(o);
  params->sampling.logit_bias.clear();
  for (size_t i = 0; i < o.n_logit_bias; ++i) {
    params->sampling.logit_bias.emplace_back(o.logit_bias[i].token, o.logit_bias[i].bias);
  }
  params->max_new_tokens = o.max_new_tokens;
  params->context_shift = o.context_shift != 0;
  params->logprobs = o.logprobs != 0;
  params->top_logprobs = o.top_logprobs;
  params->prompt_logits = o.prompt_logits;
  params->grammar = o.grammar ? o.grammar->grammar : nullptr;
  if (o.lookup != 0 && o.lookup != 1) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "lookup = %d: must be 0 or 1", o.lookup));
    return false;
  }
  if (o.lookup && o.draft_session) {
    done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "lookup and draft_session both ask for drafts: pass one"));
    return false;
  }
  params->speculative.lookup = o.lookup != 0;
  params->speculative.draft = o.draft_session ? o.draft_session->session.get() : nullptr;
  params->speculative.draft_max = o.draft_max;
  params->speculative.ngram = o.lookup_ngram;
  if (prompt) spec->text = prompt;
  spec->tokens = o.prompt_tokens;
  spec->n_tokens = o.n_prompt_tokens;
  spec->parse_special = o.parse_special != 0;
  spec->add_bos = o.add_bos;
  spec->reuse_prefix = o.reuse_prefix != 0;
  return true;
}

// EMBER_OK when seq names one of the session's sequences; else the error,
// naming the range.
ember_status seq_in_range(const Session& session, int32_t seq) {
  if (seq >= 0 && seq < session.n_seqs()) return EMBER_OK;
  return done(Status::error(EMBER_ERR_INVALID_ARGUMENT, "seq = %d: the session holds sequences 0..%d", seq,
                            session.n_seqs() - 1));
}

void stats_to_c(const SequenceStats& g, int32_t position, ember_generate_stats* stats) {
  ember_generate_stats full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = stats->struct_size;
  full.prompt_tokens = g.prompt_tokens;
  full.generated_tokens = g.generated_tokens;
  full.prefill_ms = g.prefill_ms;
  full.first_token_ms = g.first_token_ms;
  full.decode_ms = g.decode_ms;
  full.stop_reason = static_cast<int32_t>(g.stop);
  full.position = position;
  full.sampled_tokens = g.sampled_tokens;
  full.last_token = g.last_token;
  full.reused_tokens = g.reused_tokens;
  full.decode_steps = g.decode_steps;
  full.drafted_tokens = g.drafted_tokens;
  full.accepted_tokens = g.accepted_tokens;
  std::memcpy(stats, &full, stats->struct_size);
}

}  // namespace
}  // namespace ember

using ember::done;
using ember::fail;

extern "C" {

void ember_generate_options_default(ember_generate_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_new_tokens = 128;
  o->temperature = 0.0f;
  o->top_k = 0;
  o->top_p = 1.0f;
  o->min_p = 0.0f;
  o->repeat_penalty = 1.0f;
  o->repeat_last_n = 64;
  o->seed = 0;
  o->add_bos = -1;
  o->lookup_ngram = 3;
}

ember_status ember_generate(ember_session* session, const char* prompt, const ember_generate_options* options,
                            ember_token_callback callback, void* user_data) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  session->last_stats = ember::SequenceStats();
  ember_generate_options o;
  ember_generate_options_default(&o);
  if (!ember::read_options(options, &o, "ember_generate_options")) return EMBER_ERR_INVALID_ARGUMENT;
  ember::PromptSpec spec;
  ember::SequenceParams params;
  if (!ember::sequence_from_c(prompt, o, &spec, &params)) return EMBER_ERR_INVALID_ARGUMENT;
  params.whole_characters = false;  // the callback gets each token's own piece
  if (!session->generator) {
    auto g = ember::Generator::create(*session->session, ember::GeneratorOptions());
    if (!g.is_ok()) return done(g.status());
    session->generator = std::move(g).value();
  }
  ember::Generator& gen = *session->generator;
  ember::Status s = gen.start(0, spec, params);
  if (!s.is_ok()) return done(s);
  // Token events go to the callback; the last event ends the loop.
  struct Relay {
    ember_token_callback callback;
    void* user_data;
    int32_t last_released = -1;
    ember::Status error;
    static bool on_event(void* self, const ember::GenEvent& e) {
      Relay* r = static_cast<Relay*>(self);
      if (e.finish == ember::StopReason::None) {
        r->last_released = e.token;
        return r->callback && r->callback(r->user_data, e.token, e.text.data(), e.text.size()) != 0;
      }
      if (e.error) r->error = *e.error;
      if (!e.text.empty() && r->callback) r->callback(r->user_data, r->last_released, e.text.data(), e.text.size());
      return false;
    }
  } relay{callback, user_data, -1, ember::Status::ok()};
  while (gen.active(0)) {
    s = gen.step(&Relay::on_event, &relay);
    if (!s.is_ok()) {
      gen.cancel(0);
      (void)gen.step(nullptr, nullptr);  // ends it; the first failure is the one reported
      return done(s);
    }
  }
  if (!relay.error.is_ok()) return done(relay.error);
  session->last_stats = gen.stats(0);
  return EMBER_OK;
}

ember_status ember_generate_last_stats(const ember_session* session, ember_generate_stats* stats) {
  EMBER_API_ENTRY();
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  if (!stats) return fail(EMBER_ERR_INVALID_ARGUMENT, "stats is NULL");
  if (!ember::struct_ok(stats->struct_size, sizeof *stats)) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "ember_generate_stats.struct_size is wrong: set it to sizeof");
  }
  ember::stats_to_c(session->last_stats, session->session->position(), stats);
  return EMBER_OK;
}

ember_status ember_session_check_draft(const ember_session* target, const ember_session* draft) {
  EMBER_API_ENTRY();
  if (!target) return fail(EMBER_ERR_INVALID_ARGUMENT, "target is NULL");
  if (!draft) return fail(EMBER_ERR_INVALID_ARGUMENT, "draft is NULL");
  return done(ember::check_draft(*target->session, *draft->session, target->session->n_seqs() - 1));
}

ember_status ember_tokenize_prompt(const ember_model* model, const char* text, size_t text_len, int parse_special,
                                   int add_bos, int32_t* tokens, size_t capacity, size_t* out_count) {
  EMBER_API_ENTRY();
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  if (!out_count) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  if (!text && text_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "text is NULL but text_len > 0");
  if (!tokens && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL but capacity > 0");
  if (add_bos < -1 || add_bos > 1) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "add_bos = %d: must be 1, 0 or -1", add_bos));
  }
  std::vector<int32_t> ids;
  const ember::Status s = ember::tokenize_prompt(model->model->tokenizer(), std::string_view(text ? text : "", text_len),
                                                 parse_special != 0, add_bos, &ids);
  if (!s.is_ok()) return done(s);
  return ember::tokens_out(ids, tokens, capacity, out_count, "the prompt");
}

void ember_generator_options_default(ember_generator_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_step_rows = 0;
}

ember_status ember_generator_create(ember_session* session, const ember_generator_options* options,
                                    ember_generator** out_generator) {
  EMBER_API_ENTRY();
  if (!out_generator) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_generator is NULL");
  *out_generator = nullptr;
  if (!session) return fail(EMBER_ERR_INVALID_ARGUMENT, "session is NULL");
  ember_generator_options o;
  ember_generator_options_default(&o);
  if (!ember::read_options(options, &o, "ember_generator_options")) return EMBER_ERR_INVALID_ARGUMENT;
  ember::GeneratorOptions go;
  go.max_step_rows = o.max_step_rows;
  auto g = ember::Generator::create(*session->session, go);
  if (!g.is_ok()) return done(g.status());
  auto* handle = new (std::nothrow) ember_generator();
  if (!handle) return fail(EMBER_ERR_NO_MEMORY, "cannot allocate the generator handle");
  handle->session = session;
  handle->generator = std::move(g).value();
  *out_generator = handle;
  return EMBER_OK;
}

void ember_generator_free(ember_generator* generator) { delete generator; }

ember_status ember_generator_start(ember_generator* generator, int32_t seq, const char* prompt,
                                   const ember_generate_options* options) {
  EMBER_API_ENTRY();
  if (!generator) return fail(EMBER_ERR_INVALID_ARGUMENT, "generator is NULL");
  ember_generate_options o;
  ember_generate_options_default(&o);
  if (!ember::read_options(options, &o, "ember_generate_options")) return EMBER_ERR_INVALID_ARGUMENT;
  ember::PromptSpec spec;
  ember::SequenceParams params;
  if (!ember::sequence_from_c(prompt, o, &spec, &params)) return EMBER_ERR_INVALID_ARGUMENT;
  return done(generator->generator->start(seq, spec, params));
}

ember_status ember_generator_step(ember_generator* generator, ember_generator_callback callback, void* user_data) {
  EMBER_API_ENTRY();
  if (!generator) return fail(EMBER_ERR_INVALID_ARGUMENT, "generator is NULL");
  struct Relay {
    ember_generator_callback callback;
    void* user_data;
    std::vector<ember_token_logprob> top;
    std::string message;
    static bool on_event(void* self, const ember::GenEvent& e) {
      Relay* r = static_cast<Relay*>(self);
      ember_generator_event c;
      c.seq = e.seq;
      c.token = e.token;
      c.text = e.text.data();
      c.text_len = e.text.size();
      c.logprob = e.logprob;
      r->top.clear();
      for (int32_t i = 0; i < e.n_top; ++i) r->top.push_back({e.top[i].token, e.top[i].logprob});
      c.top_logprobs = r->top.empty() ? nullptr : r->top.data();
      c.n_top_logprobs = e.n_top;
      c.finish = static_cast<int32_t>(e.finish);
      c.status = e.error ? e.error->code() : EMBER_OK;
      r->message = e.error ? e.error->message() : std::string();
      c.message = r->message.c_str();
      return r->callback(r->user_data, &c) != 0;
    }
  } relay{callback, user_data, {}, {}};
  if (callback) relay.top.reserve(EMBER_MAX_TOP_LOGPROBS);
  return done(generator->generator->step(callback ? &Relay::on_event : nullptr, &relay));
}

ember_status ember_generator_cancel(ember_generator* generator, int32_t seq) {
  EMBER_API_ENTRY();
  if (!generator) return fail(EMBER_ERR_INVALID_ARGUMENT, "generator is NULL");
  if (const ember_status st = ember::seq_in_range(*generator->session->session, seq)) return st;
  generator->generator->cancel(seq);
  return EMBER_OK;
}

int32_t ember_generator_active(const ember_generator* generator, int32_t seq) {
  if (!generator) return 0;
  if (seq == -1) return generator->generator->n_active();
  return generator->generator->active(seq) ? 1 : 0;
}

ember_status ember_generator_seq_stats(const ember_generator* generator, int32_t seq, ember_generate_stats* stats) {
  EMBER_API_ENTRY();
  if (!generator) return fail(EMBER_ERR_INVALID_ARGUMENT, "generator is NULL");
  if (!stats) return fail(EMBER_ERR_INVALID_ARGUMENT, "stats is NULL");
  if (!ember::struct_ok(stats->struct_size, sizeof *stats)) {
    return fail(EMBER_ERR_INVALID_ARGUMENT, "ember_generate_stats.struct_size is wrong: set it to sizeof");
  }
  const ember::Session& session = *generator->session->session;
  if (const ember_status st = ember::seq_in_range(session, seq)) return st;
  ember::stats_to_c(generator->generator->stats(seq), session.seq_position(seq), stats);
  return EMBER_OK;
}

ember_status ember_generator_seq_prompt(const ember_generator* generator, int32_t seq, int32_t* tokens,
                                        size_t capacity, size_t* out_count) {
  EMBER_API_ENTRY();
  if (!generator) return fail(EMBER_ERR_INVALID_ARGUMENT, "generator is NULL");
  if (!out_count) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  if (!tokens && capacity) return fail(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL but capacity > 0");
  const ember::Session& session = *generator->session->session;
  if (const ember_status st = ember::seq_in_range(session, seq)) return st;
  const std::vector<int32_t>& ids = generator->generator->prompt(seq);
  return ember::tokens_out(ids, tokens, capacity, out_count, "the prompt");
}

ember_status ember_sampler_create(const ember_model* model, const ember_generate_options* options,
                                  ember_sampler** out_sampler) {
  EMBER_API_ENTRY();
  if (!out_sampler) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_sampler is NULL");
  *out_sampler = nullptr;
  if (!model) return fail(EMBER_ERR_INVALID_ARGUMENT, "model is NULL");
  ember_generate_options o;
  ember_generate_options_default(&o);
  if (!ember::read_options(options, &o, "ember_generate_options")) return EMBER_ERR_INVALID_ARGUMENT;
  if (!o.logit_bias && o.n_logit_bias) {
    return done(ember::Status::error(EMBER_ERR_INVALID_ARGUMENT, "logit_bias is NULL but n_logit_bias = %zu",
                                     o.n_logit_bias));
  }
  ember::SamplerParams sp = ember::sampler_params(o);
  for (size_t i = 0; i < o.n_logit_bias && i <= (1u << 16); ++i) {
    sp.logit_bias.emplace_back(o.logit_bias[i].token, o.logit_bias[i].bias);
  }
  auto sampler = ember::Sampler::create(sp, static_cast<int32_t>(model->model->hparams().vocab_size));
  if (!sampler.is_ok()) return done(sampler.status());
  *out_sampler = new (std::nothrow) ember_sampler{std::move(sampler).value()};
  if (!*out_sampler) return fail(EMBER_ERR_NO_MEMORY, "cannot allocate the sampler handle");
  return EMBER_OK;
}

void ember_sampler_free(ember_sampler* sampler) { delete sampler; }

ember_status ember_sampler_sample(ember_sampler* sampler, float* logits, const int32_t* history,
                                  size_t history_len, int32_t* out_token) {
  EMBER_API_ENTRY();
  if (!sampler) return fail(EMBER_ERR_INVALID_ARGUMENT, "sampler is NULL");
  if (!logits) return fail(EMBER_ERR_INVALID_ARGUMENT, "logits is NULL");
  if (!out_token) return fail(EMBER_ERR_INVALID_ARGUMENT, "out_token is NULL");
  if (!history && history_len) return fail(EMBER_ERR_INVALID_ARGUMENT, "history is NULL but history_len > 0");
  *out_token = sampler->sampler.sample(logits, history, history_len);
  return EMBER_OK;
}

}  // extern "C"

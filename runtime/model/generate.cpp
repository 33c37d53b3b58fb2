#include "model/generate.h"

#include <chrono>
#include <cstring>

namespace ember {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Status generate(Session& session, Sampler& sampler, const int32_t* prompt, size_t count,
                const GenerateParams& params, TokenSink sink, void* user, std::string* piece, GenerateStats* stats) {
  *stats = GenerateStats();
  if (!prompt || count == 0) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "the prompt has no tokens: nothing to run");
  if (params.max_new_tokens < 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_new_tokens = %d: must be >= 0", params.max_new_tokens);
  }
  const Model& model = session.model();
  const Tokenizer& tokenizer = model.tokenizer();
  const Vocab& vocab = tokenizer.vocab();
  const double t0 = now_ms();
  stats->prompt_tokens = static_cast<int32_t>(count);
  EMBER_TRY(session.prefill(prompt, count, nullptr)
                .with_context("prompt of " + std::to_string(count) + " tokens"));
  const double t_prefilled = now_ms();
  stats->prefill_ms = t_prefilled - t0;
  if (params.prompt_logits) {
    std::memcpy(params.prompt_logits, session.logits(), static_cast<size_t>(model.hparams().vocab_size) * sizeof(float));
  }

  stats->stop = StopReason::MaxTokens;
  // Every released token goes through here: counted, then to the sink.
  struct Counted {
    TokenSink sink;
    void* user;
    GenerateStats* stats;
    static bool call(void* self, int32_t token, const std::string& piece) {
      Counted* c = static_cast<Counted*>(self);
      ++c->stats->generated_tokens;
      return c->sink && c->sink(c->user, token, piece);
    }
  } counted{sink, user, stats};
  StopStrings no_stops;
  StopStrings& stops = params.stop_strings ? *params.stop_strings : no_stops;
  stops.clear();
  bool ended = false;  // the sink or a stop string ended it: nothing held is released
  double t_first = t_prefilled;
  int32_t prev = prompt[count - 1];
  for (int32_t i = 0; i < params.max_new_tokens; ++i) {
    const int32_t next = sampler.sample(session.logits(), session.history(), static_cast<size_t>(session.position()));
    if (i == 0) t_first = now_ms();
    ++stats->sampled_tokens;
    stats->last_token = next;
    // End of generation (eos, eot, <|im_end|>, ...: Tokenizer::is_eog);
    // llama2.c-style vocabularies also end a story at BOS.
    if (tokenizer.is_eog(next) || next == vocab.bos_id) {
      stats->stop = StopReason::End;
      break;
    }
    piece->clear();
    EMBER_TRY(tokenizer.decode_token(prev, next, piece));
    const StopStrings::Step step = stops.push(next, *piece, &Counted::call, &counted);
    if (step != StopStrings::Step::Go) {
      stats->stop = step == StopStrings::Step::Matched ? StopReason::StopString : StopReason::Callback;
      ended = true;
      break;
    }
    prev = next;
    if (i + 1 == params.max_new_tokens) break;  // the last token needs no forward pass
    if (session.position() >= session.context()) {
      if (!params.context_shift || session.context() < 4) {
        stats->stop = StopReason::ContextFull;
        break;
      }
      // Keep the first position (BOS) and the newer half; drop the rest.
      const int32_t keep_from = 1 + (session.position() - 1) / 2;
      EMBER_TRY(session.remove(1, keep_from));
    }
    EMBER_TRY(session.decode(next, nullptr));
  }
  // Text held back for a stop string that never came is released now.
  if (!ended && stops.flush(&Counted::call, &counted) == StopStrings::Step::SinkStopped) {
    stats->stop = StopReason::Callback;
  }
  const double t_end = now_ms();
  stats->first_token_ms = t_first - t0;
  stats->decode_ms = t_end - t_first;
  return Status::ok();
}

}  // namespace ember

// The generation loop, in one place: prefill the prompt, then sample,
// report and decode one token at a time, stopping at the end of the
// sequence, at max_new_tokens, at a stop string, when the caller says so or
// when the context is full (or shifting the context and going on). The last
// sampled token is never run through the model (GenerateStats::last_token). ember_generate and
// `ember run` (through it) both run this loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "model/session.h"
#include "model/stop_strings.h"
#include "sampling/sampler.h"

namespace ember {

struct GenerateParams {
  int32_t max_new_tokens = 128;
  // When the context is full, drop the older half of the positions after
  // the first (BOS) and go on.
  bool context_shift = false;
  // When not null, receives vocab_size floats: the logits after the last
  // prompt token, before the sampler modifies them.
  float* prompt_logits = nullptr;
  // Stop strings (model/stop_strings.h): generation ends when the generated
  // text contains one; it and what follows are never passed to the sink.
  // Null or empty: none. The filter's held text is per call (cleared at the
  // start); the caller keeps the object so that its buffers are reused.
  StopStrings* stop_strings = nullptr;
};

enum class StopReason : int32_t { None = 0, MaxTokens = 1, End = 2, Callback = 3, ContextFull = 4, StopString = 5 };

struct GenerateStats {
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;  // tokens passed to the callback
  int32_t sampled_tokens = 0;    // tokens sampled (held-back and end tokens too)
  int32_t last_token = -1;       // the last sampled token: never run through the model
  double prefill_ms = 0;
  double first_token_ms = 0;  // from the start to the first sampled token
  double decode_ms = 0;       // from the first sampled token to the end
  StopReason stop = StopReason::None;
};

// Called with each generated token and its printable piece (the bytes it
// prints as after the previous token). Returns true to stop.
using TokenSink = bool (*)(void* user, int32_t token, const std::string& piece);

// Runs `prompt` (count > 0 ids, already tokenized) through `session` at its
// next position, then generates. `piece` is the caller's buffer for the
// current piece (reserve it once and generation never allocates). The
// sampler's history is the session's. Errors: the session's (the prompt's
// prefill failing is reported with the prompt's length), the tokenizer's.
Status generate(Session& session, Sampler& sampler, const int32_t* prompt, size_t count,
                const GenerateParams& params, TokenSink sink, void* user, std::string* piece, GenerateStats* stats);

}  // namespace ember

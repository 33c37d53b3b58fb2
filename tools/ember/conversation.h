// What a chat loop needs besides the template: one session kept across
// turns. Each turn is given as the whole conversation rendered so far (what
// a chat template produces from the messages, with the generation prompt)
// and run by ember_generate with reuse_prefix: the tokens the session
// already holds are reused, the diverging tail is removed and only the rest
// is prefilled; the reply streams with stop strings; the turn's time to
// first token and decode speed are measured. Written against the public C
// API only, so a host can do the same.
//
// Why the whole rendering and a common prefix, not "append the new turn's
// text": a template may render earlier messages differently once more
// follow, and text re-tokenized across a turn boundary may split
// differently from the tokens generated; comparing tokens finds the exact
// point where the session must be cut, and in the usual case that point is
// the end of what it holds (nothing recomputed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ember.h"

namespace ember::cli {

struct TurnOptions {
  ember_generate_options generate;  // sampling, max_new_tokens, context_shift;
                                    // prompt fields and stop strings are set by turn()
  std::vector<std::string> stop_strings;
  bool add_bos = true;  // BOS before the rendered text unless it begins with BOS
                        // (set from ember_model_info.add_bos)
};

struct TurnStats {
  int32_t reused_tokens = 0;   // conversation tokens already in the session
  int32_t prefilled_tokens = 0;  // tokens this turn ran before generating
  int32_t generated_tokens = 0;  // tokens passed to the callback
  int32_t stop_reason = EMBER_STOP_NONE;
  double first_token_ms = 0;   // from the turn's prefill to its first token
  double tokens_per_s = 0;     // decode speed after the first token
  int32_t position = 0;        // the session's position after the turn
  std::string reply;           // the text passed to the callback
};

class Conversation {
 public:
  // Lifetime: model and session outlive the conversation; the session is
  // used by it alone between turns.
  Conversation(ember_model* model, ember_session* session) : model_(model), session_(session) {}

  // Runs one turn on `rendered` (the conversation so far, as the template
  // renders it, ending where the reply begins). `on_piece` (may be NULL)
  // streams the reply. Errors: those of ember_generate;
  // EMBER_ERR_CONTEXT_FULL when the conversation does not fit the context
  // (the message says how many tokens; the host drops or shortens earlier
  // messages and renders again; the session is left as it was).
  // ember_last_error() describes a failure.
  ember_status turn(const std::string& rendered, const TurnOptions& options, ember_token_callback on_piece,
                    void* user, TurnStats* stats);
  // Forgets the conversation (the session starts afresh).
  ember_status reset();
  // The session's state to / from a file (ember_session_save / _load).
  ember_status save(const std::string& path) const;
  ember_status load(const std::string& path);

 private:
  ember_model* model_;
  ember_session* session_;
};

}  // namespace ember::cli

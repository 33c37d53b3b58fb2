#include "tools/ember/conversation.h"

#include <vector>

namespace ember::cli {
namespace {

struct Relay {
  ember_token_callback callback;
  void* user;
  std::string* reply;
  static int call(void* self, int32_t token, const char* piece, size_t len) {
    Relay* r = static_cast<Relay*>(self);
    r->reply->append(piece, len);
    return r->callback ? r->callback(r->user, token, piece, len) : 0;
  }
};

}  // namespace

ember_status Conversation::turn(const std::string& rendered, const TurnOptions& options,
                                ember_token_callback on_piece, void* user, TurnStats* stats) {
  *stats = TurnStats();
  // The rendering spells the template's control tokens (parsed as such) and
  // is the session's whole content: the generator keeps the tokens the
  // session already holds up to where they differ, and runs the rest.
  ember_generate_options g = options.generate;
  g.struct_size = sizeof g;
  g.prompt_tokens = nullptr;
  g.n_prompt_tokens = 0;
  g.parse_special = 1;
  g.add_bos = options.add_bos ? 1 : 0;
  g.reuse_prefix = 1;
  std::vector<const char*> stops;
  for (const std::string& s : options.stop_strings) stops.push_back(s.c_str());
  g.stop_strings = stops.data();
  g.n_stop_strings = stops.size();
  Relay relay{on_piece, user, &stats->reply};
  ember_status st = ember_generate(session_, rendered.c_str(), &g, &Relay::call, &relay);
  if (st != EMBER_OK) return st;
  ember_generate_stats gs;
  gs.struct_size = sizeof gs;
  st = ember_generate_last_stats(session_, &gs);
  if (st != EMBER_OK) return st;
  stats->reused_tokens = gs.reused_tokens;
  stats->prefilled_tokens = gs.prompt_tokens - gs.reused_tokens;
  stats->generated_tokens = gs.generated_tokens;
  stats->stop_reason = gs.stop_reason;
  stats->first_token_ms = gs.first_token_ms;
  // Tokens after the first, over the time after the first.
  stats->tokens_per_s = gs.decode_ms > 0 && gs.sampled_tokens > 1 ? (gs.sampled_tokens - 1) * 1000.0 / gs.decode_ms : 0;
  stats->position = gs.position;
  return EMBER_OK;
}

ember_status Conversation::reset() { return ember_session_reset(session_); }

ember_status Conversation::save(const std::string& path) const { return ember_session_save(session_, path.c_str()); }

ember_status Conversation::load(const std::string& path) { return ember_session_load(session_, path.c_str()); }

}  // namespace ember::cli

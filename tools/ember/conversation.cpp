#include "tools/ember/conversation.h"

#include <algorithm>

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
  // The rendering spells the template's control tokens: parsed as such.
  // BOS is added when asked and the rendering does not begin with it.
  const int flags = EMBER_TOKENIZE_PARSE_SPECIAL;
  size_t n = 0;
  ember_status st = ember_tokenize(model_, rendered.data(), rendered.size(), flags, nullptr, 0, &n);
  if (st != EMBER_OK && st != EMBER_ERR_BUFFER_TOO_SMALL) return st;
  ids_.resize(n);
  st = ember_tokenize(model_, rendered.data(), rendered.size(), flags, ids_.data(), ids_.size(), &n);
  if (st != EMBER_OK) return st;
  if (options.add_bos) {
    ember_model_info info;
    info.struct_size = sizeof info;
    st = ember_model_get_info(model_, &info);
    if (st != EMBER_OK) return st;
    if (info.bos_id >= 0 && (ids_.empty() || ids_[0] != info.bos_id)) ids_.insert(ids_.begin(), info.bos_id);
  }
  if (ids_.empty()) return ember_generate(session_, nullptr, nullptr, nullptr, nullptr);  // the C API's own message

  st = ember_session_tokens(session_, nullptr, 0, &n);
  if (st != EMBER_OK && st != EMBER_ERR_BUFFER_TOO_SMALL) return st;
  held_.resize(n);
  st = ember_session_tokens(session_, held_.data(), held_.size(), &n);
  if (st != EMBER_OK) return st;
  // The longest common prefix stays; at least one token must run so that
  // there are logits to sample from.
  size_t keep = 0;
  while (keep < held_.size() && keep < ids_.size() && held_[keep] == ids_[keep]) ++keep;
  if (keep == ids_.size()) --keep;
  if (keep < held_.size()) {
    st = ember_session_remove(session_, static_cast<int32_t>(keep), static_cast<int32_t>(held_.size()));
    if (st != EMBER_OK) return st;
  }

  ember_generate_options g = options.generate;
  g.struct_size = sizeof g;
  g.prompt_tokens = ids_.data() + keep;
  g.n_prompt_tokens = ids_.size() - keep;
  std::vector<const char*> stops;
  for (const std::string& s : options.stop_strings) stops.push_back(s.c_str());
  g.stop_strings = stops.data();
  g.n_stop_strings = stops.size();
  Relay relay{on_piece, user, &stats->reply};
  stats->reused_tokens = static_cast<int32_t>(keep);
  st = ember_generate(session_, nullptr, &g, &Relay::call, &relay);
  if (st != EMBER_OK) return st;
  ember_generate_stats gs;
  gs.struct_size = sizeof gs;
  st = ember_generate_last_stats(session_, &gs);
  if (st != EMBER_OK) return st;
  stats->prefilled_tokens = gs.prompt_tokens;
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

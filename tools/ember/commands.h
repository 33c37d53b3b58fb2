// Subcommands of the `ember` tool. Each takes argv with argv[0] = its name
// and returns the process exit code.
#pragma once

#include <string>

#include "ember.h"

namespace ember::cli {

class Args;

// Session options shared by run, plan and bench: --ctx, --batch, --threads,
// --kv-type (or --kv-type-k/--kv-type-v), --backend, --max-bytes. Errors go
// to args' error().
void session_options_from_args(Args& args, ember_session_options* out);
// The flags session_options_from_args reads (for Args and check_known).
extern const char* const kSessionFlags[];
// Speculative decoding, shared by run, bench and plan: --lookup (prompt
// lookup drafts), --draft-max K (default 4; the session's max_draft),
// --lookup-ngram N (default 3). Errors go to args' error().
void speculative_from_args(Args& args, ember_generate_options* g, ember_session_options* so);
extern const char* const kSpeculativeFlags[];  // the flags with a value
extern const char* const kSpeculativeHelp;
// --draft MODEL: the draft model and a session for it beside `target` (so's
// options, whose context must be the target's; max_draft 0, the target's
// sequences), checked against the target (ember_session_check_draft).
// 0 or the exit code (reported, naming the file).
int open_draft_session(const std::string& path, ember_session* target, const ember_session_options& so,
                       ember_model** draft_model, ember_session** draft_session);

int cmd_run(int argc, char** argv);
int cmd_demo(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_backends(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int bench_lookup(int argc, char** argv);  // ember bench --lookup (bench_speculative.cpp)
int bench_embed(int argc, char** argv);   // ember bench --embed (bench_embed.cpp)
int cmd_perplexity(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_keygen(int argc, char** argv);
int cmd_sign(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_cache(int argc, char** argv);
int cmd_advise(int argc, char** argv);
int cmd_gate(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_chat(int argc, char** argv);

}  // namespace ember::cli

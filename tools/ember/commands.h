// Subcommands of the `ember` tool. Each takes argv with argv[0] = its name
// and returns the process exit code.
#pragma once

#include <string>
#include <vector>

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

// Embedding inputs, shared by embed, bench --embed and serve (cmd_embed.cpp):
// the ember_pooling a --pooling name means (-2 for another name) and a
// pooling's name; the non-empty lines of a file (CR dropped); each text's
// ids as ember_embed_tokenize gives them, none empty. 0 or the exit code
// (reported).
int32_t pooling_from_name(const std::string& name);
const char* pooling_name(int32_t pooling);
int read_input_lines(const std::string& path, std::vector<std::string>* lines);
int embed_tokenize_all(ember_model* model, const std::vector<std::string>& texts,
                       std::vector<std::vector<int32_t>>* ids, int64_t* tokens);

int cmd_run(int argc, char** argv);
int cmd_demo(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_backends(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_imatrix(int argc, char** argv);
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

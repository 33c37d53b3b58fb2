// The `ember` command: one binary, one subcommand per task.
#include <cstdio>
#include <cstring>

#include "tools/ember/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* help;
};

const Command kCommands[] = {
    {"run", ember::cli::cmd_run, "generate text: run -m M.ember|M.gguf -p PROMPT -n N (or --tokens 1,2,3)"},
    {"demo", ember::cli::cmd_demo, "convert the bundled test model (or make one) and generate"},
    {"convert", ember::cli::cmd_convert, "convert a llama2.c checkpoint or GGUF file: convert IN -o OUT.ember"},
    {"info", ember::cli::cmd_info, "show a model's hyper-parameters, tokenizer, tensors, provenance"},
    {"tokenize", ember::cli::cmd_tokenize, "tokenize FILE (--text T | --file F)"},
    {"chat", ember::cli::cmd_chat, "chat with a model in the terminal: chat -m MODEL [--system S] (its chat template; KV kept between turns)"},
    {"template", ember::cli::cmd_template, "render a chat: template --messages M.json (-m M | --template NAME | --template-file T)"},
    {"backends", ember::cli::cmd_backends, "the support matrix: backends, devices, types, features"},
    {"plan", ember::cli::cmd_plan, "memory a session will take, before it exists: plan -m M [--ctx N] [--json]"},
    {"quantize", ember::cli::cmd_quantize, "re-type weights: quantize IN.ember -o OUT.ember --type PRESET|--dtype T [--imatrix F]"},
    {"imatrix", ember::cli::cmd_imatrix, "an importance matrix for quantize --imatrix: imatrix -m M -f TEXT -o OUT.gguf"},
    {"synth", ember::cli::cmd_synth, "a synthetic model: synth --shape tiny|110m|0.5b|1.1b --dtype T -o FILE [--gguf]"},
    {"bench", ember::cli::cmd_bench, "prefill and decode speed: bench -m M [-p 64,512] [-n 128] [-r 5] [--json]"},
    {"gate", ember::cli::cmd_gate, "quantization release gate: gate --baseline B --candidate C [--tasks T] [criteria]"},
    {"advise", ember::cli::cmd_advise, "cost, replicas, SLO and placement: advise --bench B.json --hourly-cost USD [--gpu N:USD:TOK]"},
    {"embed", ember::cli::cmd_embed, "embeddings, one per line of FILE: embed -m M -f FILE [--pooling P] [--json]"},
    {"perplexity", ember::cli::cmd_perplexity, "perplexity of a text: perplexity -m M -f TEXT [--ctx N]"},
    {"keygen", ember::cli::cmd_keygen, "a signing key pair: keygen --private K.pem --public P.pem"},
    {"sign", ember::cli::cmd_sign, "sign a model in place: sign M.ember --key K.pem"},
    {"verify", ember::cli::cmd_verify, "check a model's structure, digest and signature: verify M.ember [--pubkey P.pem]"},
    {"cache", ember::cli::cmd_cache, "the GGUF files run converted: cache list|clear"},
    {"serve", ember::cli::cmd_serve, "an OpenAI-compatible HTTP(S) server: serve -m M [--port P] [--parallel N]"},
};

void usage() {
  std::fprintf(stderr, "usage: ember COMMAND [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(stderr, "  %-10s %s\n", c.name, c.help);
  std::fprintf(stderr, "\n`ember COMMAND --help` describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("ember %s\n", ember_version());
    return 0;
  }
  for (const auto& c : kCommands) {
    if (!std::strcmp(argv[1], c.name)) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "EMBER_ERR_INVALID_ARGUMENT: unknown command '%s'\n", argv[1]);
  usage();
  return 2;
}

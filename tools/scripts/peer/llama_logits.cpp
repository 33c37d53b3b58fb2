// Prints the logits llama.cpp computes after a prompt given as exact token
// ids, one per line: the peer side of tools/scripts/compare_logits.sh. Built
// by that script against a llama.cpp build (its llama.h and libllama.so); not
// part of ember's build. usage: llama_logits MODEL.gguf 1,2,3 OUT.txt
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf ID,ID,... OUT.txt\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> ids;
  for (const char* p = argv[2]; *p;) {
    char* end = nullptr;
    ids.push_back(static_cast<llama_token>(std::strtol(p, &end, 10)));
    if (end == p) {
      std::fprintf(stderr, "bad token list '%s'\n", argv[2]);
      return 2;
    }
    p = *end == ',' ? end + 1 : end;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  // $PEER_N_CTX: the context to ask for (LongRoPE picks its factors by it;
  // llama.cpp pads it to a multiple of 256).
  const char* n_ctx = std::getenv("PEER_N_CTX");
  cp.n_ctx = n_ctx && *n_ctx ? static_cast<uint32_t>(std::atoi(n_ctx)) : static_cast<uint32_t>(ids.size() + 16);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(ids.size());
  cp.n_threads = cp.n_threads_batch = 2;
  cp.type_k = GGML_TYPE_F32;  // ember's default cache: f32
  cp.type_v = GGML_TYPE_F32;
  // Its CPU flash attention rounds the queries to f16 (measured: 2.7e-3 off
  // the f32 result on a tiny model, against 2e-6 without it).
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  if (llama_decode(ctx, llama_batch_get_one(ids.data(), static_cast<int32_t>(ids.size()))) != 0) return 1;
  const float* logits = llama_get_logits_ith(ctx, -1);
  const int32_t n = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* f = std::fopen(argv[3], "w");
  if (!f) return 1;
  for (int32_t i = 0; i < n; ++i) std::fprintf(f, "%.9g\n", logits[i]);
  std::fclose(f);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}

/* A host program linking ember from an installed package: opens a model,
 * prints the library version and the model's shape, plans the session's
 * memory, gives the session an arena of exactly the planned size, and
 * generates a continuation of a prompt (greedy), token by token.
 *
 * Usage: ember_host MODEL.ember [PROMPT] [MAX_NEW_TOKENS]
 *
 * Build it against an installed ember (see README.md, "Linking ember into
 * a host"): with CMake (CMakeLists.txt here: find_package(ember)) or with
 * pkg-config (Makefile here). Exits 1 on any failure, with the status name
 * and ember_last_error() on stderr. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ember.h>

/* Reports a failed call; returns non-zero when `status` is a failure. */
static int failed(ember_status status, const char* what) {
  if (status == EMBER_OK) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, ember_status_string(status), ember_last_error());
  return 1;
}

/* ember_generate's callback: print each piece as it comes. */
static int on_token(void* user_data, int32_t token, const char* piece, size_t piece_len) {
  (void)token;
  fwrite(piece, 1, piece_len, stdout);
  fflush(stdout);
  ++*(int*)user_data;
  return 0; /* go on */
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL.ember [PROMPT] [MAX_NEW_TOKENS]\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
  int max_new_tokens = argc > 3 ? atoi(argv[3]) : 32;
  if (max_new_tokens <= 0) {
    fprintf(stderr, "MAX_NEW_TOKENS must be a positive number, got \"%s\"\n", argv[3]);
    return 2;
  }

  int rc = 1;
  ember_model* model = NULL;
  ember_session* session = NULL;
  void* arena = NULL;

  printf("ember %s\n", ember_version());

  ember_model_options mopt;
  ember_model_options_default(&mopt);
  mopt.integrity_policy = EMBER_INTEGRITY_DIGEST; /* check the weights' SHA-256 once */
  if (failed(ember_model_open(model_path, &mopt, &model), "ember_model_open")) goto done;

  ember_model_info info;
  info.struct_size = sizeof info;
  if (failed(ember_model_get_info(model, &info), "ember_model_get_info")) goto done;
  printf("model: %llu parameters, vocabulary %d, dim %d, hidden %d, %d layers, %d heads (%d kv), "
         "trained context %d\n",
         (unsigned long long)info.n_parameters, info.vocab_size, info.dim, info.hidden_dim,
         info.n_layers, info.n_heads, info.n_kv_heads, info.max_context);

  ember_session_options sopt;
  ember_session_options_default(&sopt);
  sopt.context_length = info.max_context < 256 ? info.max_context : 256;
  ember_memory_plan plan;
  plan.struct_size = sizeof plan;
  if (failed(ember_plan(model, &sopt, &plan), "ember_plan")) goto done;
  printf("plan: context %d, weights mapped %llu B, resident %llu B, kv %llu B, arena %llu B, "
         "private %llu B\n",
         plan.context_length, (unsigned long long)plan.weights_mapped_bytes,
         (unsigned long long)plan.weights_resident_bytes, (unsigned long long)plan.kv_bytes,
         (unsigned long long)plan.arena_bytes, (unsigned long long)plan.private_bytes);

  /* The session's one allocation, made by the host: 64-byte aligned, the
   * planned size (aligned_alloc wants a multiple of the alignment). */
  size_t arena_size = ((size_t)plan.arena_bytes + 63) / 64 * 64;
  arena = aligned_alloc(64, arena_size);
  if (arena == NULL) {
    fprintf(stderr, "cannot allocate the %zu-byte arena\n", arena_size);
    goto done;
  }
  sopt.arena = arena;
  sopt.arena_size = arena_size;
  if (failed(ember_session_create(model, &sopt, &session), "ember_session_create")) goto done;

  ember_generate_options gopt;
  ember_generate_options_default(&gopt); /* greedy */
  gopt.max_new_tokens = max_new_tokens;
  int generated = 0;
  fputs(prompt, stdout);
  if (failed(ember_generate(session, prompt, &gopt, on_token, &generated), "ember_generate")) {
    fputc('\n', stdout);
    goto done;
  }
  printf("\ngenerated %d tokens, %d positions used\n", generated, ember_session_position(session));
  rc = generated > 0 ? 0 : 1;
  if (generated == 0) fprintf(stderr, "ember_generate produced no token\n");

done:
  ember_session_free(session); /* before the arena it uses and the model */
  free(arena);
  ember_model_free(model);
  return rc;
}

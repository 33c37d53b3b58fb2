// A session: one sequence's KV cache and working memory on a shared Model,
// inside one arena of exactly plan().arena_bytes. Used by one thread at a
// time; several sessions may run on one model concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "api/status.h"
#include "backends/backend.h"
#include "memory/plan.h"
#include "model/model.h"

namespace ember {

struct SessionOptions {
  int32_t context_length = 0;  // 0: the model's max_seq_len
  int32_t max_batch = 512;
  int32_t n_threads = 0;
};

class Session {
 public:
  // Lifetime: `model` must outlive the session.
  static Result<std::unique_ptr<Session>> create(const Model& model, const SessionOptions& options);
  ~Session();

  // Runs `count` tokens at the next positions, in batches of max_batch.
  // logits (vocab_size floats) receives the last token's logits if not null.
  // On EMBER_ERR_CONTEXT_FULL or a bad token id nothing changes.
  Status prefill(const int32_t* tokens, size_t count, float* logits);
  Status decode(int32_t token, float* logits) { return prefill(&token, 1, logits); }
  void reset() { pos_ = 0; }

  int32_t position() const { return pos_; }
  int32_t context() const { return graph_.context; }
  const MemoryPlan& plan() const { return plan_; }
  const Model& model() const { return model_; }
  const char* backend_name() const { return backend_->name(); }

 private:
  Session(const Model& model) : model_(model) {}

  const Model& model_;
  Graph graph_;
  MemoryPlan plan_;
  std::unique_ptr<Backend> backend_;
  uint8_t* arena_ = nullptr;  // owned: aligned allocation of plan_.arena_bytes
  int32_t pos_ = 0;
};

}  // namespace ember

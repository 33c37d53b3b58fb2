#include "model/session.h"

#include <cstdlib>
#include <new>

#include "model/llama_graph.h"

namespace ember {

Result<std::unique_ptr<Session>> Session::create(const Model& model, const SessionOptions& options) {
  const HParams& hp = model.hparams();
  if (options.context_length < 0) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "context_length = %d: must be >= 0 (0 = the model's %u)",
                         options.context_length, hp.max_seq_len);
  }
  if (options.max_batch <= 0 || options.max_batch > 65536) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_batch = %d: must be in 1..65536", options.max_batch);
  }
  if (options.n_threads < 0 || options.n_threads > 1024) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_threads = %d: must be in 0..1024", options.n_threads);
  }
  const int32_t context = options.context_length ? options.context_length : static_cast<int32_t>(hp.max_seq_len);
  if (static_cast<uint32_t>(context) > kMaxSeqLen) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "context_length = %d: must be at most %u", context, kMaxSeqLen);
  }
  auto session = std::unique_ptr<Session>(new Session(model));
  const int32_t max_batch = std::min(options.max_batch, context);
  EMBER_ASSIGN_OR_RETURN(session->graph_, build_llama_graph(model.file().contents(), context, max_batch));
  BackendOptions bo;
  bo.n_threads = options.n_threads;
  EMBER_ASSIGN_OR_RETURN(session->backend_, create_backend(BackendKind::Cpu, bo));
  EMBER_ASSIGN_OR_RETURN(session->plan_, plan_memory(session->graph_, *session->backend_));
  const uint64_t bytes = session->plan_.arena_bytes;
  session->arena_ = static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(kArenaAlignment), std::nothrow));
  if (!session->arena_) {
    return Status::error(EMBER_ERR_NO_MEMORY, "cannot allocate the session arena of %llu bytes",
                         static_cast<unsigned long long>(bytes));
  }
  EMBER_TRY(session->backend_->prepare(session->graph_, session->plan_, session->arena_));
  return session;
}

Session::~Session() {
  backend_.reset();
  if (arena_) ::operator delete(arena_, std::align_val_t(kArenaAlignment));
}

Status Session::prefill(const int32_t* tokens, size_t count, float* logits) {
  if (count == 0) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "prefill of 0 tokens");
  if (!tokens) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "tokens is NULL");
  const int32_t vocab = static_cast<int32_t>(model_.hparams().vocab_size);
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE, "tokens[%zu] = %d is outside the vocabulary (0..%d)", i,
                           tokens[i], vocab - 1);
    }
  }
  if (count > static_cast<size_t>(graph_.context - pos_)) {
    return Status::error(EMBER_ERR_CONTEXT_FULL, "%zu tokens at position %d exceed the context of %d", count, pos_,
                         graph_.context);
  }
  size_t done = 0;
  while (done < count) {
    const int32_t n = static_cast<int32_t>(std::min<size_t>(count - done, graph_.max_batch));
    StepArgs step;
    step.tokens = tokens + done;
    step.n_tokens = n;
    step.pos = pos_;
    step.logits = done + n == count ? logits : nullptr;
    EMBER_TRY(backend_->execute(step));
    pos_ += n;
    done += n;
  }
  return Status::ok();
}

}  // namespace ember

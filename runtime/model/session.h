// A session: one sequence's KV cache and working memory on a shared Model,
// inside one arena of exactly plan().arena_bytes. Used by one thread at a
// time; several sessions may run on one model concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/kv_type.h"
#include "core/status.h"
#include "memory/plan.h"
#include "model/model.h"
#include "security/sha256.h"

namespace ember {

// Sequences one session may hold (SessionOptions::n_seqs).
constexpr int32_t kMaxSessionSeqs = 256;
// Drafted tokens one sequence may verify in a step (SessionOptions::max_draft).
constexpr int32_t kMaxDraft = 16;

struct SessionOptions {
  int32_t context_length = 0;  // 0: the model's max_seq_len; per sequence
  int32_t max_batch = 512;
  // Sequences the session holds, each with its own positions and KV
  // (batched decoding: decode_batch runs several in one step). 1..256.
  int32_t n_seqs = 1;
  // Tokens beyond its own that one sequence may have verified in a step
  // (speculative decoding, 0..kMaxDraft, below max_batch): a step then
  // computes logits for up to n_seqs x (1 + max_draft) rows
  // (BatchItem::n_logits), and the logits buffer holds that many.
  int32_t max_draft = 0;
  // Sliding-window layers keep every position (as the full layers do)
  // rather than a ring of window + max_batch rows. The ring (default, on the
  // cpu) saves memory; it cannot remove or copy positions whose window
  // reaches past the ring (EMBER_ERR_UNSUPPORTED says so).
  bool sliding_window_full = false;
  // An embedding session: a step's output rows are the final hidden states
  // (the output norm applied, no logits head), model dim floats each, and
  // any of a step's rows may be an output (engine/embed.h pools them).
  // Generation refuses such a session.
  bool embeddings = false;
  KvType kv_type_k = KvType::F32;
  KvType kv_type_v = KvType::F32;
  // What runs the session; empty: `auto` (backend/backend.h choose_auto: a
  // GPU the model fits, else the cpu).
  std::optional<BackendKind> backend = BackendKind::Cpu;
  void* arena = nullptr;       // caller-owned arena, or null
  uint64_t arena_size = 0;
  uint64_t max_bytes = 0;      // cap on private_bytes; 0 = none
  // Each backend's own options (backend/backend_options.h): the cpu's
  // threads (n_threads 0: the physical cores; 0..1024) or a host pool, the
  // vulkan backend's pipeline cache. Only the backend that runs the session
  // reads its struct.
  BackendOptions backend_options;
};

// Everything a session will use, before it exists.
struct SessionPlan {
  MemoryPlan memory;           // arena layout, by purpose
  uint64_t runtime_bytes = 0;  // in the arena: logits and token history
  uint64_t arena_bytes = 0;    // memory.arena_bytes + runtime_bytes
  uint64_t tables_bytes = 0;   // heap: graph tables and objects made at creation
  uint64_t private_bytes = 0;  // resident weights + arena + tables
  uint64_t device_bytes = 0;
  uint64_t estimate_weights_bytes = 0;  // parameters x bits / 8
  uint64_t estimate_kv_bytes = 0;       // layers x 2 x ctx x kv_heads x head_dim x bits / 8
  int32_t context = 0;
  int32_t max_batch = 0;
  int32_t n_seqs = 1;
  int32_t max_draft = 0;
  bool embeddings = false;
  BackendKind backend = BackendKind::Cpu;  // what runs it (auto resolved)
  // The plan: the backend's name; a session: its executor's describe(). Each
  // followed by " [auto: ...]" when auto passed a GPU over.
  std::string backend_description;
  std::string auto_note;  // "auto: ...; using the cpu backend", or empty
};

class Session {
 public:
  // The plan for `options`, computed without allocating the session.
  static Result<SessionPlan> plan(const Model& model, const SessionOptions& options);

  // Lifetime: `model` must outlive the session (and options.arena, if given).
  static Result<std::unique_ptr<Session>> create(const Model& model, const SessionOptions& options);
  ~Session();

  // Runs `count` tokens at the next positions, in batches of max_batch.
  // logits (vocab_size floats) receives the last token's logits if not null.
  // On EMBER_ERR_CONTEXT_FULL or a bad token id nothing changes.
  Status prefill(const int32_t* tokens, size_t count, float* logits);
  Status decode(int32_t token, float* logits) { return prefill(&token, 1, logits); }
  void reset() {  // every sequence
    for (int32_t q = 0; q < graph_.n_seqs; ++q) positions_[q] = 0;
  }
  // Forgets positions [start, end); later ones move down (context shifting).
  Status remove(int32_t start, int32_t end) { return remove_seq(0, start, end); }

  // Batched decoding: every item's tokens go to its sequence at that
  // sequence's next positions, all items together in steps of up to
  // max_batch rows, so each weight is read once per step for all of them
  // (a long prompt as one item is a chunk of prefill among the others'
  // decode tokens). Each sequence at most once per call. logits: vocab_size
  // floats for the item's last token, or null. Everything is checked before
  // anything runs (bad sequence, repeated sequence, token id, context full:
  // nothing changes). n_logits > 1 (speculative verification, at most
  // 1 + max_draft and n_tokens): logits receives the last n_logits tokens'
  // rows, n_logits x vocab_size floats, oldest first. An embedding session:
  // rows of output_cols() floats, and n_logits up to n_tokens.
  struct BatchItem {
    int32_t seq = 0;
    const int32_t* tokens = nullptr;
    int32_t n_tokens = 0;
    float* logits = nullptr;
    int32_t n_logits = 1;
  };
  Status decode_batch(const BatchItem* items, size_t n_items);
  int32_t n_seqs() const { return graph_.n_seqs; }
  int32_t max_draft() const { return plan_.max_draft; }
  // Whether the steps output hidden states (SessionOptions::embeddings), and
  // the floats of one output row (vocab_size, or dim).
  bool embeddings() const { return graph_.embeddings; }
  int32_t output_cols() const { return static_cast<int32_t>(graph_output_cols(graph_)); }
  // Sequence `seq`'s position (0 <= seq < n_seqs), its tokens (position
  // entries), forgetting [start, end) of it, starting it over.
  int32_t seq_position(int32_t seq) const { return positions_[seq]; }
  const int32_t* seq_history(int32_t seq) const { return history_ + static_cast<int64_t>(seq) * graph_.context; }
  Status remove_seq(int32_t seq, int32_t start, int32_t end);
  Status reset_seq(int32_t seq);
  // Sequence dst becomes a copy of src's first n positions (tokens and KV):
  // a shared prefix computed once. dst's own positions are forgotten.
  Status copy_seq(int32_t src, int32_t dst, int32_t n);

  // Saved state (session_state.cpp; format in docs/decisions.md "Sessions:
  // multi-turn, stop strings, saved state"): the positions, the token
  // history and exactly the used KV rows, in the session's KV types, with
  // the model's identity, the context and the cache's shape.
  // Bytes save_state writes now.
  Result<uint64_t> state_bytes() const;
  // Writes the state to `out` (capacity >= state_bytes(), else
  // EMBER_ERR_BUFFER_TOO_SMALL). EMBER_ERR_UNSUPPORTED: the backend cannot
  // read its cache.
  Status save_state(uint8_t* out, uint64_t capacity) const;
  // Replaces the session's positions, history and KV with a saved state.
  // Everything is checked before anything changes: EMBER_ERR_TRUNCATED,
  // EMBER_ERR_FORMAT, EMBER_ERR_VERSION, EMBER_ERR_INTEGRITY (the checksum),
  // EMBER_ERR_STATE_MISMATCH (another model, context, KV type or cache
  // shape: the message names the field and both values). A backend failing
  // while writing its cache leaves the session reset (position 0).
  Status load_state(const uint8_t* data, uint64_t size);
  // The model's identity in saved states: SHA-256 of the file's bytes
  // before its data segment (the metadata, which records the data's digest).
  Sha256Digest model_identity() const;

  // Activation statistics for an importance matrix (core/
  // activation_stats.h): on (again) starts them from zero, kept across
  // reset(); off drops them. EMBER_ERR_UNSUPPORTED from a backend that does
  // not collect them (the session is unchanged).
  Status collect_activations(bool on, bool include_output);
  const ActivationStats* activation_stats() const { return activation_stats_.get(); }

  int32_t position() const { return positions_[0]; }
  int32_t context() const { return graph_.context; }
  // The most rows one step runs (longer prefills and batches are split).
  int32_t max_batch() const { return graph_.max_batch; }
  // The last step's output rows (logits of vocab_size floats, or an
  // embedding session's hidden states), in the arena.
  float* logits() const { return logits_; }
  // Every token fed so far to sequence 0, position by position (in the arena).
  const int32_t* history() const { return history_; }
  const Model& model() const { return model_; }
  // What runs where, e.g. "cpu (avx512vnni, 2 threads)" or the GPU's name.
  const std::string& backend_description() const { return plan_.backend_description; }

 private:
  Session(const Model& model) : model_(model) {}

  static Result<SessionPlan> plan_with_graph(const Model& model, const SessionOptions& options, Graph* graph);

  const Model& model_;
  Graph graph_;
  SessionPlan plan_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ActivationStats> activation_stats_;  // while collecting
  uint8_t* arena_ = nullptr;  // plan_.arena_bytes, owned unless the caller gave it
  bool owns_arena_ = false;
  Status check_seq(int32_t seq, const char* what) const;
  // Into the arena (plan: runtime_bytes).
  float* logits_ = nullptr;     // max outputs x vocab_size: a step's output rows
  int32_t* history_ = nullptr;  // n_seqs x context entries
  int32_t* positions_ = nullptr;  // n_seqs: each sequence's next position
  int32_t* step_tokens_ = nullptr;  // max_batch: a batched step's rows
  int32_t* step_seqs_ = nullptr;  // max_batch
  int32_t* step_pos_ = nullptr;   // max_batch
  int32_t* step_out_ = nullptr;   // max outputs: its output rows
  int32_t* step_item_ = nullptr;  // max outputs: the item of each output row
  int32_t* step_row_ = nullptr;   // max outputs: the item's logits row of each
};

}  // namespace ember

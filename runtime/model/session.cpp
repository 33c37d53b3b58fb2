#include "model/session.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "model/llama_graph.h"

namespace ember {
namespace {

uint64_t align64(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }


// The session's own buffers in the arena after the memory plan's part:
// logits (a step's output rows), token history and positions per sequence,
// and a batched step's rows.
struct RuntimeLayout {
  uint64_t logits = 0, history = 0, positions = 0, step_tokens = 0, step_seqs = 0, step_pos = 0, step_out = 0,
           step_item = 0, step_row = 0, total = 0;
};

// Rows a step's logits hold at most: a row per sequence and its drafts, or
// (embeddings) every row of the step.
int32_t max_outputs(int32_t n_seqs, int32_t max_draft, bool embeddings, int32_t max_batch) {
  return embeddings ? max_batch : n_seqs * (1 + max_draft);
}

// What the runtime buffers are sized by.
struct RuntimeShape {
  uint64_t out_cols = 0;  // floats per output row
  int32_t context = 0, max_batch = 0, n_seqs = 1, max_draft = 0;
  bool embeddings = false;
};

// Whether a session steps through the batched rows (step_tokens ...): more
// than one sequence, drafts, or output rows other than the last.
bool batched_rows(const RuntimeShape& s) { return s.n_seqs > 1 || s.max_draft > 0 || s.embeddings; }

RuntimeLayout runtime_layout(const RuntimeShape& shape) {
  const int32_t context = shape.context, max_batch = shape.max_batch, n_seqs = shape.n_seqs;
  RuntimeLayout r;
  uint64_t at = 0;
  auto take = [&at](uint64_t bytes) {
    const uint64_t o = at;
    at += align64(bytes);
    return o;
  };
  const uint64_t seqs = static_cast<uint64_t>(n_seqs), batch = static_cast<uint64_t>(max_batch);
  const uint64_t outs = static_cast<uint64_t>(max_outputs(n_seqs, shape.max_draft, shape.embeddings, max_batch));
  r.logits = take(outs * shape.out_cols * sizeof(float));
  r.history = take(seqs * static_cast<uint64_t>(context) * sizeof(int32_t));
  r.positions = take(seqs * sizeof(int32_t));
  // One sequence without drafts: prefill's steps need none of the batched rows.
  if (batched_rows(shape)) {
    r.step_tokens = take(batch * sizeof(int32_t));
    r.step_seqs = take(batch * sizeof(int32_t));
    r.step_pos = take(batch * sizeof(int32_t));
    r.step_out = take(outs * sizeof(int32_t));
    r.step_item = take(outs * sizeof(int32_t));
    r.step_row = take(outs * sizeof(int32_t));
  }
  r.total = at;
  return r;
}

Status check_options(const HParams& hp, const SessionOptions& o) {
  if (o.context_length < 0 || static_cast<uint32_t>(o.context_length) > kMaxSeqLen) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "context_length = %d: must be in 0..%u (0 = the model's %u)",
                         o.context_length, kMaxSeqLen, hp.max_seq_len);
  }
  if (o.n_seqs < 1 || o.n_seqs > kMaxSessionSeqs) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_seqs = %d: must be in 1..%d", o.n_seqs, kMaxSessionSeqs);
  }
  if (o.max_batch <= 0 || o.max_batch > 65536) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_batch = %d: must be in 1..65536", o.max_batch);
  }
  if (o.max_draft < 0 || o.max_draft > kMaxDraft) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "max_draft = %d: must be in 0..%d", o.max_draft, kMaxDraft);
  }
  if (o.backend_options.cpu.n_threads < 0 || o.backend_options.cpu.n_threads > 1024) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "n_threads = %d: must be in 0..1024",
                         o.backend_options.cpu.n_threads);
  }
  for (KvType t : {o.kv_type_k, o.kv_type_v}) {
    if (static_cast<uint8_t>(t) > static_cast<uint8_t>(KvType::Q8_0)) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "kv type = %u is not a known type (f32, f16, q8_0)",
                           static_cast<unsigned>(t));
    }
  }
  if (o.backend && static_cast<uint8_t>(*o.backend) > static_cast<uint8_t>(BackendKind::Vulkan)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "backend = %u is not a known backend",
                         static_cast<unsigned>(*o.backend));
  }
  return Status::ok();
}

// The entry that runs the session: the one asked for, or auto's choice from
// every entry's probe and planning queries. Opens no device.
Result<const BackendEntry*> choose_entry(const Graph& graph, const SessionOptions& options, const BackendOptions& bo,
                                         std::string* auto_note) {
  // What the entry says it runs, then the graph's details (supports).
  auto runs = [&graph](const BackendEntry& e) {
    Status st = check_capabilities(e, graph);
    return st.is_ok() ? e.supports(graph) : st;
  };
  if (options.backend) {
    const BackendEntry* e = find_backend(*options.backend);
    if (!e) {
      return Status::error(EMBER_ERR_UNSUPPORTED, "the %s backend is not built into this library",
                           backend_kind_name(*options.backend));
    }
    const DeviceInfo d = e->probe();
    if (!d.available) {
      if (d.name.empty()) return Status::error(EMBER_ERR_UNSUPPORTED, "%s", d.reason.c_str());
      return Status::error(EMBER_ERR_UNSUPPORTED, "%s: %s: %s", e->name, d.name.c_str(), d.reason.c_str());
    }
    EMBER_TRY(runs(*e));
    return e;
  }
  std::vector<AutoCandidate> candidates;
  for (const BackendEntry& e : backend_entries()) {
    AutoCandidate c;
    c.kind = e.kind;
    c.name = e.name;
    c.device = e.probe();
    c.supported = runs(e);
    c.device_bytes = e.device_bytes(graph, bo);
    candidates.push_back(std::move(c));
  }
  AutoChoice choice = choose_auto(candidates);
  *auto_note = choice.note;
  for (const AutoCandidate& c : candidates) {
    if (c.kind != choice.kind) continue;
    EMBER_TRY(c.supported);
    return find_backend(c.kind);
  }
  return Status::error(EMBER_ERR_INTERNAL, "auto chose a backend that is not built");
}

RuntimeShape runtime_shape(const Graph& graph, const SessionPlan& plan) {
  RuntimeShape s;
  s.out_cols = static_cast<uint64_t>(graph_output_cols(graph));
  s.context = plan.context;
  s.max_batch = plan.max_batch;
  s.n_seqs = plan.n_seqs;
  s.max_draft = plan.max_draft;
  s.embeddings = plan.embeddings;
  return s;
}

}  // namespace

Result<SessionPlan> Session::plan_with_graph(const Model& model, const SessionOptions& options, Graph* graph) {
  const HParams& hp = model.hparams();
  EMBER_TRY(check_options(hp, options));
  const int32_t context = options.context_length ? options.context_length : static_cast<int32_t>(hp.max_seq_len);
  // A step holds at most every sequence's whole context.
  const int32_t max_batch =
      static_cast<int32_t>(std::min<int64_t>(options.max_batch, static_cast<int64_t>(context) * options.n_seqs));
  // A verification step runs a sequence's token and its drafts together,
  // and a sliding-window ring takes back at most max_batch positions.
  if (options.max_draft > 0 && options.max_draft >= max_batch) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                         "max_draft = %d: a verification step of %d rows exceeds max_batch = %d", options.max_draft,
                         options.max_draft + 1, max_batch);
  }
  EMBER_ASSIGN_OR_RETURN(*graph, build_llama_graph(model.file().contents(), context, max_batch, options.kv_type_k,
                                                   options.kv_type_v, options.n_seqs,
                                                   max_outputs(options.n_seqs, options.max_draft, options.embeddings,
                                                               max_batch),
                                                   options.embeddings ? GraphOutput::Embeddings : GraphOutput::Logits));
  const BackendOptions& bo = options.backend_options;
  std::string auto_note;
  EMBER_ASSIGN_OR_RETURN(const BackendEntry* entry, choose_entry(*graph, options, bo, &auto_note));
  // Sliding-window layers as rings where the backend runs them.
  if (entry->caps.sliding_window_rings && !options.sliding_window_full) set_sliding_kv_rings(graph);

  SessionPlan plan;
  plan.context = context;
  plan.max_batch = max_batch;
  plan.n_seqs = options.n_seqs;
  plan.max_draft = options.max_draft;
  plan.embeddings = options.embeddings;
  plan.backend = entry->kind;
  plan.auto_note = auto_note;
  plan.backend_description = entry->name;
  if (!auto_note.empty()) plan.backend_description += " [" + auto_note + "]";
  EMBER_ASSIGN_OR_RETURN(plan.memory, plan_memory(*graph, *entry, bo));
  plan.memory.weights_resident_bytes = entry->resident_weight_bytes(*graph, bo);
  plan.device_bytes = entry->device_bytes(*graph, bo);
  // Runtime buffers inside the arena: the logits, the token history and
  // positions, a batched step's rows.
  plan.runtime_bytes = runtime_layout(runtime_shape(*graph, plan)).total;
  plan.arena_bytes = plan.memory.arena_bytes + plan.runtime_bytes;
  // Heap tables made once at creation (they stay the same size for the
  // session's life): the graph, the backend object, the session itself.
  plan.tables_bytes = sizeof(Session) + graph->weights.size() * sizeof(WeightRef) +
                      graph->activations.size() * sizeof(ActivationDesc) + graph->ops.size() * sizeof(Op) +
                      plan.memory.activation_offsets.size() * sizeof(uint64_t) + 4096;
  plan.private_bytes = plan.memory.weights_resident_bytes + plan.arena_bytes + plan.tables_bytes;

  // First-order estimates, for comparison with the real plan.
  double weight_bits = 0;
  for (const auto& t : model.file().tensors()) weight_bits += static_cast<double>(t.elements()) * dtype_bits(t.dtype);
  plan.estimate_weights_bytes = static_cast<uint64_t>(weight_bits / 8);
  const double kv_bits = (dtype_bits(kv_dtype(options.kv_type_k)) + dtype_bits(kv_dtype(options.kv_type_v))) / 2;
  plan.estimate_kv_bytes = static_cast<uint64_t>(static_cast<double>(hp.n_layers) * 2 * context * options.n_seqs *
                                                 hp.n_kv_heads * hp.head_dim() * kv_bits / 8);
  return plan;
}

Result<SessionPlan> Session::plan(const Model& model, const SessionOptions& options) {
  Graph graph;
  return plan_with_graph(model, options, &graph);
}

Result<std::unique_ptr<Session>> Session::create(const Model& model, const SessionOptions& options) {
  EMBER_TRY(model.check_intact());
  auto session = std::unique_ptr<Session>(new Session(model));
  EMBER_ASSIGN_OR_RETURN(session->plan_, plan_with_graph(model, options, &session->graph_));
  const SessionPlan& plan = session->plan_;

  if (options.max_bytes && plan.private_bytes > options.max_bytes) {
    // The largest context that fits the budget, by bisection on the plan.
    int32_t lo = 0, hi = plan.context;
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo + 1) / 2;
      SessionOptions o = options;
      o.context_length = mid;
      auto p = Session::plan(model, o);
      if (p.is_ok() && p->private_bytes <= options.max_bytes) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return Status::error(EMBER_ERR_NO_MEMORY,
                         "session needs %llu private bytes (arena %llu + resident weights %llu + tables %llu) but "
                         "the budget is %llu; the largest context that fits is %d (asked for %d)",
                         static_cast<unsigned long long>(plan.private_bytes),
                         static_cast<unsigned long long>(plan.arena_bytes),
                         static_cast<unsigned long long>(plan.memory.weights_resident_bytes),
                         static_cast<unsigned long long>(plan.tables_bytes),
                         static_cast<unsigned long long>(options.max_bytes), lo, plan.context);
  }

  if (options.arena) {
    if (reinterpret_cast<uintptr_t>(options.arena) % kArenaAlignment != 0) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "arena %p is not 64-byte aligned", options.arena);
    }
    if (options.arena_size < plan.arena_bytes) {
      return Status::error(EMBER_ERR_BUFFER_TOO_SMALL, "arena_size = %llu bytes but the session needs %llu",
                           static_cast<unsigned long long>(options.arena_size),
                           static_cast<unsigned long long>(plan.arena_bytes));
    }
    session->arena_ = static_cast<uint8_t*>(options.arena);
  } else {
    session->arena_ =
        static_cast<uint8_t*>(::operator new(plan.arena_bytes, std::align_val_t(kArenaAlignment), std::nothrow));
    if (!session->arena_) {
      return Status::error(EMBER_ERR_NO_MEMORY, "cannot allocate the session arena of %llu bytes",
                           static_cast<unsigned long long>(plan.arena_bytes));
    }
    session->owns_arena_ = true;
  }
  uint8_t* runtime = session->arena_ + plan.memory.arena_bytes;
  const RuntimeShape shape = runtime_shape(session->graph_, plan);
  const RuntimeLayout rl = runtime_layout(shape);
  auto ints = [runtime](uint64_t offset) { return reinterpret_cast<int32_t*>(runtime + offset); };
  session->logits_ = reinterpret_cast<float*>(runtime + rl.logits);
  session->history_ = ints(rl.history);
  session->positions_ = ints(rl.positions);
  std::memset(session->positions_, 0, static_cast<size_t>(plan.n_seqs) * sizeof(int32_t));
  if (batched_rows(shape)) {
    session->step_tokens_ = ints(rl.step_tokens);
    session->step_seqs_ = ints(rl.step_seqs);
    session->step_pos_ = ints(rl.step_pos);
    session->step_out_ = ints(rl.step_out);
    session->step_item_ = ints(rl.step_item);
    session->step_row_ = ints(rl.step_row);
  }
  // The executor, made only now: planning opened no device.
  Result<std::unique_ptr<Backend>> made = create_backend(plan.backend, options.backend_options);
  Status prepared = made.status();
  if (made.is_ok()) {
    session->backend_ = std::move(made).value();
    session->plan_.backend_description = session->backend_->describe();
    if (!plan.auto_note.empty()) session->plan_.backend_description += " [" + plan.auto_note + "]";
    prepared = session->backend_->prepare(session->graph_, plan.memory, session->arena_);
  }
  if (!prepared.is_ok() && !options.backend && plan.backend != BackendKind::Cpu) {
    // auto: the device could not be opened or could not take the model; run
    // on the CPU instead.
    SessionOptions cpu = options;
    cpu.backend = BackendKind::Cpu;
    auto fallback = Session::create(model, cpu);
    if (fallback.is_ok()) {
      fallback.value()->plan_.backend_description +=
          std::string(" [auto: ") + backend_kind_name(plan.backend) + " refused (" + prepared.message() + ")]";
    }
    return fallback;
  }
  EMBER_TRY(prepared);
  return session;
}

Session::~Session() {
  backend_.reset();
  if (owns_arena_) ::operator delete(arena_, std::align_val_t(kArenaAlignment));
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
  if (count > static_cast<size_t>(graph_.context - positions_[0])) {
    return Status::error(EMBER_ERR_CONTEXT_FULL, "%zu tokens at position %d exceed the context of %d", count, positions_[0],
                         graph_.context);
  }
  size_t done = 0;
  while (done < count) {
    const int32_t n = static_cast<int32_t>(std::min<size_t>(count - done, graph_.max_batch));
    StepArgs step;
    step.tokens = tokens + done;
    step.n_tokens = n;
    step.pos = positions_[0];
    step.logits = logits_;
    EMBER_TRY(backend_->execute(step));
    // A file truncated under us reads as zero pages (mapping_guard.h): the
    // step's results are garbage, so the step fails.
    if (model_.file().faulted()) EMBER_TRY(model_.check_intact());
    std::memcpy(history_ + positions_[0], tokens + done, n * sizeof(int32_t));
    positions_[0] += n;
    done += n;
  }
  if (logits) std::memcpy(logits, logits_, static_cast<size_t>(output_cols()) * sizeof(float));
  return Status::ok();
}

Status Session::check_seq(int32_t seq, const char* what) const {
  if (seq < 0 || seq >= graph_.n_seqs) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "%s: sequence %d outside 0..%d", what, seq, graph_.n_seqs - 1);
  }
  return Status::ok();
}

Status Session::remove_seq(int32_t seq, int32_t start, int32_t end) {
  EMBER_TRY(check_seq(seq, "remove"));
  const int32_t pos = positions_[seq];
  if (start < 0 || end < start || end > pos) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "remove [%d, %d): must satisfy 0 <= start <= end <= position %d",
                         start, end, pos);
  }
  if (start == end) return Status::ok();
  // A tail needs no moving, except that a sliding-window ring must still
  // hold what the window reads after it: the backend checks (graph.h).
  bool rings = false;
  for (uint32_t l = 0; l < graph_.hparams.n_layers; ++l) rings |= kv_layer_ring(graph_, static_cast<int32_t>(l));
  if (end < pos || rings) EMBER_TRY(backend_->remove_seq_positions(seq, start, end, pos));
  int32_t* history = history_ + static_cast<int64_t>(seq) * graph_.context;
  std::memmove(history + start, history + end, static_cast<size_t>(pos - end) * sizeof(int32_t));
  positions_[seq] = pos - (end - start);
  return Status::ok();
}

Status Session::collect_activations(bool on, bool include_output) {
  if (!on) {
    EMBER_TRY(backend_->set_activation_stats(nullptr));
    activation_stats_.reset();
    return Status::ok();
  }
  auto stats = std::make_unique<ActivationStats>(ActivationStats::for_graph(graph_, include_output));
  EMBER_TRY(backend_->set_activation_stats(stats.get()));
  activation_stats_ = std::move(stats);
  return Status::ok();
}

Status Session::reset_seq(int32_t seq) {
  EMBER_TRY(check_seq(seq, "reset"));
  positions_[seq] = 0;
  return Status::ok();
}

Status Session::copy_seq(int32_t src, int32_t dst, int32_t n) {
  EMBER_TRY(check_seq(src, "copy (source)"));
  EMBER_TRY(check_seq(dst, "copy (destination)"));
  if (n < 0 || n > positions_[src]) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "copy of %d positions: sequence %d holds %d", n, src,
                         positions_[src]);
  }
  if (src == dst) {
    positions_[dst] = n;
    return Status::ok();
  }
  EMBER_TRY(backend_->copy_seq(src, dst, n, positions_[src]));
  std::memcpy(history_ + static_cast<int64_t>(dst) * graph_.context, history_ + static_cast<int64_t>(src) * graph_.context,
              static_cast<size_t>(n) * sizeof(int32_t));
  positions_[dst] = n;
  return Status::ok();
}

Status Session::decode_batch(const BatchItem* items, size_t n_items) {
  if (n_items == 0) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "batch of 0 items");
  if (!items) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "items is NULL");
  if (n_items > static_cast<size_t>(graph_.n_seqs)) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "batch of %zu items: the session holds %d sequences", n_items,
                         graph_.n_seqs);
  }
  const int32_t vocab = static_cast<int32_t>(model_.hparams().vocab_size);
  // Everything checked before anything runs.
  for (size_t i = 0; i < n_items; ++i) {
    const BatchItem& it = items[i];
    if (it.seq < 0 || it.seq >= graph_.n_seqs) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "items[%zu].seq = %d: sequences are 0..%d", i, it.seq,
                           graph_.n_seqs - 1);
    }
    for (size_t j = 0; j < i; ++j) {
      if (items[j].seq == it.seq) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT, "items[%zu] and items[%zu] are both sequence %d", j, i, it.seq);
      }
    }
    if (it.n_tokens <= 0) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT, "items[%zu].n_tokens = %d: must be at least 1", i, it.n_tokens);
    }
    if (!it.tokens) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "items[%zu].tokens is NULL", i);
    for (int32_t t = 0; t < it.n_tokens; ++t) {
      if (it.tokens[t] < 0 || it.tokens[t] >= vocab) {
        return Status::error(EMBER_ERR_TOKEN_OUT_OF_RANGE, "items[%zu].tokens[%d] = %d is outside the vocabulary (0..%d)",
                             i, t, it.tokens[t], vocab - 1);
      }
    }
    if (graph_.embeddings) {
      // Any of the item's rows may be an output.
      if (it.n_logits < 1 || it.n_logits > it.n_tokens) {
        return Status::error(EMBER_ERR_INVALID_ARGUMENT, "items[%zu].n_logits = %d: must be in 1..%d (its tokens)", i,
                             it.n_logits, it.n_tokens);
      }
    } else if (it.n_logits < 1 || it.n_logits > std::min(it.n_tokens, 1 + plan_.max_draft)) {
      return Status::error(EMBER_ERR_INVALID_ARGUMENT,
                           "items[%zu].n_logits = %d: must be in 1..%d (its tokens, and 1 + the session's max_draft %d)",
                           i, it.n_logits, std::min(it.n_tokens, 1 + plan_.max_draft), plan_.max_draft);
    }
    if (it.n_tokens > graph_.context - positions_[it.seq]) {
      return Status::error(EMBER_ERR_CONTEXT_FULL, "items[%zu]: %d tokens at position %d of sequence %d exceed the context of %d",
                           i, it.n_tokens, positions_[it.seq], it.seq, graph_.context);
    }
  }
  // One sequence and one output row: the rows are prefill's.
  if (graph_.n_seqs == 1 && items[0].n_logits == 1) {
    return prefill(items[0].tokens, static_cast<size_t>(items[0].n_tokens), items[0].logits);
  }

  // The rows of all items in order, cut into steps of max_batch rows; an
  // item's last n_logits rows are output rows of the steps they fall in.
  size_t item = 0;
  int32_t offset = 0;  // tokens of items[item] already in earlier steps
  while (item < n_items) {
    int32_t n = 0, n_out = 0;
    const size_t first_item = item;
    const int32_t first_offset = offset;
    while (item < n_items && n < graph_.max_batch) {
      const BatchItem& it = items[item];
      const int32_t take = std::min(it.n_tokens - offset, graph_.max_batch - n);
      const int32_t first_out = it.n_tokens - it.n_logits;
      for (int32_t t = 0; t < take; ++t) {
        step_tokens_[n + t] = it.tokens[offset + t];
        step_seqs_[n + t] = it.seq;
        step_pos_[n + t] = positions_[it.seq] + t;  // earlier steps advanced it
        if (offset + t >= first_out) {
          step_out_[n_out] = n + t;
          step_item_[n_out] = static_cast<int32_t>(item);
          step_row_[n_out] = offset + t - first_out;
          ++n_out;
        }
      }
      n += take;
      offset += take;
      if (offset == it.n_tokens) {
        ++item;
        offset = 0;
      }
    }
    StepArgs step;
    step.tokens = step_tokens_;
    step.n_tokens = n;
    // One sequence: its next positions (a backend of one sequence reads no
    // sequence ids).
    if (graph_.n_seqs > 1) {
      step.seqs = step_seqs_;
      step.positions = step_pos_;
    } else {
      step.pos = step_pos_[0];
    }
    step.out_rows = n_out > 0 ? step_out_ : nullptr;
    step.n_out = n_out > 0 ? n_out : 1;
    step.logits = logits_;
    EMBER_TRY(backend_->execute(step));
    if (model_.file().faulted()) EMBER_TRY(model_.check_intact());
    // The step's rows are in the cache now: history and positions move on.
    for (int32_t r = 0; r < n; ++r) {
      history_[static_cast<int64_t>(step_seqs_[r]) * graph_.context + step_pos_[r]] = step_tokens_[r];
    }
    size_t i = first_item;
    int32_t off = first_offset;
    for (int32_t left = n; left > 0; ++i, off = 0) {
      const int32_t took = std::min(items[i].n_tokens - off, left);
      positions_[items[i].seq] += took;
      left -= took;
    }
    const int64_t cols = output_cols();
    for (int32_t j = 0; j < n_out; ++j) {
      float* out = items[step_item_[j]].logits;
      if (out) {
        std::memcpy(out + static_cast<int64_t>(step_row_[j]) * cols, logits_ + static_cast<int64_t>(j) * cols,
                    static_cast<size_t>(cols) * sizeof(float));
      }
    }
  }
  return Status::ok();
}

}  // namespace ember

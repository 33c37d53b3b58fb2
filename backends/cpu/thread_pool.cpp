#include "backends/cpu/thread_pool.h"

#include "backend/backend_options.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace ember {
namespace {

// Spins before sleeping: long enough to cover the gaps between the ops of
// one decode step (a few microseconds), short enough not to burn a core
// between steps.
constexpr int kSpinIterations = 1 << 15;

// Idle prefetch (set_idle_prefetch): pieces of 4 KiB between checks for a
// new job, at most 1 MiB per range (an L2's worth).
constexpr uintptr_t kIdlePrefetchPiece = 4096;
constexpr uintptr_t kMaxIdlePrefetch = 1 << 20;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

struct WorkerArg {
  ThreadPool* pool;
  int index;
};

}  // namespace

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(int n_threads) {
  if (n_threads < 1) n_threads = 1;
  std::unique_ptr<ThreadPool> pool(new ThreadPool(n_threads));
  pool->ranges_.reset(new RangeSlot[n_threads]);
  pool->prefetch_.reset(new PrefetchSlot[n_threads]);
  pool->threads_.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) {
    pthread_t t;
    // The argument is small and owned by the worker (freed when it starts).
    auto* arg = new WorkerArg{pool.get(), i};
    const int rc = pthread_create(&t, nullptr, &ThreadPool::worker_main, arg);
    if (rc != 0) {
      delete arg;
      pool->n_threads_ = i;  // the destructor joins the ones that started
      return Status::error(EMBER_ERR_NO_MEMORY, "cpu thread pool: creating thread %d of %d failed: %s", i, n_threads,
                           std::strerror(rc));
    }
    pool->threads_.push_back(static_cast<uint64_t>(t));
  }
  return pool;
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (uint64_t t : threads_) pthread_join(static_cast<pthread_t>(t), nullptr);
}

void* ThreadPool::worker_main(void* p) {
  WorkerArg arg = *static_cast<WorkerArg*>(p);
  delete static_cast<WorkerArg*>(p);
  arg.pool->worker_loop(arg.index);
  return nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      generation_.wait(seen, std::memory_order_seq_cst);
      sleeping_.fetch_sub(1, std::memory_order_seq_cst);
      continue;
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    work(g, index);
    // Between jobs: warm this thread's next weights until the next job.
    while (generation_.load(std::memory_order_relaxed) == g && idle_prefetch_piece(index)) {
    }
  }
}

void ThreadPool::set_idle_prefetch(int thread, const void* p, size_t bytes) {
  if (thread < 0 || thread >= n_threads_) return;
  PrefetchSlot& slot = prefetch_[thread];
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  slot.end.store(0, std::memory_order_relaxed);
  slot.next.store(b, std::memory_order_relaxed);
  slot.end.store(bytes > kMaxIdlePrefetch ? b + kMaxIdlePrefetch : b + bytes, std::memory_order_release);
}

bool ThreadPool::idle_prefetch_piece(int thread) {
  PrefetchSlot& slot = prefetch_[thread];
  uintptr_t next = slot.next.load(std::memory_order_relaxed);
  const uintptr_t end = slot.end.load(std::memory_order_acquire);
  // A range being replaced may be read torn: at most one wasted piece, and
  // never a long one (a hint, not a contract).
  if (next >= end || end - next > kMaxIdlePrefetch) return false;
  const uintptr_t stop = end - next < kIdlePrefetchPiece ? end : next + kIdlePrefetchPiece;
  if (!slot.next.compare_exchange_strong(next, stop, std::memory_order_relaxed)) return true;
  for (uintptr_t a = next & ~uintptr_t{63}; a < stop; a += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 2);
  }
  return true;
}

void ThreadPool::work(uint32_t gen, int thread) {
  // next_ packs the job's generation, its chunk count and the next chunk,
  // so a claim is checked against the count of the same job. (Reading the
  // count from a separate field let a thread holding a finished job's
  // exhausted counter see the next job's larger count and claim a chunk
  // that does not exist: a chunk run twice, the done count off by one, and
  // the caller returning early or waiting forever.)
  for (;;) {
    uint64_t v = next_.load(std::memory_order_acquire);
    if (static_cast<uint32_t>(v >> 32) != gen) return;
    const int chunk = static_cast<int>(v & 0xffff);
    const int n = static_cast<int>((v >> 16) & 0xffff);
    if (chunk >= n) return;
    if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;
    // The claim succeeded, so job gen is still running and its fields,
    // written before next_ was published, are the ones to use.
    void (*fn)(void*, int, int, int) = fn_.load(std::memory_order_relaxed);
    void* ctx = ctx_.load(std::memory_order_relaxed);
    fn(ctx, chunk, n, thread);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run_raw(int n_chunks, void (*fn)(void*, int, int, int), void* ctx) {
  if (n_chunks <= 0) return;
  if (n_threads_ == 1 || n_chunks == 1 || n_chunks > kMaxChunks) {
    for (int c = 0; c < n_chunks; ++c) fn(ctx, c, n_chunks, 0);
    return;
  }
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  next_.store((static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(n_chunks) << 16), std::memory_order_release);
  generation_.store(gen, std::memory_order_seq_cst);
  // A sleeping worker has announced itself before waiting; the seq_cst pair
  // (sleeping_ then generation_) makes sure it is either seen here or sees
  // the new generation itself.
  if (sleeping_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  work(gen, 0);
  // Chunks other threads claimed may still be running; the wait warms the
  // caller's next weights first.
  while (done_.load(std::memory_order_acquire) != n_chunks && idle_prefetch_piece(0)) {
  }
  for (int spin = 0; done_.load(std::memory_order_acquire) != n_chunks; ++spin) {
    if (spin < kSpinIterations) {
      cpu_relax();
    } else {
      sched_yield();
    }
  }
}

void ThreadPool::run_ranges_raw(int64_t units, int64_t piece, void (*fn)(void*, int64_t, int64_t, int), void* ctx) {
  if (units <= 0) return;
  if (n_threads_ == 1 || units > 0xffffffffLL) {
    fn(ctx, 0, units, 0);
    return;
  }
  for (int t = 0; t < n_threads_; ++t) {
    int64_t b, e;
    split_range(units, 1, t, n_threads_, &b, &e);
    ranges_[t].range.store((static_cast<uint64_t>(e) << 32) | static_cast<uint64_t>(b), std::memory_order_relaxed);
  }
  range_job_.piece = piece < 1 ? 1 : piece;
  range_job_.fn = fn;
  range_job_.ctx = ctx;
  // run_raw publishes the ranges and the job (its release of next_) before
  // any thread claims a chunk; a thread that claims one drains every range,
  // so a chunk claimed late finds nothing left.
  run_raw(
      n_threads_, [](void* self, int, int, int thread) { static_cast<ThreadPool*>(self)->drain_ranges(thread); }, this);
}

void ThreadPool::drain_ranges(int thread) {
  const RangeJob& job = range_job_;
  for (int k = 0; k < n_threads_; ++k) {
    const int owner = (thread + k) % n_threads_;
    std::atomic<uint64_t>& slot = ranges_[owner].range;
    uint64_t v = slot.load(std::memory_order_acquire);
    for (;;) {
      const int64_t b = static_cast<int64_t>(v & 0xffffffffu), e = static_cast<int64_t>(v >> 32);
      if (b >= e) break;
      if (k == 0) {
        // The own range: the next piece from the front.
        const int64_t take = e - b < job.piece ? e - b : job.piece;
        const uint64_t nv = (static_cast<uint64_t>(e) << 32) | static_cast<uint64_t>(b + take);
        if (!slot.compare_exchange_weak(v, nv, std::memory_order_acq_rel)) continue;
        job.fn(job.ctx, b, b + take, thread);
      } else {
        // Another's: half of what is left, from the back.
        const int64_t take = (e - b + 1) / 2;
        const uint64_t nv = (static_cast<uint64_t>(e - take) << 32) | static_cast<uint64_t>(b);
        if (!slot.compare_exchange_weak(v, nv, std::memory_order_acq_rel)) continue;
        job.fn(job.ctx, e - take, e, thread);
      }
      v = slot.load(std::memory_order_acquire);
    }
  }
}

Result<std::shared_ptr<ThreadPool>> create_thread_pool(int32_t n_threads) {
  if (n_threads < 1 || n_threads > 1024) {
    return Status::error(EMBER_ERR_INVALID_ARGUMENT, "thread pool n_threads = %d: must be in 1..1024", n_threads);
  }
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::create(n_threads));
  return std::shared_ptr<ThreadPool>(std::move(pool));
}

int32_t thread_pool_threads(const ThreadPool& pool) { return pool.size(); }

}  // namespace ember

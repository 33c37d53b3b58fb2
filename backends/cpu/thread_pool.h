// The CPU backend's thread pool: one per session, created once (prepare),
// used by every op; no thread is created per token. A job is cut into
// chunks that the threads claim one at a time (the caller takes part as
// thread 0), so a worker that is not running — a busy or oversubscribed
// machine — delays nothing: the others take its chunks. Which thread runs a
// chunk never changes what the chunk computes, so results do not depend on
// the thread count or on timing. Workers spin briefly after each job (decode
// issues about a hundred small jobs per token; a futex wake-up each would
// cost more than the work) and then sleep on a futex (std::atomic::wait).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"

namespace ember {

class ThreadPool {
 public:
  // n_threads >= 1 threads in all (n_threads - 1 workers). Fails with
  // EMBER_ERR_NO_MEMORY when the OS refuses a thread.
  static Result<std::unique_ptr<ThreadPool>> create(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls f(chunk, n_chunks, thread) once for every chunk in [0, n_chunks),
  // each on some thread of the pool (more than kMaxChunks: all on the caller) (`thread` < size(): index of per-thread
  // scratch), and returns when all calls have returned. Not reentrant; one
  // caller at a time. Allocates nothing.
  template <typename F>
  void run(int n_chunks, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run_raw(n_chunks, [](void* ctx, int chunk, int n, int thread) { (*static_cast<Fn*>(ctx))(chunk, n, thread); }, &f);
  }
  void run_raw(int n_chunks, void (*fn)(void* ctx, int chunk, int n_chunks, int thread), void* ctx);

  // Calls f(u0, u1, thread) on pieces [u0, u1) that together cover [0,
  // units) once each. Every thread owns an equal contiguous range and runs
  // it from the front, `piece` units at a time; a thread done with its own
  // takes half of what is left of another's from the back (again until
  // none is left). A thread slowed by the machine is made up for by the
  // others at the cost of an atomic per piece on a line its owner keeps,
  // where run()'s shared chunk counter costs one moved between cores per
  // chunk. Which thread runs a piece must not change what it computes.
  // Not reentrant; allocates nothing.
  template <typename F>
  void run_ranges(int64_t units, int64_t piece, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run_ranges_raw(
        units, piece, [](void* ctx, int64_t u0, int64_t u1, int thread) { (*static_cast<Fn*>(ctx))(u0, u1, thread); },
        &f);
  }
  void run_ranges_raw(int64_t units, int64_t piece, void (*fn)(void* ctx, int64_t u0, int64_t u1, int thread),
                      void* ctx);

  // Held by a caller for the whole of a series of run() calls (one step of
  // one session) when several callers share the pool: their steps then run
  // one after the other, each with all the threads.
  std::mutex& callers() { return callers_; }

  // Bytes [p, p + bytes) that thread `thread` pulls toward its core (L2)
  // while it has no chunk to run: a worker between jobs, the caller while
  // it waits for the others. Decode sets each thread's first weights of
  // the next matmul step here, so the memory bus keeps streaming through
  // the serial steps, the attention and the hand-offs between matmuls. A
  // hint: any address is safe (prefetches never fault), a later call
  // replaces it, and a thread given a job stops at once.
  void set_idle_prefetch(int thread, const void* p, size_t bytes);

 private:
  explicit ThreadPool(int n_threads) : n_threads_(n_threads) {}
  static void* worker_main(void* arg);
  void worker_loop(int index);
  // Claims and runs chunks of job `gen` until none is left.
  void work(uint32_t gen, int thread);
  // run_ranges(): thread `thread`'s own range, then the others'.
  void drain_ranges(int thread);
  // Prefetches the next piece of `thread`'s idle range; false when none
  // is left.
  bool idle_prefetch_piece(int thread);

  // run_ranges()'s ranges, one per thread, each (end << 32) | begin on a
  // line of its own, and its job.
  struct alignas(64) RangeSlot {
    std::atomic<uint64_t> range{0};
  };
  std::unique_ptr<RangeSlot[]> ranges_;
  struct RangeJob {
    int64_t piece = 1;
    void (*fn)(void*, int64_t, int64_t, int) = nullptr;
    void* ctx = nullptr;
  };
  RangeJob range_job_;
  // set_idle_prefetch()'s ranges: the next address and the end, per thread
  // on a line of its own.
  struct alignas(64) PrefetchSlot {
    std::atomic<uintptr_t> next{0};
    std::atomic<uintptr_t> end{0};
  };
  std::unique_ptr<PrefetchSlot[]> prefetch_;

  int n_threads_;
  std::vector<uint64_t> threads_;  // pthread_t of the workers
  // Chunk counts above this run on the caller alone (next_ holds 16 bits).
  static constexpr int kMaxChunks = 0xffff;
  // The current job; written by the caller before next_ is published.
  std::atomic<void (*)(void*, int, int, int)> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  alignas(64) std::atomic<uint32_t> generation_{0};
  // (generation << 32) | (chunk count << 16) | next chunk: a claim is
  // checked against its own job's count, and one from a stale job fails.
  alignas(64) std::atomic<uint64_t> next_{0};
  alignas(64) std::atomic<int> done_{0};
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stop_{false};
  std::mutex callers_;
};

// [begin, end) of `count` items for part `thread` of n, split into equal runs
// whose boundaries are multiples of `align` (the last run takes the rest).
inline void split_range(int64_t count, int64_t align, int thread, int n, int64_t* begin, int64_t* end) {
  const int64_t units = (count + align - 1) / align;
  const int64_t per = units / n, extra = units % n;
  const int64_t u0 = thread * per + (thread < extra ? thread : extra);
  const int64_t u1 = u0 + per + (thread < extra ? 1 : 0);
  *begin = u0 * align < count ? u0 * align : count;
  *end = u1 * align < count ? u1 * align : count;
}

}  // namespace ember

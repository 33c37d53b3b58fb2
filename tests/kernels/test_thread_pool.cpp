// The CPU thread pool under churn: many jobs of 1..8 chunks back to back,
// with pauses long enough for the workers to go to sleep, on 2..4 threads.
// Every chunk of every job must run exactly once and the caller must not
// return before they have. (A claim checked against the next job's chunk
// count once ran a chunk twice and left the caller waiting forever.)
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "backends/cpu/thread_pool.h"

TEST_SUITE("kernels") {

TEST_CASE("thread pool: every chunk of every job runs exactly once, and run() returns after all of them") {
  for (int threads = 2; threads <= 4; ++threads) {
    CAPTURE(threads);
    auto pool = ember::ThreadPool::create(threads);
    REQUIRE(pool.is_ok());
    std::mt19937 rng(static_cast<unsigned>(threads));
    std::vector<std::atomic<int>> hits(8);
    int bad = 0;
    for (int job = 0; job < 60000 && bad == 0; ++job) {
      const int n = 1 + static_cast<int>(rng() % 8);
      for (auto& h : hits) h.store(0, std::memory_order_relaxed);
      std::atomic<int> finished{0};
      pool.value()->run(n, [&](int chunk, int n_chunks, int thread) {
        if (n_chunks != n || chunk < 0 || chunk >= n || thread < 0 || thread >= threads) {
          hits[0].fetch_add(100);
        } else {
          hits[chunk].fetch_add(1);
        }
        finished.fetch_add(1);
      });
      if (finished.load() != n) ++bad;
      for (int c = 0; c < n; ++c) {
        if (hits[c].load() != 1) ++bad;
      }
      if (rng() % 2000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK(bad == 0);
  }
}

// run_ranges: pieces cover [0, units) once each, whatever the thread count
// and whichever thread is slow. One thread (chosen per job) sleeps in its
// first piece, so the others must take the rest of its range from the back.
TEST_CASE("thread pool: run_ranges covers every unit exactly once, and the others take a slow thread's share") {
  for (int threads = 1; threads <= 4; ++threads) {
    CAPTURE(threads);
    auto pool = ember::ThreadPool::create(threads);
    REQUIRE(pool.is_ok());
    std::mt19937 rng(static_cast<unsigned>(threads) + 17);
    std::vector<std::atomic<int>> hits(300);
    int bad = 0, stolen_jobs = 0;
    for (int job = 0; job < 3000 && bad == 0; ++job) {
      const int64_t units = 1 + static_cast<int64_t>(rng() % 300);
      const int64_t piece = 1 + static_cast<int64_t>(rng() % 8);
      const int slow = job % 50 == 0 ? static_cast<int>(rng() % threads) : -1;
      for (auto& h : hits) h.store(0, std::memory_order_relaxed);
      std::vector<std::atomic<int>> ran_by(threads);
      std::atomic<int> calls{0};
      pool.value()->run_ranges(units, piece, [&](int64_t u0, int64_t u1, int thread) {
        calls.fetch_add(1);
        if (u0 < 0 || u1 > units || u0 >= u1 || thread < 0 || thread >= threads) {
          hits[0].fetch_add(1000);
          return;
        }
        if (thread == slow && ran_by[thread].fetch_add(1) == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        for (int64_t u = u0; u < u1; ++u) hits[u].fetch_add(1);
      });
      for (int64_t u = 0; u < units; ++u) {
        if (hits[u].load() != 1) ++bad;
      }
      // The slow thread ran one piece and slept through the rest: the
      // others took its range (more calls than the slow thread's alone).
      if (slow >= 0 && threads > 1 && units >= 2 * threads * piece && ran_by[slow].load() == 1) ++stolen_jobs;
    }
    CHECK(bad == 0);
    if (threads > 1) CHECK(stolen_jobs > 0);
  }
}

// Idle prefetch (decode warms its next weights between jobs): a hint that
// never changes what runs. Ranges over real memory, null, an address
// nothing maps, more than the cap, and ones replaced while the workers are
// still warming the last: every chunk still runs once and a bad thread
// index is ignored. (TSan and ASan run this
// too: the ranges are read and replaced across threads.)
TEST_CASE("thread pool: idle prefetch ranges of any address never change what runs") {
  std::vector<uint8_t> weights(4 << 20, 1);
  const uint8_t* unmapped = reinterpret_cast<const uint8_t*>(uintptr_t{0xdead0000});
  for (int threads = 1; threads <= 3; ++threads) {
    CAPTURE(threads);
    auto pool = ember::ThreadPool::create(threads);
    REQUIRE(pool.is_ok());
    ember::ThreadPool& tp = *pool.value();
    tp.set_idle_prefetch(-1, weights.data(), 64);
    tp.set_idle_prefetch(threads, weights.data(), 64);
    std::vector<std::atomic<int>> hits(64);
    std::vector<std::atomic<int>> by_thread(threads);
    int bad = 0;
    for (int job = 0; job < 4000 && bad == 0; ++job) {
      for (int t = 0; t < threads; ++t) {
        switch ((job + t) % 5) {
          case 0: tp.set_idle_prefetch(t, weights.data() + (job * 4096) % (3 << 20), 256 << 10); break;
          case 1: tp.set_idle_prefetch(t, nullptr, 1 << 20); break;
          case 2: tp.set_idle_prefetch(t, unmapped, 64 << 10); break;
          case 3: tp.set_idle_prefetch(t, weights.data(), size_t{1} << 40); break;  // capped
          default: tp.set_idle_prefetch(t, weights.data() + 3, 0); break;
        }
      }
      for (auto& h : hits) h.store(0, std::memory_order_relaxed);
      tp.run_ranges(64, 2, [&](int64_t u0, int64_t u1, int thread) {
        if (thread < 0 || thread >= threads) {
          hits[0].fetch_add(1000);
          return;
        }
        by_thread[thread].fetch_add(1);
        for (int64_t u = u0; u < u1; ++u) hits[u].fetch_add(1);
      });
      for (auto& h : hits) {
        if (h.load() != 1) ++bad;
      }
    }
    CHECK(bad == 0);
    // Which threads took part depends on timing (under TSan the caller may
    // drain every job before a worker wakes), so only the total is checked.
    int total = 0;
    for (int t = 0; t < threads; ++t) total += by_thread[t].load();
    CHECK(total >= 4000);
  }
}

}  // TEST_SUITE

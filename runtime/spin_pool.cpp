// kiln's own worker pool, which ran every parallel loop before oneTBB did (runtime/parallel.h);
// kept beside TBB for measuring the two against each other (KILN_THREADS_IMPL=pool).
//
// Two costs shape it, measured on the 2-core VMs kiln is benchmarked on: waking a thread asleep
// on a condition variable took ~43 us (median; 8 us at best), a spinning one saw new work in
// 0.3 us, and a kernel runs for 20-200 us. Halide's own pool slept between kernels (after ~40
// yields) and handed out tasks one at a time under a lock: LayerNorm's backward row kernel ran
// in 130 us on one thread and in 160-200 us on two. So here workers spin for a while after each
// loop before they sleep (pause, then sched_yield, so that a thread with work to do, maybe in
// another process, gets the core), and a loop takes no lock per iteration.
//
// A loop is published with a generation number, odd while it is being set up. A worker counts
// itself in `active_` before it looks at a loop and checks the generation again after; the
// caller makes the number odd before it waits for `active_` to drain, then writes the loop. Each
// side writes, then reads the other's variable (sequentially consistent), so a worker either
// sees the odd number and backs off, or the caller waits for it to leave.
#include "runtime/spin_pool.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "runtime/config.h"

namespace kiln {
namespace {

constexpr int kMaxThreads = 64;
// How long a worker looks for the next loop before it sleeps: a training step's kernels come
// tens of microseconds apart. Spinning longer (2 ms) measured no faster on the benchmarks, and
// it takes a core from other processes (tests run two at a time) for that long after each loop.
constexpr auto kSpin = std::chrono::microseconds(500);
// A wait spins with pause this many times (~10 us) and then yields the core at each try.
constexpr int kPausesBeforeYield = 256;

// Set on the pool's threads and on a caller while its loop runs: loops inside run serially.
thread_local bool t_in_loop = false;

class Pool {
 public:
  void run(int n, TaskBody body, void* ctx) {
    const int threads = std::min(get_num_threads(), kMaxThreads);
    if (n <= 1 || threads <= 1 || t_in_loop || !caller_.try_lock()) return serial(n, body, ctx);
    std::lock_guard<std::mutex> hold(caller_, std::adopt_lock);
    if (int(workers_.size()) != threads - 1 && !restart(threads - 1)) return serial(n, body, ctx);

    gen_.fetch_add(1);  // odd: workers leave this loop alone
    for (Backoff backoff; active_.load() != 0;) backoff.pause();
    body_ = body;
    ctx_ = ctx;
    parts_ = std::min(n, threads);
    for (int p = 0; p < parts_; ++p) {
      ranges_[p].next.store(int(int64_t(n) * p / parts_), std::memory_order_relaxed);
      ranges_[p].end = int(int64_t(n) * (p + 1) / parts_);
    }
    done_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    gen_.fetch_add(1);  // even: published
    // One sleeper is woken here, and each woken worker wakes the next: the caller pays for one
    // wake-up (a system call, ~17 us measured) before it starts its own range, not for all.
    if (sleepers_.load() > 0) wake_one();
    t_in_loop = true;
    run_ranges(0);
    t_in_loop = false;
    for (Backoff backoff; done_.load(std::memory_order_acquire) < n;) backoff.pause();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // 64-bit, so that the threads' increments past the end cannot wrap near INT_MAX.
  struct alignas(64) Range {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };

  // Spins with pause at first, then yields the core at each try: more threads than cores, or
  // another process on them, must not leave the thread the loop waits for without a core.
  struct Backoff {
    int tries = 0;
    void pause() {
      if (++tries < kPausesBeforeYield) {
        _mm_pause();
      } else {
        sched_yield();
      }
    }
  };

  // As the pool runs a loop: every iteration, then the first exception.
  static void serial(int n, TaskBody body, void* ctx) {
    std::exception_ptr error;
    for (int i = 0; i < n; ++i) {
      try {
        body(ctx, i);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }

  void wake_one() {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_one();
  }

  // Its own range first (participant `first`: the caller is 0), then what is left of the others'.
  void run_ranges(int first) {
    for (int k = 0; k < parts_; ++k) {
      Range& r = ranges_[(first + k) % parts_];
      for (int64_t i; (i = r.next.fetch_add(1, std::memory_order_relaxed)) < r.end;) {
        try {
          body_(ctx_, int(i));
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex_);
          if (!error_) error_ = std::current_exception();
        }
        done_.fetch_add(1, std::memory_order_release);
      }
    }
  }

  // Returns the generation of a published loop other than `seen`, or 0 when stopping.
  uint64_t next_loop(uint64_t seen) {
    auto published = [&]() -> uint64_t {
      if (stopping_.load()) return 0;
      const uint64_t g = gen_.load();
      return g != seen && g % 2 == 0 ? g : ~uint64_t(0);
    };
    const auto give_up = std::chrono::steady_clock::now() + kSpin;
    Backoff backoff;
    do {
      for (int i = 0; i < 64; ++i) {
        if (uint64_t g = published(); g != ~uint64_t(0)) return g;
        backoff.pause();
      }
    } while (std::chrono::steady_clock::now() < give_up);
    uint64_t g;
    {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return (g = published()) != ~uint64_t(0); });
      sleepers_.fetch_sub(1);
    }
    if (g != 0 && sleepers_.load() > 0) wake_one();  // the next in the chain (see run)
    return g;
  }

  // `seen`: the generation when the thread was started (the loops after it are its to join).
  void work(int participant, uint64_t seen) {
    t_in_loop = true;
    while (uint64_t g = next_loop(seen)) {
      seen = g;
      active_.fetch_add(1);
      if (gen_.load() == g) run_ranges(participant % parts_);
      active_.fetch_sub(1);
    }
  }

  // Stops the workers and starts `workers` new ones. False when the system would not give threads
  // (the loop then runs serially; the next one tries again).
  bool restart(int workers) {
    stopping_.store(true);
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
    stopping_.store(false);
    const uint64_t now = gen_.load();
    try {
      for (int w = 0; w < workers; ++w) workers_.emplace_back([this, w, now] { work(w + 1, now); });
    } catch (const std::system_error&) {
      return false;
    }
    return true;
  }

  std::mutex caller_;  // one loop at a time
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> active_{0};  // workers looking at the current loop
  std::atomic<bool> stopping_{false};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};

  // The loop.
  TaskBody body_ = nullptr;
  void* ctx_ = nullptr;
  int parts_ = 1;
  Range ranges_[kMaxThreads];
  alignas(64) std::atomic<int> done_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Never destroyed: its threads may outlive static destructors. A child process after fork has
// none of the parent's workers (and maybe a lock a worker held), so it starts a pool of its own.
Pool* g_pool = nullptr;

Pool& pool() {
  static const bool once = [] {
    g_pool = new Pool;
    pthread_atfork(nullptr, nullptr, [] { g_pool = new Pool; });
    return true;
  }();
  (void)once;
  return *g_pool;
}

}  // namespace

void spin_pool_parallel_for(int n, TaskBody body, void* ctx) { pool().run(n, body, ctx); }

}  // namespace kiln

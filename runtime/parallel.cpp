// runtime/parallel.h on oneTBB.
//
// Loops run in one task arena as wide as get_num_threads() (the caller's slot and the rest for
// TBB's workers), replaced when the count changes; a loop still running in the old arena keeps it
// alive. Background jobs run in an arena of their own with no slot for the caller, so that its
// workers are never the ones a loop waits for. TBB's limit on workers in all (one fewer than the
// cores by default) is raised to make room for both when they need more.
#include "runtime/parallel.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/task_scheduler_observer.h>
#include <pthread.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "runtime/config.h"

#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
extern "C" void __tsan_ignore_thread_begin();  // exported by the runtime, in no header of gcc 12
extern "C" void __tsan_ignore_thread_end();
#endif

namespace kiln {
namespace {

// ThreadSanitizer sees none of TBB's synchronization (libtbb is not instrumented), so the
// accesses of TBB's code, its inline templates included, are ignored on every thread that runs
// it, and kiln's code inside a loop body or a job is checked, ordered after the code that started
// the loop and before the code after it (acquire and release on the loop's address). Elsewhere
// these compile to nothing.
#ifdef __SANITIZE_THREAD__
thread_local bool t_tsan_ignoring = false;
void tsan_ignore(bool on) {
  if (on)
    __tsan_ignore_thread_begin();
  else
    __tsan_ignore_thread_end();
  t_tsan_ignoring = on;
}
// Around a call into TBB from kiln's code.
struct TsanIntoTbb {
  explicit TsanIntoTbb(void* sync) : sync(sync), was_ignoring(t_tsan_ignoring) {
    __tsan_release(sync);
    if (!was_ignoring) tsan_ignore(true);
  }
  ~TsanIntoTbb() {
    if (!was_ignoring) tsan_ignore(false);
    __tsan_acquire(sync);
  }
  void* sync;
  bool was_ignoring;
};
// Around kiln's code called back from TBB.
struct TsanOutOfTbb {
  explicit TsanOutOfTbb(void* sync) : sync(sync), was_ignoring(t_tsan_ignoring) {
    if (was_ignoring) tsan_ignore(false);
    __tsan_acquire(sync);
  }
  ~TsanOutOfTbb() {
    __tsan_release(sync);
    if (was_ignoring) tsan_ignore(true);
  }
  void* sync;
  bool was_ignoring;
};
// A worker's accesses are ignored from when it enters an arena to when it leaves, or, where an
// arena went before its workers left it (its observer with it), until the thread ends: a thread
// may not end while ignored.
struct TsanEndIgnoreAtExit {
  ~TsanEndIgnoreAtExit() {
    if (t_tsan_ignoring) tsan_ignore(false);
  }
};
thread_local TsanEndIgnoreAtExit t_tsan_end_ignore_at_exit;
class TsanWorkerObserver : public tbb::task_scheduler_observer {
 public:
  explicit TsanWorkerObserver(tbb::task_arena& arena) : tbb::task_scheduler_observer(arena) { observe(true); }
  ~TsanWorkerObserver() override { observe(false); }
  void on_scheduler_entry(bool worker) override {
    (void)&t_tsan_end_ignore_at_exit;  // constructed on this thread, so destroyed when it ends
    if (worker && !t_tsan_ignoring) tsan_ignore(true);
  }
  void on_scheduler_exit(bool worker) override {
    if (worker && t_tsan_ignoring) tsan_ignore(false);
  }
};
#else
struct TsanIntoTbb {
  explicit TsanIntoTbb(void*) {}
};
struct TsanOutOfTbb {
  explicit TsanOutOfTbb(void*) {}
};
#endif

// A task arena, and under ThreadSanitizer what its workers do.
struct Arena {
  Arena(int threads, unsigned caller_slots) : arena(threads, caller_slots) {}
  tbb::task_arena arena;
#ifdef __SANITIZE_THREAD__
  TsanWorkerObserver observer{arena};
#endif
};

// The loops' arena and the limit on TBB's workers.
class Threads {
 public:
  std::shared_ptr<Arena> loop_arena(int threads) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!loops_ || loop_threads_ != threads) {
      loops_ = std::make_shared<Arena>(threads, 1);
      loop_threads_ = threads;
      update_limit();
    }
    return loops_;
  }
  void add_background(int threads) {  // negative: an arena gone
    std::lock_guard<std::mutex> lock(mutex_);
    background_threads_ += threads;
    update_limit();
  }
  // After fork, in the child's only thread: the parent's limit holds here too (of two, the lower
  // would), so the child's own state takes it over.
  void take_limit(Threads& parent) {
    limit_ = std::move(parent.limit_);
    limited_to_ = parent.limited_to_;
  }

 private:
  // Every loop thread but the caller, and every background one, may be a worker at once. Only
  // ever raised: TBB's workers took tens of milliseconds to join a loop after a lower limit.
  void update_limit() {
    const int wanted = std::max(tbb::info::default_concurrency(), std::max(loop_threads_, 1) + background_threads_);
    if (wanted <= limited_to_) return;
    limit_.reset();  // of two limits the lower holds
    limit_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, size_t(wanted));
    limited_to_ = wanted;
  }

  std::mutex mutex_;
  std::shared_ptr<Arena> loops_;
  int loop_threads_ = 0;
  int background_threads_ = 0;
  std::unique_ptr<tbb::global_control> limit_;
  int limited_to_ = 0;
};

// Never destroyed: loops may run during static destruction. A child process after fork starts
// afresh (its arenas' workers are the parent's).
Threads* g_threads = nullptr;
Threads& threads_state() {
  static const bool once = [] {
    g_threads = new Threads;
    pthread_atfork(nullptr, nullptr, [] {
      Threads* parent = g_threads;
      g_threads = new Threads;
      g_threads->take_limit(*parent);
    });
    return true;
  }();
  (void)once;
  return *g_threads;
}

// Set while a thread runs a loop's body: loops inside run serially.
thread_local bool t_in_loop = false;

// A loop's body and the first exception it threw.
struct Loop {
  TaskBody body;
  void* ctx;
  std::mutex error_mutex;
  std::exception_ptr error;

  void run(int begin, int end) {
    for (int i = begin; i < end; ++i) {
      try {
        body(ctx, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
};

}  // namespace

void parallel_for(int n, TaskBody body, void* ctx) {
  const int threads = get_num_threads();
  Loop loop{body, ctx, {}, {}};
  if (n <= 1 || threads <= 1 || t_in_loop) {
    loop.run(0, n);  // a single iteration may start a parallel loop of its own
  } else {
    std::shared_ptr<Arena> arena = threads_state().loop_arena(threads);
    TsanIntoTbb tsan(&loop);
    // Static: one contiguous range per thread, as many as the arena is wide (a range no worker
    // took is run by the caller), with no finer splitting to pay for.
    arena->arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int>(0, n),
          [&](const tbb::blocked_range<int>& r) {
            TsanOutOfTbb out(&loop);
            const bool outer = t_in_loop;
            t_in_loop = true;
            loop.run(r.begin(), r.end());
            t_in_loop = outer;
          },
          tbb::static_partitioner());
    });
  }
  if (loop.error) std::rethrow_exception(loop.error);
}

int64_t parallel_ranges(int64_t n, int64_t grain) {
  if (t_in_loop) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / std::max<int64_t>(grain, 1)));
}

struct BackgroundTasks::State {
  std::mutex mutex;            // guards the arena's start
  std::optional<Arena> arena;  // started by the first job, as wide as get_num_threads() then
  int threads = 0;
  tbb::task_group group;
  // Caught here, not left to the group, which would cancel the jobs not yet started.
  std::mutex error_mutex;
  std::exception_ptr error;
};

BackgroundTasks::BackgroundTasks() : state_(std::make_unique<State>()) {}

BackgroundTasks::~BackgroundTasks() {
  try {
    wait();
  } catch (...) {  // a job's exception nobody waited for
  }
  if (state_->arena) threads_state().add_background(-state_->threads);
}

void BackgroundTasks::run(std::function<void()> job) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.arena) {
    s.threads = std::max(1, get_num_threads());
    threads_state().add_background(s.threads);
    s.arena.emplace(s.threads, 0);
  }
  TsanIntoTbb tsan(&s);
  s.arena->arena.enqueue(s.group.defer([&s, job = std::move(job)] {
    TsanOutOfTbb out(&s);
    try {
      job();
    } catch (...) {
      std::lock_guard<std::mutex> lock(s.error_mutex);
      if (!s.error) s.error = std::current_exception();
    }
  }));
}

void BackgroundTasks::wait() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.arena) return;
  }
  {
    TsanIntoTbb tsan(&s);
    s.arena->arena.execute([&] { s.group.wait(); });
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(s.error_mutex);
    std::swap(error, s.error);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace kiln

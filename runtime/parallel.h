// kiln's threads, on oneTBB: every parallel loop (compiled kernels: the Halide backend hands its
// runtime's parallel loops here; the pieces of split BLAS calls, OpenBLAS itself running
// single-threaded; the interpreter's slices) and the background compilation of kernels. Loops run
// in a task arena as wide as set_num_threads says. Callers see this header only, never TBB's.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>

namespace kiln {

// Runs body(ctx, i) for every i in [0, n) and returns when all have returned. Iterations go to
// the threads in contiguous ranges, the calling thread taking part, so that consecutive loops over
// the same data find most of it in the same core's cache. A loop started inside another runs on
// the calling thread alone; loops from several threads at once share the threads. The first
// exception thrown by a body is rethrown here, once every iteration has ended. The C-style form,
// for callers behind a C interface (the Halide kernels' parallel loops); C++ callers use
// parallel_for_ranges.
using TaskBody = void (*)(void* ctx, int i);
void parallel_for(int n, TaskBody body, void* ctx);

// How many ranges parallel_for_ranges makes of [0, n) now: one per thread at most, none shorter
// than `grain` (so one where n < 2 * grain, or inside another loop).
int64_t parallel_ranges(int64_t n, int64_t grain);

// Runs body(begin, end) over parallel_ranges(n, grain) contiguous ranges that cover [0, n) (one,
// possibly empty, where n <= 0), as parallel_for runs its iterations. A body that takes
// (range, begin, end) is told which range it runs, to keep per-range partial results.
template <typename F>
void parallel_for_ranges(int64_t n, int64_t grain, F&& body) {
  const int64_t ranges = parallel_ranges(n, grain);
  auto run = [&](int64_t r) {
    const int64_t begin = n * r / ranges, end = n * (r + 1) / ranges;
    if constexpr (std::is_invocable_v<F&, int64_t, int64_t, int64_t>)
      body(r, begin, end);
    else
      body(begin, end);
  };
  if (ranges <= 1) return run(0);
  parallel_for(
      int(ranges), [](void* ctx, int r) { (*static_cast<decltype(run)*>(ctx))(r); }, &run);
}

// The grain, in items, of a loop over `count` items that hold `work` (element visits) in all,
// for ranges of at least `work_grain` of that work each.
inline int64_t grain_for_work(int64_t count, int64_t work, int64_t work_grain) {
  if (work <= 0 || count <= 0) return count;
  return std::max<int64_t>(1, int64_t(std::ceil(double(work_grain) * double(count) / double(work))));
}

// Long jobs (compiling a kernel) run beside the caller: run() returns at once, and at most
// get_num_threads() of them (as it was at the first run) run at a time, on threads of their own
// that parallel loops do not wait for. A job should not throw: wait() rethrows the first
// exception, after the other jobs have ended.
class BackgroundTasks {
 public:
  BackgroundTasks();
  ~BackgroundTasks();  // waits for the jobs left
  BackgroundTasks(const BackgroundTasks&) = delete;
  BackgroundTasks& operator=(const BackgroundTasks&) = delete;

  void run(std::function<void()> job);
  // Returns when every job run so far has returned (the caller may run some of them).
  void wait();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln

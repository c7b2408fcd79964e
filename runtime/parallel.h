// kiln's threads, on oneTBB: every parallel loop (compiled kernels: the Halide backend hands its
// runtime's parallel loops here; the pieces of split BLAS calls, OpenBLAS itself running
// single-threaded; the interpreter's slices) and the background compilation of kernels. Loops run
// in a task arena as wide as set_num_threads says. Callers see this header only, never TBB's.
#pragma once
#include <functional>
#include <memory>

namespace kiln {

// Runs body(ctx, i) for every i in [0, n) and returns when all have returned. Iterations go to
// the threads in contiguous ranges, the calling thread taking part, so that consecutive loops over
// the same data find most of it in the same core's cache. A loop started inside another runs on
// the calling thread alone; loops from several threads at once share the threads. The first
// exception thrown by a body is rethrown here, once every iteration has ended.
using TaskBody = void (*)(void* ctx, int i);
void parallel_for(int n, TaskBody body, void* ctx);

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

// Background compilation of CUDA kernels (Config::compile_in_background): a flush that misses a
// kernel queues its build (NVRTC, then loading the module) here and runs the kernel node by node
// on the per-op kernels (per_op.h) meanwhile; the job puts the loaded functions where the next
// flush finds them. A key is queued once; a build that failed is remembered, so that a later flush
// compiles it at once and reports NVRTC's error.
//
// At exit the workers are stopped (each finishes the build it started, queued ones are dropped)
// before NVRTC's statics and the driver go: from a thread_local destructor of the main thread
// (which exit() runs before any static destructor), and from an atexit handler registered again
// after each build (for queues first used from another thread), as codegen/halide/compile_queue.h.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>

#include "runtime/parallel.h"

namespace kiln::codegen::cuda {

class CompileQueue {
 public:
  // Queues `build` for `key` unless it was queued before; `build` throws kiln::Error on failure.
  void submit(const std::string& key, std::function<void()> build);
  // Whether the build of `key` failed.
  bool failed(const std::string& key);
  // Whether `key` was queued and its build did not fail (it may have finished).
  bool queued(const std::string& key);
  // Builds queued and not finished yet.
  int64_t pending();
  // Returns when every queued build has finished (tests; a device turned off).
  void wait();
  // Lets running builds finish and drops the others (at exit).
  void stop();

 private:
  std::mutex mutex_;
  std::unordered_set<std::string> submitted_, failed_;
  int64_t pending_ = 0;
  bool stopping_ = false, exit_hooked_ = false;
  BackgroundTasks background_;
};

CompileQueue& compile_queue();

}  // namespace kiln::codegen::cuda

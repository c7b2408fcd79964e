#pragma once
#include <deque>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/halide/launcher.h"
#include "runtime/parallel.h"

namespace kiln::codegen::halide {

// Background compilation (Config::compile_in_background): a background task per queued kernel
// (runtime/parallel.h) builds it and leaves it for the next flush to take. A job holds a copy of its kernel with
// nodes of its own: the flush's nodes are freed before the job runs.
//
// At exit the workers are stopped (each finishes the kernel it is building) by a handler that
// must run before the destructors of every static a compilation uses, Halide's and LLVM's
// function-local ones included, which come to exist during the first compilations (a process
// exiting while a first build ran on a worker aborted in LLVM). Flushes on the main thread stop
// them from a thread_local destructor of that thread, which exit() runs before any static's; a
// queue first used from another thread compiles its first kernel on that thread, before any
// worker starts, and registers an atexit handler again after each build (handlers run in the
// reverse order of registration; a second run is a no-op).
class CompileQueue {
 public:
  // Whether `k` is left to the workers; false: it was built here, at once (the first one of a
  // queue not started from the main thread), and is in the kernel cache's memory.
  bool submit(const fusion::Kernel& k, const std::string& key);
  // Puts what the workers built since the last call into the kernel cache's memory.
  void take_built();
  // Lets the workers finish the kernels they are building and start no other (at exit: see above).
  void stop();

 private:
  struct Job {
    std::string key;
    fusion::Kernel kernel;
    std::vector<ir::NodePtr> nodes;  // what kernel's nodes and reads point to
  };
  static void register_stop_at_exit();
  void build_one();  // the job at the queue's front

  std::mutex background_mutex_;  // guards the state below
  std::deque<Job> queue_;
  std::unordered_set<std::string> submitted_;
  std::vector<std::pair<std::string, KernelFn>> built_;  // not yet in the kernel cache
  BackgroundTasks background_;                           // the builds of queue_'s jobs
  bool started_ = false;                                 // the first kernel was built on the caller's thread
  bool stopping_ = false;
};

CompileQueue& compile_queue();

}  // namespace kiln::codegen::halide

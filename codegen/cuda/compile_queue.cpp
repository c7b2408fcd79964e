#include "codegen/cuda/compile_queue.h"

#include <unistd.h>

#include <cstdlib>

#include "runtime/error.h"
#include "runtime/log.h"

namespace kiln::codegen::cuda {
namespace {

struct StopAtMainThreadExit {
  ~StopAtMainThreadExit() { compile_queue().stop(); }
};

}  // namespace

void CompileQueue::submit(const std::string& key, std::function<void()> build) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || !submitted_.insert(key).second) return;
    ++pending_;
    if (!exit_hooked_ && getpid() == gettid()) {
      exit_hooked_ = true;
      static thread_local StopAtMainThreadExit stop_at_exit;
      (void)stop_at_exit;  // constructed here, on the main thread
    }
  }
  background_.run([this, key, build = std::move(build)] {
    bool skip;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      skip = stopping_;
    }
    bool ok = true;
    if (!skip) try {
        build();
      } catch (const std::exception& e) {
        ok = false;
        log().warn("cuda: background compile of {} failed: {}", key, e.what());
      }
    std::atexit([] { compile_queue().stop(); });  // after NVRTC's statics registered theirs
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ok) failed_.insert(key);
    --pending_;
  });
}

bool CompileQueue::failed(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_.count(key) > 0;
}

bool CompileQueue::queued(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return submitted_.count(key) > 0 && failed_.count(key) == 0;
}

int64_t CompileQueue::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_;
}

void CompileQueue::wait() { background_.wait(); }

void CompileQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  background_.wait();
}

CompileQueue& compile_queue() {
  static CompileQueue queue;
  return queue;
}

}  // namespace kiln::codegen::cuda

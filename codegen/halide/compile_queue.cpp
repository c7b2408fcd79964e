#include "codegen/halide/compile_queue.h"

#include <unistd.h>

#include <cstdlib>

#include "codegen/halide/kernel_cache.h"
#include "runtime/config.h"

namespace kiln::codegen::halide {

using fusion::Kernel;

void CompileQueue::register_stop_at_exit() {
  std::atexit([] { compile_queue().stop(); });
}

// Stops the workers when the main thread exits: a thread's thread_local destructors run in exit()
// before every static destructor and atexit handler.
struct StopAtMainThreadExit {
  ~StopAtMainThreadExit() { compile_queue().stop(); }
};

bool CompileQueue::submit(const Kernel& k, const std::string& key) {
  std::lock_guard<std::mutex> lock(background_mutex_);
  if (!started_) {
    started_ = true;
    if (getpid() == gettid()) {
      static thread_local StopAtMainThreadExit stop_at_exit;
      (void)stop_at_exit;  // constructed here, on the main thread
    } else {
      kernel_cache().remember(key, kernel_cache().load_or_build_or_null(k, key));
      register_stop_at_exit();
      return false;
    }
  }
  if (!submitted_.insert(key).second) return true;
  Job job{key, k, {}};
  auto own = [&](ir::Node* n) {
    auto copy = std::make_shared<ir::Node>();
    copy->op = n->op;
    copy->dtype = n->dtype;
    copy->shape = n->shape;
    copy->ints = n->ints;
    copy->scalar = n->scalar;
    copy->int_scalar = n->int_scalar;
    job.nodes.push_back(copy);
    return copy.get();
  };
  for (auto& kn : job.kernel.nodes) kn.node = own(kn.node);
  for (auto& r : job.kernel.reads) r.node = own(r.node);
  job.kernel.library_node = nullptr;
  queue_.push_back(std::move(job));
  background_.run([this] { build_one(); });
  return true;
}
void CompileQueue::build_one() {
  Job job;
  {
    std::lock_guard<std::mutex> lock(background_mutex_);
    if (stopping_ || queue_.empty()) return;
    job = std::move(queue_.front());
    queue_.pop_front();
  }
  KernelFn fn = kernel_cache().load_or_build_or_null(job.kernel, job.key);
  register_stop_at_exit();
  std::lock_guard<std::mutex> lock(background_mutex_);
  built_.emplace_back(job.key, fn);
}
void CompileQueue::take_built() {
  std::lock_guard<std::mutex> lock(background_mutex_);
  for (auto& [key, fn] : built_) kernel_cache().remember(key, fn);
  built_.clear();
}
void CompileQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(background_mutex_);
    stopping_ = true;
  }
  background_.wait();
}

CompileQueue& compile_queue() {
  static CompileQueue queue;
  return queue;
}

}  // namespace kiln::codegen::halide

#include "frontend/distributed/collective_queue.h"

#include <algorithm>

#include "frontend/autograd.h"
#include "frontend/ops.h"

namespace kiln::distributed::detail {

CollectiveQueue::CollectiveQueue(std::string backend, std::function<void()> on_thread_start)
    : backend_(std::move(backend)) {
  worker_ = std::thread([this, on_thread_start = std::move(on_thread_start)] {
    if (on_thread_start) on_thread_start();
    run();
  });
}

CollectiveQueue::~CollectiveQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  worker_.join();  // what was queued runs first, each bounded by its timeout
}

std::shared_ptr<Work> CollectiveQueue::enqueue(const std::string& name, std::function<void()> job) {
  auto work = std::make_shared<Work>();
  work->name = name;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    KILN_CHECK(!stopping_, name, ": the process group was destroyed");
    queue_.emplace_back(work, std::move(job));
  }
  queued_.notify_one();
  return work;
}

void CollectiveQueue::run() {
  for (;;) {
    std::pair<std::shared_ptr<Work>, std::function<void()>> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      job.second();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(Error(job.first->name + " (" + backend_ + ") failed: " + e.what()));
    }
    job.first->finish(error);
  }
}

Staged stage(const Tensor& t, const std::string& call) {
  KILN_CHECK(t.defined(), call, ": undefined tensor");
  Staged s;
  s.tensor = t;
  s.memory = t.is_contiguous() ? t : t.contiguous();
  s.elements = size_t(t.numel());
  s.data = s.elements > 0 ? s.memory.data_ptr() : nullptr;
  return s;
}

void write_back(const Staged& s) {
  if (s.memory.is_same(s.tensor)) return;
  autograd::NoGradGuard no_grad;
  s.tensor.copy_(s.memory);
}

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "] " + dtype_name(t.dtype());
}

std::vector<char> signature_bytes(const std::string& signature) {
  std::vector<char> bytes(kSignatureBytes, 0);
  std::copy_n(signature.begin(), std::min(signature.size(), kSignatureBytes - 1), bytes.begin());
  return bytes;
}

void compare_signatures(const std::vector<char>& gathered, int rank, int size) {
  const std::string mine(gathered.data() + size_t(rank) * kSignatureBytes);
  for (int r = 0; r < size; ++r) {
    const std::string theirs(gathered.data() + size_t(r) * kSignatureBytes);
    if (theirs != mine)
      throw Error("the ranks' calls differ: rank " + std::to_string(rank) + " called " + mine + ", rank " +
                  std::to_string(r) + " called " + theirs);
  }
}

}  // namespace kiln::distributed::detail

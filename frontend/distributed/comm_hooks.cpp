#include "frontend/distributed/comm_hooks.h"

#include "frontend/autograd.h"
#include "frontend/distributed/distributed.h"
#include "frontend/ops.h"

namespace kiln::distributed {

Future::Future(Tensor value) : done_(true), value_(std::move(value)) {}

Future::Future(std::shared_ptr<Work> work, Tensor value) : value_(std::move(value)), work_(std::move(work)) {
  KILN_CHECK(work_, "Future: no work given");
}

void Future::set_result(Tensor value) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_CHECK(!done_ && !work_ && !parent_, "Future::set_result: this future already has a result or a source");
  value_ = std::move(value);
  done_ = true;
  changed_.notify_all();
}

void Future::set_exception(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_CHECK(!done_ && !work_ && !parent_, "Future::set_exception: this future already has a result or a source");
  error_ = std::move(error);
  done_ = true;
  changed_.notify_all();
}

bool Future::done() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (done_) return true;
  if (work_) return work_->isCompleted();
  if (!parent_) return false;
  auto parent = parent_;
  lock.unlock();
  return parent->done();
}

Tensor Future::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Another thread may be completing it (running the callback), or may set the result.
  while (!done_ && (running_ || (!work_ && !parent_))) changed_.wait(lock);
  if (!done_) {
    running_ = true;
    auto work = work_;
    auto parent = parent_;
    auto callback = callback_;
    Tensor value = value_;
    lock.unlock();
    std::exception_ptr error;
    try {
      if (work) {
        work->wait();
      } else {
        // As in PyTorch, the callback runs on a failed future too; its value() rethrows.
        try {
          parent->wait();
        } catch (...) {
        }
        value = callback(*parent);
      }
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    value_ = std::move(value);
    error_ = error;
    work_.reset();
    parent_.reset();
    callback_ = nullptr;
    running_ = false;
    done_ = true;
    changed_.notify_all();
  }
  if (error_) std::rethrow_exception(error_);
  return value_;
}

std::shared_ptr<Future> Future::then(std::function<Tensor(Future&)> callback) {
  KILN_CHECK(callback, "Future::then: the callback is empty");
  auto next = std::make_shared<Future>();
  next->parent_ = shared_from_this();
  next->callback_ = std::move(callback);
  return next;
}

GradBucket::GradBucket(size_t index, size_t bucket_count, Tensor buffer, std::vector<Tensor> parameters)
    : index_(index), count_(bucket_count), buffer_(std::move(buffer)), parameters_(std::move(parameters)) {}

std::vector<Tensor> GradBucket::gradients() const {
  std::vector<Tensor> views;
  int64_t offset = 0;
  for (const Tensor& p : parameters_) {
    views.push_back(buffer_.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  return views;
}

namespace algorithms::ddp_comm_hooks::default_hooks {

namespace {

std::shared_ptr<ProcessGroup> group_or_default(const std::shared_ptr<ProcessGroup>& group) {
  return group ? group : default_process_group();
}

// A bucket's sum over the ranks, in place. DDP compared the ranks' bucket layouts at construction,
// so the per-call comparison of the ranks' calls is skipped, as for DDP's own all-reduces
// (KILN_DISTRIBUTED_DEBUG=1 still makes it).
std::shared_ptr<Work> sum_over_ranks(ProcessGroup& group, const Tensor& flat) {
  std::vector<Tensor> tensors{flat};
  AllreduceOptions options;
  options.check_across_ranks = false;
  return group.allreduce(tensors, options);
}

// PyTorch's _compress_hook: the cast first, then the division in the narrow dtype.
std::shared_ptr<Future> compress_hook(ScalarType dtype, const std::shared_ptr<ProcessGroup>& process_group,
                                      GradBucket& bucket) {
  autograd::NoGradGuard no_grad;
  const auto group = group_or_default(process_group);
  const Tensor buffer = bucket.buffer();
  Tensor compressed = buffer.to(dtype);
  compressed.div_(group->getSize());
  auto reduced = std::make_shared<Future>(sum_over_ranks(*group, compressed), compressed);
  // Back into the bucket's own buffer (PyTorch decompresses in place, for the peak memory).
  return reduced->then([buffer](Future& done) {
    autograd::NoGradGuard no_grad;
    buffer.copy_(done.value());
    return buffer;
  });
}

}  // namespace

std::shared_ptr<Future> allreduce_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket) {
  autograd::NoGradGuard no_grad;
  const auto group = group_or_default(process_group);
  const Tensor buffer = bucket.buffer();
  buffer.div_(group->getSize());  // before the sum, as PyTorch's (against overflow in narrow dtypes)
  return std::make_shared<Future>(sum_over_ranks(*group, buffer), buffer);
}

std::shared_ptr<Future> fp16_compress_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket) {
  return compress_hook(kHalf, process_group, bucket);
}

std::shared_ptr<Future> bf16_compress_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket) {
  return compress_hook(kBFloat16, process_group, bucket);
}

}  // namespace algorithms::ddp_comm_hooks::default_hooks

}  // namespace kiln::distributed

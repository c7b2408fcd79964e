// DDP communication hooks, as PyTorch's (DistributedDataParallel.register_comm_hook): a hook takes
// over the reduction of DDP's gradient buckets. DDP hands it each bucket (the bucket's gradients
// flattened into one buffer) once the backward pass has produced them, in bucket order on every
// rank, and gives the parameters the tensor of the future the hook returns. As in PyTorch, DDP
// does not divide by the world size when a hook is registered: the hook averages.
//
// The built-in hooks are PyTorch's default_hooks: allreduce_hook divides the buffer by the world
// size and all-reduces it; fp16_compress_hook and bf16_compress_hook cast it to the narrow dtype,
// divide it there, all-reduce half the bytes, and copy the result back into the buffer.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "frontend/distributed/process_group.h"

namespace kiln::distributed {

// A tensor to come (torch.futures.Future's shape, for one tensor): what a communication hook
// returns. Make it with std::make_shared (then() needs that). A callback given to then() runs on
// the thread that first waits for the future then() returned, not on the communication thread
// as in PyTorch: there its tensor operations join the lazy program of the thread that owns them
// (DDP waits on the backward pass's thread, after the last bucket has been launched).
class Future : public std::enable_shared_from_this<Future> {
 public:
  Future() = default;                                // pending until set_result (from any thread)
  explicit Future(Tensor value);                     // done, holding `value`
  Future(std::shared_ptr<Work> work, Tensor value);  // `value` once `work` is done (Work.get_future())
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;

  void set_result(Tensor value);
  void set_exception(std::exception_ptr error);
  // Whether wait() would return without blocking.
  bool done();
  // The value; rethrows the collective's or the callback's error as it came (kiln::Error for a
  // collective that failed).
  Tensor wait();
  Tensor value() { return wait(); }
  std::shared_ptr<Future> then(std::function<Tensor(Future&)> callback);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false, running_ = false;
  Tensor value_;
  std::exception_ptr error_;
  std::shared_ptr<Work> work_;
  std::shared_ptr<Future> parent_;
  std::function<Tensor(Future&)> callback_;
};

// One of DDP's gradient buckets, as a communication hook sees it.
class GradBucket {
 public:
  GradBucket(size_t index, size_t bucket_count, Tensor buffer, std::vector<Tensor> parameters);
  size_t index() const { return index_; }
  bool is_last() const { return index_ + 1 == count_; }
  // The bucket's gradients, flattened and joined in the order of parameters(): one dtype.
  const Tensor& buffer() const { return buffer_; }
  // For a hook that wraps another (PyTorch's fp16_compress_wrapper); DDP takes the future's
  // tensor, not this buffer.
  void set_buffer(Tensor buffer) { buffer_ = std::move(buffer); }
  // Views of buffer() shaped as the parameters.
  std::vector<Tensor> gradients() const;
  const std::vector<Tensor>& parameters() const { return parameters_; }

  // c10d's C++ names.
  size_t getIndex() const { return index(); }
  bool isLast() const { return is_last(); }
  const Tensor& getBuffer() const { return buffer(); }
  void setBuffer(Tensor buffer) { set_buffer(std::move(buffer)); }
  std::vector<Tensor> getGradients() const { return gradients(); }
  const std::vector<Tensor>& getParameters() const { return parameters(); }

 private:
  size_t index_, count_;
  Tensor buffer_;
  std::vector<Tensor> parameters_;
};

// What DDP calls per bucket; the future's tensor (the bucket's reduced gradients) has the
// buffer's element count. register_comm_hook(state, hook) binds a state to a hook of this shape.
using CommHook = std::function<std::shared_ptr<Future>(GradBucket&)>;

// torch.distributed.algorithms.ddp_comm_hooks.default_hooks. `process_group`: the group to
// reduce over, null for the default group (PyTorch's None).
namespace algorithms::ddp_comm_hooks::default_hooks {
std::shared_ptr<Future> allreduce_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket);
std::shared_ptr<Future> fp16_compress_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket);
std::shared_ptr<Future> bf16_compress_hook(const std::shared_ptr<ProcessGroup>& process_group, GradBucket& bucket);
}  // namespace algorithms::ddp_comm_hooks::default_hooks

}  // namespace kiln::distributed

#include "frontend/distributed/collective_queue.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "frontend/autograd.h"
#include "frontend/ops.h"

namespace kiln::distributed::detail {

struct CollectiveQueue::State {
  struct Job {
    std::shared_ptr<Work> work;
    std::function<void()> run;
  };
  std::string backend;
  std::mutex mutex;
  std::condition_variable changed;  // a job queued or ended, or stopping
  std::deque<Job> queue;
  bool running = false;  // a job is running, on the queue's thread or a waiter's
  bool stopping = false;

  // Runs the front job with the mutex unlocked; `lock` holds it before and after.
  void run_front(std::unique_lock<std::mutex>& lock) {
    Job job = std::move(queue.front());
    queue.pop_front();
    running = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      job.run();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(Error(job.work->name + " (" + backend + ") failed: " + e.what()));
    } catch (...) {  // never out of here: `running` would stay set and every wait hang
      error = std::make_exception_ptr(Error(job.work->name + " (" + backend + ") failed"));
    }
    job.work->finish(error);
    job = {};  // its captures (tensors, contexts) are freed before the mutex is taken again
    lock.lock();
    running = false;
    changed.notify_all();
  }

  // A waiter on `work`: runs the jobs up to it while none is running elsewhere; returns once it
  // ran `work`'s, or another thread has taken it (wait() then sleeps until that one is done).
  void run_through(const Work* work) {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      const auto it = std::find_if(queue.begin(), queue.end(), [&](const Job& j) { return j.work.get() == work; });
      if (it == queue.end()) return;
      if (running) {
        changed.wait(lock);
        continue;
      }
      run_front(lock);
    }
  }
};

CollectiveQueue::CollectiveQueue(std::string backend, std::function<void()> on_thread_start, bool waiters_run_jobs)
    : state_(std::make_shared<State>()), waiters_run_jobs_(waiters_run_jobs) {
  state_->backend = std::move(backend);
  worker_ = std::thread([state = state_, on_thread_start = std::move(on_thread_start)] {
    if (on_thread_start) on_thread_start();
    std::unique_lock<std::mutex> lock(state->mutex);
    for (;;) {
      state->changed.wait(lock, [&] { return !state->running && (state->stopping || !state->queue.empty()); });
      if (state->queue.empty()) return;
      state->run_front(lock);
    }
  });
}

CollectiveQueue::~CollectiveQueue() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  worker_.join();  // what was queued runs first, each bounded by its timeout
}

std::shared_ptr<Work> CollectiveQueue::enqueue(const std::string& name, std::function<void()> job) {
  auto work = std::make_shared<Work>();
  work->name = name;
  if (waiters_run_jobs_) {
    // The Work holds this: a raw pointer to it makes no cycle.
    work->before_wait = [weak = std::weak_ptr<State>(state_), raw = work.get()] {
      if (auto s = weak.lock()) s->run_through(raw);
    };
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    KILN_CHECK(!state_->stopping, name, ": the process group was destroyed");
    state_->queue.push_back({work, std::move(job)});
  }
  state_->changed.notify_all();
  return work;
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

void check_allreduce_arguments(const std::vector<Tensor>& tensors, ReduceOp op, const std::string& name) {
  KILN_CHECK(tensors.size() == 1, name, ": expected one tensor, got ", tensors.size());
  KILN_CHECK(tensors[0].defined(), name, ": undefined tensor");
  KILN_CHECK(op != ReduceOp::AVG || tensors[0].is_floating_point(), name, ": AVG needs a floating-point tensor, got ",
             shape_text(tensors[0]));
}

void check_broadcast_arguments(const ProcessGroup& group, const std::vector<Tensor>& tensors,
                               const BroadcastOptions& options) {
  KILN_CHECK(tensors.size() == 1 && options.rootTensor == 0, "broadcast: expected one tensor, got ", tensors.size());
  KILN_CHECK(options.rootRank >= 0 && options.rootRank < group.getSize(), "broadcast: source rank ", options.rootRank,
             " is not in [0, ", group.getSize(), ")");
}

std::function<void()> finish_allreduce(const Staged& s, ReduceOp op, int size) {
  return [s, op, size] {
    if (op == ReduceOp::AVG) {
      autograd::NoGradGuard no_grad;
      s.memory.div_(size);
    }
    write_back(s);
  };
}

std::shared_ptr<Work> reduce_scatter_by_allreduce(ProcessGroup& group, std::vector<Tensor>& outputs,
                                                  std::vector<std::vector<Tensor>>& inputs,
                                                  const ReduceScatterOptions& options) {
  const std::string name = std::string("reduce_scatter(") + reduce_op_name(options.reduceOp) + ")";
  KILN_CHECK(outputs.size() == 1 && inputs.size() == 1, name, ": expected one output and one input list");
  const Tensor output = outputs[0];
  const std::vector<Tensor>& in = inputs[0];
  KILN_CHECK(int(in.size()) == group.getSize(), name, ": the input list has ", in.size(), " tensors for ",
             group.getSize(), " ranks");
  std::vector<Tensor> flat;
  for (const Tensor& t : in) {
    KILN_CHECK(t.defined() && output.defined() && t.sizes() == output.sizes() && t.dtype() == output.dtype(), name,
               ": input ", t.defined() ? shape_text(t) : "undefined", " does not match the output ",
               output.defined() ? shape_text(output) : "undefined");
    flat.push_back(t.detach().reshape({-1}));
  }
  Tensor all = cat(flat).contiguous();
  std::vector<Tensor> reduced{all};
  AllreduceOptions reduce;
  reduce.reduceOp = options.reduceOp;
  reduce.timeout = options.timeout;
  auto work = group.allreduce(reduced, reduce);  // its check compares the concatenated inputs' shape
  auto reduce_done = work->on_wait;
  work->on_wait = [reduce_done, all, output, rank = group.getRank()] {
    reduce_done();
    autograd::NoGradGuard no_grad;
    const int64_t n = output.numel();
    output.copy_(all.narrow(0, rank * n, n).view(output.sizes()));
  };
  return work;
}

std::vector<Tensor> check_allgather_arguments(const ProcessGroup& group, std::vector<std::vector<Tensor>>& outputs,
                                              std::vector<Tensor>& inputs) {
  const std::string name = "all_gather";
  KILN_CHECK(inputs.size() == 1 && outputs.size() == 1, name, ": expected one input and one output list");
  const Tensor& input = inputs[0];
  KILN_CHECK(input.defined(), name, ": undefined tensor");
  std::vector<Tensor> out = outputs[0];
  KILN_CHECK(int(out.size()) == group.getSize(), name, ": the output list has ", out.size(), " tensors for ",
             group.getSize(), " ranks");
  for (const Tensor& o : out)
    KILN_CHECK(o.defined() && o.sizes() == input.sizes() && o.dtype() == input.dtype(), name, ": output ",
               o.defined() ? shape_text(o) : "undefined", " does not match the input ", shape_text(input));
  return out;
}

void scatter_gathered(const std::vector<Tensor>& outputs, const Tensor& gathered) {
  autograd::NoGradGuard no_grad;
  const int64_t n = outputs.empty() ? 0 : outputs[0].numel();
  for (size_t r = 0; r < outputs.size(); ++r)
    outputs[r].copy_(gathered.narrow(0, int64_t(r) * n, n).view(outputs[r].sizes()));
}

}  // namespace kiln::distributed::detail

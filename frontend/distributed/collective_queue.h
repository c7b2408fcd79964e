// What every process group backend shares (internal): the thread that runs a group's collectives
// in call order, tensors staged as contiguous memory for a library, and the comparison of the
// ranks' calls before a collective (see AllreduceOptions::check_across_ranks).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "frontend/distributed/process_group.h"

namespace kiln::distributed::detail {

// Runs queued jobs one at a time, in call order, on its own thread; a job's exception fails its
// Work with "NAME (BACKEND) failed: ...". Where `waiters_run_jobs`, a thread that waits on a Work
// whose job has not started runs it (and the jobs queued before it) itself, rather than waking the
// queue's thread and sleeping until that one is done: two thread switches fewer per collective,
// which a machine with as many busy ranks as cores pays for dearly. The destructor runs what was
// queued first.
class CollectiveQueue {
 public:
  CollectiveQueue(std::string backend, std::function<void()> on_thread_start = {}, bool waiters_run_jobs = true);
  ~CollectiveQueue();
  std::shared_ptr<Work> enqueue(const std::string& name, std::function<void()> job);

  struct State;

 private:
  std::shared_ptr<State> state_;  // shared with the Works' before_wait, which may outlive the queue
  bool waiters_run_jobs_;
  std::thread worker_;
};

// A tensor's values as memory a library can read and write: the tensor itself when contiguous,
// else a contiguous copy that write_back() copies into it (on the calling thread, in Work::wait).
struct Staged {
  Tensor tensor, memory;
  void* data = nullptr;
  size_t elements = 0;
};
Staged stage(const Tensor& t, const std::string& call);  // t must be defined; any device
void write_back(const Staged& s);

std::string shape_text(const Tensor& t);  // "[2, 3] float32"

// The width of one rank's call description in the all-gather that compares them.
inline constexpr size_t kSignatureBytes = 128;
// `signature` padded to kSignatureBytes, for the all-gather.
std::vector<char> signature_bytes(const std::string& signature);
// Throws kiln::Error naming both calls where a rank's part of `gathered` differs from `rank`'s.
void compare_signatures(const std::vector<char>& gathered, int rank, int size);

// all_reduce's and broadcast's argument checks (`name` as in their errors).
void check_allreduce_arguments(const std::vector<Tensor>& tensors, ReduceOp op, const std::string& name);
void check_broadcast_arguments(const ProcessGroup& group, const std::vector<Tensor>& tensors,
                               const BroadcastOptions& options);
// What all_reduce's wait() does after the library's sum: AVG's division, and the copy back.
std::function<void()> finish_allreduce(const Staged& s, ReduceOp op, int size);

// reduce_scatter as an all-reduce of every rank's whole input list, each rank keeping its part
// (for libraries whose reduce-scatter takes no timeout, or that have none).
std::shared_ptr<Work> reduce_scatter_by_allreduce(ProcessGroup& group, std::vector<Tensor>& outputs,
                                                  std::vector<std::vector<Tensor>>& inputs,
                                                  const ReduceScatterOptions& options);
// all_gather's argument checks; returns outputs[0].
std::vector<Tensor> check_allgather_arguments(const ProcessGroup& group, std::vector<std::vector<Tensor>>& outputs,
                                              std::vector<Tensor>& inputs);
// Fills all_gather's outputs from the ranks' inputs gathered one after another in `gathered`.
void scatter_gathered(const std::vector<Tensor>& outputs, const Tensor& gathered);

}  // namespace kiln::distributed::detail

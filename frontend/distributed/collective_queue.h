// What every process group backend shares (internal): the thread that runs a group's collectives
// in call order, tensors staged as contiguous memory for a library, and the comparison of the
// ranks' calls before a collective (see AllreduceOptions::check_across_ranks).
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "frontend/distributed/process_group.h"

namespace kiln::distributed::detail {

// Runs queued jobs one at a time on its own thread; a job's exception fails its Work with
// "NAME (BACKEND) failed: ...". The destructor runs what was queued first.
class CollectiveQueue {
 public:
  CollectiveQueue(std::string backend, std::function<void()> on_thread_start = {});
  ~CollectiveQueue();
  std::shared_ptr<Work> enqueue(const std::string& name, std::function<void()> job);

 private:
  void run();
  const std::string backend_;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::pair<std::shared_ptr<Work>, std::function<void()>>> queue_;
  bool stopping_ = false;
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

}  // namespace kiln::distributed::detail

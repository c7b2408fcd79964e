// Process groups, as c10d's: a rank's handle on a job of `size` ranks, running collectives over
// kiln tensors on a library's algorithms (Gloo or MPI for CPU tensors, NCCL for CUDA tensors).
// Collectives are queued in call order and run on the group's own thread (or on a thread that
// waits for one before the group's thread has started it); each returns a Work
// whose wait() rethrows the collective's error as kiln::Error. Every collective has a timeout: a
// rank that died or stopped is an error on the others, never a hang.
#pragma once
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "frontend/distributed/store.h"
#include "frontend/tensor.h"

namespace kiln::distributed {

enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };
const char* reduce_op_name(ReduceOp op);

// A collective in flight. wait() blocks until it is done and throws kiln::Error if it failed; it
// also finishes the collective's writes on the calling thread (copies into outputs the library
// did not write in place), so outputs must not be read before it.
class Work {
 public:
  Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  bool isCompleted();
  bool isSuccess();
  // true once done; throws kiln::Error naming the collective if it failed.
  bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  // For process groups: the collective's end on the group's thread, and what wait() does after.
  void finish(std::exception_ptr error);
  std::function<void()> on_wait;
  // What wait() first does (set once, before the Work is handed out): the group's queue runs the
  // collective on the waiting thread if its own thread has not started it.
  std::function<void()> before_wait;
  std::string name;

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false, waited_ = false;
  std::exception_ptr error_;
};

inline constexpr std::chrono::milliseconds kUnsetTimeout = std::chrono::milliseconds(-1);

// Before a collective runs, the ranks compare what they were called with (the op, shapes, dtypes,
// root) in one small all-gather, and a difference is a kiln::Error naming both ranks' calls, where
// the library would otherwise hang or misread memory. `check_across_ranks = false` (kiln's own
// field) skips that for a caller that has verified its calls' layout once, as DDP does for its
// buckets; KILN_DISTRIBUTED_DEBUG=1 checks every collective regardless.
struct AllreduceOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
  std::chrono::milliseconds timeout = kUnsetTimeout;  // unset: the group's
  bool check_across_ranks = true;
};
struct BroadcastOptions {
  int64_t rootRank = 0;
  int64_t rootTensor = 0;
  std::chrono::milliseconds timeout = kUnsetTimeout;
  bool check_across_ranks = true;
};
struct AllgatherOptions {
  std::chrono::milliseconds timeout = kUnsetTimeout;
};
struct ReduceScatterOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
  std::chrono::milliseconds timeout = kUnsetTimeout;
};
struct BarrierOptions {
  std::chrono::milliseconds timeout = kUnsetTimeout;
};

// What a backend's class declares: the collectives of ProcessGroup, overridden.
#define KILN_PROCESS_GROUP_COLLECTIVES                                                                                \
  std::shared_ptr<Work> allreduce(std::vector<Tensor>& tensors, const AllreduceOptions& options = AllreduceOptions()) \
      override;                                                                                                       \
  std::shared_ptr<Work> broadcast(std::vector<Tensor>& tensors, const BroadcastOptions& options = BroadcastOptions()) \
      override;                                                                                                       \
  std::shared_ptr<Work> allgather(std::vector<std::vector<Tensor>>& outputs, std::vector<Tensor>& inputs,             \
                                  const AllgatherOptions& options = AllgatherOptions()) override;                     \
  std::shared_ptr<Work> reduce_scatter(std::vector<Tensor>& outputs, std::vector<std::vector<Tensor>>& inputs,        \
                                       const ReduceScatterOptions& options = ReduceScatterOptions()) override;        \
  std::shared_ptr<Work> barrier(const BarrierOptions& options = BarrierOptions()) override;

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  int getRank() const { return rank_; }
  int getSize() const { return size_; }
  virtual std::string getBackendName() const = 0;

  // In place on every rank's tensors (one tensor per call here: a list is c10d's multi-device form).
  virtual std::shared_ptr<Work> allreduce(std::vector<Tensor>& tensors,
                                          const AllreduceOptions& options = AllreduceOptions()) = 0;
  virtual std::shared_ptr<Work> broadcast(std::vector<Tensor>& tensors,
                                          const BroadcastOptions& options = BroadcastOptions()) = 0;
  // outputs[0][r] receives rank r's inputs[0].
  virtual std::shared_ptr<Work> allgather(std::vector<std::vector<Tensor>>& outputs, std::vector<Tensor>& inputs,
                                          const AllgatherOptions& options = AllgatherOptions()) = 0;
  // outputs[0] receives the reduction over ranks of every rank's inputs[0][this rank].
  virtual std::shared_ptr<Work> reduce_scatter(std::vector<Tensor>& outputs, std::vector<std::vector<Tensor>>& inputs,
                                               const ReduceScatterOptions& options = ReduceScatterOptions()) = 0;
  virtual std::shared_ptr<Work> barrier(const BarrierOptions& options = BarrierOptions()) = 0;

 protected:
  const int rank_, size_;
};

// Collectives over Gloo's TCP transport, the ranks connected through `store`. The group's timeout
// bounds the connection and every collective that sets none of its own.
class ProcessGroupGloo : public ProcessGroup {
 public:
  // The address peers reach this rank at (c10d's createDeviceForHostname).
  struct Device {
    std::string hostname;
  };
  static std::shared_ptr<Device> createDeviceForHostname(const std::string& hostname) {
    return std::make_shared<Device>(Device{hostname});
  }
  struct Options {
    std::chrono::milliseconds timeout = kDefaultTimeout;
    // The first one's address is used; none: GLOO_SOCKET_IFNAME's interface, else loopback when
    // MASTER_ADDR is, else this machine's host name.
    std::vector<std::shared_ptr<Device>> devices;
    static std::shared_ptr<Options> create() { return std::make_shared<Options>(); }
  };
  ProcessGroupGloo(const std::shared_ptr<Store>& store, int rank, int size,
                   std::shared_ptr<Options> options = Options::create());
  ~ProcessGroupGloo() override;
  std::string getBackendName() const override { return "gloo"; }

  KILN_PROCESS_GROUP_COLLECTIVES

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Collectives over MPI, for jobs that mpirun (or a cluster's launcher) starts: rank and size are
// MPI's. kiln opens Open MPI's libmpi.so.40 with dlopen when the first group is made (Debian's
// libopenmpi3, which openmpi-bin installs; no MPI headers at build time), initializes MPI with
// MPI_THREAD_SERIALIZED (collectives run on the group's thread) and finalizes it at exit. CPU
// tensors. Each collective is non-blocking underneath and polled against the group's timeout, so
// a rank that stopped is an error on the others (MPI cannot cancel a collective: the group is
// unusable after one times out).
class ProcessGroupMPI : public ProcessGroup {
 public:
  // The group of `ranks` of MPI_COMM_WORLD (every rank when empty); null on a rank not among
  // them. Every rank of MPI_COMM_WORLD must call it, as MPI_Comm_create.
  static std::shared_ptr<ProcessGroupMPI> createProcessGroupMPI(const std::vector<int>& ranks = {},
                                                                std::chrono::milliseconds timeout = kDefaultTimeout);
  ~ProcessGroupMPI() override;
  std::string getBackendName() const override { return "mpi"; }

  KILN_PROCESS_GROUP_COLLECTIVES

  struct Impl;
  ProcessGroupMPI(std::unique_ptr<Impl> impl, int rank, int size);

 private:
  std::unique_ptr<Impl> impl_;
};

// Collectives over NCCL, for CUDA tensors: one rank per GPU. kiln opens libnccl.so.2 with dlopen
// (the CUDA toolkit's, or LD_LIBRARY_PATH's) when a group is made; a missing library or device is
// a kiln::Error then. The communicator of a device is made at the first collective on it (rank
// 0's unique id shared through the store). Collectives are queued on kiln's stream of the
// tensor's device, after the kernels that compute their inputs; the group's thread watches each
// one (an event, ncclCommGetAsyncError) and aborts the communicator past the timeout, so a rank
// that died is an error on the others. Work::wait() returns once the device has finished it.
class ProcessGroupNCCL : public ProcessGroup {
 public:
  struct Options {
    std::chrono::milliseconds timeout = kDefaultTimeout;
    static std::shared_ptr<Options> create() { return std::make_shared<Options>(); }
  };
  ProcessGroupNCCL(const std::shared_ptr<Store>& store, int rank, int size,
                   std::shared_ptr<Options> options = Options::create());
  ~ProcessGroupNCCL() override;
  std::string getBackendName() const override { return "nccl"; }

  KILN_PROCESS_GROUP_COLLECTIVES

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The NCCL library as kiln opens it (for tests and `kiln info`).
namespace nccl {
// The entry points kiln resolves from libnccl.so.2, by name.
const std::vector<std::string>& symbol_names();
// Whether libnccl.so.2 opened and has every one of them; never throws.
bool available();
const std::string& unavailable_reason();  // empty when available
std::string version();                    // "2.27.7" (ncclGetVersion); throws where unavailable
}  // namespace nccl

}  // namespace kiln::distributed

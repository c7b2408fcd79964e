#include "frontend/distributed/distributed.h"

#include <cstdlib>
#include <mutex>

namespace kiln::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
  }
  return "?";
}

// --- Work ---

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = error;
  }
  done_changed_.notify_all();
}

bool Work::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool Work::isSuccess() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !error_;
}

bool Work::wait(std::chrono::milliseconds timeout) {
  // A waiter runs the queued jobs up to its own, but not with a timeout of its own: a job it ran
  // could outlast that timeout (it is bounded only by the collective's).
  if (before_wait && timeout.count() <= 0) before_wait();
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout.count() > 0) {
    KILN_CHECK(done_changed_.wait_for(lock, timeout, [&] { return done_; }), name, ": wait timed out after ",
               timeout.count(), " ms");
  } else {
    done_changed_.wait(lock, [&] { return done_; });  // the collective's own timeout bounds this
  }
  if (error_) std::rethrow_exception(error_);
  if (waited_) return true;
  waited_ = true;
  lock.unlock();
  if (on_wait) on_wait();
  return true;
}

// --- the default group ---

namespace {

struct DefaultGroup {
  std::mutex mutex;
  std::shared_ptr<Store> store;  // rank 0's TCPStore serves the others' rendezvous: kept while the group lives
  std::shared_ptr<ProcessGroup> group;
};
DefaultGroup& default_group() {
  static DefaultGroup g;
  return g;
}

int env_int(const char* name, int given, const char* what) {
  if (given >= 0) return given;
  const char* v = std::getenv(name);
  KILN_CHECK(v && *v, "init_process_group: ", what, " is not given and ", name,
             " is not set (run the program with `kiln launch`, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)");
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  KILN_CHECK(*end == 0 && n >= 0, "init_process_group: ", name, "=", v, " is not a number");
  return int(n);
}

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  KILN_CHECK(v && *v, "init_process_group: ", name,
             " is not set (run the program with `kiln launch`, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)");
  return v;
}

int parse_port(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const long port = std::strtol(text.c_str(), &end, 10);
  KILN_CHECK(!text.empty() && *end == 0 && port > 0 && port < 65536, "init_process_group: ", where, " port '", text,
             "' is not a TCP port");
  return int(port);
}

}  // namespace

void init_process_group(const std::string& backend, const std::string& init_method, int world_size, int rank,
                        std::chrono::milliseconds timeout) {
  DefaultGroup& g = default_group();
  std::lock_guard<std::mutex> lock(g.mutex);
  KILN_CHECK(!g.group,
             "init_process_group: the default process group is already initialized (call "
             "destroy_process_group first)");
  KILN_CHECK(backend == "gloo" || backend == "nccl" || backend == "mpi", "init_process_group: unknown backend '",
             backend, "' (gloo, nccl, mpi)");
  if (backend == "mpi") {
    // The job is MPI's (mpirun started it): rank and size are MPI_COMM_WORLD's, no store.
    KILN_CHECK(world_size == -1 && rank == -1,
               "init_process_group: with the mpi backend, rank and world size are "
               "MPI's (give -1)");
    g.group = ProcessGroupMPI::createProcessGroupMPI({}, timeout);
    return;
  }
  const int size = env_int("WORLD_SIZE", world_size, "world_size");
  const int me = env_int("RANK", rank, "rank");
  KILN_CHECK(size >= 1 && me < size, "init_process_group: rank ", me, " is not in [0, ", size, ")");

  std::shared_ptr<Store> store;
  if (init_method == "env://") {
    const std::string master = env_string("MASTER_ADDR");
    const int port = parse_port(env_string("MASTER_PORT"), "MASTER_PORT");
    store = std::make_shared<TCPStore>(master, port, me == 0, timeout);
  } else if (init_method.rfind("tcp://", 0) == 0) {
    const std::string address = init_method.substr(6);
    const size_t colon = address.rfind(':');
    KILN_CHECK(colon != std::string::npos, "init_process_group: ", init_method, " has no port (tcp://HOST:PORT)");
    store = std::make_shared<TCPStore>(address.substr(0, colon), parse_port(address.substr(colon + 1), init_method),
                                       me == 0, timeout);
  } else if (init_method.rfind("file://", 0) == 0) {
    store = std::make_shared<FileStore>(init_method.substr(7), size);
    store->setTimeout(timeout);
  } else {
    throw Error("init_process_group: unknown init_method '" + init_method +
                "' (env://, tcp://HOST:PORT or file:///FOLDER)");
  }
  if (backend == "nccl") {
    auto options = ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    g.group = std::make_shared<ProcessGroupNCCL>(store, me, size, options);
    g.store = store;
    return;
  }
  auto options = ProcessGroupGloo::Options::create();
  options->timeout = timeout;
  g.group = std::make_shared<ProcessGroupGloo>(store, me, size, options);
  g.store = store;
}

bool is_initialized() {
  DefaultGroup& g = default_group();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.group != nullptr;
}

void destroy_process_group() {
  DefaultGroup& g = default_group();
  std::shared_ptr<ProcessGroup> group;
  std::shared_ptr<Store> store;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    group = std::move(g.group);
    store = std::move(g.store);
  }
  group.reset();  // its queued collectives finish first
  store.reset();
}

namespace {
std::shared_ptr<ProcessGroup> group_for(const char* call) {
  DefaultGroup& g = default_group();
  std::lock_guard<std::mutex> lock(g.mutex);
  KILN_CHECK(g.group, call, ": the default process group is not initialized (call init_process_group first)");
  return g.group;
}

std::shared_ptr<Work> finish(std::shared_ptr<Work> work, bool async_op) {
  if (async_op) return work;
  work->wait();
  return nullptr;
}
}  // namespace

std::shared_ptr<ProcessGroup> default_process_group() { return group_for("default_process_group"); }
int get_rank() { return group_for("get_rank")->getRank(); }
int get_world_size() { return group_for("get_world_size")->getSize(); }
std::string get_backend() { return group_for("get_backend")->getBackendName(); }

std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, bool async_op) {
  auto group = group_for("all_reduce");
  std::vector<Tensor> tensors{tensor};
  AllreduceOptions options;
  options.reduceOp = op;
  return finish(group->allreduce(tensors, options), async_op);
}

std::shared_ptr<Work> broadcast(const Tensor& tensor, int src, bool async_op) {
  auto group = group_for("broadcast");
  std::vector<Tensor> tensors{tensor};
  BroadcastOptions options;
  options.rootRank = src;
  return finish(group->broadcast(tensors, options), async_op);
}

std::shared_ptr<Work> all_gather(std::vector<Tensor>& output, const Tensor& tensor, bool async_op) {
  auto group = group_for("all_gather");
  std::vector<std::vector<Tensor>> outputs{output};
  std::vector<Tensor> inputs{tensor};
  return finish(group->allgather(outputs, inputs), async_op);
}

std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& input, ReduceOp op,
                                     bool async_op) {
  auto group = group_for("reduce_scatter");
  std::vector<Tensor> outputs{output};
  std::vector<std::vector<Tensor>> inputs{input};
  ReduceScatterOptions options;
  options.reduceOp = op;
  return finish(group->reduce_scatter(outputs, inputs, options), async_op);
}

std::shared_ptr<Work> barrier(bool async_op) { return finish(group_for("barrier")->barrier(), async_op); }

}  // namespace kiln::distributed

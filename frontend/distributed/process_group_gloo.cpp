// ProcessGroupGloo and FileStore on Debian's Gloo (built when CMake finds it: KILN_HAVE_GLOO).
// Tensors are made computed, contiguous host memory on the calling thread (data_ptr flushes the
// thread's lazy segment); Gloo then runs on the group's thread over that memory. Outputs that
// are not the memory Gloo wrote (a non-contiguous tensor, all_gather's list) are filled by
// Work::wait() on the calling thread.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "frontend/autograd.h"
#include "frontend/distributed/collective_queue.h"
#include "frontend/distributed/gloo_algorithms.h"
#include "frontend/distributed/process_group.h"
#include "frontend/ops.h"
#include "runtime/config.h"

#if KILN_HAVE_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace kiln::distributed {

#if !KILN_HAVE_GLOO

namespace {
[[noreturn]] void no_gloo(const char* what) {
  throw Error(std::string(what) +
              ": kiln was built without Gloo (install Debian's libgloo-dev and configure kiln again)");
}
}  // namespace

struct ProcessGroupGloo::Impl {};
ProcessGroupGloo::ProcessGroupGloo(const std::shared_ptr<Store>&, int rank, int size, std::shared_ptr<Options>)
    : ProcessGroup(rank, size) {
  no_gloo("ProcessGroupGloo");
}
ProcessGroupGloo::~ProcessGroupGloo() = default;
std::shared_ptr<Work> ProcessGroupGloo::allreduce(std::vector<Tensor>&, const AllreduceOptions&) {
  no_gloo("allreduce");
}
std::shared_ptr<Work> ProcessGroupGloo::broadcast(std::vector<Tensor>&, const BroadcastOptions&) {
  no_gloo("broadcast");
}
std::shared_ptr<Work> ProcessGroupGloo::allgather(std::vector<std::vector<Tensor>>&, std::vector<Tensor>&,
                                                  const AllgatherOptions&) {
  no_gloo("allgather");
}
std::shared_ptr<Work> ProcessGroupGloo::barrier(const BarrierOptions&) { no_gloo("barrier"); }

struct FileStore::Impl {};
FileStore::FileStore(const std::string&, int) { no_gloo("FileStore"); }
FileStore::~FileStore() = default;
void FileStore::set(const std::string&, const std::vector<uint8_t>&) { no_gloo("FileStore"); }
std::vector<uint8_t> FileStore::get(const std::string&) { no_gloo("FileStore"); }
void FileStore::wait(const std::vector<std::string>&, std::chrono::milliseconds) { no_gloo("FileStore"); }

#else

// --- FileStore ---

struct FileStore::Impl {
  std::unique_ptr<gloo::rendezvous::FileStore> store;
  std::string path;
};

namespace {

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

// The job folder under `path` that this process joins, for a job of `workers` processes. The
// members file (under an flock) lists the current job's members as "PID HOST"; a process starts
// a new job (the next number, a fresh folder; the older ones removed) where that one is full, or
// where every member it lists on this host has exited (a job that ended or crashed).
std::string join_job_folder(const std::string& path, int workers) {
  const std::string members_path = path + "/members";
  const int fd = ::open(members_path.c_str(), O_RDWR | O_CREAT, 0644);
  KILN_CHECK(fd >= 0, "FileStore: cannot open ", members_path, ": ", std::strerror(errno));
  ::flock(fd, LOCK_EX);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, size_t(n));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  long job = 0;
  int count = 0;
  bool some_alive = false;
  std::istringstream in(text);
  in >> job;
  long pid;
  std::string member_host;
  while (in >> pid >> member_host) {
    ++count;
    some_alive = some_alive || member_host != host || process_alive(pid);
  }
  if (count >= workers || (count > 0 && !some_alive)) {
    std::error_code ignored;
    std::filesystem::remove_all(path + "/job-" + std::to_string(job), ignored);
    ++job;
    text = std::to_string(job) + "\n";
  } else if (text.empty()) {
    text = "0\n";
  }
  text += std::to_string(::getpid()) + " " + host + "\n";
  ::lseek(fd, 0, SEEK_SET);
  const bool written = ::ftruncate(fd, 0) == 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::flock(fd, LOCK_UN);
  ::close(fd);
  KILN_CHECK(written, "FileStore: cannot write ", members_path);
  const std::string folder = path + "/job-" + std::to_string(job);
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  KILN_CHECK(std::filesystem::is_directory(folder), "FileStore: cannot make the folder ", folder, ": ",
             error.message());
  return folder;
}

}  // namespace

FileStore::FileStore(const std::string& path, int num_workers) : impl_(std::make_unique<Impl>()) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  KILN_CHECK(std::filesystem::is_directory(path), "FileStore: cannot make the folder ", path, ": ", error.message());
  impl_->path = num_workers > 0 ? join_job_folder(path, num_workers) : path;
  impl_->store = std::make_unique<gloo::rendezvous::FileStore>(impl_->path);
}
FileStore::~FileStore() = default;

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  try {
    impl_->store->set(key, std::vector<char>(value.begin(), value.end()));
  } catch (const std::exception& e) {
    throw Error("FileStore: set of key '" + key + "' in " + impl_->path + " failed: " + e.what());
  }
}

std::vector<uint8_t> FileStore::get(const std::string& key) {
  wait({key});
  const std::vector<char> value = impl_->store->get(key);
  return std::vector<uint8_t>(value.begin(), value.end());
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  try {
    impl_->store->wait(keys, timeout);
  } catch (const std::exception& e) {
    throw Error("FileStore: waiting for " + std::to_string(keys.size()) + " key(s) in " + impl_->path +
                " failed after " + std::to_string(timeout.count()) + " ms: " + e.what());
  }
}

// --- ProcessGroupGloo ---

namespace {

// kiln's store as Gloo's rendezvous sees it, under a prefix of its own.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(distributed::Store& store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::vector<uint8_t> v = store_.get(prefix_ + key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, store_.getTimeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const auto& k : keys) prefixed.push_back(prefix_ + k);
    store_.wait(prefixed, timeout);
  }

 private:
  distributed::Store& store_;
  std::string prefix_;
};

using ReduceFunc = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFunc reduce_func(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return static_cast<ReduceFunc>(&gloo::sum<T>);
    case ReduceOp::PRODUCT: return static_cast<ReduceFunc>(&gloo::product<T>);
    case ReduceOp::MIN: return static_cast<ReduceFunc>(&gloo::min<T>);
    case ReduceOp::MAX: return static_cast<ReduceFunc>(&gloo::max<T>);
  }
  return nullptr;
}

using detail::stage;
using detail::Staged;
using detail::write_back;

// A tensor Gloo can move: on the CPU, of a dtype it has.
Staged stage_for_gloo(const Tensor& t, const std::string& call) {
  KILN_CHECK(!t.defined() || t.is_cpu(), call, ": the gloo backend takes CPU tensors, got one on ", t.device().str(),
             " (init_process_group(\"nccl\") for CUDA tensors)");
  if (t.defined()) detail::with_gloo_element_type(t.dtype(), call, [](auto) {});
  return stage(t, call);
}

// The address peers reach this rank at: the one given, else GLOO_SOCKET_IFNAME's interface (as in
// PyTorch), else loopback when MASTER_ADDR is (a job on one machine), else this machine's host name.
gloo::transport::tcp::attr device_attributes(const std::string& hostname) {
  gloo::transport::tcp::attr attr;
  if (!hostname.empty()) {
    attr.hostname = hostname;
    return attr;
  }
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
    attr.iface = iface;
    return attr;
  }
  const char* master = std::getenv("MASTER_ADDR");
  const std::string m = master ? master : "";
  if (m.empty() || m == "localhost" || m.rfind("127.", 0) == 0 || m == "::1") {
    attr.hostname = "127.0.0.1";
  } else {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    attr.hostname = name;
  }
  return attr;
}

}  // namespace

struct ProcessGroupGloo::Impl {
  std::shared_ptr<gloo::Context> context;
  std::chrono::milliseconds timeout;
  uint32_t next_tag = 0;
  std::unique_ptr<detail::GlooAlgorithms> algorithms;  // one queue job at a time uses them
  std::unique_ptr<detail::CollectiveQueue> queue;      // last: ends first, with the jobs that use the rest

  std::chrono::milliseconds timeout_of(std::chrono::milliseconds requested) const {
    return requested == kUnsetTimeout ? timeout : requested;
  }
  // The algorithm classes for a call with this timeout, or null: the options API, which takes a
  // timeout per call (the classes wait the pairs' timeout, the group's).
  detail::GlooAlgorithms* algorithms_for(std::chrono::milliseconds op_timeout) const {
    return op_timeout == timeout ? algorithms.get() : nullptr;
  }

  // Queues `job`, which gets this collective's tag. Where `check` (or KILN_DISTRIBUTED_DEBUG), the
  // ranks first compare what they were called with (`signature`) and fail, naming both, where they
  // differ. Every rank must make the same choice for a call: it takes a tag more.
  std::shared_ptr<Work> enqueue(const std::string& name, const std::string& signature,
                                std::function<void(uint32_t tag)> job, std::chrono::milliseconds op_timeout,
                                bool check = true) {
    check = check || config().distributed_debug;
    const uint32_t check_tag = check ? next_tag++ : 0;
    const uint32_t tag = next_tag++;
    return queue->enqueue(name, [context = context, algorithms = algorithms_for(op_timeout), job = std::move(job), tag,
                                 check, check_tag, signature, op_timeout] {
      if (check && context->size > 1) {
        // One all-gather of kSignatureBytes per rank: a round trip, whatever the collective's
        // size.
        std::vector<char> mine = detail::signature_bytes(signature);
        std::vector<char> all(detail::kSignatureBytes * size_t(context->size), 0);
        if (!algorithms || !algorithms->allgather(mine.data(), all.data(), mine.size())) {
          gloo::AllgatherOptions opts(context);
          opts.setInput(mine.data(), mine.size());
          opts.setOutput(all.data(), all.size());
          opts.setTag(check_tag);
          opts.setTimeout(op_timeout);
          gloo::allgather(opts);
        }
        detail::compare_signatures(all, context->rank, context->size);
      }
      job(tag);
    });
  }
};

ProcessGroupGloo::ProcessGroupGloo(const std::shared_ptr<Store>& store, int rank, int size,
                                   std::shared_ptr<Options> options)
    : ProcessGroup(rank, size), impl_(std::make_unique<Impl>()) {
  KILN_CHECK(store, "ProcessGroupGloo: no store");
  KILN_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroupGloo: rank ", rank, " is not in [0, ", size, ")");
  if (!options) options = Options::create();
  impl_->timeout = options->timeout;
  // Debian's Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died would end this
  // process by SIGPIPE instead of failing the collective. Unless the program handles SIGPIPE itself.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
  try {
    auto device = gloo::transport::tcp::CreateDevice(device_attributes(
        options->devices.empty() || !options->devices[0] ? std::string() : options->devices[0]->hostname));
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options->timeout);
    GlooStore gloo_store(*store, "kiln/gloo/");
    context->connectFullMesh(gloo_store, device);
    impl_->context = context;
  } catch (const std::exception& e) {
    throw Error("ProcessGroupGloo: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                " could not connect to the others within " + std::to_string(options->timeout.count()) +
                " ms: " + e.what());
  }
  const int64_t ring_max = config().gloo_ring_max_bytes;
  impl_->algorithms = std::make_unique<detail::GlooAlgorithms>(
      impl_->context, ring_max > 0 ? size_t(ring_max) : detail::GlooAlgorithms::default_ring_max_bytes(size));
  impl_->queue = std::make_unique<detail::CollectiveQueue>("gloo");
}

// No barrier on the way out: a peer still in its last collective gets what it waits for though
// this rank's connections close (gloo_algorithms.cpp). The queue runs what was queued first.
ProcessGroupGloo::~ProcessGroupGloo() = default;

std::shared_ptr<Work> ProcessGroupGloo::allreduce(std::vector<Tensor>& tensors, const AllreduceOptions& options) {
  const std::string name = std::string("all_reduce(") + reduce_op_name(options.reduceOp) + ")";
  const ReduceOp op = options.reduceOp;
  detail::check_allreduce_arguments(tensors, op, name);
  Staged s = stage_for_gloo(tensors[0], name);
  auto context = impl_->context;
  const auto timeout = impl_->timeout_of(options.timeout);
  auto work = impl_->enqueue(
      name, name + " " + detail::shape_text(tensors[0]),
      [context, algorithms = impl_->algorithms_for(timeout), s, op, timeout](uint32_t tag) {
        if (s.elements == 0) return;
        if (algorithms && algorithms->allreduce(s.tensor.dtype(), s.data, s.elements, op)) return;
        detail::with_gloo_element_type(s.tensor.dtype(), "all_reduce", [&](auto element) {
          using T = decltype(element);
          gloo::AllreduceOptions opts(context);
          opts.setOutput(static_cast<T*>(s.data), s.elements);
          opts.setReduceFunction(reduce_func<T>(op));
          opts.setTag(tag);
          opts.setTimeout(timeout);
          gloo::allreduce(opts);
        });
      },
      timeout, options.check_across_ranks);
  work->on_wait = detail::finish_allreduce(s, op, size_);
  return work;
}

std::shared_ptr<Work> ProcessGroupGloo::broadcast(std::vector<Tensor>& tensors, const BroadcastOptions& options) {
  const std::string name = "broadcast";
  detail::check_broadcast_arguments(*this, tensors, options);
  Staged s = stage_for_gloo(tensors[0], name);
  auto context = impl_->context;
  const auto timeout = impl_->timeout_of(options.timeout);
  const int root = int(options.rootRank);
  auto work = impl_->enqueue(
      name, name + " from " + std::to_string(root) + " " + detail::shape_text(tensors[0]),
      [context, algorithms = impl_->algorithms_for(timeout), s, root, timeout](uint32_t tag) {
        if (s.elements == 0) return;
        if (algorithms && algorithms->broadcast(s.data, s.elements * size_t(s.tensor.element_size()), root)) return;
        detail::with_gloo_element_type(s.tensor.dtype(), "broadcast", [&](auto element) {
          using T = decltype(element);
          gloo::BroadcastOptions opts(context);
          if (context->rank == root) opts.setInput(static_cast<T*>(s.data), s.elements);
          opts.setOutput(static_cast<T*>(s.data), s.elements);
          opts.setRoot(root);
          opts.setTag(tag);
          opts.setTimeout(timeout);
          gloo::broadcast(opts);
        });
      },
      timeout, options.check_across_ranks);
  work->on_wait = [s] { write_back(s); };
  return work;
}

std::shared_ptr<Work> ProcessGroupGloo::allgather(std::vector<std::vector<Tensor>>& outputs,
                                                  std::vector<Tensor>& inputs, const AllgatherOptions& options) {
  const std::string name = "all_gather";
  const std::vector<Tensor> out = detail::check_allgather_arguments(*this, outputs, inputs);
  const Tensor& input = inputs[0];
  Staged s = stage_for_gloo(input, name);
  Tensor gathered = empty({int64_t(size_) * input.numel()}, TensorOptions(input.dtype()));
  void* gathered_data = s.elements > 0 ? gathered.data_ptr() : nullptr;
  auto context = impl_->context;
  const auto timeout = impl_->timeout_of(options.timeout);
  auto work = impl_->enqueue(
      name, name + " " + detail::shape_text(input),
      [context, algorithms = impl_->algorithms_for(timeout), s, gathered, gathered_data, timeout](uint32_t tag) {
        if (s.elements == 0) return;
        if (algorithms && algorithms->allgather(s.data, gathered_data, s.elements * size_t(s.tensor.element_size())))
          return;
        detail::with_gloo_element_type(s.tensor.dtype(), "all_gather", [&](auto element) {
          using T = decltype(element);
          gloo::AllgatherOptions opts(context);
          opts.setInput(static_cast<T*>(s.data), s.elements);
          opts.setOutput(static_cast<T*>(gathered_data), s.elements * size_t(context->size));
          opts.setTag(tag);
          opts.setTimeout(timeout);
          gloo::allgather(opts);
        });
      },
      timeout);
  work->on_wait = [out, gathered] { detail::scatter_gathered(out, gathered); };
  return work;
}

#endif  // KILN_HAVE_GLOO

// Through an all-reduce of every rank's whole input list: the reduce-scatter algorithm of
// Debian's Gloo takes no timeout. (Without Gloo, its all-reduce says so.)
std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(std::vector<Tensor>& outputs,
                                                       std::vector<std::vector<Tensor>>& inputs,
                                                       const ReduceScatterOptions& options) {
  return detail::reduce_scatter_by_allreduce(*this, outputs, inputs, options);
}

#if KILN_HAVE_GLOO

std::shared_ptr<Work> ProcessGroupGloo::barrier(const BarrierOptions& options) {
  auto context = impl_->context;
  const auto timeout = impl_->timeout_of(options.timeout);
  return impl_->enqueue(
      "barrier", "barrier",
      [context, algorithms = impl_->algorithms_for(timeout), timeout](uint32_t tag) {
        if (algorithms) {
          algorithms->barrier();
          return;
        }
        gloo::BarrierOptions opts(context);
        opts.setTag(tag);
        opts.setTimeout(timeout);
        gloo::barrier(opts);
      },
      timeout);
}

#endif  // KILN_HAVE_GLOO

}  // namespace kiln::distributed

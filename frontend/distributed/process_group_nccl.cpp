// ProcessGroupNCCL on NCCL opened with dlopen: kiln declares the few types and entry points it
// uses (NCCL's C ABI: enums are ints, ncclUniqueId 128 bytes, ncclResult_t 0 is success), as
// codegen/cuda does with NVRTC, so kiln builds without nccl.h. A collective reads its input
// where kiln computed it (device memory, kiln's stream) and writes a new device buffer, which
// Work::wait() copies into the caller's tensor as a lazy op on the same stream.

#include <cstring>
#include <map>
#include <thread>

#include "codegen/cuda/launcher.h"
#include "frontend/autograd.h"
#include "frontend/distributed/collective_queue.h"
#include "frontend/distributed/process_group.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "runtime/config.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"
#include "runtime/shared_library.h"
#include "tracer/storage.h"

namespace kiln::distributed {

namespace driver = kiln::cuda_driver;

namespace {

using NcclResult = int;
using NcclComm = struct NcclCommOpaque*;
struct NcclUniqueId {
  char internal[128];
};
constexpr NcclResult kNcclSuccess = 0;
enum NcclDataType : int {
  kNcclInt8 = 0,
  kNcclUint8 = 1,
  kNcclInt32 = 2,
  kNcclInt64 = 4,
  kNcclFloat16 = 6,
  kNcclFloat32 = 7,
  kNcclFloat64 = 8,
  kNcclBfloat16 = 9
};
enum NcclRedOp : int { kNcclSum = 0, kNcclProd = 1, kNcclMax = 2, kNcclMin = 3, kNcclAvg = 4 };

struct Nccl {
  NcclResult (*GetVersion)(int*);
  NcclResult (*GetUniqueId)(NcclUniqueId*);
  NcclResult (*CommInitRank)(NcclComm*, int, NcclUniqueId, int);
  NcclResult (*CommDestroy)(NcclComm);
  NcclResult (*CommAbort)(NcclComm);
  NcclResult (*CommGetAsyncError)(NcclComm, NcclResult*);
  const char* (*GetErrorString)(NcclResult);
  NcclResult (*AllReduce)(const void*, void*, size_t, int, int, NcclComm, driver::CUstream);
  NcclResult (*Broadcast)(const void*, void*, size_t, int, int, NcclComm, driver::CUstream);
  NcclResult (*AllGather)(const void*, void*, size_t, int, NcclComm, driver::CUstream);
  std::string reason;  // why not usable; empty when it is
};

// Every entry point with its name: the loader and symbol_names() read this one table.
std::vector<std::pair<const char*, void**>> entry_points(Nccl& n) {
  return {{"ncclGetVersion", reinterpret_cast<void**>(&n.GetVersion)},
          {"ncclGetUniqueId", reinterpret_cast<void**>(&n.GetUniqueId)},
          {"ncclCommInitRank", reinterpret_cast<void**>(&n.CommInitRank)},
          {"ncclCommDestroy", reinterpret_cast<void**>(&n.CommDestroy)},
          {"ncclCommAbort", reinterpret_cast<void**>(&n.CommAbort)},
          {"ncclCommGetAsyncError", reinterpret_cast<void**>(&n.CommGetAsyncError)},
          {"ncclGetErrorString", reinterpret_cast<void**>(&n.GetErrorString)},
          {"ncclAllReduce", reinterpret_cast<void**>(&n.AllReduce)},
          {"ncclBroadcast", reinterpret_cast<void**>(&n.Broadcast)},
          {"ncclAllGather", reinterpret_cast<void**>(&n.AllGather)}};
}

const Nccl& library() {
  static const Nccl n = [] {
    Nccl n{};
    SharedLibrary lib({"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"});
    if (!lib.opened()) {
      n.reason = "libnccl.so.2 could not be opened (" + lib.open_error() +
                 "): install NCCL (the CUDA toolkit's lib64, or add its folder to LD_LIBRARY_PATH)";
      return n;
    }
    for (auto& [name, slot] : entry_points(n)) *slot = lib.address({name});
    if (!lib.missing().empty()) n.reason = "libnccl.so.2 lacks " + lib.missing();
    return n;
  }();
  return n;
}

const Nccl& nccl_or_throw(const std::string& call) {
  const Nccl& n = library();
  KILN_CHECK(n.reason.empty(), call, ": ", n.reason);
  return n;
}

void check(const Nccl& n, NcclResult result, const char* call) {
  if (result != kNcclSuccess)
    throw Error(std::string(call) + " failed: " + (n.GetErrorString ? n.GetErrorString(result) : "") + " (" +
                std::to_string(result) + ")");
}

int nccl_type(ScalarType dtype, const std::string& call) {
  switch (dtype) {
    case kFloat: return kNcclFloat32;
    case kDouble: return kNcclFloat64;
    case kHalf: return kNcclFloat16;
    case kBFloat16: return kNcclBfloat16;
    case kLong: return kNcclInt64;
    case kInt: return kNcclInt32;
    case kChar: return kNcclInt8;
    case kByte:
    case kBool: return kNcclUint8;
    case kShort: break;
  }
  throw Error(call + ": dtype " + dtype_name(dtype) + " is not supported by the nccl backend");
}

int nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return kNcclSum;
    case ReduceOp::AVG: return kNcclAvg;
    case ReduceOp::PRODUCT: return kNcclProd;
    case ReduceOp::MIN: return kNcclMin;
    case ReduceOp::MAX: return kNcclMax;
  }
  return kNcclSum;
}

// A CUDA tensor's values as device memory NCCL reads: computed (its kernels queued on kiln's
// stream), contiguous.
struct DeviceInput {
  Tensor tensor;  // keeps the memory alive until the collective is done
  BufferPtr buffer;
  const void* data = nullptr;
  int device = 0;
  size_t elements = 0;
};

DeviceInput device_input(const Tensor& t, const std::string& call) {
  KILN_CHECK(t.defined(), call, ": undefined tensor");
  KILN_CHECK(t.is_cuda(), call, ": the nccl backend takes CUDA tensors, got one on ", t.device().str(),
             " (init_process_group(\"gloo\") for CPU tensors)");
  nccl_type(t.dtype(), call);
  DeviceInput in;
  in.tensor = t.contiguous();
  in.device = int(t.get_device());
  in.elements = size_t(t.numel());
  if (in.elements == 0) return in;
  TensorImpl& impl = *in.tensor.unsafeGetTensorImpl();
  in.buffer = tracer::materialize(*impl.storage);
  KILN_CHECK(in.buffer->cuda_device() == in.device, call, ": the tensor's values are not in cuda:", in.device,
             "'s memory");
  in.data = static_cast<const char*>(in.buffer->data()) + impl.offset * int64_t(element_size(t.dtype()));
  return in;
}

// A new tensor over new memory of `device`, which NCCL writes and kiln then reads as computed.
Tensor device_output(IntArrayRef sizes, ScalarType dtype, int device, void** data) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const size_t bytes = size_t(numel) * element_size(dtype);
  kiln::cuda::CachingAllocator& allocator = kiln::cuda::device_allocator(device);
  auto buffer =
      std::make_shared<Buffer>(allocator.allocate(bytes), bytes, [&allocator](void* p) { allocator.free(p); });
  buffer->set_cuda_device(device);
  *data = buffer->data();
  Tensor out = kiln::detail::wrap(kiln::detail::record_input(Shape(sizes.begin(), sizes.end()), dtype, buffer));
  out.unsafeGetTensorImpl()->storage->cuda_device = int16_t(device);
  out.unsafeGetTensorImpl()->storage->node->cuda_device = int16_t(device);  // it is there, as ToDevice's
  return out;
}

}  // namespace

namespace nccl {
const std::vector<std::string>& symbol_names() {
  static const std::vector<std::string> names = [] {
    Nccl n{};
    std::vector<std::string> out;
    for (const auto& entry : entry_points(n)) out.push_back(entry.first);
    return out;
  }();
  return names;
}
bool available() { return library().reason.empty(); }
const std::string& unavailable_reason() { return library().reason; }
std::string version() {
  const Nccl& n = nccl_or_throw("nccl::version");
  int v = 0;
  check(n, n.GetVersion(&v), "ncclGetVersion");
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}
}  // namespace nccl

struct ProcessGroupNCCL::Impl {
  const Nccl* n = nullptr;
  std::shared_ptr<Store> store;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  std::map<int, NcclComm> comms;  // by device; touched on the queue's thread only
  int last_device = 0;
  bool aborted = false;
  std::unique_ptr<detail::CollectiveQueue> queue;

  std::chrono::milliseconds timeout_of(std::chrono::milliseconds requested) const {
    return requested == kUnsetTimeout ? timeout : requested;
  }

  // The device's communicator, made at its first collective: rank 0's unique id through the store.
  NcclComm comm(int device) {
    KILN_CHECK(!aborted, "an earlier NCCL collective failed or timed out, and its communicator was aborted");
    auto found = comms.find(device);
    if (found != comms.end()) return found->second;
    const std::string key = "kiln/nccl/unique_id/" + std::to_string(device) + "/" + std::to_string(comms.size());
    NcclUniqueId id{};
    if (rank == 0) {
      check(*n, n->GetUniqueId(&id), "ncclGetUniqueId");
      store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
    } else {
      const std::vector<uint8_t> bytes = store->get(key);
      KILN_CHECK(bytes.size() == sizeof id.internal, "ProcessGroupNCCL: the unique id in the store has ", bytes.size(),
                 " bytes");
      std::memcpy(id.internal, bytes.data(), bytes.size());
    }
    NcclComm c = nullptr;
    check(*n, n->CommInitRank(&c, size, id, rank), "ncclCommInitRank");
    comms[device] = c;
    return c;
  }

  // Queues `launch` (which calls NCCL on the stream) and waits on the queue's thread until the
  // device has done it, the communicator reports an error, or `limit` passes (then it is aborted).
  void run_on_device(int device, const std::function<NcclResult(NcclComm, driver::CUstream)>& launch, const char* call,
                     std::chrono::milliseconds limit) {
    driver::set_device(device);
    const NcclComm c = comm(device);
    const driver::CUstream stream = codegen::cuda::stream(device);
    check(*n, launch(c, stream), call);
    driver::CUevent done;
    KILN_CU(cuEventCreate, &done, driver::CU_EVENT_DISABLE_TIMING);
    KILN_CU(cuEventRecord, done, stream);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      const driver::CUresult state = driver::api().cuEventQuery(done);
      if (state == driver::CUDA_SUCCESS) break;
      NcclResult async = kNcclSuccess;
      n->CommGetAsyncError(c, &async);
      const bool late = std::chrono::steady_clock::now() > deadline;
      if (async != kNcclSuccess || late) {
        driver::api().cuEventDestroy(done);
        abort_all();
        if (late)
          throw Error(std::string(call) + " did not complete within " + std::to_string(limit.count()) +
                      " ms (a rank stopped or died?); the communicator was aborted");
        check(*n, async, call);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    driver::api().cuEventDestroy(done);
  }

  void abort_all() {
    for (auto& [device, c] : comms) n->CommAbort(c);
    comms.clear();
    aborted = true;
  }

  std::shared_ptr<Work> enqueue(const std::string& name, const std::string& signature, int device,
                                std::function<void()> job, std::chrono::milliseconds op_timeout,
                                bool check_calls = true) {
    check_calls = (check_calls || config().distributed_debug) && size > 1;
    last_device = device;
    return queue->enqueue(name, [this, job = std::move(job), signature, device, op_timeout, check_calls] {
      if (check_calls) compare_calls(signature, device, op_timeout);
      job();
    });
  }

  // The ranks' call descriptions, all-gathered through device memory.
  void compare_calls(const std::string& signature, int device, std::chrono::milliseconds limit) {
    driver::set_device(device);
    const std::vector<char> mine = detail::signature_bytes(signature);
    std::vector<char> all(mine.size() * size_t(size));
    kiln::cuda::CachingAllocator& allocator = kiln::cuda::device_allocator(device);
    void* block = allocator.allocate(all.size());
    const auto base = driver::CUdeviceptr(reinterpret_cast<uintptr_t>(block));
    const driver::CUdeviceptr mine_at = base + driver::CUdeviceptr(mine.size() * size_t(rank));
    const driver::CUstream stream = codegen::cuda::stream(device);
    try {
      KILN_CU(cuMemcpyHtoDAsync, mine_at, mine.data(), mine.size(), stream);
      run_on_device(
          device,
          [&](NcclComm c, driver::CUstream s) {
            return n->AllGather(reinterpret_cast<const void*>(mine_at), block, mine.size(), kNcclUint8, c, s);
          },
          "ncclAllGather", limit);
      KILN_CU(cuMemcpyDtoHAsync, all.data(), base, all.size(), stream);
      KILN_CU(cuStreamSynchronize, stream);
    } catch (...) {
      allocator.free(block);
      throw;
    }
    allocator.free(block);
    detail::compare_signatures(all, rank, size);
  }
};

ProcessGroupNCCL::ProcessGroupNCCL(const std::shared_ptr<Store>& store, int rank, int size,
                                   std::shared_ptr<Options> options)
    : ProcessGroup(rank, size), impl_(std::make_unique<Impl>()) {
  KILN_CHECK(store, "ProcessGroupNCCL: no store");
  KILN_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroupNCCL: rank ", rank, " is not in [0, ", size, ")");
  impl_->n = &nccl_or_throw("ProcessGroupNCCL");
  KILN_CHECK(driver::available(), "ProcessGroupNCCL: no CUDA device here (", driver::unavailable_reason(),
             "); the nccl backend runs collectives on GPUs, gloo on CPU tensors");
  impl_->store = store;
  impl_->rank = rank;
  impl_->size = size;
  impl_->timeout = (options ? options : Options::create())->timeout;
  // Jobs stay on the queue's thread: they make their device current.
  impl_->queue = std::make_unique<detail::CollectiveQueue>("nccl", nullptr, /*waiters_run_jobs=*/false);
}

ProcessGroupNCCL::~ProcessGroupNCCL() {
  impl_->queue.reset();  // runs what was queued first
  for (auto& [device, c] : impl_->comms) impl_->n->CommDestroy(c);
}

std::shared_ptr<Work> ProcessGroupNCCL::allreduce(std::vector<Tensor>& tensors, const AllreduceOptions& options) {
  const std::string name = std::string("all_reduce(") + reduce_op_name(options.reduceOp) + ")";
  detail::check_allreduce_arguments(tensors, options.reduceOp, name);
  const DeviceInput in = device_input(tensors[0], name);
  void* out_data = nullptr;
  const Tensor out = device_output(tensors[0].sizes(), tensors[0].dtype(), in.device, &out_data);
  const int type = nccl_type(tensors[0].dtype(), name), op = nccl_op(options.reduceOp);
  Impl* impl = impl_.get();
  const auto timeout = impl->timeout_of(options.timeout);
  auto work = impl->enqueue(
      name, name + " " + detail::shape_text(tensors[0]), in.device,
      [impl, in, out_data, type, op, timeout] {
        if (in.elements == 0) return;
        impl->run_on_device(
            in.device,
            [&](NcclComm c, driver::CUstream s) {
              return impl->n->AllReduce(in.data, out_data, in.elements, type, op, c, s);
            },
            "ncclAllReduce", timeout);
      },
      timeout, options.check_across_ranks);
  work->on_wait = [target = tensors[0], out] {
    autograd::NoGradGuard no_grad;
    target.copy_(out);
  };
  return work;
}

std::shared_ptr<Work> ProcessGroupNCCL::broadcast(std::vector<Tensor>& tensors, const BroadcastOptions& options) {
  const std::string name = "broadcast";
  detail::check_broadcast_arguments(*this, tensors, options);
  const DeviceInput in = device_input(tensors[0], name);
  void* out_data = nullptr;
  const Tensor out = device_output(tensors[0].sizes(), tensors[0].dtype(), in.device, &out_data);
  const int type = nccl_type(tensors[0].dtype(), name), root = int(options.rootRank);
  Impl* impl = impl_.get();
  const auto timeout = impl->timeout_of(options.timeout);
  auto work = impl->enqueue(
      name, name + " from " + std::to_string(root) + " " + detail::shape_text(tensors[0]), in.device,
      [impl, in, out_data, type, root, timeout] {
        if (in.elements == 0) return;
        impl->run_on_device(
            in.device,
            [&](NcclComm c, driver::CUstream s) {
              return impl->n->Broadcast(in.data, out_data, in.elements, type, root, c, s);
            },
            "ncclBroadcast", timeout);
      },
      timeout, options.check_across_ranks);
  work->on_wait = [target = tensors[0], out] {
    autograd::NoGradGuard no_grad;
    target.copy_(out);
  };
  return work;
}

std::shared_ptr<Work> ProcessGroupNCCL::allgather(std::vector<std::vector<Tensor>>& outputs,
                                                  std::vector<Tensor>& inputs, const AllgatherOptions& options) {
  const std::string name = "all_gather";
  const std::vector<Tensor> targets = detail::check_allgather_arguments(*this, outputs, inputs);
  const DeviceInput in = device_input(inputs[0], name);
  void* out_data = nullptr;
  const Tensor gathered = device_output({int64_t(size_) * inputs[0].numel()}, inputs[0].dtype(), in.device, &out_data);
  const int type = nccl_type(inputs[0].dtype(), name);
  Impl* impl = impl_.get();
  const auto timeout = impl->timeout_of(options.timeout);
  auto work = impl->enqueue(
      name, name + " " + detail::shape_text(inputs[0]), in.device,
      [impl, in, out_data, type, timeout] {
        if (in.elements == 0) return;
        impl->run_on_device(
            in.device,
            [&](NcclComm c, driver::CUstream s) {
              return impl->n->AllGather(in.data, out_data, in.elements, type, c, s);
            },
            "ncclAllGather", timeout);
      },
      timeout);
  work->on_wait = [targets, gathered] { detail::scatter_gathered(targets, gathered); };
  return work;
}

std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter(std::vector<Tensor>& outputs,
                                                       std::vector<std::vector<Tensor>>& inputs,
                                                       const ReduceScatterOptions& options) {
  return detail::reduce_scatter_by_allreduce(*this, outputs, inputs, options);
}

// NCCL has no barrier: an all-reduce of one element on the device last used, as PyTorch does.
std::shared_ptr<Work> ProcessGroupNCCL::barrier(const BarrierOptions& options) {
  std::vector<Tensor> one{zeros({1}, TensorOptions(kFloat).device(Device(kCUDA, impl_->last_device)))};
  AllreduceOptions reduce;
  reduce.timeout = options.timeout;
  return allreduce(one, reduce);
}

}  // namespace kiln::distributed

// ProcessGroupMPI on Open MPI, opened with dlopen. Open MPI's handles are the addresses of its
// predefined objects (MPI_COMM_WORLD is &ompi_mpi_comm_world, MPI_FLOAT &ompi_mpi_float...), so
// they are looked up by name like the functions; MPI_IN_PLACE is (void*)1 and
// MPI_STATUS_IGNORE null in its ABI. Every MPI call is made under one process-wide mutex, which
// is what MPI_THREAD_SERIALIZED asks of a program with several groups. MPI has no 16-bit floats:
// float16 and bfloat16 move as MPI_UINT16_T, and their reductions are user ops (MPI_Op_create)
// that add, multiply or compare in float32 and round back, as PyTorch's CPU kernels compute them.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "frontend/autograd.h"
#include "frontend/distributed/collective_queue.h"
#include "frontend/distributed/process_group.h"
#include "frontend/ops.h"
#include "runtime/config.h"
#include "runtime/shared_library.h"

namespace kiln::distributed {

namespace {

using MpiHandle = void*;  // MPI_Comm, MPI_Datatype, MPI_Op, MPI_Group, MPI_Request: pointers in Open MPI
constexpr int kMpiSuccess = 0;
constexpr int kMpiThreadSerialized = 2;
void* const kMpiInPlace = reinterpret_cast<void*>(1);

struct Mpi {
  int (*Initialized)(int*);
  int (*Finalized)(int*);
  int (*Init_thread)(int*, char***, int, int*);
  int (*Finalize)();
  int (*Comm_rank)(MpiHandle, int*);
  int (*Comm_size)(MpiHandle, int*);
  int (*Comm_group)(MpiHandle, MpiHandle*);
  int (*Group_incl)(MpiHandle, int, const int*, MpiHandle*);
  int (*Group_free)(MpiHandle*);
  int (*Comm_create)(MpiHandle, MpiHandle, MpiHandle*);
  int (*Comm_free)(MpiHandle*);
  int (*Iallreduce)(const void*, void*, int, MpiHandle, MpiHandle, MpiHandle, MpiHandle*);
  int (*Ibcast)(void*, int, MpiHandle, int, MpiHandle, MpiHandle*);
  int (*Iallgather)(const void*, int, MpiHandle, void*, int, MpiHandle, MpiHandle, MpiHandle*);
  int (*Ibarrier)(MpiHandle, MpiHandle*);
  int (*Test)(MpiHandle*, int*, void*);
  int (*Error_string)(int, char*, int*);
  int (*Op_create)(void (*)(void*, void*, int*, MpiHandle*), int, MpiHandle*);
  MpiHandle comm_world, comm_null;
  MpiHandle float32, float64, int64, int32, int8, uint8, uint16, boolean, byte;
  MpiHandle op_sum, op_prod, op_min, op_max;
  MpiHandle narrow_ops[2][4] = {};  // [float16, bfloat16][sum, product, min, max], made at first use
  std::string reason;               // why MPI is not usable; empty when it is
  bool we_initialized = false;
  bool broken = false;  // a collective timed out: MPI cannot be finalized cleanly
};

std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

Mpi& mpi_library() {
  static Mpi m = [] {
    Mpi m{};
    // Global: Open MPI's plugins, which it opens in turn, resolve libmpi's symbols globally.
    SharedLibrary lib({"libmpi.so.40"}, /*global=*/true);
    if (!lib.opened()) {
      m.reason = "libmpi.so.40 (Open MPI) could not be opened (" + lib.open_error() +
                 "): apt-get install openmpi-bin, and start the job with mpirun";
      return m;
    }
    lib.bind(m.Initialized, {"MPI_Initialized"});
    lib.bind(m.Finalized, {"MPI_Finalized"});
    lib.bind(m.Init_thread, {"MPI_Init_thread"});
    lib.bind(m.Finalize, {"MPI_Finalize"});
    lib.bind(m.Comm_rank, {"MPI_Comm_rank"});
    lib.bind(m.Comm_size, {"MPI_Comm_size"});
    lib.bind(m.Comm_group, {"MPI_Comm_group"});
    lib.bind(m.Group_incl, {"MPI_Group_incl"});
    lib.bind(m.Group_free, {"MPI_Group_free"});
    lib.bind(m.Comm_create, {"MPI_Comm_create"});
    lib.bind(m.Comm_free, {"MPI_Comm_free"});
    lib.bind(m.Iallreduce, {"MPI_Iallreduce"});
    lib.bind(m.Ibcast, {"MPI_Ibcast"});
    lib.bind(m.Iallgather, {"MPI_Iallgather"});
    lib.bind(m.Ibarrier, {"MPI_Ibarrier"});
    lib.bind(m.Test, {"MPI_Test"});
    lib.bind(m.Error_string, {"MPI_Error_string"});
    lib.bind(m.Op_create, {"MPI_Op_create"});
    // Open MPI's predefined communicators, types and ops are objects: their addresses are the handles.
    m.comm_world = lib.address({"ompi_mpi_comm_world"});
    m.comm_null = lib.address({"ompi_mpi_comm_null"});
    m.float32 = lib.address({"ompi_mpi_float"});
    m.float64 = lib.address({"ompi_mpi_double"});
    m.int64 = lib.address({"ompi_mpi_int64_t"});
    m.int32 = lib.address({"ompi_mpi_int32_t"});
    m.int8 = lib.address({"ompi_mpi_int8_t"});
    m.uint8 = lib.address({"ompi_mpi_uint8_t"});
    m.uint16 = lib.address({"ompi_mpi_uint16_t"});
    m.boolean = lib.address({"ompi_mpi_c_bool"});
    m.byte = lib.address({"ompi_mpi_byte"});
    m.op_sum = lib.address({"ompi_mpi_op_sum"});
    m.op_prod = lib.address({"ompi_mpi_op_prod"});
    m.op_min = lib.address({"ompi_mpi_op_min"});
    m.op_max = lib.address({"ompi_mpi_op_max"});
    if (!lib.missing().empty()) m.reason = "libmpi.so.40 is not Open MPI 4's: it lacks " + lib.missing();
    return m;
  }();
  return m;
}

std::string error_text(const Mpi& m, int code) {
  char text[512] = {};
  int length = 0;
  if (m.Error_string && m.Error_string(code, text, &length) == kMpiSuccess) return std::string(text, size_t(length));
  return "MPI error " + std::to_string(code);
}

void check(const Mpi& m, int code, const char* call) {
  if (code != kMpiSuccess) throw Error(std::string(call) + " failed: " + error_text(m, code));
}

void finalize_at_exit() {
  Mpi& m = mpi_library();
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int finalized = 0;
  m.Finalized(&finalized);
  if (!finalized && !m.broken) m.Finalize();
}

// MPI, initialized (once per process, finalized at exit when kiln initialized it).
Mpi& mpi(const char* call) {
  Mpi& m = mpi_library();
  KILN_CHECK(m.reason.empty(), call, ": ", m.reason);
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int initialized = 0, finalized = 0;
  check(m, m.Initialized(&initialized), "MPI_Initialized");
  check(m, m.Finalized(&finalized), "MPI_Finalized");
  KILN_CHECK(!finalized, call, ": MPI was already finalized");
  if (!initialized) {
    int provided = 0;
    check(m, m.Init_thread(nullptr, nullptr, kMpiThreadSerialized, &provided), "MPI_Init_thread");
    m.we_initialized = true;
    std::atexit(finalize_at_exit);
    KILN_CHECK(provided >= kMpiThreadSerialized, call, ": this MPI gives thread level ", provided,
               "; kiln needs MPI_THREAD_SERIALIZED (2)");
  }
  return m;
}

MpiHandle datatype(const Mpi& m, ScalarType dtype, const std::string& call) {
  if (dtype == kFloat) return m.float32;
  if (dtype == kDouble) return m.float64;
  if (dtype == kLong) return m.int64;
  if (dtype == kInt) return m.int32;
  if (dtype == kChar) return m.int8;
  if (dtype == kByte) return m.uint8;
  if (dtype == kBool) return m.boolean;
  if (is_reduced_float(dtype)) return m.uint16;  // moved as bits; reduced by narrow_op
  throw Error(call + ": dtype " + dtype_name(dtype) + " is not supported by the mpi backend");
}

// inout[i] = in[i] OP inout[i] on 16-bit floats, computed in float32 (MPI_User_function).
template <typename T, ReduceOp Op>
void narrow_reduce(void* in, void* inout, int* length, MpiHandle*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *length; ++i) {
    const float x = float(a[i]), y = float(b[i]);
    if constexpr (Op == ReduceOp::PRODUCT)
      b[i] = T(x * y);
    else if constexpr (Op == ReduceOp::MIN)
      b[i] = T(std::min(x, y));
    else if constexpr (Op == ReduceOp::MAX)
      b[i] = T(std::max(x, y));
    else
      b[i] = T(x + y);
  }
}

// The sums DDP's compress hooks make, on a whole bucket a step: written so that they vectorize
// (the generic loop above converts one element at a time, through branches, at several ns an
// element). bfloat16: its rounding without a branch; float16: the CPU's F16C conversions where it
// has them (both round to nearest even).
void bfloat16_sum(void* in, void* inout, int* length, MpiHandle*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *length; ++i) {
    const float sum = bfloat16_bits_to_float(a[i]) + bfloat16_bits_to_float(b[i]);
    uint32_t u;
    std::memcpy(&u, &sum, sizeof u);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    b[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void float16_sum_f16c(void* in, void* inout, int* length, MpiHandle* type) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  int i = 0;
  for (; i + 8 <= *length; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i),
                     _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  int rest = *length - i;
  narrow_reduce<Half, ReduceOp::SUM>(const_cast<uint16_t*>(a + i), b + i, &rest, type);
}
#endif

template <typename T>
void (*narrow_function(ReduceOp op))(void*, void*, int*, MpiHandle*) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      if constexpr (std::is_same_v<T, BFloat16>) return &bfloat16_sum;
#if defined(__x86_64__)
      if (std::is_same_v<T, Half> && __builtin_cpu_supports("f16c")) return &float16_sum_f16c;
#endif
      return &narrow_reduce<T, ReduceOp::SUM>;
    case ReduceOp::PRODUCT: return &narrow_reduce<T, ReduceOp::PRODUCT>;
    case ReduceOp::MIN: return &narrow_reduce<T, ReduceOp::MIN>;
    case ReduceOp::MAX: return &narrow_reduce<T, ReduceOp::MAX>;
  }
  return &narrow_reduce<T, ReduceOp::SUM>;
}

// The user op for `op` on float16 or bfloat16, made at first use (MPI is initialized by then);
// MPI_Finalize frees it.
MpiHandle narrow_op(Mpi& m, ScalarType dtype, ReduceOp op) {
  const int slot = op == ReduceOp::PRODUCT ? 1 : op == ReduceOp::MIN ? 2 : op == ReduceOp::MAX ? 3 : 0;
  std::lock_guard<std::mutex> lock(mpi_mutex());
  MpiHandle& handle = m.narrow_ops[dtype == kHalf ? 0 : 1][slot];
  if (!handle)
    check(m, m.Op_create(dtype == kHalf ? narrow_function<Half>(op) : narrow_function<BFloat16>(op), 1, &handle),
          "MPI_Op_create");
  return handle;
}

MpiHandle reduce_op(Mpi& m, ReduceOp op, ScalarType dtype) {
  if (is_reduced_float(dtype)) return narrow_op(m, dtype, op);
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return m.op_sum;
    case ReduceOp::PRODUCT: return m.op_prod;
    case ReduceOp::MIN: return m.op_min;
    case ReduceOp::MAX: return m.op_max;
  }
  return m.op_sum;
}

int mpi_count(size_t elements, const std::string& call) {
  KILN_CHECK(elements <= size_t(std::numeric_limits<int>::max()), call, ": ", elements,
             " elements are more than one MPI call takes (2^31 - 1)");
  return int(elements);
}

}  // namespace

struct ProcessGroupMPI::Impl {
  Mpi* m = nullptr;
  MpiHandle comm = nullptr;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  std::unique_ptr<detail::CollectiveQueue> queue;

  std::chrono::milliseconds timeout_of(std::chrono::milliseconds requested) const {
    return requested == kUnsetTimeout ? timeout : requested;
  }

  // Starts a non-blocking collective with `start` and polls it until it completes or `limit`
  // passes (then the group is unusable: MPI has no way to cancel a collective).
  void run(const std::function<int(MpiHandle*)>& start, const char* call, std::chrono::milliseconds limit) {
    KILN_CHECK(!m->broken, "an earlier MPI collective timed out; MPI cannot go on after that");
    MpiHandle request = nullptr;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      check(*m, start(&request), call);
    }
    const auto began = std::chrono::steady_clock::now(), deadline = began + limit;
    for (;;) {
      int done = 0;
      {
        std::lock_guard<std::mutex> lock(mpi_mutex());
        check(*m, m->Test(&request, &done, nullptr), "MPI_Test");
      }
      if (done) return;
      const auto now = std::chrono::steady_clock::now();
      if (now > deadline) {
        m->broken = true;
        throw Error(std::string(call) + " did not complete within " + std::to_string(limit.count()) +
                    " ms (a rank stopped or died?)");
      }
      // MPI advances a collective's steps only inside its calls (MPI_Test here): poll yielding the
      // core for 200 us, about what a few megabytes take through shared memory; a peer later than
      // that was descheduled or is still computing, and polls that yield would take the core it
      // needs where ranks fill the cores: then poll every 20 us, and after 50 ms every 200 us.
      const auto waited = now - began;
      if (waited < std::chrono::microseconds(200))
        std::this_thread::yield();
      else if (waited < std::chrono::milliseconds(50))
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      else
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  std::shared_ptr<Work> enqueue(const std::string& name, const std::string& signature, std::function<void()> job,
                                std::chrono::milliseconds op_timeout, bool check_calls = true) {
    check_calls = (check_calls || config().distributed_debug) && size > 1;
    return queue->enqueue(name, [this, job = std::move(job), signature, op_timeout, check_calls] {
      if (check_calls) {
        std::vector<char> mine = detail::signature_bytes(signature);
        std::vector<char> all(detail::kSignatureBytes * size_t(size), 0);
        run(
            [&](MpiHandle* request) {
              return m->Iallgather(mine.data(), int(mine.size()), m->byte, all.data(), int(mine.size()), m->byte, comm,
                                   request);
            },
            "MPI_Iallgather", op_timeout);
        detail::compare_signatures(all, rank, size);
      }
      job();
    });
  }
};

std::shared_ptr<ProcessGroupMPI> ProcessGroupMPI::createProcessGroupMPI(const std::vector<int>& ranks,
                                                                        std::chrono::milliseconds timeout) {
  Mpi& m = mpi("ProcessGroupMPI");
  MpiHandle comm = m.comm_world;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    if (!ranks.empty()) {
      int world = 0;
      check(m, m.Comm_size(m.comm_world, &world), "MPI_Comm_size");
      for (int r : ranks)
        KILN_CHECK(r >= 0 && r < world, "ProcessGroupMPI: rank ", r, " is not in MPI_COMM_WORLD's [0, ", world, ")");
      MpiHandle world_group = nullptr, group = nullptr;
      check(m, m.Comm_group(m.comm_world, &world_group), "MPI_Comm_group");
      check(m, m.Group_incl(world_group, int(ranks.size()), ranks.data(), &group), "MPI_Group_incl");
      const int created = m.Comm_create(m.comm_world, group, &comm);
      m.Group_free(&group);
      m.Group_free(&world_group);
      check(m, created, "MPI_Comm_create");
      if (comm == m.comm_null) return nullptr;  // this rank is not in the group
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->m = &m;
  impl->comm = comm;
  impl->timeout = timeout;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check(m, m.Comm_rank(comm, &impl->rank), "MPI_Comm_rank");
    check(m, m.Comm_size(comm, &impl->size), "MPI_Comm_size");
  }
  const int rank = impl->rank, size = impl->size;
  return std::make_shared<ProcessGroupMPI>(std::move(impl), rank, size);
}

ProcessGroupMPI::ProcessGroupMPI(std::unique_ptr<Impl> impl, int rank, int size)
    : ProcessGroup(rank, size), impl_(std::move(impl)) {
  impl_->queue = std::make_unique<detail::CollectiveQueue>("mpi");
}

ProcessGroupMPI::~ProcessGroupMPI() {
  impl_->queue.reset();  // runs what was queued first
  Mpi& m = *impl_->m;
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int finalized = 0;
  m.Finalized(&finalized);
  if (impl_->comm != m.comm_world && !finalized && !m.broken) m.Comm_free(&impl_->comm);
}

namespace {
detail::Staged stage_for_mpi(const Mpi& m, const Tensor& t, const std::string& call) {
  KILN_CHECK(!t.defined() || t.is_cpu(), call, ": the mpi backend takes CPU tensors, got one on ", t.device().str());
  if (t.defined()) datatype(m, t.dtype(), call);
  return detail::stage(t, call);
}
}  // namespace

std::shared_ptr<Work> ProcessGroupMPI::allreduce(std::vector<Tensor>& tensors, const AllreduceOptions& options) {
  const std::string name = std::string("all_reduce(") + reduce_op_name(options.reduceOp) + ")";
  const ReduceOp op = options.reduceOp;
  detail::check_allreduce_arguments(tensors, op, name);
  Impl* impl = impl_.get();
  const detail::Staged s = stage_for_mpi(*impl->m, tensors[0], name);
  const int count = mpi_count(s.elements, name);
  const MpiHandle type = datatype(*impl->m, s.tensor.dtype(), name), mpi_op = reduce_op(*impl->m, op, s.tensor.dtype());
  const auto timeout = impl->timeout_of(options.timeout);
  auto work = impl->enqueue(
      name, name + " " + detail::shape_text(tensors[0]),
      [impl, s, count, type, mpi_op, timeout] {
        if (count == 0) return;
        impl->run(
            [&](MpiHandle* request) {
              return impl->m->Iallreduce(kMpiInPlace, s.data, count, type, mpi_op, impl->comm, request);
            },
            "MPI_Iallreduce", timeout);
      },
      timeout, options.check_across_ranks);
  work->on_wait = detail::finish_allreduce(s, op, size_);
  return work;
}

std::shared_ptr<Work> ProcessGroupMPI::broadcast(std::vector<Tensor>& tensors, const BroadcastOptions& options) {
  const std::string name = "broadcast";
  detail::check_broadcast_arguments(*this, tensors, options);
  Impl* impl = impl_.get();
  const detail::Staged s = stage_for_mpi(*impl->m, tensors[0], name);
  const int count = mpi_count(s.elements, name), root = int(options.rootRank);
  const MpiHandle type = datatype(*impl->m, s.tensor.dtype(), name);
  const auto timeout = impl->timeout_of(options.timeout);
  auto work = impl->enqueue(
      name, name + " from " + std::to_string(root) + " " + detail::shape_text(tensors[0]),
      [impl, s, count, type, root, timeout] {
        if (count == 0) return;
        impl->run([&](MpiHandle* request) { return impl->m->Ibcast(s.data, count, type, root, impl->comm, request); },
                  "MPI_Ibcast", timeout);
      },
      timeout, options.check_across_ranks);
  work->on_wait = [s] { detail::write_back(s); };
  return work;
}

std::shared_ptr<Work> ProcessGroupMPI::allgather(std::vector<std::vector<Tensor>>& outputs, std::vector<Tensor>& inputs,
                                                 const AllgatherOptions& options) {
  const std::string name = "all_gather";
  const std::vector<Tensor> out = detail::check_allgather_arguments(*this, outputs, inputs);
  const Tensor& input = inputs[0];
  Impl* impl = impl_.get();
  const detail::Staged s = stage_for_mpi(*impl->m, input, name);
  const int count = mpi_count(s.elements * size_t(size_), name);
  const MpiHandle type = datatype(*impl->m, input.dtype(), name);
  Tensor gathered = empty({int64_t(size_) * input.numel()}, TensorOptions(input.dtype()));
  void* gathered_data = s.elements > 0 ? gathered.data_ptr() : nullptr;
  const auto timeout = impl->timeout_of(options.timeout);
  auto work = impl->enqueue(
      name, name + " " + detail::shape_text(input),
      [impl, s, gathered, gathered_data, type, count, timeout] {
        if (count == 0) return;
        const int each = int(s.elements);
        impl->run(
            [&](MpiHandle* request) {
              return impl->m->Iallgather(s.data, each, type, gathered_data, each, type, impl->comm, request);
            },
            "MPI_Iallgather", timeout);
      },
      timeout);
  work->on_wait = [out, gathered] { detail::scatter_gathered(out, gathered); };
  return work;
}

std::shared_ptr<Work> ProcessGroupMPI::reduce_scatter(std::vector<Tensor>& outputs,
                                                      std::vector<std::vector<Tensor>>& inputs,
                                                      const ReduceScatterOptions& options) {
  return detail::reduce_scatter_by_allreduce(*this, outputs, inputs, options);
}

std::shared_ptr<Work> ProcessGroupMPI::barrier(const BarrierOptions& options) {
  Impl* impl = impl_.get();
  const auto timeout = impl->timeout_of(options.timeout);
  return impl->enqueue(
      "barrier", "barrier",
      [impl, timeout] {
        impl->run([&](MpiHandle* request) { return impl->m->Ibarrier(impl->comm, request); }, "MPI_Ibarrier", timeout);
      },
      timeout);
}

}  // namespace kiln::distributed

#include "codegen/cuda/launcher.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "codegen/arguments.h"
#include "codegen/cuda/compile_queue.h"
#include "codegen/cuda/cublas.h"
#include "codegen/cuda/graphs.h"
#include "codegen/cuda/kernel_cache.h"
#include "codegen/cuda/per_op.h"
#include "codegen/cuda/source.h"
#include "codegen/unfused.h"
#include "runtime/config.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/stats.h"

namespace kiln::codegen::cuda {
namespace {

namespace driver = kiln::cuda_driver;
using driver::CUdeviceptr;
using fusion::Kernel;

struct Functions {
  driver::CUfunction main = nullptr, init = nullptr;  // init: a library kernel's first launch, if any
};

// What kiln keeps per device. Made at the device's first flush, never destroyed (device memory
// and modules outlive static destructors that may still free tensors).
struct DeviceState {
  int index = 0;
  int arch = 0;      // sm_<arch>: 90 for 9.0
  int sm_count = 1;  // multiprocessors, for launch_dims
  driver::CUstream stream = nullptr;
  CUdeviceptr block_count = 0;  // SplitWhole kernels' counter: zero, and left zero by each
  cublasHandle blas = nullptr;
  std::mutex mutex;  // modules and the per-op kernels
  // The loaded functions by the kernel's structural key (Partition::keys, library_key for a
  // library kernel), one map per index width: the partition cache has the key already, so a launch
  // neither rebuilds it nor appends cuda_key's suffix.
  std::unordered_map<std::string, Functions> modules[2];  // [index32]
  // The per-op kernels (per_op.h): the prebuilt library's module once looked for, else a module
  // per op; their functions by name.
  bool per_op_library_tried = false;
  driver::CUmodule per_op_library = nullptr;
  std::unordered_map<std::string, driver::CUmodule> per_op_modules;
  std::unordered_map<std::string, driver::CUfunction> per_op_functions;
  GraphCache graphs;  // the recurring runs of fused kernels, as CUDA graphs (graphs.h)
};

DeviceState& device_state(int index) {
  static std::mutex mutex;
  static auto* states = new std::unordered_map<int, std::unique_ptr<DeviceState>>;
  // The fake device is another device than a real cuda:0: it gets its own state.
  const int slot = driver::fake_device() ? -1 - index : index;
  std::lock_guard<std::mutex> lock(mutex);
  auto& state = (*states)[slot];
  if (state) return *state;
  auto d = std::make_unique<DeviceState>();
  d->index = index;
  driver::set_device(index);
  const driver::DeviceProperties p = driver::device_properties(index);
  d->arch = p.major * 10 + p.minor;
  d->sm_count = std::max(p.multiprocessors, 1);
  KILN_CU(cuStreamCreate, &d->stream, driver::CU_STREAM_NON_BLOCKING);
  KILN_CU(cuMemAlloc, &d->block_count, sizeof(unsigned));  // for good: not the allocator's to count
  KILN_CU(cuMemsetD8Async, d->block_count, 0, sizeof(unsigned), d->stream);
  KILN_CU(cuStreamSynchronize, d->stream);
  state = std::move(d);
  return *state;
}

CUdeviceptr device_pointer(const Buffer& b) { return CUdeviceptr(reinterpret_cast<uintptr_t>(b.data())); }

// `bytes` of device memory from the caching allocator, given back when the buffer dies (reused
// in stream order: every use is on the device's one stream).
BufferPtr device_buffer(const DeviceState& d, size_t bytes) {
  kiln::cuda::CachingAllocator& allocator = kiln::cuda::device_allocator(d.index);
  auto buffer =
      std::make_shared<Buffer>(allocator.allocate(bytes), bytes, [&allocator](void* p) { allocator.free(p); });
  buffer->set_cuda_device(d.index);
  return buffer;
}

// A device copy of host memory, through a pinned staging block that returns to its pool once
// the copy is done.
BufferPtr upload(const DeviceState& d, const Buffer& host) {
  BufferPtr out = device_buffer(d, host.bytes());
  if (host.bytes() == 0) return out;
  kiln::cuda::CachingAllocator& pinned = kiln::cuda::pinned_allocator();
  void* staging = pinned.allocate(host.bytes());
  std::memcpy(staging, host.data(), host.bytes());
  KILN_CU(cuMemcpyHtoDAsync, device_pointer(*out), staging, host.bytes(), d.stream);
  driver::CUevent copied;
  KILN_CU(cuEventCreate, &copied, driver::CU_EVENT_DISABLE_TIMING);
  KILN_CU(cuEventRecord, copied, d.stream);
  const driver::DriverApi* api = &driver::api();  // the table that made the event, fake or not
  pinned.free_when(staging, [api, copied] {
    if (api->cuEventQuery(copied) != driver::CUDA_SUCCESS) return false;
    api->cuEventDestroy(copied);
    return true;
  });
  return out;
}

// A host copy of device memory, queued on the stream: read it after synchronizing the stream.
BufferPtr download(const DeviceState& d, const Buffer& device) {
  BufferPtr out = make_buffer(device.bytes());
  if (device.bytes() > 0) KILN_CU(cuMemcpyDtoHAsync, out->data(), device_pointer(device), device.bytes(), d.stream);
  return out;
}

size_t bytes_of(const ir::Node& n) { return size_t(n.numel()) * element_size(n.dtype); }

// A module's functions: `image` is a cubin, PTX text or, on the fake device, CUDA source.
Functions load_functions(const std::string& image, const std::string& name, const std::string& init_name) {
  driver::CUmodule module;
  KILN_CU(cuModuleLoadData, &module, image.c_str());  // NUL-terminated where it is text
  Functions f;
  KILN_CU(cuModuleGetFunction, &f.main, module, name.c_str());
  if (!init_name.empty()) KILN_CU(cuModuleGetFunction, &f.init, module, init_name.c_str());
  return f;
}

// The loaded kernel for `source` on `d`: the cubin from the kernel cache (compiled by NVRTC when
// `compile`, else null where it is not in memory or on disk); on the fake device, the source.
std::optional<Functions> compiled_functions(const DeviceState& d, const KernelSource& source, bool compile) {
  if (driver::fake_device()) return load_functions(source.source, source.name, source.init_name);
  KernelCache& cache = kernel_cache(d.arch);
  auto compiled = compile ? cache.get(source) : cache.find(source);
  if (!compiled) return std::nullopt;
  return load_functions(compiled->image, compiled->name, compiled->init_name);
}

// Whether a kernel missing from memory is compiled in the background while the flush goes on.
bool compiles_in_background() { return config().compile_in_background && is_lazy(); }

class Launcher {
 public:
  explicit Launcher(DeviceState& d) : d_(d) {}

  void run(const fusion::Partition& partition) {
    driver::set_device(d_.index);
    hold_ = driver::graphs_supported(driver::api()) && config().cuda_graphs;
    if (hold_) {
      driver::set_before_free([](void* self) { static_cast<Launcher*>(self)->queue_held(); }, this);
      held_.reserve(partition.kernels.size() * 2);
      held_args_.reserve(partition.kernels.size() * 32);
    }
    try {
      for (size_t i = 0; i < partition.kernels.size(); ++i) {
        run(partition.kernels[i], partition.keys[i]);
        for (ir::Node* done : partition.release[i]) release(done->result);
      }
      queue_held();
    } catch (...) {
      driver::set_before_free(nullptr, nullptr);
      try {
        queue_held();  // the kernels before the failing one run, as they do unheld
      } catch (...) {
      }
      throw;
    }
    driver::set_before_free(nullptr, nullptr);
    if (unfused_) stats_add(&Stats::flushes_unfused, 1);
    // Values that host tensors hold (`.cpu()`, and host ops the segment ran here) go back.
    bool copied = false;
    auto copy_back = [&](ir::Node* n) {
      if (n->cuda_device < 0 && n->computed() && n->result->cuda_device() >= 0) {
        n->result = download(d_, *n->result);
        copied = true;
      }
    };
    for (const Kernel& k : partition.kernels) {
      if (k.kind == Kernel::Kind::Library) copy_back(k.library_node);
      for (int o : k.outputs) copy_back(k.nodes[size_t(o)].node);
    }
    if (copied) KILN_CU(cuStreamSynchronize, d_.stream);
  }

 private:
  static std::vector<ir::Node*> outputs(const Kernel& k) {
    if (k.kind == Kernel::Kind::Library) return {k.library_node};
    std::vector<ir::Node*> out;
    for (int o : k.outputs) out.push_back(k.nodes[size_t(o)].node);
    return out;
  }

  // `key`: the kernel's structural key (Partition::keys; empty for a library kernel).
  void run(const Kernel& k, const std::string& key) {
    if (!has_cuda_source(k)) {
      if (k.kind == Kernel::Kind::Library && k.library_node->op == ir::Op::Matmul && gemm(*k.library_node)) return;
      return run_on_host(k);
    }
    // Eager mode runs the per-op kernels, as on the CPU, compiling nothing it need not.
    if (!is_lazy() && k.kind != Kernel::Kind::Library && run_per_op(k)) return;
    const bool index32 = fits_int32_indices(k);
    std::string library;
    const std::string& structure = k.kind == Kernel::Kind::Library ? (library = library_key(*k.library_node)) : key;
    const Functions* ready = functions(k, structure, index32);
    if (!ready) {  // compiling in the background
      if (k.kind == Kernel::Kind::Library) return run_on_host(k);
      if (run_per_op(k)) return;
      ready = functions(k, structure, index32, true);
    }
    const Functions& f = *ready;
    const LaunchDims dims = launch_dims(k, d_.sm_count);
    args_.clear();
    args_.reserve(64);
    BufferPtr workspace;
    if (k.kind == Kernel::Kind::Library) {
      ir::Node& n = *k.library_node;
      for (const auto& in : n.inputs) pointer(*in.node);
      for (int64_t v : library_scalars(k)) integer(v);
      n.result = device_buffer(d_, bytes_of(n));
      push_pointer(device_pointer(*n.result));
      if (library_workspace(n)) {
        workspace = device_buffer(d_, std::max<uint64_t>(dims.workspace_bytes, 8));
        push_pointer(device_pointer(*workspace));
      }
    } else {
      for_each_argument(k, [&](const KernelArgument& a) {
        using Kind = KernelArgument::Kind;
        switch (a.kind) {
          case Kind::Input: pointer(*k.reads[size_t(a.read)].node); break;
          case Kind::Extent: integer(k.domain[size_t(a.dim)]); break;
          case Kind::Offset: integer(k.reads[size_t(a.read)].offset); break;
          case Kind::Stride: integer(k.reads[size_t(a.read)].strides[size_t(a.dim)]); break;
          case Kind::Int64Const: integer(k.nodes[size_t(a.node)].node->int_scalar); break;
          case Kind::Float64Const: {
            Arg v;
            v.f = k.nodes[size_t(a.node)].node->scalar;
            args_.push_back(v);
            break;
          }
          case Kind::Output: {
            ir::Node& n = *k.nodes[size_t(a.node)].node;
            n.result = device_buffer(d_, bytes_of(n));
            push_pointer(device_pointer(*n.result));
            break;
          }
        }
      });
      if (layout_of(k) == Layout::SplitWhole) {
        workspace = device_buffer(d_, dims.workspace_bytes);
        push_pointer(device_pointer(*workspace));
        push_pointer(d_.block_count);
      }
    }
    if (f.init) queue(f.init, dims);
    queue(f.main, dims);
    release(workspace);
    for (auto& [node, copy] : uploads_) release(copy);
    uploads_.clear();
  }

  // Gives a block back to the caching allocator, or, while launches that may name it are held,
  // keeps it until they are on the stream: given back now, another thread could put its own work
  // into the block on the stream first, or the allocator free it to the driver.
  void release(BufferPtr& block) {
    if (!held_.empty() && block) held_blocks_.push_back(std::move(block));
    block.reset();
  }

  // Launches `f` with the arguments in args_, or holds the launch back in the run that graphs.h
  // may replay as a graph.
  void queue(driver::CUfunction f, const LaunchDims& dims) {
    if (!hold_) {
      params_.resize(args_.size());
      for (size_t i = 0; i < args_.size(); ++i) params_[i] = &args_[i];
      return launch(f, dims, params_);
    }
    static_assert(sizeof(Arg) == sizeof(uint64_t), "a held argument is one word");
    HeldLaunch l;
    l.function = f;
    l.grid = dims.grid;
    l.block = dims.block;
    l.first = uint32_t(held_args_.size());
    l.args = uint32_t(args_.size());
    held_.push_back(l);
    held_args_.resize(held_args_.size() + args_.size());
    std::memcpy(&held_args_[l.first], args_.data(), args_.size() * sizeof(Arg));
    stats_add(&Stats::kernel_launches, 1);
  }

  // Puts the launches held so far on the stream (one graph launch where the run recurs): before
  // anything else goes there, and at the flush's end.
  void queue_held() {
    if (held_.empty()) return;
    d_.graphs.launch(d_.stream, held_, held_args_);
    held_.clear();
    held_args_.clear();
    held_blocks_.clear();  // their last uses are on the stream now: reuse is ordered after them
  }

  void launch(driver::CUfunction f, const LaunchDims& dims, std::vector<void*>& params) {
    KILN_CU(cuLaunchKernel, f, dims.grid, 1, 1, dims.block, 1, 1, 0, d_.stream, params.data(), nullptr);
    stats_add(&Stats::kernel_launches, 1);
  }

  // The kernel's functions, loaded into the device at its first launch: the cubin (or PTX) from
  // the kernel cache; on the fake device, the CUDA source itself (its driver compiles that). Where
  // it would have to be compiled and compiles_in_background(), its build is queued and null
  // returned, unless `wait`.
  // `structure`: the kernel's structural key (DeviceState::modules).
  const Functions* functions(const Kernel& k, const std::string& structure, bool index32, bool wait = false) {
    auto& modules = d_.modules[index32];
    {
      std::lock_guard<std::mutex> lock(d_.mutex);
      if (auto it = modules.find(structure); it != modules.end()) {
        stats_add(&Stats::kernel_cache_hits, 1);
        return &it->second;
      }
    }
    const std::string key = cuda_key(k, index32);
    const bool background = !wait && compiles_in_background();
    if (background && compile_queue().queued(key)) return nullptr;  // still compiling
    KernelSource source = kernel_source(k, index32);
    std::optional<Functions> f;
    if (background && !compile_queue().failed(key)) {
      if (!driver::fake_device()) f = compiled_functions(d_, source, false);  // from disk: no compile
      if (!f) {
        DeviceState* d = &d_;
        compile_queue().submit(key, [d, structure, index32, source = std::move(source)] {
          driver::set_device(d->index);
          const Functions built = *compiled_functions(*d, source, true);
          std::lock_guard<std::mutex> lock(d->mutex);
          d->modules[index32].emplace(structure, built);
        });
        return nullptr;
      }
    } else {
      f = compiled_functions(d_, source, true);
    }
    std::lock_guard<std::mutex> lock(d_.mutex);
    return &modules.emplace(structure, *f).first->second;
  }

  // Runs fused kernel `k` node by node on the per-op kernels while it compiles; false (nothing
  // run) where a node has none.
  bool run_per_op(const Kernel& k) {
    const size_t count = k.nodes.size();
    std::vector<PerOpLaunch> launches(count);
    for (size_t i = 0; i < count; ++i)
      if (!k.nodes[i].node->computed() && !per_op_launch(*k.nodes[i].node, launches[i])) return false;
    queue_held();  // per-op launches take their arguments by struct: never held
    std::vector<bool> keep(count, false);
    for (int o : k.outputs) keep[size_t(o)] = true;
    const std::vector<std::vector<size_t>> frees = last_reads(k);
    for (size_t i = 0; i < count; ++i) {
      ir::Node& n = *k.nodes[i].node;
      if (n.computed())
        keep[i] = true;
      else
        launch_per_op(n, launches[i]);
      for (size_t j : frees[i])
        if (!keep[j]) k.nodes[j].node->result.reset();
    }
    uploads_.clear();
    stats_add(&Stats::kernels_unfused, 1);
    unfused_ = true;
    return true;
  }

  void launch_per_op(ir::Node& n, const PerOpLaunch& l) {
    CUdeviceptr in[3] = {0, 0, 0};
    for (size_t j = 0; j < l.inputs.size(); ++j) in[j] = device_pointer(*on_device(*l.inputs[j]));
    n.result = device_buffer(d_, bytes_of(n));
    CUdeviceptr out = device_pointer(*n.result);
    if (l.work == 0) return;
    LaunchDims dims;
    const int64_t most = int64_t(d_.sm_count) * 32;
    std::vector<void*> params;
    if (l.reduce) {
      dims.block = 32;  // a power of two (the fold's tree), a warp at least
      while (int64_t(dims.block) < l.reduce_args.inner && dims.block < uint32_t(kBlockThreads)) dims.block *= 2;
      dims.grid = uint32_t(std::min(l.work, most));
      params = {const_cast<PerOpReduceArgs*>(&l.reduce_args), &in[0], &out};
    } else {
      dims.grid = uint32_t(std::min((l.work + kBlockThreads - 1) / kBlockThreads, most));
      params = {const_cast<PerOpArgs*>(&l.args), &in[0], &in[1], &in[2], &out};
    }
    launch(per_op_function(l), dims, params);
  }

  // A per-op kernel's function: from the library built with kiln where one is there for the
  // device's architecture, else from its op's module (compiled by NVRTC at its first use, kept in
  // the kernel cache; on the fake device, its source).
  driver::CUfunction per_op_function(const PerOpLaunch& l) {
    std::lock_guard<std::mutex> lock(d_.mutex);
    if (auto it = d_.per_op_functions.find(l.function); it != d_.per_op_functions.end()) return it->second;
    if (!d_.per_op_library_tried && !driver::fake_device()) {
      d_.per_op_library_tried = true;
      const std::string path = per_op_library_path(d_.arch);
      std::ifstream file(path, std::ios::binary);
      if (!path.empty() && file) {
        const std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        if (driver::api().cuModuleLoadData(&d_.per_op_library, image.data()) != driver::CUDA_SUCCESS) {
          log().warn("cuda: the per-op kernels of {} do not load; compiling them", path);
          d_.per_op_library = nullptr;
        }
      }
    }
    driver::CUmodule module = d_.per_op_library;
    if (!module) {
      driver::CUmodule& m = d_.per_op_modules[l.module];
      if (!m) {
        KernelSource source;
        source.source = per_op_source(l.module);
        source.key = "per-op " + l.module + " " + per_op_library_file(0);
        source.name = "kiln_per_op_" + l.module;
        std::string image = source.source;
        if (!driver::fake_device()) image = kernel_cache(d_.arch).get(source)->image;
        KILN_CU(cuModuleLoadData, &m, image.c_str());
      }
      module = m;
    }
    driver::CUfunction f;
    KILN_CU(cuModuleGetFunction, &f, module, l.function.c_str());
    return d_.per_op_functions[l.function] = f;
  }

  // A node's value as a kernel argument: its device memory, uploaded first where the host holds it.
  void pointer(const ir::Node& n) { push_pointer(device_pointer(*on_device(n))); }

  const BufferPtr& on_device(const ir::Node& n) {
    KILN_CHECK(n.computed(), "cuda: a kernel reads a value not computed yet (", ir::to_string(n), ")");
    if (n.result->cuda_device() == d_.index) return n.result;
    auto& copy = uploads_[&n];
    if (!copy) {
      // The copy goes on the stream now, into a block that a held kernel may still use (freed
      // earlier in the flush): those kernels go first.
      queue_held();
      if (n.result->cuda_device() >= 0) {  // another device's: through the host
        DeviceState& other = device_state(n.result->cuda_device());
        BufferPtr host = download(other, *n.result);
        KILN_CU(cuStreamSynchronize, other.stream);
        copy = upload(d_, *host);
      } else {
        copy = upload(d_, *n.result);
      }
    }
    return copy;
  }

  // matmul/bmm ([B,M,K] x [B,K,N] -> [B,M,N], row-major) as cuBLAS's column-major strided-batched
  // GEMM: C^T = B^T A^T, so B is cuBLAS's first operand. False where the dtype or a layout is
  // not one cuBLAS takes (the host runs it then).
  bool gemm(ir::Node& n) {
    if (n.dtype != kFloat && n.dtype != kDouble) return false;
    queue_held();  // cuBLAS's kernels go on the stream after the ones before
    struct Operand {
      int64_t ld = 0, batch_stride = 0, offset = 0;
      bool transposed = false;
    };
    auto operand = [](const ir::Operand& o, Operand& out) {
      const auto& s = o.view.sizes;
      auto st = o.view.strides;
      const int64_t rows = s[1], cols = s[2];
      if (cols == 1) st[2] = 1;
      if (rows == 1) st[1] = std::max<int64_t>(cols, 1);
      out.offset = o.view.offset;
      out.batch_stride = s[0] == 1 ? 0 : st[0];
      if (st[2] == 1 && st[1] >= std::max<int64_t>(cols, 1)) {
        out.ld = st[1];
      } else if (st[1] == 1 && st[2] >= std::max<int64_t>(rows, 1)) {
        out.ld = st[2], out.transposed = true;
      } else {
        return false;
      }
      return out.ld < (int64_t(1) << 31);
    };
    Operand a, b;
    if (!operand(n.inputs[0], a) || !operand(n.inputs[1], b)) return false;
    const int64_t batch = n.shape[0], M = n.shape[1], N = n.shape[2], K = n.inputs[0].view.sizes[2];
    constexpr int64_t kMax = (int64_t(1) << 31) - 1;
    if (batch > kMax || M > kMax || N > kMax || K > kMax) return false;
    const BufferPtr& A = on_device(*n.inputs[0].node);
    const BufferPtr& B = on_device(*n.inputs[1].node);
    n.result = device_buffer(d_, bytes_of(n));
    if (n.numel() == 0) return true;
    if (K == 0) {
      KILN_CU(cuMemsetD8Async, device_pointer(*n.result), 0, bytes_of(n), d_.stream);
      return true;
    }
    const CublasApi& api = cublas();
    if (!d_.blas) {
      cublas_check(api.cublasCreate_v2(&d_.blas), "cublasCreate");
      cublas_check(api.cublasSetStream_v2(d_.blas, d_.stream), "cublasSetStream");
    }
    const size_t size = element_size(n.dtype);
    const char* pa = static_cast<const char*>(A->data()) + size_t(a.offset) * size;
    const char* pb = static_cast<const char*>(B->data()) + size_t(b.offset) * size;
    const int tb = b.transposed ? kCublasOpT : kCublasOpN, ta = a.transposed ? kCublasOpT : kCublasOpN;
    if (n.dtype == kFloat) {
      const float one = 1, zero = 0;
      cublas_check(api.cublasSgemmStridedBatched(d_.blas, tb, ta, int(N), int(M), int(K), &one,
                                                 reinterpret_cast<const float*>(pb), int(b.ld), b.batch_stride,
                                                 reinterpret_cast<const float*>(pa), int(a.ld), a.batch_stride, &zero,
                                                 n.result->as<float>(), int(N), M * N, int(batch)),
                   "cublasSgemmStridedBatched");
    } else {
      const double one = 1, zero = 0;
      cublas_check(api.cublasDgemmStridedBatched(d_.blas, tb, ta, int(N), int(M), int(K), &one,
                                                 reinterpret_cast<const double*>(pb), int(b.ld), b.batch_stride,
                                                 reinterpret_cast<const double*>(pa), int(a.ld), a.batch_stride, &zero,
                                                 n.result->as<double>(), int(N), M * N, int(batch)),
                   "cublasDgemmStridedBatched");
    }
    stats_add(&Stats::kernel_launches, 1);
    uploads_.clear();
    return true;
  }

  // A kernel the device cannot run yet: its reads copied to the host, interpreted there, its
  // outputs copied back.
  void run_on_host(const Kernel& k) {
    const ir::Op op = k.kind == Kernel::Kind::Library ? k.library_node->op : k.nodes.back().node->op;
    {
      static std::mutex mutex;
      static std::set<std::string> logged;
      std::lock_guard<std::mutex> lock(mutex);
      if (logged.insert(ir::op_name(op)).second)
        log().info("cuda: {} kernels run on the host (no CUDA code for them yet): copied there and back",
                   ir::op_name(op));
    }
    stats_add(&Stats::cuda_host_fallbacks, 1);
    queue_held();  // the host reads what the kernels before it wrote
    std::vector<ir::Node*> reads;
    if (k.kind == Kernel::Kind::Library)
      for (const auto& in : k.library_node->inputs) reads.push_back(in.node.get());
    else
      for (const auto& r : k.reads) reads.push_back(r.node);
    std::vector<std::pair<ir::Node*, BufferPtr>> saved;  // device values lent as host copies
    for (ir::Node* n : reads)
      if (n->computed() && n->result->cuda_device() >= 0) {
        saved.emplace_back(n, n->result);
        n->result = download(device_state(n->result->cuda_device()), *n->result);
      }
    if (!saved.empty()) KILN_CU(cuStreamSynchronize, d_.stream);
    interpret(k);
    for (auto& [n, value] : saved) n->result = std::move(value);
    for (ir::Node* n : outputs(k))
      if (n->computed() && n->result->cuda_device() < 0) n->result = upload(d_, *n->result);
  }

  union Arg {
    long long i;
    double f;
    CUdeviceptr p;
  };
  void integer(int64_t v) {
    Arg a;
    a.i = v;
    args_.push_back(a);
  }
  void push_pointer(CUdeviceptr p) {
    Arg a;
    a.p = p;
    args_.push_back(a);
  }

  DeviceState& d_;
  bool hold_ = false;  // launches are held back in runs (graphs.h)
  std::vector<HeldLaunch> held_;
  std::vector<uint64_t> held_args_;
  std::vector<BufferPtr> held_blocks_;  // released while held launches may name them
  bool unfused_ = false;                // a kernel of the flush ran on the per-op kernels
  std::vector<Arg> args_;
  std::vector<void*> params_;                               // pointers to args_, as cuLaunchKernel takes them
  std::unordered_map<const ir::Node*, BufferPtr> uploads_;  // this kernel's uploaded reads
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {}
  const char* name() const override { return "cuda"; }
  void run(const fusion::Partition& partition) override { Launcher(device_state(device_)).run(partition); }

 private:
  int device_;
};

}  // namespace

driver::CUstream stream(int device) { return device_state(device).stream; }

BufferPtr to_host(const BufferPtr& buffer) {
  if (!buffer || buffer->cuda_device() < 0) return buffer;
  DeviceState& d = device_state(buffer->cuda_device());
  driver::set_device(d.index);
  BufferPtr host = download(d, *buffer);
  KILN_CU(cuStreamSynchronize, d.stream);
  return host;
}

BufferPtr to_host(const BufferPtr& buffer, size_t offset, size_t bytes) {
  KILN_CHECK(buffer && buffer->cuda_device() >= 0 && offset + bytes <= buffer->bytes(),
             "cuda: to_host of a range outside device memory");
  DeviceState& d = device_state(buffer->cuda_device());
  driver::set_device(d.index);
  BufferPtr host = make_buffer(bytes);
  if (bytes > 0) KILN_CU(cuMemcpyDtoHAsync, host->data(), device_pointer(*buffer) + offset, bytes, d.stream);
  KILN_CU(cuStreamSynchronize, d.stream);
  return host;
}

BufferPtr device_copy(const BufferPtr& buffer) {
  KILN_CHECK(buffer && buffer->cuda_device() >= 0, "cuda: device_copy of host memory");
  DeviceState& d = device_state(buffer->cuda_device());
  driver::set_device(d.index);
  BufferPtr copy = device_buffer(d, buffer->bytes());
  if (buffer->bytes() > 0)
    KILN_CU(cuMemcpyDtoDAsync, device_pointer(*copy), device_pointer(*buffer), buffer->bytes(), d.stream);
  return copy;
}

void wait_for_background_compiles() { compile_queue().wait(); }

void wait_for(const Buffer& buffer) {
  if (buffer.cuda_device() < 0) return;
  DeviceState& d = device_state(buffer.cuda_device());
  driver::set_device(d.index);
  KILN_CU(cuStreamSynchronize, d.stream);
}

}  // namespace kiln::codegen::cuda

namespace kiln::codegen {

Backend& cuda_backend(int device) {
  static std::mutex mutex;
  static auto* backends = new std::unordered_map<int, std::unique_ptr<Backend>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto& b = (*backends)[device];
  if (!b) b = std::make_unique<cuda::CudaBackend>(device);
  return *b;
}

}  // namespace kiln::codegen

#include "cuda_fake_driver.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codegen/cuda/cublas.h"
#include "codegen/cuda/launcher.h"
#include "cuda_emulation.h"
#include "runtime/config.h"
#include "runtime/cuda/driver.h"
#include "runtime/error.h"
#include "runtime/hash.h"

namespace kiln_test {
namespace {

namespace driver = kiln::cuda_driver;
using driver::CUDA_SUCCESS;
using driver::CUdeviceptr;
using driver::CUresult;
constexpr CUresult kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE

std::mutex g_mutex;  // launches (the emulation's launch state is global) and the counts
FakeCudaCounts g_counts;

struct Module {
  void* library = nullptr;
  bool barriers = false;  // its kernels synchronize their block's threads
  void (*grid)(unsigned, unsigned) = nullptr;
  void (*block)(unsigned) = nullptr;
  void (*thread)(unsigned) = nullptr;
};
struct Function {
  const Module* module;
  void (*run)(void**);                // the kernel, its arguments from an array of pointers to them
  std::vector<unsigned> param_sizes;  // bytes of each argument, as the driver reads a cubin's
};

// Device memory: blocks of one reserved range of addresses that the host can read and write only
// while a driver call that touches device memory runs (a copy, a memset, a launch, a GEMM). Any
// other host access to it faults, as it would on a GPU (where device pointers are not host
// memory): a test that reads a device pointer as host memory crashes instead of passing.
class DeviceArena {
 public:
  DeviceArena() {
    void* p = mmap(nullptr, kReserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    KILN_CHECK(p != MAP_FAILED, "fake CUDA: cannot reserve the device's addresses");
    base_ = static_cast<char*>(p);
  }
  void* allocate(size_t bytes) {
    bytes = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = free_.find(bytes); it != free_.end()) {
      char* p = it->second;
      free_.erase(it);
      sizes_[p] = bytes;
      return p;
    }
    if (used_ + bytes > kReserved) return nullptr;
    char* p = base_ + used_;
    used_ += bytes;
    if (open_ > 0) protect(PROT_READ | PROT_WRITE);  // the new pages too
    sizes_[p] = bytes;
    return p;
  }
  void free(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(static_cast<char*>(p));
    if (it == sizes_.end()) return;
    free_.emplace(it->second, it->first);
    sizes_.erase(it);
  }
  // Whether `p` points into a live block.
  bool owns(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.upper_bound(static_cast<char*>(const_cast<void*>(p)));
    if (it == sizes_.begin()) return false;
    --it;
    return static_cast<const char*>(p) < it->first + it->second;
  }
  // The host may reach device memory from open() to close() (calls nest across threads).
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (open_++ == 0) protect(PROT_READ | PROT_WRITE);
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--open_ == 0) protect(PROT_NONE);
  }

 private:
  static constexpr size_t kReserved = size_t(64) << 30, kAlign = 256;
  void protect(int how) {
    const size_t pages = (used_ + 4095) / 4096 * 4096;
    if (pages > 0) KILN_CHECK(mprotect(base_, pages, how) == 0, "fake CUDA: mprotect failed");
  }
  std::mutex mutex_;
  char* base_ = nullptr;
  size_t used_ = 0;
  int open_ = 0;
  std::multimap<size_t, char*> free_;  // freed blocks by size
  std::map<char*, size_t> sizes_;      // live blocks
};

DeviceArena& arena() {
  static auto* a = new DeviceArena;  // never destroyed: blocks are freed during static destruction
  return *a;
}

std::atomic<long long> g_device_ns{0};  // FakeCudaCounts::device_ns
std::atomic<bool> g_skip_kernels{false};

// Device memory is the host's while one of these lives; the time it lives is the device's.
struct DeviceAccess {
  DeviceAccess() : start(std::chrono::steady_clock::now()) { arena().open(); }
  ~DeviceAccess() {
    arena().close();
    g_device_ns +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  }
  const std::chrono::steady_clock::time_point start;
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \n\t"), b = s.find_last_not_of(" \n\t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// `extern "C" void <name>_run(void** a)` for each __global__ function of `source`, its
// parameters' types read from the declaration.
std::string wrappers(const std::string& source) {
  std::string out;
  const std::string marker = "__global__ void __launch_bounds__(";
  for (size_t at = source.find(marker); at != std::string::npos; at = source.find(marker, at + 1)) {
    const size_t name_at = source.find(')', at + marker.size()) + 1;
    const size_t open = source.find('(', name_at);
    const std::string name = trim(source.substr(name_at, open - name_at));
    const size_t close = source.find(')', open);
    std::string call = "extern \"C\" void " + name + "_run(void** a) {\n  " + name + "(";
    std::string sizes = "extern \"C\" int " + name + "_param_sizes(unsigned* s) {\n";
    size_t begin = open + 1;
    int n = 0;
    while (begin < close) {
      size_t end = std::min(source.find(',', begin), close);
      std::string param = trim(source.substr(begin, end - begin));
      begin = end + 1;
      if (param.empty()) continue;
      std::string type = trim(param.substr(0, param.find_last_of(" *") + 1));
      for (size_t r; (r = type.find("__restrict__")) != std::string::npos;) type.erase(r, 12);
      call += (n ? ", *(" : "*(") + type + "*)a[" + std::to_string(n) + "]";
      sizes += "  s[" + std::to_string(n) + "] = sizeof(" + type + ");\n";
      ++n;
    }
    out += call + ");\n}\n" + sizes + "  return " + std::to_string(n) + ";\n}\n";
  }
  return out;
}

std::string run_command(const std::string& command, int* status) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string log;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) log += buf;
  *status = p ? pclose(p) : -1;
  return log;
}

// The host library for a kernel source: built once, kept on disk by the hash of what is compiled.
std::string host_library(const std::string& source) {
  const std::string text = kHostCuda + source + wrappers(source);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(kiln::fnv1a64(text.data(), text.size())));
  const std::filesystem::path dir = std::filesystem::path(kiln::config().cache_dir) / "fake-cuda-host";
  const std::filesystem::path so = dir / (std::string(hex) + ".so");
  if (std::filesystem::exists(so)) return so.string();
  std::filesystem::create_directories(dir);
  const std::string temporary = (dir / (std::string(hex) + "." + std::to_string(::getpid()))).string();
  std::ofstream(temporary + ".cpp") << text;
  int status = 0;
  const std::string log =
      run_command("c++ -std=c++17 -O0 -w -shared -fPIC -o " + temporary + ".so " + temporary + ".cpp", &status);
  std::filesystem::remove(temporary + ".cpp");
  KILN_CHECK(status == 0, "fake CUDA: the host compile of a kernel failed:\n", log.substr(0, 4000));
  std::filesystem::rename(temporary + ".so", so);  // atomic: another process may read it
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts.compiled;
  return so.string();
}

CUresult load_module(driver::CUmodule* module, const void* image) {
  const std::string source = static_cast<const char*>(image);
  auto* m = new Module;  // kept: functions and loaded kernels outlive their modules' handles
  m->library = dlopen(host_library(source).c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(m->library, "fake CUDA: dlopen: ", dlerror());
  m->barriers = source.find("__syncthreads") != std::string::npos;
  m->grid = reinterpret_cast<void (*)(unsigned, unsigned)>(dlsym(m->library, "kiln_host_grid"));
  m->block = reinterpret_cast<void (*)(unsigned)>(dlsym(m->library, "kiln_host_block"));
  m->thread = reinterpret_cast<void (*)(unsigned)>(dlsym(m->library, "kiln_host_thread"));
  *module = reinterpret_cast<driver::CUmodule>(m);
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts.modules;
  return CUDA_SUCCESS;
}

CUresult get_function(driver::CUfunction* function, driver::CUmodule module, const char* name) {
  auto* m = reinterpret_cast<const Module*>(module);
  auto run = reinterpret_cast<void (*)(void**)>(dlsym(m->library, (std::string(name) + "_run").c_str()));
  auto sizes = reinterpret_cast<int (*)(unsigned*)>(dlsym(m->library, (std::string(name) + "_param_sizes").c_str()));
  constexpr CUresult kNotFound = 500;  // CUDA_ERROR_NOT_FOUND
  if (!run || !sizes) return kNotFound;
  auto* f = new Function{m, run, std::vector<unsigned>(1024)};  // CUDA's 4 KiB of parameters at most
  f->param_sizes.resize(size_t(sizes(f->param_sizes.data())));
  *function = reinterpret_cast<driver::CUfunction>(f);
  return CUDA_SUCCESS;
}

// A launch configuration the driver takes (the generated kernels are 1-D, __launch_bounds__(256)).
bool valid_launch(unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,
                  unsigned block_z, unsigned shared_bytes, void** params, void** extra) {
  return !(grid_x == 0 || grid_y != 1 || grid_z != 1 || block_y != 1 || block_z != 1 || block_x == 0 || block_x > 256 ||
           block_x % 32 != 0 || shared_bytes != 0 || extra != nullptr || params == nullptr);
}

// Runs kernel `f` (g_mutex held), unless kernels are skipped.
void run_kernel(const Function* f, unsigned grid_x, unsigned block_x, void** params) {
  if (g_skip_kernels) return;
  const Module& m = *f->module;
  DeviceAccess access;
  const unsigned blocks = m.barriers ? std::min(grid_x, 4u) : grid_x;
  const unsigned threads = m.barriers ? std::min(block_x, 64u) : block_x;
  m.grid(blocks, threads);
  for (unsigned b = 0; b < blocks; ++b) {
    m.block(b);
    if (!m.barriers) {
      for (unsigned t = 0; t < threads; ++t) m.thread(t), f->run(params);
      continue;
    }
    std::vector<std::thread> team;
    for (unsigned t = 0; t < threads; ++t) team.emplace_back([&, t] { m.thread(t), f->run(params); });
    for (auto& t : team) t.join();
  }
}

CUresult launch(driver::CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                unsigned block_y, unsigned block_z, unsigned shared_bytes, driver::CUstream, void** params,
                void** extra) {
  if (!valid_launch(grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, params, extra))
    return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts.launches;
  run_kernel(reinterpret_cast<const Function*>(function), grid_x, block_x, params);
  return CUDA_SUCCESS;
}

// CUDA graphs of kernel nodes, as the driver keeps them: a node copies its arguments' values
// when added or updated (their sizes from the kernel, as the driver reads a cubin's), an
// instantiated graph copies its graph's nodes, and a graph launch runs its nodes in order.
struct Node {
  const Function* function = nullptr;
  unsigned grid = 0, block = 0;
  std::vector<char> args;  // the arguments' values, one after another
};
struct Graph {
  std::vector<std::unique_ptr<Node>> nodes;
};
struct Exec {
  std::vector<Node> nodes;
  std::map<const Node*, size_t> index;  // a graph node's copy
};

CUresult set_node(Node& node, const driver::CudaKernelNodeParams* p) {
  if (!p || !p->func ||
      !valid_launch(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ, p->sharedMemBytes,
                    p->kernelParams, p->extra))
    return kInvalidValue;
  node.function = reinterpret_cast<const Function*>(p->func);
  node.grid = p->gridDimX;
  node.block = p->blockDimX;
  size_t bytes = 0;
  for (unsigned size : node.function->param_sizes) bytes += size;
  node.args.resize(bytes);
  char* at = node.args.data();
  for (size_t i = 0; i < node.function->param_sizes.size(); ++i) {
    std::memcpy(at, p->kernelParams[i], node.function->param_sizes[i]);
    at += node.function->param_sizes[i];
  }
  return CUDA_SUCCESS;
}

CUresult add_kernel_node(driver::CUgraphNode* out, driver::CUgraph graph, const driver::CUgraphNode* dependencies,
                         size_t dependency_count, const driver::CudaKernelNodeParams* params) {
  auto* g = reinterpret_cast<Graph*>(graph);
  if (!g || !out) return kInvalidValue;
  for (size_t i = 0; i < dependency_count; ++i) {  // the graph's own nodes only
    bool found = false;
    for (const auto& n : g->nodes) found = found || reinterpret_cast<driver::CUgraphNode>(n.get()) == dependencies[i];
    if (!found) return kInvalidValue;
  }
  // The fake runs nodes in the order they were added: each must follow the one before, as kiln's do.
  if (!g->nodes.empty() &&
      (dependency_count != 1 || dependencies[0] != reinterpret_cast<driver::CUgraphNode>(g->nodes.back().get())))
    return kInvalidValue;
  auto node = std::make_unique<Node>();
  if (CUresult r = set_node(*node, params); r != CUDA_SUCCESS) return r;
  *out = reinterpret_cast<driver::CUgraphNode>(node.get());
  g->nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}

CUresult instantiate(driver::CUgraphExec* out, driver::CUgraph graph, unsigned long long) {
  auto* g = reinterpret_cast<Graph*>(graph);
  if (!g || !out) return kInvalidValue;
  auto* e = new Exec;
  for (const auto& n : g->nodes) {
    e->index[n.get()] = e->nodes.size();
    e->nodes.push_back(*n);
  }
  *out = reinterpret_cast<driver::CUgraphExec>(e);
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts.graphs_instantiated;
  return CUDA_SUCCESS;
}

CUresult exec_set_params(driver::CUgraphExec exec, driver::CUgraphNode node,
                         const driver::CudaKernelNodeParams* params) {
  auto* e = reinterpret_cast<Exec*>(exec);
  auto it = e->index.find(reinterpret_cast<const Node*>(node));
  if (it == e->index.end()) return kInvalidValue;
  Node& n = e->nodes[it->second];
  // Another kernel or launch shape is not an update of this node.
  if (!params || reinterpret_cast<const Function*>(params->func) != n.function || params->gridDimX != n.grid ||
      params->blockDimX != n.block)
    return kInvalidValue;
  if (CUresult r = set_node(n, params); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts.graph_node_updates;
  return CUDA_SUCCESS;
}

CUresult graph_launch(driver::CUgraphExec exec, driver::CUstream) {
  auto* e = reinterpret_cast<Exec*>(exec);
  if (!e) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts.graph_launches;
  static std::vector<void*> params(1024);  // g_mutex held
  for (Node& n : e->nodes) {
    ++g_counts.graph_kernels;
    char* at = n.args.data();
    for (size_t i = 0; i < n.function->param_sizes.size(); ++i) params[i] = at, at += n.function->param_sizes[i];
    run_kernel(n.function, n.grid, n.block, params.data());
  }
  return CUDA_SUCCESS;
}

void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(uintptr_t(p)); }

// Handles that are never dereferenced.
template <typename T>
T handle() {
  static char dummy;
  return reinterpret_cast<T>(&dummy);
}

driver::DriverApi make_driver() {
  driver::DriverApi a{};
  a.cuGetErrorString = [](CUresult, const char** text) {
    *text = "fake CUDA driver error";
    return CUDA_SUCCESS;
  };
  a.cuGetErrorName = [](CUresult, const char** text) {
    *text = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
  };
  a.cuCtxSynchronize = [] { return CUDA_SUCCESS; };
  a.cuMemAlloc = [](CUdeviceptr* p, size_t bytes) {
    *p = CUdeviceptr(reinterpret_cast<uintptr_t>(arena().allocate(bytes)));
    return *p ? CUDA_SUCCESS : driver::CUDA_ERROR_OUT_OF_MEMORY;
  };
  a.cuMemFree = [](CUdeviceptr p) {
    arena().free(ptr(p));
    return CUDA_SUCCESS;
  };
  a.cuMemHostAlloc = [](void** p, size_t bytes, unsigned) {
    *p = std::malloc(bytes);
    return CUDA_SUCCESS;
  };
  a.cuMemFreeHost = [](void* p) {
    std::free(p);
    return CUDA_SUCCESS;
  };
  a.cuMemcpyHtoDAsync = [](CUdeviceptr dst, const void* src, size_t bytes, driver::CUstream) {
    DeviceAccess access;
    std::memcpy(ptr(dst), src, bytes);
    return CUDA_SUCCESS;
  };
  a.cuMemcpyDtoHAsync = [](void* dst, CUdeviceptr src, size_t bytes, driver::CUstream) {
    DeviceAccess access;
    std::memcpy(dst, ptr(src), bytes);
    return CUDA_SUCCESS;
  };
  a.cuMemcpyDtoDAsync = [](CUdeviceptr dst, CUdeviceptr src, size_t bytes, driver::CUstream) {
    DeviceAccess access;
    std::memcpy(ptr(dst), ptr(src), bytes);
    return CUDA_SUCCESS;
  };
  a.cuMemsetD8Async = [](CUdeviceptr dst, unsigned char value, size_t bytes, driver::CUstream) {
    DeviceAccess access;
    std::memset(ptr(dst), value, bytes);
    return CUDA_SUCCESS;
  };
  a.cuStreamCreate = [](driver::CUstream* s, unsigned) {
    *s = handle<driver::CUstream>();
    return CUDA_SUCCESS;
  };
  a.cuStreamDestroy = [](driver::CUstream) { return CUDA_SUCCESS; };
  a.cuStreamSynchronize = [](driver::CUstream) { return CUDA_SUCCESS; };
  a.cuStreamWaitEvent = [](driver::CUstream, driver::CUevent, unsigned) { return CUDA_SUCCESS; };
  a.cuEventCreate = [](driver::CUevent* e, unsigned) {
    *e = handle<driver::CUevent>();
    return CUDA_SUCCESS;
  };
  a.cuEventDestroy = [](driver::CUevent) { return CUDA_SUCCESS; };
  a.cuEventRecord = [](driver::CUevent, driver::CUstream) { return CUDA_SUCCESS; };
  a.cuEventQuery = [](driver::CUevent) { return CUDA_SUCCESS; };
  a.cuEventSynchronize = [](driver::CUevent) { return CUDA_SUCCESS; };
  a.cuModuleLoadData = load_module;
  a.cuModuleUnload = [](driver::CUmodule) { return CUDA_SUCCESS; };
  a.cuModuleGetFunction = get_function;
  a.cuLaunchKernel = launch;
  a.cuGraphCreate = [](driver::CUgraph* g, unsigned) {
    *g = reinterpret_cast<driver::CUgraph>(new Graph);
    return CUDA_SUCCESS;
  };
  a.cuGraphAddKernelNode = add_kernel_node;
  a.cuGraphInstantiateWithFlags = instantiate;
  a.cuGraphLaunch = graph_launch;
  a.cuGraphExecKernelNodeSetParams = exec_set_params;
  a.cuGraphExecDestroy = [](driver::CUgraphExec e) {
    delete reinterpret_cast<Exec*>(e);
    return CUDA_SUCCESS;
  };
  a.cuGraphDestroy = [](driver::CUgraph g) {
    delete reinterpret_cast<Graph*>(g);
    return CUDA_SUCCESS;
  };
  return a;
}

// The same driver without CUDA graphs, as one older than them.
driver::DriverApi make_driver_without_graphs() {
  driver::DriverApi a = make_driver();
  a.cuGraphCreate = nullptr;
  a.cuGraphAddKernelNode = nullptr;
  a.cuGraphInstantiateWithFlags = nullptr;
  a.cuGraphLaunch = nullptr;
  a.cuGraphExecKernelNodeSetParams = nullptr;
  a.cuGraphExecDestroy = nullptr;
  a.cuGraphDestroy = nullptr;
  return a;
}

// C = op(A) op(B), column-major, as cuBLAS's strided-batched GEMM.
template <typename T>
kiln::codegen::cuda::cublasStatus gemm(kiln::codegen::cuda::cublasHandle, int ta, int tb, int m, int n, int k,
                                       const T* alpha, const T* a, int lda, long long stride_a, const T* b, int ldb,
                                       long long stride_b, const T* beta, T* c, int ldc, long long stride_c,
                                       int batch) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_counts.gemms;
  }
  if (g_skip_kernels) return 0;
  DeviceAccess access;
  for (int p = 0; p < batch; ++p)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int l = 0; l < k; ++l) {
          const T x = ta ? a[p * stride_a + i * lda + l] : a[p * stride_a + l * lda + i];
          const T y = tb ? b[p * stride_b + l * ldb + j] : b[p * stride_b + j * ldb + l];
          sum += double(x) * double(y);
        }
        T& out = c[p * stride_c + j * ldc + i];
        out = T(*alpha * sum + (*beta == 0 ? 0 : *beta * out));
      }
  return 0;
}

kiln::codegen::cuda::CublasApi make_cublas() {
  namespace cuda = kiln::codegen::cuda;
  cuda::CublasApi a{};
  a.cublasCreate_v2 = [](cuda::cublasHandle* h) {
    *h = handle<cuda::cublasHandle>();
    return 0;
  };
  a.cublasSetStream_v2 = [](cuda::cublasHandle, void*) { return 0; };
  a.cublasSgemmStridedBatched = gemm<float>;
  a.cublasDgemmStridedBatched = gemm<double>;
  return a;
}

}  // namespace

void use_fake_cuda(bool on, bool graphs) {
  // Kernels compiling in the background load their modules through the driver table set now.
  kiln::codegen::cuda::wait_for_background_compiles();
  static const driver::DriverApi with_graphs = make_driver(), without_graphs = make_driver_without_graphs();
  const driver::DriverApi& fake_driver = graphs ? with_graphs : without_graphs;
  static const kiln::codegen::cuda::CublasApi fake_cublas = make_cublas();
  kiln::codegen::cuda::use_fake_cublas(on ? &fake_cublas : nullptr);
  driver::use_fake_device(on, on ? &fake_driver : nullptr);
}

void fake_cuda_skip_kernels(bool on) { g_skip_kernels = on; }

bool fake_cuda_device_memory(const void* p) { return arena().owns(p); }

void fake_cuda_copy_to_device(void* device, const void* host, size_t bytes) {
  DeviceAccess access;
  std::memcpy(device, host, bytes);
}

FakeCudaCounts fake_cuda_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  FakeCudaCounts counts = g_counts;
  counts.device_ns = g_device_ns.load();
  return counts;
}

}  // namespace kiln_test

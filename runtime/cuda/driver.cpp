#include "runtime/cuda/driver.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/error.h"
#include "runtime/shared_library.h"

namespace kiln::cuda_driver {
namespace {

struct Driver {
  DriverApi api{};
  bool available = false;
  std::string reason;  // why not available
  int devices = 0;
};

// Resolves every entry point the driver backend calls; lib.missing() names those not found.
void bind_all(SharedLibrary& lib, DriverApi& a) {
  lib.bind(a.cuInit, {"cuInit"});
  lib.bind(a.cuDriverGetVersion, {"cuDriverGetVersion"});
  lib.bind(a.cuGetErrorString, {"cuGetErrorString"});
  lib.bind(a.cuGetErrorName, {"cuGetErrorName"});
  lib.bind(a.cuDeviceGetCount, {"cuDeviceGetCount"});
  lib.bind(a.cuDeviceGet, {"cuDeviceGet"});
  lib.bind(a.cuDeviceGetName, {"cuDeviceGetName"});
  lib.bind(a.cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  lib.bind(a.cuDeviceTotalMem, {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"});
  lib.bind(a.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  lib.bind(a.cuCtxSetCurrent, {"cuCtxSetCurrent"});
  lib.bind(a.cuCtxSynchronize, {"cuCtxSynchronize"});
  lib.bind(a.cuMemGetInfo, {"cuMemGetInfo_v2", "cuMemGetInfo"});
  lib.bind(a.cuMemAlloc, {"cuMemAlloc_v2", "cuMemAlloc"});
  lib.bind(a.cuMemFree, {"cuMemFree_v2", "cuMemFree"});
  lib.bind(a.cuMemHostAlloc, {"cuMemHostAlloc"});
  lib.bind(a.cuMemFreeHost, {"cuMemFreeHost"});
  lib.bind(a.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"});
  lib.bind(a.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync"});
  lib.bind(a.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync"});
  lib.bind(a.cuMemsetD8Async, {"cuMemsetD8Async"});
  lib.bind(a.cuStreamCreate, {"cuStreamCreate"});
  lib.bind(a.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"});
  lib.bind(a.cuStreamSynchronize, {"cuStreamSynchronize"});
  lib.bind(a.cuStreamWaitEvent, {"cuStreamWaitEvent"});
  lib.bind(a.cuEventCreate, {"cuEventCreate"});
  lib.bind(a.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  lib.bind(a.cuEventRecord, {"cuEventRecord"});
  lib.bind(a.cuEventQuery, {"cuEventQuery"});
  lib.bind(a.cuEventSynchronize, {"cuEventSynchronize"});
  lib.bind(a.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  lib.bind(a.cuModuleLoadData, {"cuModuleLoadData"});
  lib.bind(a.cuModuleUnload, {"cuModuleUnload"});
  lib.bind(a.cuModuleGetFunction, {"cuModuleGetFunction"});
  lib.bind(a.cuLaunchKernel, {"cuLaunchKernel"});
}

// The optional entry points (graphs_supported), bound after missing() was read.
void bind_optional(SharedLibrary& lib, DriverApi& a) {
  lib.bind(a.cuGraphCreate, {"cuGraphCreate"});
  lib.bind(a.cuGraphAddKernelNode, {"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode"});
  lib.bind(a.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"});
  lib.bind(a.cuGraphLaunch, {"cuGraphLaunch"});
  lib.bind(a.cuGraphExecKernelNodeSetParams, {"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams"});
  lib.bind(a.cuGraphExecDestroy, {"cuGraphExecDestroy"});
  lib.bind(a.cuGraphDestroy, {"cuGraphDestroy"});
}

Driver load() {
  Driver d;
  SharedLibrary lib({"libcuda.so.1"});
  if (!lib.opened()) {
    d.reason = "libcuda.so.1 not found: no NVIDIA driver on this machine";
    return d;
  }
  bind_all(lib, d.api);
  if (!lib.missing().empty()) {
    d.reason = "libcuda.so.1 lacks " + lib.missing() + ": the NVIDIA driver is too old for kiln";
    return d;
  }
  bind_optional(lib, d.api);
  if (CUresult r = d.api.cuInit(0); r != CUDA_SUCCESS) {
    // A machine with the driver but no GPU (or none visible to this process) answers cuInit so.
    d.reason = r == CUDA_ERROR_NO_DEVICE ? "no CUDA device" : "cuInit failed: " + error_text("cuInit", r);
    return d;
  }
  if (CUresult r = d.api.cuDeviceGetCount(&d.devices); r != CUDA_SUCCESS) {
    d.reason = "cuDeviceGetCount failed: " + error_text("cuDeviceGetCount", r);
    d.devices = 0;
    return d;
  }
  if (d.devices == 0) {
    d.reason = "no CUDA device";
    return d;
  }
  d.available = true;
  return d;
}

const Driver& instance() {
  static const Driver d = load();
  return d;
}

std::atomic<bool> g_fake{false};
std::atomic<const DriverApi*> g_fake_api{nullptr};

void check_index(int index) {
  KILN_CHECK(index >= 0 && index < device_count(), "CUDA device ", index, " does not exist (", device_count(),
             " device(s)", available() ? "" : ": " + unavailable_reason(), ")");
}

}  // namespace

bool available() { return g_fake || instance().available; }
const std::string& unavailable_reason() {
  static const std::string none;
  return g_fake ? none : instance().reason;
}
int device_count() { return g_fake ? 1 : instance().devices; }
void use_fake_device(bool on, const DriverApi* fake) {
  g_fake_api = on ? fake : nullptr;
  g_fake = on;
}
bool fake_device() { return g_fake; }

bool graphs_supported(const DriverApi& a) {
  return a.cuGraphCreate && a.cuGraphAddKernelNode && a.cuGraphInstantiateWithFlags && a.cuGraphLaunch &&
         a.cuGraphExecKernelNodeSetParams && a.cuGraphExecDestroy && a.cuGraphDestroy;
}

namespace {
thread_local void (*t_before_free)(void*) = nullptr;
thread_local void* t_before_free_context = nullptr;
}  // namespace
void set_before_free(void (*hook)(void*), void* context) {
  t_before_free = hook;
  t_before_free_context = context;
}
void before_free() {
  if (t_before_free) t_before_free(t_before_free_context);
}

const DriverApi& api() {
  if (g_fake) {
    const DriverApi* fake = g_fake_api;
    KILN_CHECK(fake, "the fake CUDA device was turned on without a driver table (use_fake_device)");
    return *fake;
  }
  const Driver& d = instance();
  KILN_CHECK(d.available, "CUDA is not available: ", d.reason);
  return d.api;
}

std::string error_text(const char* call, CUresult result) {
  const DriverApi* fake = g_fake ? g_fake_api.load() : nullptr;
  const DriverApi& api = fake ? *fake : instance().api;
  const char* text = nullptr;
  const char* name = nullptr;
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  return detail::concat(call, ": ", text ? text : "unknown error", " (", name ? name : "CUresult",
                        name ? "" : " " + std::to_string(result), ")");
}

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throw Error(error_text(call, result));
}

DeviceProperties device_properties(int index) {
  check_index(index);
  DeviceProperties p;
  p.index = index;
  if (g_fake) {
    p.name = "kiln's fake CUDA device (host memory)";
    return p;
  }
  CUdevice dev;
  KILN_CU(cuDeviceGet, &dev, index);
  char name[256] = {};
  KILN_CU(cuDeviceGetName, name, int(sizeof name) - 1, dev);
  p.name = name;
  KILN_CU(cuDeviceGetAttribute, &p.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  KILN_CU(cuDeviceGetAttribute, &p.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  KILN_CU(cuDeviceGetAttribute, &p.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  KILN_CU(cuDeviceTotalMem, &p.total_memory, dev);
  return p;
}

std::string driver_version() {
  int v = 0;
  KILN_CU(cuDriverGetVersion, &v);
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

void set_device(int index) {
  check_index(index);
  if (g_fake) return;
  // One context per device for the process (retained, never released), as the runtime API's.
  static std::mutex mutex;
  static std::vector<CUcontext> contexts(size_t(device_count()), nullptr);
  CUcontext context;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!contexts[size_t(index)]) {
      CUdevice dev;
      KILN_CU(cuDeviceGet, &dev, index);
      KILN_CU(cuDevicePrimaryCtxRetain, &contexts[size_t(index)], dev);
    }
    context = contexts[size_t(index)];
  }
  KILN_CU(cuCtxSetCurrent, context);
}

void synchronize(int index) {
  set_device(index);
  if (!g_fake) KILN_CU(cuCtxSynchronize);
}

}  // namespace kiln::cuda_driver

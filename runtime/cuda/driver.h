// The CUDA driver API, opened with dlopen: kiln never links libcuda, so it builds, installs and
// runs its CPU tests where no NVIDIA driver is. The few types and entry points kiln uses are
// declared here (no cuda.h needed); each is resolved by name when the driver is first asked for.
// Every failing call becomes a kiln::Error naming the call and the driver's message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::cuda_driver {

// The driver's types, as cuda.h declares them (ABI-compatible; handles are opaque pointers).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphExec = struct CUgraphExec_st*;
// CUDA_KERNEL_NODE_PARAMS_v2 (CUDA 12 and 13). A driver older than 12 takes the first ten fields,
// its CUDA_KERNEL_NODE_PARAMS, which are the same.
struct CudaKernelNodeParams {
  CUfunction func = nullptr;
  unsigned gridDimX = 1, gridDimY = 1, gridDimZ = 1;
  unsigned blockDimX = 1, blockDimY = 1, blockDimZ = 1;
  unsigned sharedMemBytes = 0;
  void** kernelParams = nullptr;  // pointers to the arguments: the driver copies their values
  void** extra = nullptr;
  void* kern = nullptr;  // a CUkernel, read only where func is null
  CUcontext ctx = nullptr;
};
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0x0;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;

// The entry points, resolved once. Versioned names (cuMemAlloc_v2...) are the ones cuda.h maps
// the plain names to; the plain name is the fallback for a driver older than the toolkit.
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
  CUresult (*cuGetErrorName)(CUresult error, const char** text);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total);
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemHostAlloc)(void** ptr, size_t bytes, unsigned flags);
  CUresult (*cuMemFreeHost)(void* ptr);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end);
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                             unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream, void** params,
                             void** extra);
  // CUDA graphs (codegen/cuda/graphs.h), optional: null where the driver lacks them, and then
  // every kernel is launched on its own (graphs_supported()).
  CUresult (*cuGraphCreate)(CUgraph* graph, unsigned flags);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                   size_t dependency_count, const CudaKernelNodeParams* params);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec exec, CUgraphNode node, const CudaKernelNodeParams* params);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
};
// Whether `api` has every CUDA graph entry point.
bool graphs_supported(const DriverApi& api);

// Whether kiln can use a CUDA device here: the driver opened, cuInit succeeded, and it counts at
// least one device. Decided once per process; never throws.
bool available();
// Why not, when available() is false: "libcuda.so.1 not found: no NVIDIA driver on this machine",
// "cuInit failed: ..." or "no CUDA device"; empty when available.
const std::string& unavailable_reason();
// The devices the driver counts; 0 where unavailable.
int device_count();

// The driver's entry points; throws kiln::Error with unavailable_reason() where unavailable.
const DriverApi& api();

// "cuMemAlloc: out of memory (CUDA_ERROR_OUT_OF_MEMORY)": the call and the driver's message.
std::string error_text(const char* call, CUresult result);
// Throws kiln::Error with error_text unless `result` is CUDA_SUCCESS.
void check(CUresult result, const char* call);
// KILN_CU(cuMemAlloc, &ptr, bytes): calls the entry point and checks its result by name.
#define KILN_CU(fn, ...) ::kiln::cuda_driver::check(::kiln::cuda_driver::api().fn(__VA_ARGS__), #fn)

struct DeviceProperties {
  int index = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;  // compute capability: sm_90 is 9.0
  int multiprocessors = 0;
  size_t total_memory = 0;  // bytes
};
DeviceProperties device_properties(int index);
// "13.0" from cuDriverGetVersion (the newest CUDA the driver supports).
std::string driver_version();

// Makes device `index`'s primary context current on the calling thread (retained once per
// process, as the runtime API does); every call that touches device memory or launches runs
// after it. Throws kiln::Error for an index not below device_count().
void set_device(int index);
// Waits for all work on the device (torch::cuda::synchronize).
void synchronize(int index);

// For tests on machines without a GPU: while on, one CUDA device is available that is host
// memory ("cuda:0"; its caching allocator takes host memory), and api() is `fake`, a table that
// stands in for the driver (tests/cuda_fake_driver.h: copies are memcpy, kernels are their CUDA
// source compiled for the host). The real driver is never called meanwhile.
void use_fake_device(bool on, const DriverApi* fake = nullptr);
// A thread that holds launches back to queue them later together (codegen/cuda/graphs.h) sets a
// hook, called on that thread before device memory goes back to the driver (a failed
// allocation's retry): it queues them then, so that queued work never names freed memory. Null
// unsets it.
void set_before_free(void (*hook)(void*), void* context);
void before_free();
bool fake_device();

}  // namespace kiln::cuda_driver

// The fake CUDA device with a driver behind it, for running the CUDA backend
// (codegen/cuda/launcher.h) without a GPU: device memory is host memory, copies are memcpy,
// streams and events complete at once, a module is the kernel's CUDA source compiled as host C++
// under the emulation of tests/cuda_emulation.h (once per source, kept on disk under the kernel
// cache folder), and cuBLAS's GEMMs are a plain host loop. Device memory is out of the host's
// reach except inside those calls: code that reads a device pointer as host memory faults. Every
// launch's configuration is checked as the driver would check it; blocks with barriers run at
// most 4 blocks of 64 threads (every generated kernel strides over its grid and reads its
// block's size), others as asked. CUDA graphs of kernel nodes copy their arguments as the driver
// does, and a graph launch runs its nodes in order.
#pragma once
#include <cstddef>

namespace kiln_test {

// Turns the fake device and its driver on or off (cuda_driver::use_fake_device); `graphs`
// false: a driver without CUDA graphs' entry points, as one older than them.
void use_fake_cuda(bool on, bool graphs = true);

struct FakeCudaCounts {
  int compiled = 0;  // host compiles of kernel sources (a source found on disk is not compiled)
  int modules = 0;   // cuModuleLoadData calls
  int launches = 0;  // cuLaunchKernel calls
  int gemms = 0;     // cuBLAS calls
  // CUDA graphs: instantiated, launched, the kernels their launches ran, kernel nodes updated.
  int graphs_instantiated = 0;
  int graph_launches = 0;
  int graph_kernels = 0;
  int graph_node_updates = 0;
  // Nanoseconds spent inside the fake driver's calls that reach device memory (launches running
  // the emulated kernels, GEMMs, copies, memsets): what a measurement of the host's own time per
  // launch subtracts, since a GPU's driver queues that work instead of doing it.
  long long device_ns = 0;
};
FakeCudaCounts fake_cuda_counts();

// While on, launches and GEMMs are checked and counted but not run (device memory keeps its old
// values): for measuring the host's side of launching alone.
void fake_cuda_skip_kernels(bool on);

// Whether `p` is the fake device's memory (a live block of it).
bool fake_cuda_device_memory(const void* p);
// Writes device memory as a user's CUDA kernel or cudaMemcpy would.
void fake_cuda_copy_to_device(void* device, const void* host, size_t bytes);

}  // namespace kiln_test

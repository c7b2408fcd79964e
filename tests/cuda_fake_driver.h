// The fake CUDA device with a driver behind it, for running the CUDA backend
// (codegen/cuda/launcher.h) without a GPU: device memory is host memory, copies are memcpy,
// streams and events complete at once, a module is the kernel's CUDA source compiled as host C++
// under the emulation of tests/cuda_emulation.h (once per source, kept on disk under the kernel
// cache folder), and cuBLAS's GEMMs are a plain host loop. Every launch's configuration is
// checked as the driver would check it; blocks with barriers run at most 4 blocks of 64 threads
// (every generated kernel strides over its grid and reads its block's size), others as asked.
#pragma once

namespace kiln_test {

// Turns the fake device and its driver on or off (cuda_driver::use_fake_device).
void use_fake_cuda(bool on);

struct FakeCudaCounts {
  int compiled = 0;  // host compiles of kernel sources (a source found on disk is not compiled)
  int modules = 0;   // cuModuleLoadData calls
  int launches = 0;  // cuLaunchKernel calls
  int gemms = 0;     // cuBLAS calls
};
FakeCudaCounts fake_cuda_counts();

}  // namespace kiln_test

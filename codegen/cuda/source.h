// CUDA C for the kernels of a flush (fusion::Kernel, the list every backend receives), one
// __global__ function per kernel, and what launching it takes. Of the library kernels, gathers,
// scatters, cat, view writes, arg-reductions, scans and sorts have source here (library.cpp,
// library_rows.cpp); matmul and bmm are cuBLAS calls (has_library_source says which).
//
// How a kernel list becomes launches (what a launcher calls, per kernel of fusion::Partition):
//   1. if !has_cuda_source(k): run it as a library call;
//   2. index32 = fits_int32_indices(k); key = cuda_key(k, index32) (the kernel's structural key
//      plus the index width: the cache key, see kernel_cache.h);
//   3. the compiled kernel for key from cuda::kernel_cache() (in memory, on disk, or built from
//      kernel_source(k, index32) by NVRTC): its function name and cubin (or PTX);
//   4. arguments in codegen/arguments.h's order (for_each_argument), as the source declares them:
//      Input: a device pointer to the read node's storage (bool as bytes); Extent, Offset, Stride:
//      int64 (`long long`); Int64Const: int64; Float64Const: double (also for float32 kernels);
//      Output: a device pointer to the output node's storage; then, for a Shape::SplitWhole
//      kernel only, a workspace pointer (launch_dims(...).workspace_bytes, 8-byte aligned) and a
//      pointer to a zeroed uint32 counter (the kernel leaves it zero again);
//   5. cuLaunchKernel with launch_dims(k, shape, sm_count)'s grid and block, no dynamic shared
//      memory, on the segment's stream.
// A library kernel with source (Layout::Pointwise, 64-bit indices) takes other arguments: a
// device pointer per input of k.library_node (in input order), then library_scalars(k) as `long
// long`, then the output pointer, then where library_workspace(node) says a workspace pointer
// (launch_dims(...).workspace_bytes, at least 8; 8-byte aligned). Where init_name is set (the scatters and view
// writes), it is launched first with the same arguments and grid (it copies the base into the output), then name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/kernel.h"

namespace kiln::codegen::cuda {

// How a kernel's threads are laid out, decided by its key alone.
enum class Layout {
  Pointwise,     // one element per thread, grid-stride
  ThreadPerRow,  // reductions over short windows (pooling) or columns: each thread folds its rows
  BlockPerRow,   // each block folds a row (every kernel with its innermost dim reduced, row kernels)
  SplitWhole,    // a whole-tensor fold: blocks fold slices, the last block combines their results
};

struct KernelSource {
  std::string key;   // cuda_key
  std::string name;  // the __global__ function's name
  std::string source;
  Layout layout = Layout::Pointwise;
  bool index32 = false;
  std::string init_name;  // a library kernel's first launch, where it has two (see above)
};

// The most threads of a block (launch_dims may choose fewer, a multiple of the warp size).
constexpr int kBlockThreads = 256;

bool has_cuda_source(const fusion::Kernel& k);
// Whether a library node's kernel is generated here (not a cuBLAS call).
bool has_library_source(const ir::Node& n);
// A library kernel's scalar arguments: the output's sizes; per input of the node, its view's
// offset, sizes and strides; for WriteView and AddView, the target view's offset, sizes, strides;
// for a sort of rows (library_workspace), the node's ints.
std::vector<int64_t> library_scalars(const fusion::Kernel& k);
// Whether a library node's kernel takes a workspace after its output (the sorts of rows).
bool library_workspace(const ir::Node& n);
// Whether every index the kernel computes (its domain's elements, each read's reach) fits int32
// with room for a grid-stride loop's last step.
bool fits_int32_indices(const fusion::Kernel& k);
std::string cuda_key(const fusion::Kernel& k, bool index32);
// A library kernel's structural key (cuda_key's part before the index width).
std::string library_key(const ir::Node& n);
Layout layout_of(const fusion::Kernel& k);

// The kernel's CUDA C: the prelude (ops.h) then the __global__ function (after the line
// kKernelMarker). The same key always
// gives the same text. Throws kiln::Error for a Library kernel.
KernelSource kernel_source(const fusion::Kernel& k, bool index32);
inline constexpr const char* kKernelMarker = "// The kernel:\n";

struct LaunchDims {
  uint32_t grid = 1, block = kBlockThreads;
  uint64_t workspace_bytes = 0;  // SplitWhole only
};
// Grid and block for launching `k` on a device of `sm_count` multiprocessors.
LaunchDims launch_dims(const fusion::Kernel& k, int sm_count);

}  // namespace kiln::codegen::cuda

// The CUDA backend: runs a flush's kernel list (fusion::Partition) on one CUDA device, as
// source.h's "how a kernel list becomes launches" says. Per device: one stream that every copy
// and launch of kiln goes on (so a block the caching allocator hands out again is reused in
// stream order), the modules loaded once per kernel, a cuBLAS handle. Values live in device
// memory from the device's caching allocator (Buffer::cuda_device says so); a read of host memory
// (a constant table or a tensor made on the CPU and moved) is uploaded through pinned staging,
// and a kernel output that a host tensor holds (`.cpu()`) is copied back, the host waiting only
// then. A kernel not compiled yet is queued to compile in the background and run node by node
// on the per-op kernels meanwhile (per_op.h; KILN_COMPILE=wait waits for it). Kernels the
// generator has no CUDA source for (scatter-adds into narrow dtypes), and matmuls on layouts
// cuBLAS does not take, run on the host: copied there, interpreted, copied back (logged once per
// op, counted in Stats::cuda_host_fallbacks), so every program still runs. Launches of fused
// kernels are held back in runs, each put on the stream before anything else goes there; a run
// that recurs is replayed as one CUDA graph (graphs.h).
#pragma once
#include "codegen/backend.h"
#include "runtime/cuda/driver.h"

namespace kiln::codegen {

// The backend of CUDA device `device`; the flush driver picks it for a segment on that device.
Backend& cuda_backend(int device);

namespace cuda {
// A host copy of `buffer` (device memory: Buffer::cuda_device), once the device's stream has
// finished the work queued before; host memory is returned as it is.
BufferPtr to_host(const BufferPtr& buffer);
// The device's one stream, which every copy and launch of kiln goes on; work queued on it by
// others (NCCL's collectives) is ordered with kiln's kernels.
cuda_driver::CUstream stream(int device);
// A host copy of `bytes` of device memory `buffer` from byte `offset` on (a view's elements), as
// to_host.
BufferPtr to_host(const BufferPtr& buffer, size_t offset, size_t bytes);
// A copy of device memory `buffer` in new memory of the same device, queued on its stream.
BufferPtr device_copy(const BufferPtr& buffer);
// Returns when the kernels compiling in the background (KILN_COMPILE=background: compile_queue.h)
// are built and loaded, so that the next flush launches them fused.
void wait_for_background_compiles();
// Waits until the device's stream has done the work queued before (nothing for host memory):
// memory handed to code outside kiln (data_ptr) holds its value then.
void wait_for(const Buffer& buffer);
}  // namespace cuda

}  // namespace kiln::codegen

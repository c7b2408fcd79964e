// One pool of worker threads for everything kiln runs: the compiled backend installs its own
// (Halide's runtime pool) and BLAS calls are split across it, one single-threaded sgemm per
// piece. With OpenBLAS keeping a pool of its own, the two pools' idle threads spun against each
// other for the same cores between every GEMM and the kernels around it.
#pragma once

namespace kiln {

// Runs body(ctx, i) for every i in [0, n), on the installed pool if there is one. Returns false
// (running nothing) when none is installed.
using TaskBody = void (*)(void* ctx, int i);
bool parallel_for(int n, TaskBody body, void* ctx);

// Installs the pool (a backend, once its runtime is loaded). From then on OpenBLAS runs on the
// calling thread only, and the pool's size follows set_num_threads.
using ParallelForFn = void (*)(int n, TaskBody body, void* ctx);
void install_parallel_for(ParallelForFn fn);

}  // namespace kiln

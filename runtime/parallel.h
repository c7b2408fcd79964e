// kiln's pool of worker threads, the one every parallel loop runs on: compiled kernels (the Halide
// backend hands its runtime's parallel loops here), the pieces of split BLAS calls (OpenBLAS itself
// runs single-threaded), the interpreter's slices. Its size follows set_num_threads.
#pragma once

namespace kiln {

// Runs body(ctx, i) for every i in [0, n) and returns when all have returned. Iterations go to
// the threads in fixed contiguous ranges, the calling thread taking the first, so that
// consecutive loops over the same data find it in the same core's cache. A loop started inside
// another, or while another thread's loop runs, runs on the calling thread alone. The first
// exception thrown by a body is rethrown here, once every iteration has ended. A child process
// forked between loops gets a pool of its own; one forked inside a body must exec or _exit (the
// loop it is in waits for iterations that the parent's threads hold).
using TaskBody = void (*)(void* ctx, int i);
void parallel_for(int n, TaskBody body, void* ctx);

}  // namespace kiln

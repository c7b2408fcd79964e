// Shared by the benchmark programs, each built twice from one source: against kiln (through
// <kiln/torch.h>) and, with KILN_BENCH_LIBTORCH, against libtorch 1.13. Workloads are written
// once, libtorch-style; `settle()` makes kiln compute what is live (libtorch already has).
#pragma once
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#ifdef KILN_BENCH_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

// BENCH_DEVICE=cuda (or cuda:N; `kiln bench --device`) builds the workloads' tensors and modules
// on that device; the default is the CPU. Read once per process.
inline torch::Device bench_device() {
  static const torch::Device device(std::string(std::getenv("BENCH_DEVICE") ? std::getenv("BENCH_DEVICE") : "cpu"));
  return device;
}
inline torch::TensorOptions on_bench_device() { return torch::TensorOptions().device(bench_device()); }

#ifdef KILN_BENCH_LIBTORCH
inline void settle() {
  if (bench_device().is_cuda()) torch::cuda::synchronize();
}
inline const char* kSide = "libtorch";
struct WaitForCompilers {};
#else
// Computes what is live, and on a GPU waits for it: a timed iteration ends when its work is done.
inline void settle() {
  kiln::sync();
  if (bench_device().is_cuda()) torch::cuda::synchronize();
}
inline const char* kSide = "kiln";
// A benchmark program times fused kernels: each is compiled before it first runs
// (KILN_COMPILE=wait), unless KILN_COMPILE says otherwise. One static of it per program.
struct WaitForCompilers {
  WaitForCompilers() {
    if (!std::getenv("KILN_COMPILE")) kiln::config().compile_in_background = false;
  }
};
#endif

// BENCH_THREADS=n sets the intra-op threads of the side under test (libtorch's default on
// Debian is one; kiln's Halide kernels use every core unless KILN_NUM_THREADS says otherwise).
inline const bool kThreadsSet = [] {
  if (const char* n = std::getenv("BENCH_THREADS")) torch::set_num_threads(std::atoi(n));
  return true;
}();

// STREAM-style triad a = b + s * c over `n` floats on `threads` threads: the machine's memory
// bandwidth, measured in the same run as the workloads it bounds.
inline void triad(benchmark::State& state, int threads) {
  const size_t n = size_t(1) << 24;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
      });
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(3 * n * sizeof(float)));
}

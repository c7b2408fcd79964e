// CUDA's execution model emulated on the host, for compiling generated CUDA kernels as host C++
// (tests/cuda_emulation_test.cpp, tests/cuda_fake_driver.cpp): a block's threads as real
// threads, __syncthreads and warp shuffles as barriers, __shared__ as block-wide statics, blocks
// run one after another. The library sets the launch through kiln_host_grid, kiln_host_block and
// kiln_host_thread before calling a kernel in each of the block's threads.
#pragma once

namespace {

// What a kernel's source needs of CUDA, for the host compiler.
[[maybe_unused]] constexpr const char* kHostCuda = R"cpp(
#include <math.h>
#include <cstring>
#include <condition_variable>
#include <mutex>
  struct dim3 {
    unsigned x = 1, y = 1, z = 1;
  };
  thread_local dim3 threadIdx;
  dim3 blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
  namespace kiln_host {
  struct Barrier {
    std::mutex mutex;
    std::condition_variable cv;
    unsigned waiting = 0, generation = 0;
    void wait(unsigned count) {
      std::unique_lock<std::mutex> lock(mutex);
      const unsigned g = generation;
      if (++waiting == count) {
        waiting = 0;
        ++generation;
        cv.notify_all();
      } else {
        cv.wait(lock, [&] { return g != generation; });
      }
    }
  };
  Barrier block_barrier, warp_barriers[32];
  unsigned char lanes[1024][8];
  void warp_sync() {
    const unsigned warp = threadIdx.x / 32, first = warp * 32;
    warp_barriers[warp].wait(blockDim.x - first < 32 ? blockDim.x - first : 32);
  }
  }  // namespace kiln_host
  inline void __syncthreads() { kiln_host::block_barrier.wait(blockDim.x); }
  inline void __threadfence() {}
  inline double __longlong_as_double(long long v) {
    double d;
    std::memcpy(&d, &v, 8);
    return d;
  }
  inline long long __double_as_longlong(double d) {
    long long v;
    std::memcpy(&v, &d, 8);
    return v;
  }
  inline unsigned __float_as_uint(float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  inline float __uint_as_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  namespace kiln_host {
  std::mutex atomic_mutex;
  }
  template <class T>
  T atomicAdd(T* p, T v) {
    std::lock_guard<std::mutex> lock(kiln_host::atomic_mutex);
    T old = *p;
    *p += v;
    return old;
  }
  template <class T>
  T __shfl_down_sync(unsigned, T v, int offset) {
    std::memcpy(kiln_host::lanes[threadIdx.x], &v, sizeof v);
    kiln_host::warp_sync();
    const unsigned from = threadIdx.x + unsigned(offset), end = (threadIdx.x / 32 + 1) * 32;
    T r = v;
    if (from < end && from < blockDim.x) std::memcpy(&r, kiln_host::lanes[from], sizeof r);
    kiln_host::warp_sync();
    return r;
  }
  template <class T>
  T __shfl_up_sync(unsigned, T v, int offset) {
    std::memcpy(kiln_host::lanes[threadIdx.x], &v, sizeof v);
    kiln_host::warp_sync();
    const unsigned lane = threadIdx.x % 32;
    T r = v;
    if (lane >= unsigned(offset)) std::memcpy(&r, kiln_host::lanes[threadIdx.x - unsigned(offset)], sizeof r);
    kiln_host::warp_sync();
    return r;
  }
  extern "C" void kiln_host_grid(unsigned blocks, unsigned threads) {
    gridDim.x = blocks;
    blockDim.x = threads;
  }
  extern "C" void kiln_host_block(unsigned b) { blockIdx.x = b; }
  extern "C" void kiln_host_thread(unsigned t) { threadIdx.x = t; }
)cpp";

}  // namespace

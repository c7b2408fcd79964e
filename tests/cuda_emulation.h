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
#include <pthread.h>
#include <string.h>
#include <initializer_list>
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
  struct Barrier {  // pthread's, not <mutex>'s: the C++ headers took 90% of each kernel's host compile
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    unsigned waiting = 0, generation = 0;
    void wait(unsigned count) {
      pthread_mutex_lock(&mutex);
      const unsigned g = generation;
      if (++waiting == count) {
        waiting = 0;
        ++generation;
        pthread_cond_broadcast(&cv);
      } else {
        while (g == generation) pthread_cond_wait(&cv, &mutex);
      }
      pthread_mutex_unlock(&mutex);
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
    memcpy(&d, &v, 8);
    return d;
  }
  inline long long __double_as_longlong(double d) {
    long long v;
    memcpy(&v, &d, 8);
    return v;
  }
  inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
  }
  inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  namespace kiln_host {
  pthread_mutex_t atomic_mutex = PTHREAD_MUTEX_INITIALIZER;
  }
  template <class T>
  T atomicAdd(T* p, T v) {
    pthread_mutex_lock(&kiln_host::atomic_mutex);
    T old = *p;
    *p += v;
    pthread_mutex_unlock(&kiln_host::atomic_mutex);
    return old;
  }
  template <class T>
  T __shfl_down_sync(unsigned, T v, int offset) {
    memcpy(kiln_host::lanes[threadIdx.x], &v, sizeof v);
    kiln_host::warp_sync();
    const unsigned from = threadIdx.x + unsigned(offset), end = (threadIdx.x / 32 + 1) * 32;
    T r = v;
    if (from < end && from < blockDim.x) memcpy(&r, kiln_host::lanes[from], sizeof r);
    kiln_host::warp_sync();
    return r;
  }
  template <class T>
  T __shfl_up_sync(unsigned, T v, int offset) {
    memcpy(kiln_host::lanes[threadIdx.x], &v, sizeof v);
    kiln_host::warp_sync();
    const unsigned lane = threadIdx.x % 32;
    T r = v;
    if (lane >= unsigned(offset)) memcpy(&r, kiln_host::lanes[threadIdx.x - unsigned(offset)], sizeof r);
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

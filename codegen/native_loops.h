// Internal to codegen/native_*kernels.cpp: what their loops share (libmvec's vector math, the
// grain of their parallel loops, blocked float sums, target clones).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

// libmvec's vector forms (glibc's): loops over them call the 8-wide float forms with AVX2.
extern "C" double exp(double) noexcept __attribute__((simd("notinbranch")));
extern "C" float expf(float) noexcept __attribute__((simd("notinbranch")));
extern "C" double erf(double) noexcept __attribute__((simd("notinbranch")));
extern "C" float erff(float) noexcept __attribute__((simd("notinbranch")));
extern "C" double tanh(double) noexcept __attribute__((simd("notinbranch")));
extern "C" float tanhf(float) noexcept __attribute__((simd("notinbranch")));

// Compiled twice, for every x86-64 and for AVX2 (x86-64-v3), the CPU choosing when kiln loads.
#define KILN_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))

namespace kiln::codegen::native {

inline float vexp(float x) { return expf(x); }
inline double vexp(double x) { return exp(x); }
inline float verf(float x) { return erff(x); }
inline double verf(double x) { return erf(x); }
inline float vtanh(float x) { return tanhf(x); }
inline double vtanh(double x) { return tanh(x); }

// Elements per range below which a loop is not split (as the per-op kernels split theirs).
constexpr int64_t kGrain = int64_t(1) << 15;

// The grain, in items of `cols` elements each, of a loop over such items.
inline int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)); }

// The sum of f(0) ... f(n-1): blocks of 64 in 8 lanes of T (vectorized), blocks added in double:
// within a few ulps of the float64 sum, as the compiled kernels' blocked sums.
template <typename T, typename F>
[[gnu::always_inline]] inline double blocked_sum(int64_t n, F f) {
  constexpr int kLanes = 8;
  constexpr int64_t kBlock = 64;
  double total = 0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T lanes[kLanes] = {};
    for (int64_t k = 0; k < kBlock; k += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] += f(i + k + j);
    double block = 0;
    for (int j = 0; j < kLanes; ++j) block += double(lanes[j]);
    total += block;
  }
  for (; i < n; ++i) total += double(f(i));
  return total;
}

template <typename T>
[[gnu::always_inline]] inline T row_max(const T* __restrict__ x, int64_t n) {
  constexpr int kLanes = 8;
  T lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -INFINITY);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  T m = -INFINITY;
  for (int j = 0; j < kLanes; ++j) m = lanes[j] > m ? lanes[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace kiln::codegen::native

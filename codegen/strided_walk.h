// Loops shared by the CPU executors (the interpreter, the per-op kernels): walks over strided
// layouts, and slices of a loop across kiln's threads.
#pragma once
#include <algorithm>
#include <vector>

#include "runtime/config.h"
#include "runtime/parallel.h"
#include "runtime/shape.h"

namespace kiln::codegen {

// Calls run(offset in a, offset in b) at the start of each innermost run of `sizes` (rank >= 1),
// in row-major order, walking two strided layouts of the same sizes together.
template <typename F>
void for_each_run2(const Shape& sizes, const Shape& strides_a, int64_t offset_a, const Shape& strides_b,
                   int64_t offset_b, F&& run) {
  const int rank = int(sizes.size());
  if (numel_of(sizes) == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t a = offset_a, b = offset_b;
  while (true) {
    run(a, b);
    int d = rank - 2;
    for (; d >= 0; --d) {
      a += strides_a[d];
      b += strides_b[d];
      if (++idx[d] < sizes[d]) break;
      a -= strides_a[d] * sizes[d];
      b -= strides_b[d] * sizes[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Element strides of `shape` with the axes in `axes` zeroed: maps an input index to its output.
inline Shape reduced_strides(const Shape& shape, const std::vector<int64_t>& axes) {
  Shape out_shape = shape;
  for (auto a : axes) out_shape[a] = 1;
  Shape st = contiguous_strides(out_shape);
  for (auto a : axes) st[a] = 0;
  return st;
}

// Runs f(begin, end) over slices of [0, count) on kiln's threads, one slice per `grain`
// elements of `work` (the whole loop's), at most one per thread.
template <typename F>
void parallel_slices(int64_t count, int64_t work, int64_t grain, F&& f) {
  const int threads = int(std::min<int64_t>({int64_t(get_num_threads()), count, work / grain}));
  if (threads <= 1) return f(int64_t(0), count);
  struct Slices {
    F* f;
    int64_t count;
    int threads;
  } slices{&f, count, threads};
  parallel_for(
      threads,
      [](void* ctx, int t) {
        const auto& s = *static_cast<const Slices*>(ctx);
        (*s.f)(s.count * t / s.threads, s.count * (t + 1) / s.threads);
      },
      &slices);
}

}  // namespace kiln::codegen

// Loops shared by the CPU executors (the interpreter, the per-op kernels): walks over strided
// layouts.
#pragma once
#include <algorithm>
#include <vector>

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

}  // namespace kiln::codegen

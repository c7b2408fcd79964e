// The calling convention shared by a generated kernel and its launcher (the one place that
// decides the order of arguments):
//   1. one 1-D input buffer per read (the read value's flat storage);
//   2. int32 scalars: the domain extents, then per read its offset and its strides of class 's';
//   3. one float64 scalar per Const node, in node order;
//   4. the output buffers, in the kernel's output order (a reduction's: its kept dims).
// A stride's class is '0' (broadcast: not passed), '1' (unit: not passed) or 's' (passed).
#pragma once
#include <cstdint>

namespace kiln::codegen::halide {

inline char stride_class(int64_t s) { return s == 0 ? '0' : s == 1 ? '1' : 's'; }

}  // namespace kiln::codegen::halide

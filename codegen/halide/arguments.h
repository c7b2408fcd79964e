// The calling convention shared by a generated kernel and its launcher (the one place that
// decides the order of arguments):
//   1. one 1-D input buffer per read (the read value's flat storage);
//   2. int32 scalars: the domain extents, then per read its offset and its strides of class 's';
//   3. one scalar per Const node, in node order: int64 for an int64 Const (exact), else float64;
//   4. the output buffers, in the kernel's output order (a reduction's: its kept dims).
// A stride's class (fusion/kernel.h) is '0', '1' or '2' (compiled in: not passed) or 's' (passed).
#pragma once
#include "fusion/kernel.h"

namespace kiln::codegen::halide {

using fusion::stride_class;

}  // namespace kiln::codegen::halide

// The calling convention shared by a generated kernel and its launcher, the same for every
// backend: for_each_argument is the one place that decides the arguments and their order; the
// Halide lowering declares a parameter for each (halide/lowering.cpp) and its launcher passes a
// buffer or a scalar for each (halide/launcher.cpp); the CUDA source declares a C parameter for
// each (cuda/emitter.cpp).
//   1. one 1-D input buffer per read (the read value's flat storage);
//   2. integer scalars (int32 for Halide, int64 for CUDA): the domain extents, then per read its
//      offset and its strides of class 's';
//   3. one scalar per Const node, in node order: int64 for an int64 Const (exact), else float64;
//   4. the output buffers, in the kernel's output order (a reduction's: its kept dims).
// A stride's class (fusion/kernel.h) is '0', '1' or '2' (compiled in: not passed) or 's' (passed).
#pragma once
#include <cstdint>

#include "fusion/kernel.h"

namespace kiln::codegen {

using fusion::stride_class;

struct KernelArgument {
  enum class Kind : uint8_t {
    Input,         // a buffer: read `read`'s flat storage
    Extent,        // int32: the domain's extent in dim `dim`
    Offset,        // int32: read `read`'s offset
    Stride,        // int32: read `read`'s stride in dim `dim` (of class 's')
    Int64Const,    // int64: node `node`'s value (an int64 Const, exact)
    Float64Const,  // float64: node `node`'s value (any other Const)
    Output,        // a buffer: node `node`'s output
  };
  Kind kind;
  int read = -1;  // Input, Offset, Stride: an index into the kernel's reads
  int dim = -1;   // Extent, Stride: a domain dim
  int node = -1;  // Int64Const, Float64Const, Output: an index into the kernel's nodes
};

// Calls visit(KernelArgument) for each of `k`'s arguments, in order.
template <typename Visit>
void for_each_argument(const fusion::Kernel& k, Visit&& visit) {
  using Kind = KernelArgument::Kind;
  for (size_t r = 0; r < k.reads.size(); ++r) visit(KernelArgument{Kind::Input, int(r)});
  for (size_t d = 0; d < k.domain.size(); ++d) visit(KernelArgument{Kind::Extent, -1, int(d)});
  for (size_t r = 0; r < k.reads.size(); ++r) {
    visit(KernelArgument{Kind::Offset, int(r)});
    for (size_t d = 0; d < k.reads[r].strides.size(); ++d)
      if (stride_class(k.reads[r].strides[d]) == 's') visit(KernelArgument{Kind::Stride, int(r), int(d)});
  }
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const ir::Node& n = *k.nodes[i].node;
    if (n.op == ir::Op::Const)
      visit(KernelArgument{is_integer(n.dtype) ? Kind::Int64Const : Kind::Float64Const, -1, -1, int(i)});
  }
  for (int o : k.outputs) visit(KernelArgument{Kind::Output, -1, -1, o});
}

}  // namespace kiln::codegen

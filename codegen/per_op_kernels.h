// Per-op kernels, compiled when kiln is built: what runs a flush's kernels while their fused code
// compiles (codegen/unfused.h), and every op of eager mode. One loop per elementwise op and
// compute type (float32 for the ops exact in it and for float tensors' transcendental functions,
// float64, wrapping int64), instantiated from the
// op table (tracer/ops.def) and the ops' scalar meaning (tracer/op_scalar_inline.h), so a new op
// needs nothing here; Const and the reductions (Sum, Prod, ReduceMax, ReduceMin) besides. Generic
// over sizes, strides and dtypes (converted as they are loaded and stored), vectorized by the C++
// compiler on contiguous runs, split across kiln's threads.
#pragma once
#include "tracer/ir.h"

namespace kiln::codegen {

// Whether compute_per_op computes `n`.
bool has_per_op_kernel(const ir::Node& n);

// Computes `n` (its inputs computed) into a new n.result. Values are computed as the interpreter
// computes them (float64, or int64 on its integer path; float32 for the ops where that gives the
// same bits) and rounded to the node's dtype, as every backend rounds each node's value; exp, log,
// erf, tanh ... of float tensors in float32, by libmvec's float forms, within a few float ulps.
void compute_per_op(ir::Node& n);

}  // namespace kiln::codegen

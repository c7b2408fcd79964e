// What each elementwise op means on one element: in float64 (the reference interpreter's
// arithmetic, and constant folding's) and on int64 (wrapping, as int64 kernels compute). Written
// once here; codegen/interpreter.cpp and fusion/simplify.cpp both read it, and each switch names
// every op (no default), so a new op in tracer/ops.def is a compile error until it has a meaning.
#pragma once
#include <cstdint>

#include "tracer/ir.h"

// The ops that are not an expression of their operands (leaves, reductions, data movement, matmul,
// scans and sorts), as case labels: a switch that lowers elementwise ops ends with
// `case KILN_NOT_ELEMENTWISE_OPS: break;`, so a new op of those kinds is listed here once, and a new
// elementwise op is still a compile error (-Werror=switch) in every such switch until it is lowered.
// clang-format off
#define KILN_NOT_ELEMENTWISE_OPS \
  ::kiln::ir::Op::Const: \
  case ::kiln::ir::Op::Input: \
  case ::kiln::ir::Op::Sum: \
  case ::kiln::ir::Op::Prod: \
  case ::kiln::ir::Op::ReduceMax: \
  case ::kiln::ir::Op::ReduceMin: \
  case ::kiln::ir::Op::ArgMax: \
  case ::kiln::ir::Op::ArgMin: \
  case ::kiln::ir::Op::Matmul: \
  case ::kiln::ir::Op::IndexSelect: \
  case ::kiln::ir::Op::Gather: \
  case ::kiln::ir::Op::IndexAdd: \
  case ::kiln::ir::Op::ScatterAdd: \
  case ::kiln::ir::Op::Cat: \
  case ::kiln::ir::Op::WriteView: \
  case ::kiln::ir::Op::AddView: \
  case ::kiln::ir::Op::CumSum: \
  case ::kiln::ir::Op::CumProd: \
  case ::kiln::ir::Op::LogCumSumExp: \
  case ::kiln::ir::Op::CumMaxIndex: \
  case ::kiln::ir::Op::CumMinIndex: \
  case ::kiln::ir::Op::SortIndex: \
  case ::kiln::ir::Op::TopKIndex: \
  case ::kiln::ir::Op::KthValueIndex: \
  case ::kiln::ir::Op::MedianIndex: \
  case ::kiln::ir::Op::ModeIndex: \
  case ::kiln::ir::Op::SearchSorted
// clang-format on

namespace kiln::ir {

// op(a) or op(a, b) in float64; `operands` is the operands' dtype (int64 division truncates).
// Max and Min return NaN when either operand is NaN, as PyTorch. Throws kiln::Error for an op
// that is not elementwise (a Leaf, Select or any reduction or data movement).
double scalar_op(Op op, double a, double b, ScalarType operands);
// op(a) or op(a, b) on int64, wrapping on overflow; a comparison returns 0 or 1. Throws for the
// ops that have no int64 form (Pow and the transcendental functions run in float64).
int64_t wrapping_op(Op op, int64_t a, int64_t b);
// Whether wrapping_op computes `op` (ops.def's kInt64).
bool has_wrapping_form(Op op);

// Where a reduction's fold starts: the identity of its combining op (ir::facts(op).combine).
double reduction_identity(Op reduce);
int64_t wrapping_reduction_identity(Op reduce);

}  // namespace kiln::ir
